"""The laptop's lessons at a real run's scale: the kit's advisor (:mod:`course_lib.beyond.advisor`)
fed with the published figures of a long pre-training run (notebook 04, "A sense of real scale").

The chapter's demonstrations are small (an example model on toy data): the process is real, the
scale is not. That is the kit's reading (the limits its summary of the chapter draws), not
something the chapter says of itself. A real run's numbers answer
what a laptop cannot: how often a 16,000-GPU job is interrupted, how large its checkpoint is,
what a save costs it, and how often it should save. Every figure says whether it is published
(with its source) or assumed (with why); change one and the answer moves
(:class:`course_lib.lab.widgets.ScaleExplorer`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from course_lib.beyond.advisor import Costs, advise, lost_share

LLAMA3 = "Llama Team, AI @ Meta: The Llama 3 Herd of Models, arXiv:2407.21783 (2024), section 3.3.4"
ORBAX = "Orbax documentation, Asynchronous Checkpointing (orbax.readthedocs.io)"


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    what: str
    source: str  # where it is published, or "assumed: why"


@dataclass(frozen=True)
class LongRun:
    """One long pre-training run, as the advisor's inputs. The defaults: Llama 3 405B."""
    figures: dict = field(default_factory=lambda: {
        "gpus": Figure(16_384, "GPUs", "H100 GPUs of the 405B pre-training", LLAMA3),
        "days": Figure(54, "days", "the snapshot of pre-training whose interruptions were counted", LLAMA3),
        "interruptions": Figure(419, "", "unexpected interruptions in those days (466 in all, 47 planned); "
                                "about 78% confirmed or suspected hardware", LLAMA3),
        "parameters": Figure(405e9, "parameters", "the model's size", LLAMA3),
        "bytes_per_parameter": Figure(12, "bytes", "what a checkpoint keeps per parameter",
                                      "assumed: fp32 weights and AdamW's two fp32 moments (the bf16 copy and the "
                                      "gradients are not saved)"),
        "write_tb_per_s": Figure(2.0, "TB/s", "storage write throughput (Tectonic, sustained; 7 TB/s peak)", LLAMA3),
        "step_seconds": Figure(6.0, "s", "one optimizer step of 16M tokens",
                               "assumed: 6 x 405e9 x 16M FLOPs on 16,384 H100s at about 40% of their bf16 peak "
                               "(the paper reports 38-43% MFU)"),
        "restart_minutes": Figure(10, "min", "from a failure to training again (find it, reschedule, load)",
                                  "assumed: the paper gives none; it reports over 90% effective training time"),
        "async_blocking_share": Figure(0.03, "", "share of a save that still blocks training when it is written "
                                       "in the background (blocking time -97%, published for a 340B model)", ORBAX),
    })

    def value(self, name: str) -> float:
        return self.figures[name].value

    def with_values(self, **values: float) -> LongRun:
        """The same run with some figures changed (each change is then the reader's assumption)."""
        figs = {k: replace(f, value=values[k], source=f.source if values[k] == f.value else "changed by you")
                if k in values else f for k, f in self.figures.items()}
        return LongRun(figs)

    @property
    def mtbf_seconds(self) -> float:
        return self.value("days") * 86_400 / self.value("interruptions")

    @property
    def checkpoint_tb(self) -> float:
        return self.value("parameters") * self.value("bytes_per_parameter") / 1e12

    def costs(self, async_save: bool) -> Costs:
        """The advisor's costs: a synchronous save blocks for its whole write; a background one
        for the published share of it, and its write then delays the moment it protects."""
        write = self.checkpoint_tb / self.value("write_tb_per_s")
        steps = int(self.value("days") * 86_400 / self.value("step_seconds"))
        return Costs(step_seconds=self.value("step_seconds"),
                     save_blocking_seconds=write * (self.value("async_blocking_share") if async_save else 1.0),
                     save_write_seconds=write, restart_seconds=self.value("restart_minutes") * 60, finish_seconds=0.0,
                     steps=steps, save_every_steps=0, async_save=async_save, sources={"run": "published figures"})


def scale_advice(run: LongRun | None = None) -> dict:
    """How often the run should save, and what failures cost it, with synchronous and with
    background saves: ``{"mtbf_hours", "checkpoint_tb", "sync": {...}, "async": {...}}``, each with
    the save's blocking seconds, the optimal interval (steps and minutes), Young's, and the
    expected share of the wall time lost to saves, redone work and restarts."""
    run = run or LongRun()
    out = {"mtbf_hours": run.mtbf_seconds / 3600, "checkpoint_tb": run.checkpoint_tb}
    for name, background in (("sync", False), ("async", True)):
        costs = run.costs(background)
        advice = advise(costs, run.mtbf_seconds)
        restarts = costs.restart_seconds / run.mtbf_seconds  # every failure costs a restart, whatever the interval
        out[name] = {"blocking_seconds": costs.save_blocking_seconds, "optimum_steps": advice["optimum_steps"],
                     "optimum_minutes": advice["optimum_seconds"] / 60, "young_steps": advice["young_steps"],
                     "lost_share": advice["expected_lost_share"], "lost_to_restarts": restarts,
                     "lost_saving_every_hour": float(lost_share(max(1, round(3600 / costs.step_seconds)), costs,
                                                                run.mtbf_seconds))}
    return out
