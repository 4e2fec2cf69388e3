"""The interruption lab: pick where and how to kill a training run, how to resume it, press
Run, and see the interrupted and uninterrupted curves on one plot.

Every callback is a plain method, so pytest drives the lab exactly as a person does:
set ``.value`` on the controls, ``.click()`` the buttons, ``wait()`` for the background work.
"""
from __future__ import annotations

import io
import threading
import traceback
from pathlib import Path

import ipywidgets as W
import matplotlib.pyplot as plt
from IPython.display import Image, display

from .compare import compare_runs, format_report
from .config import KILL_MODES, REDUCTIONS, RESUME_MODES, TrainConfig
from . import drills, plots
from .faults import kill


class InterruptionLab:
    """Reference run + interrupted-and-resumed run, trained in a background thread."""

    def __init__(self, workdir: str | Path = "runs/lab", train_limit: int = 3000, run_length: int = 40,
                 save_every_steps: int = 10, **cfg_overrides):
        self.workdir = Path(workdir)
        self.base = {**dict(train_limit=train_limit, epochs=2, save_every_steps=save_every_steps, log_every=10_000,
                            eval_limit=500, warmup_steps=5), **cfg_overrides}
        self.kill_step = W.IntSlider(value=run_length // 2 + 3, min=2, max=run_length, description="kill at step")
        self.kill_mode = W.Dropdown(options=KILL_MODES, value="sigkill", description="kill mode")
        # a long run fails more than once: later kills, each fired once, each resumed from
        self.more_kills = W.Text(value="", placeholder="e.g. 30, 35", description="then kill at")
        self.resume_mode = W.Dropdown(options=RESUME_MODES, value="full", description="resume mode")
        self.world_size = W.Dropdown(options=[2, 1], value=2, description="world size")
        # a node lost for good: resume on another number of ranks (exact with the invariant reduction)
        self.resume_on = W.Dropdown(options=[("same ranks", 0), ("1 rank", 1), ("2 ranks", 2)], value=0,
                                    description="resume on")
        self.reduction = W.Dropdown(options=REDUCTIONS, value="ddp", description="reduction")
        self.run_length = W.IntSlider(value=run_length, min=10, max=200, step=10, description="run length")
        self.run_button = W.Button(description="Run", button_style="primary", icon="play")
        self.kill_button = W.Button(description="kill now", button_style="danger", icon="bolt", disabled=True)
        self.progress = W.IntProgress(value=0, min=0, max=3, description="idle")
        self.status = W.HTML()
        self.output = W.Output()
        self.run_length.observe(self._on_length, names="value")
        self.run_button.on_click(self._on_run)
        self.kill_button.on_click(self._on_kill)
        self.result: dict | None = None
        self.figure = None
        self.error: str | None = None
        self._pids: list[int] = []
        self._thread: threading.Thread | None = None
        self.widget = W.VBox([
            W.HBox([self.kill_step, self.kill_mode, self.more_kills]), W.HBox([self.resume_mode, self.world_size, self.resume_on]), self.reduction,
            W.HBox([self.run_length, self.run_button, self.kill_button]), W.HBox([self.progress, self.status]),
            self.output])

    def _ipython_display_(self):
        display(self.widget)

    # ------------------------------------------------------------------ callbacks
    def _on_length(self, change) -> None:
        self.kill_step.max = change["new"]
        self.kill_step.value = min(self.kill_step.value, change["new"])

    def _on_kill(self, _button=None) -> None:
        """Send a real SIGKILL to the last rank of the live run."""
        if self._pids:
            kill(self._pids[-1], "sigkill")
            self.status.value = f"sent SIGKILL to pid {self._pids[-1]}"

    def _on_run(self, _button=None) -> None:
        if self._thread and self._thread.is_alive():
            self.status.value = "already running"
            return
        self.run_button.disabled = True
        self.error, self.result = None, None
        self._thread = threading.Thread(target=self._run_safely, daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> "InterruptionLab":
        if self._thread:
            self._thread.join(timeout)
        return self

    # ------------------------------------------------------------------ the work
    def config(self, name: str, **extra) -> TrainConfig:
        return TrainConfig(run_dir=str(self.workdir / name), world_size=self.world_size.value,
                           max_steps=self.run_length.value, reduction=self.reduction.value, **{**self.base, **extra})

    def _step(self, text: str) -> None:
        self.progress.value += 1
        self.progress.description = text

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
        self.progress.description = "reference run"
        ref = drills.ensure_reference(self.config(
            f"reference-{self.reduction.value}-ws{self.world_size.value}-n{self.run_length.value}"))
        self._step("interrupted run")
        run = self.config("interrupted")
        self.kill_button.disabled = False
        self._pids = []
        steps = run.replace(kill_at_step=f"{self.kill_step.value} {self.more_kills.value}").kill_at_step
        report = drills.interrupt_and_resume(run, steps, self.kill_mode.value, resume_mode=self.resume_mode.value,
                                             resume_world_size=self.resume_on.value or None, on_start=self._remember)
        self._step("done")
        self.result = compare_runs(ref, run.run_dir)
        label = f"killed {report['kills']}x ({self.kill_mode.value}), resumed {self.resume_mode.value}"
        self.figure = plots.interruption(ref, {label: run.run_dir}, steps)
        self.status.value = "<b>identical</b>" if self.result["identical"] else "<b>different</b>"
        # append_* work from a background thread and without a kernel (pytest), unlike `with output:`
        png = io.BytesIO()
        self.figure.savefig(png, format="png", dpi=90)
        plt.close(self.figure)
        self.report_text = "\n".join(report["interruptions"] or ["the run finished before the kill step (no interruption)"]) \
            + "\n" + format_report(self.result) + "\n"
        self.output.outputs = ()
        self.output.append_display_data(Image(data=png.getvalue()))
        self.output.append_stdout(self.report_text)

    def _remember(self, pids: list[int]) -> None:
        self._pids = pids
        self.kill_button.disabled = not pids
