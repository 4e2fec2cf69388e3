"""The interruption lab: pick where and how to kill a training run, how to resume it, press
Run, and see the interrupted and uninterrupted curves on one plot.

Every callback is a plain method, so pytest drives the lab exactly as a person does:
set ``.value`` on the controls, ``.click()`` the buttons, ``wait()`` for the background work.
"""
from __future__ import annotations

import dataclasses
import io
import os
import threading
import traceback
from pathlib import Path

import ipywidgets as W
import matplotlib.pyplot as plt
from IPython.display import Image, display

from course_lib._runtime.portability import hard_kill_signal
from course_lib.beyond import REDUCTION_NAMES
from course_lib.beyond.advisor import Costs, advise, lost_share, measure_costs
from course_lib.beyond.real_scale import LongRun, scale_advice
from course_lib.config import KILL_MODES, RESUME_MODES, TrainConfig
from course_lib.data.prepare import prepare_for
from course_lib.lab import drills, plots
from course_lib.lab.i18n import resolve, tr
from course_lib.lab.tables import format_report, real_scale
from course_lib.predict import load_classifier
from course_lib.watch.compare import compare_runs
from course_lib.watch.monitor import read_ledger


def show_figure(output: W.Output, fig) -> None:
    """Replace ``output``'s content with ``fig`` as a PNG. ``append_*`` works from a background
    thread and without a kernel (pytest), unlike ``with output:``."""
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=90)
    plt.close(fig)
    output.outputs = ()
    output.append_display_data(Image(data=png.getvalue()))


class _Shown:
    """A lab a notebook shows by ending a cell with it: what it shows is its ``widget``."""

    def _ipython_display_(self):
        display(self.widget)


def _wide() -> dict:
    """The arguments of a slider whose long description must show whole."""
    return {"style": {"description_width": "initial"}, "layout": W.Layout(width="480px")}


