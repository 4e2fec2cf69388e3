"""Beyond the chapter: what the kit adds to keeping long runs alive. Built on the core
(:mod:`course_lib.ddp`, :mod:`course_lib.checkpoint`), which never imports it: each extension
plugs into a seam of the core (a :class:`~course_lib.ddp.launch.Reduction` passed to ``launch``,
the trainer's ``gradients`` and ``agreement``). Its modules: docs/README.md#layout.

:func:`reduction` names the kit's reductions; :func:`launch` is the core's ``launch`` with the
reduction a config asks for.
"""
from __future__ import annotations

from course_lib.config import ConfigError, TrainConfig

REDUCTION_NAMES = ("ddp", "invariant")  # the kit's --reduction values (importing this package stays cheap)


def reduction(name: str):
    """The kit's :class:`~course_lib.ddp.launch.Reduction` called ``name`` (``--reduction``), or one
    line that lists them."""
    from course_lib.beyond.invariant_trainer import INVARIANT
    from course_lib.ddp.launch import DDP_REDUCTION

    found = {r.name: r for r in (DDP_REDUCTION, INVARIANT)}
    if name not in found:
        raise ConfigError(f"--reduction {name!r} is not a reduction of the kit; choose one of {', '.join(found)}")
    return found[name]


def launch(cfg: TrainConfig, **options) -> dict:
    """:func:`course_lib.ddp.launch.launch` with the reduction ``cfg`` asks for (DDP or the kit's
    own): what a notebook, a test or the pipeline calls to train any ``--reduction``."""
    from course_lib.ddp.launch import launch as core_launch

    return core_launch(cfg, reduction=reduction(cfg.reduction), **options)