class InterruptionLab(_Shown):
    """Reference run + interrupted-and-resumed run, trained in a background thread. Used in notebook 05
    (§4, and its optional deep-dives with ``advanced=True``).

    The core lab is the chapter's: a run of the kit's trainer with DDP on 2 ranks, one kill (its step
    and its mode), a resume mode, **Run**. ``advanced=True`` adds what goes beyond the chapter: later
    kills, a kill by hand, the run's length, the reduction, resuming on another number of ranks. The
    run is as long as the lab says: ``run_length`` steps exactly (its epochs are as many as that takes)."""

    def __init__(self, workdir: str | Path = "runs/lab", train_limit: int = 3000, run_length: int = 40,
                 save_every_steps: int = 10, lang: str | None = None, advanced: bool = False, **cfg_overrides):
        self.workdir = Path(workdir)
        self.lang = lang = resolve(lang)  # labels in the notebook's language (course_lib.lab.i18n)
        self.advanced = advanced
        self.base = {**dict(train_limit=train_limit, save_every_steps=save_every_steps, log_every=10_000,
                            eval_limit=500, warmup_steps=5), **cfg_overrides}
        self.base.pop("epochs", None)  # the run length decides them (config)
        probe = TrainConfig(run_dir=str(self.workdir / "probe"), **self.base)
        self.steps_per_epoch = len(prepare_for(probe, progress=False).train) // probe.global_batch_size
        self.kill_step = W.IntSlider(value=run_length // 2 + 3, min=2, max=run_length, description=tr("kill at step", lang))
        self.kill_mode = W.Dropdown(options=KILL_MODES, value="sigkill", description=tr("kill mode", lang))
        self.resume_mode = W.Dropdown(options=RESUME_MODES, value="full", description=tr("resume mode", lang))
        self.run_button = W.Button(description=tr("Run", lang), button_style="primary", icon="play")
        # beyond the chapter (advanced=True): a long run fails more than once (later kills, each fired once,
        # each resumed from); a kill by hand; a node lost for good (resume on another number of ranks, exact
        # with the invariant reduction); the chapter's DDP first: with it every piece of state shows
        self.more_kills = W.Text(value="", placeholder="e.g. 30, 35", description=tr("then kill at", lang))
        self.world_size = W.Dropdown(options=[2, 1], value=2, description=tr("world size", lang))
        self.resume_on = W.Dropdown(options=[(tr("same ranks", lang), 0), (tr("1 rank", lang), 1),
                                             (tr("2 ranks", lang), 2)], value=0, description=tr("resume on", lang))
        self.reduction = W.Dropdown(options=REDUCTION_NAMES, value="ddp", description=tr("reduction", lang))
        self.run_length = W.IntSlider(value=run_length, min=10, max=200, step=10, description=tr("run length", lang))
        self.kill_button = W.Button(description=tr("kill now", lang), button_style="danger", icon="bolt", disabled=True)
        self.progress = W.IntProgress(value=0, min=0, max=3, description=tr("idle", lang))
        self.status = W.HTML()
        self.length_note = W.HTML()
        self.output = W.Output()
        self.run_length.observe(self._on_length, names="value")
        self.world_size.observe(lambda _change: self._say_length(), names="value")
        self.run_button.on_click(self._on_run)
        self.kill_button.on_click(self._on_kill)
        self.result: dict | None = None
        self.figure = None
        self.error: str | None = None
        self.report_text = ""
        self._pids: list[int] = []
        self._thread: threading.Thread | None = None
        self._say_length()
        rows = [W.HBox([self.kill_step, self.kill_mode, self.resume_mode])]
        if advanced:
            rows += [W.HBox([self.more_kills, self.world_size, self.resume_on]), self.reduction,
                     W.HBox([self.run_length, self.kill_button])]
        self.widget = W.VBox([*rows, W.HBox([self.run_button, self.length_note]), W.HBox([self.progress, self.status]),
                              self.output])

    # ------------------------------------------------------------------ callbacks
    def _on_length(self, change) -> None:
        self.kill_step.max = change["new"]
        self.kill_step.value = min(self.kill_step.value, change["new"])
        self._say_length()

    def _say_length(self) -> None:
        self.length_note.value = tr("a run of {n} steps with DDP on {w} ranks, a checkpoint every {k} steps", self.lang,
                                    n=self.run_length.value, w=self.world_size.value, k=self.base["save_every_steps"])

    def _on_kill(self, _button=None) -> None:
        """Send a real SIGKILL to the last rank of the live run."""
        if self._pids:
            os.kill(self._pids[-1], hard_kill_signal())
            self.status.value = f"{tr('sent SIGKILL to pid', self.lang)} {self._pids[-1]}"

    def _on_run(self, _button=None) -> None:
        if self._thread and self._thread.is_alive():
            self.status.value = tr("already running", self.lang)
            return
        self.run_button.disabled = True
        self.error, self.result = None, None
        self._thread = threading.Thread(target=self._run_safely, daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> InterruptionLab:
        if self._thread:
            self._thread.join(timeout)
        return self

    # ------------------------------------------------------------------ the work
    def config(self, name: str, **extra) -> TrainConfig:
        """The lab's run: exactly ``run_length`` steps (as many epochs as that takes, the last one cut)."""
        length = self.run_length.value
        return TrainConfig(run_dir=str(self.workdir / name), world_size=self.world_size.value, max_steps=length,
                           epochs=-(-length // self.steps_per_epoch), reduction=self.reduction.value,
                           **{**self.base, **extra})

    def _step(self, text: str) -> None:
        self.progress.value += 1
        self.progress.description = tr(text, self.lang)

    def _run_safely(self) -> None:
        try:
            self._run()
        except Exception:  # shown in the lab, kept for tests; a thread must not die silently
            self.error = traceback.format_exc()
            self.status.value = f"<pre>{self.error[-2000:]}</pre>"
        finally:
            self.run_button.disabled = False
            self.kill_button.disabled = True

    def _run(self) -> None:
        self.progress.value = 0
        self.progress.description = tr("reference run", self.lang)
        ref = drills.ensure_reference(self.config(
            f"reference-{self.reduction.value}-ws{self.world_size.value}-n{self.run_length.value}"))
        self._step("interrupted run")
        run = self.config("interrupted")
        self.kill_button.disabled = False
        self._pids = []
        later = self.more_kills.value if self.advanced else ""
        steps = run.replace(kill_at_step=f"{self.kill_step.value} {later}").kill_at_step
        report = drills.interrupt_and_resume(run, steps, self.kill_mode.value, resume_mode=self.resume_mode.value,
                                             resume_world_size=self.resume_on.value or None, on_start=self._remember)
        self._step("done")
        self.result = compare_runs(ref, run.run_dir)
        label = tr("killed {n}x ({mode}), resumed {how}", self.lang, n=report["kills"], mode=self.kill_mode.value,
                   how=self.resume_mode.value)
        self.figure = plots.interruption(ref, {label: run.run_dir}, steps, lang=self.lang)
        self.status.value = f"<b>{tr('identical' if self.result['identical'] else 'different', self.lang)}</b>"
        self.report_text = "\n".join(report["interruptions"]
                                     or [tr("the run finished before the kill step (no interruption)", self.lang)]) \
            + "\n" + format_report(self.result, self.lang) + "\n"
        show_figure(self.output, self.figure)
        self.output.append_stdout(self.report_text)

    def _remember(self, pids: list[int]) -> None:
        self._pids = pids
        self.kill_button.disabled = not pids


class SaveIntervalExplorer(_Shown):
    """Sliders for the mean time between failures, the save cost and the share of failures the
    survivors' save covers; the expected-wall-time curve of :mod:`course_lib.beyond.advisor` redrawn
    on each change, with the measured runs of an interval study and the textbook's interval.
    Used in notebook 04 (optional deep-dive A)."""

    def __init__(self, study: dict, lang: str | None = None, show_covered: bool = True):
        self.lang = resolve(lang)
        self.costs = Costs(**study["advice"]["costs"])
        self.measured = study.get("points")
        self.measured_mtbf = study["mtbf_seconds"]
        self.epoch_steps = study.get("steps_per_epoch")
        mtbf, cost, wide = study["mtbf_seconds"], self.costs.save_blocking_seconds, _wide()
        self.mtbf = W.FloatLogSlider(value=mtbf, base=10, min=-1, max=5, step=0.05,
                                     description=tr("mean time between failures (s)", self.lang), **wide)
        self.save_cost = W.FloatLogSlider(value=cost, base=10, min=-2, max=2, step=0.05,
                                          description=tr("save cost (s)", self.lang), **wide)
        self.covered = W.FloatSlider(value=0.0, min=0.0, max=0.95, step=0.05, readout_format=".0%",
                                     description=tr("covered by survivors' save", self.lang), **wide)
        self.answer = W.HTML()
        self.output = W.Output()
        for control in (self.mtbf, self.save_cost, self.covered):
            control.observe(lambda _change: self.update(), names="value")
        # the share covered is station 5's survivors' save: station 4 shows the explorer without it
        self.widget = W.VBox([self.mtbf, self.save_cost, *([self.covered] if show_covered else []), self.answer,
                              self.output])
        self.update()

    @classmethod
    def from_run(cls, run_dir: str | Path, mtbf: float, steps: int | None = None, **kw) -> SaveIntervalExplorer:
        """The explorer on one run's own costs (:func:`course_lib.beyond.advisor.measure_costs`), for a
        run of ``steps`` steps (default: that run's length), without measured points."""
        costs = measure_costs(run_dir)
        if steps:
            costs.steps = steps
        return cls({"advice": advise(costs, mtbf), "mtbf_seconds": mtbf, "points": None,
                    "steps_per_epoch": sum(r["epoch"] == 0 for r in read_ledger(run_dir))}, **kw)

    def update(self) -> None:
        costs = dataclasses.replace(self.costs, save_blocking_seconds=self.save_cost.value)
        self.advice = advice = advise(costs, self.mtbf.value, self.covered.value)
        lines = [f"<b>{tr('optimum', self.lang)}</b>: " + tr("every {k} steps, expected loss {loss:.1%} of wall time",
                                                              self.lang, k=advice["optimum_steps"],
                                                              loss=advice["expected_lost_share"])]
        if self.epoch_steps:
            k10 = min(10 * self.epoch_steps, costs.steps)
            lines.append(tr("every 10 epochs = {k} steps: expected loss {loss:.1%}", self.lang, k=k10,
                            loss=float(lost_share(k10, costs, self.mtbf.value, self.covered.value))))
        # the measured points belong to the drill's conditions only
        same = bool(self.measured) and abs(self.mtbf.value / self.measured_mtbf - 1) < 0.03 \
            and abs(self.save_cost.value / self.costs.save_blocking_seconds - 1) < 0.03 and self.covered.value == 0
        stopped = [(p, i) for p in (self.measured or [] if same else []) for i, ok in enumerate(p.get("finished", []))
                   if not ok]  # runs the drill's budget stopped: what they measured
        lines += [tr("every {k} steps: not finished, stopped by the drill's budget after {s:.0f} s at step {step} of {n} "
                     "({f} failures); expected wall time {e:.0f} s", self.lang, k=p["every_steps"], s=p["walls"][i],
                     step=p["steps_reached"][i], n=costs.steps, f=p["failures"][i], e=p["predicted_wall_seconds"])
                  for p, i in stopped]
        self.answer.value = "<br>".join(lines)
        self.figure = plots.save_interval_curve(costs, self.mtbf.value, self.covered.value,
                                                self.measured if same else None, self.epoch_steps, lang=self.lang)
        show_figure(self.output, self.figure)


class ReviewBox(_Shown):
    """Type a review, press the button, read the trained model's answer
    (:func:`course_lib.predict.load_classifier`: the run's weights, loaded once).
    Used in notebook 05 (optional deep-dive D)."""

    def __init__(self, run_dir: str | Path, lang: str | None = None):
        self.lang = resolve(lang)
        self.classifier = load_classifier(run_dir)
        self.text = W.Textarea(placeholder=tr("type a review", self.lang), layout=W.Layout(width="600px", height="90px"))
        self.button = W.Button(description=tr("predict", self.lang), button_style="primary")
        self.answer = W.HTML()
        self.result: dict | None = None
        self.button.on_click(self._on_predict)
        self.widget = W.VBox([self.text, self.button, self.answer])

    def _on_predict(self, _button=None) -> None:
        if not self.text.value.strip():
            self.answer.value = tr("type a review", self.lang)
            return
        self.result = self.classifier.predict([self.text.value])[0]
        p = self.result["positive"]
        color = "#2e7d32" if self.result["label"] == "positive" else "#c62828"
        self.answer.value = (f"<b style='color:{color}'>{tr(self.result['label'], self.lang)}</b> "
                             f"({self.result['probability']:.1%}) "
                             f"<progress value='{p:.3f}' max='1' style='width:200px'></progress>")


class ScaleExplorer(_Shown):
    """The advisor at a real run's scale (:mod:`course_lib.beyond.real_scale`, notebook 04, "At
    real scale"): change one figure (interruptions, checkpoint bytes per parameter, write
    throughput, restart minutes) and the table and the curve follow."""

    def __init__(self, lang: str | None = None):
        self.lang, self.base = resolve(lang), LongRun()
        v, wide = self.base.value, _wide()
        self.controls = {
            "interruptions": W.IntSlider(value=int(v("interruptions")), min=20, max=2000, step=1, **wide,
                                         description=tr("unexpected interruptions in 54 days", self.lang)),
            "bytes_per_parameter": W.FloatSlider(value=v("bytes_per_parameter"), min=2, max=16, step=1, **wide,
                                                 description=tr("checkpoint bytes per parameter", self.lang)),
            "write_tb_per_s": W.FloatLogSlider(value=v("write_tb_per_s"), base=10, min=-2, max=1, step=0.05, **wide,
                                               description=tr("storage writes (TB/s)", self.lang)),
            "restart_minutes": W.FloatSlider(value=v("restart_minutes"), min=1, max=60, step=1, **wide,
                                             description=tr("restart (minutes)", self.lang)),
        }
        self.table, self.output = W.Output(), W.Output()
        for control in self.controls.values():
            control.observe(lambda _change: self.update(), names="value")
        self.widget = W.VBox([*self.controls.values(), self.table, self.output])
        self.update()

    def update(self) -> None:
        self.run = self.base.with_values(**{name: c.value for name, c in self.controls.items()})
        self.advice = scale_advice(self.run)
        self.table.outputs = ()
        self.table.append_display_data(real_scale(self.advice, self.lang))
        self.figure = plots.real_scale_curve(self.run, lang=self.lang)
        show_figure(self.output, self.figure)
