"""What a resume needs: the checkpoint to continue from, the checks that it fits this run, and
the state to put back: the loop's position (:class:`TrainState`, ``trainer.pt``) and every random
number generator (:class:`RankRNG`, ``rng-rank{R}.pt``) beside model, optimizer and scheduler.

A checkpoint's parts are the ``state_dict`` of the objects a trainer holds (torchtitan's
``Stateful`` idea: :meth:`course_lib.ddp.train.Trainer.stateful`), so saving and restoring are
the same loop over one dict, and an object that is left out is a decision you can see
(``--resume-mode``). Loading goes through :func:`course_lib.checkpoint.store.load_part`
(``weights_only=True``): a checkpoint is data, never code.

The RNG state is kept as plain tensors and numbers: NumPy's own tuple would need pickled code.
"""
from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from course_lib.checkpoint import store
from course_lib.config import SHAPE_KEYS, TrainConfig

# what each --resume-mode leaves out on purpose (notebook 05 shows what breaks without it); "rank parts": every
# rank's own RNG file
LEFT_OUT = {"full": (), "epoch-start": (), "weights-only": ("optimizer.pt", "scheduler.pt"), "no-rng": ("rank parts",)}


# --------------------------------------------------------------------------- random number generators
def rng_state() -> dict:
    """Every RNG a rank draws from (Python's, NumPy's, torch's, and the CUDA generator of this
    rank's own device once CUDA is in use), as plain tensors and numbers (loadable with
    ``weights_only=True``). Only the rank's own device: asking for every device's would start
    CUDA in a CPU run on a GPU machine, and a checkpoint of 8 GPUs would not resume on 4."""
    np_state = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": {"name": np_state[0], "keys": torch.from_numpy(np_state[1].astype(np.int64)),
                  "pos": int(np_state[2]), "has_gauss": int(np_state[3]), "cached_gaussian": float(np_state[4])},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state(torch.cuda.current_device())
    return state


def set_rng_state(state: dict) -> None:
    """Put back what :func:`rng_state` took: the next draw of every generator is the one it would have made."""
    random.setstate((state["python"][0], tuple(state["python"][1]), state["python"][2]))
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"], torch.cuda.current_device())


def seed_rngs(seed: int, rank: int) -> None:
    """Each rank's own streams (dropout under DDP), seeded from the run's seed; the checkpoint
    saves them as they go on."""
    random.seed(seed * 1000 + rank)
    np.random.seed(seed * 1000 + rank)
    torch.manual_seed(seed * 1000 + rank)


class RankRNG:
    """This rank's generators as a checkpointable object (``rng-rank{R}.pt``)."""

    def state_dict(self) -> dict:
        return rng_state()

    def load_state_dict(self, state: dict) -> None:
        set_rng_state(state)


# --------------------------------------------------------------------------- the loop's position
@dataclass
class TrainState:
    """Where the loop is, and the run it belongs to: ``trainer.pt`` of every checkpoint."""
    epoch: int = 0            # 0-based epoch in progress
    step_in_epoch: int = 0    # steps of that epoch already done
    global_step: int = 0      # optimizer steps done since the run began
    last_loss: float = math.nan
    config: dict = field(default_factory=dict, repr=False)  # the run's settings and world size: a resume checks them

    def state_dict(self) -> dict:
        position = {k: v for k, v in dataclasses.asdict(self).items() if k != "config"}
        return {"state": position, "config": json.dumps(self.config)}

    def load_state_dict(self, saved: dict) -> None:
        for key, value in saved["state"].items():
            setattr(self, key, value)


# --------------------------------------------------------------------------- which checkpoint, and does it fit
def find_checkpoint(cfg: TrainConfig, log: Callable[[str], None] | None = None, sha256: bool = True) -> Path | None:
    """``--resume``: ``none`` -> ``None``; ``auto`` -> the newest valid checkpoint of the run
    (``None`` if there is none: a fresh start, said through ``log``); a path -> that folder,
    which must be a valid checkpoint (else one line that says what it is instead). Verified with
    every file's sha256 once per resume, on rank 0 as every rank is about to load it
    (:meth:`course_lib.ddp.train.Trainer.resume`); ``sha256=False``: :func:`check_resume`'s look."""
    if cfg.resume == "none":
        return None
    if cfg.resume == "auto":
        path = store.latest_valid(cfg.run_dir, log=log, sha256=sha256)
        if path is None and log:
            log(f"no valid checkpoint in {cfg.run_dir}, starting fresh")
        return path
    path = Path(cfg.resume)
    if not path.exists():
        raise store.CheckpointError(f"--resume {path} does not exist; use --resume auto (newest valid checkpoint of "
                                    "--run-dir) or name a checkpoint folder DIR/checkpoints/step-N")
    if not (path / "manifest.json").exists():
        newest = store.latest_valid(path, log=None, sha256=False) if path.is_dir() else None
        hint = f"--resume {newest}" if newest else "--resume auto with --run-dir set to the run"
        raise store.CheckpointError(f"--resume {path} is not a checkpoint folder (no manifest.json); use {hint}")
    ok, reason = store.verify(path, sha256)
    if not ok:
        raise store.CheckpointError(f"--resume {path} is not a valid checkpoint ({reason}); use --resume auto to "
                                    "take the newest valid one")
    return path


def check_resume(cfg: TrainConfig, any_world_size: bool = False) -> None:
    """Before any rank starts: the checkpoint a resume would load is there, committed, whole in
    size, and one this run can continue (else every rank would refuse it after start-up, each
    with a traceback). No file is hashed here: rank 0 verifies what every rank loads, under
    torchrun too, which starts the ranks without this parent, and falls back from a newest
    checkpoint whose bytes are damaged; so a ``trainer.pt`` that cannot be read is left to it."""
    path = find_checkpoint(cfg, sha256=False)
    if path is None:
        return
    try:
        saved = saved_config(store.load_part(path, "trainer.pt"))
    except store.CheckpointError:
        if cfg.resume == "auto":
            return
        raise
    check_fits(saved, cfg, cfg.world_size, str(path), any_world_size)


def saved_config(trainer_part: dict) -> dict:
    """The config (with the world size) that ``trainer.pt`` records."""
    return json.loads(trainer_part["config"])


def check_fits(saved: dict, cfg: TrainConfig, world_size: int, source: str, any_world_size: bool = False) -> None:
    """Raise :class:`~course_lib.checkpoint.store.CheckpointError` for a checkpoint made by another
    kind of run (:data:`~course_lib.config.SHAPE_KEYS`, the reduction), or by another number of
    ranks unless the run's gradient sync gives the same bits on ``any_world_size``: DDP's sum
    and each rank's RNG depend on the world size, so that resume could only continue closely."""
    now = {**cfg.to_dict(), "world_size": world_size}
    diff = {k: (saved.get(k), now[k]) for k in SHAPE_KEYS if saved.get(k) != now[k]}
    if diff:
        raise store.CheckpointError(f"checkpoint {source} does not fit this config ("
                                    + ", ".join(f"{k}: checkpoint {a!r}, now {b!r}" for k, (a, b) in diff.items())
                                    + "); resume with the run's own settings, or pick a new --run-dir")
    if saved.get("reduction", cfg.reduction) != cfg.reduction:  # what a checkpoint holds depends on it (rank RNGs)
        raise store.CheckpointError(
            f"checkpoint {source} was saved with --reduction {saved['reduction']}, this run has --reduction "
            f"{cfg.reduction}: resume with the run's own --reduction")
    if saved["world_size"] != world_size and not any_world_size:
        raise store.CheckpointError(
            f"checkpoint {source} was saved by {saved['world_size']} rank(s), this run has {world_size}: DDP's "
            "gradient sum and each rank's RNG depend on the number of ranks, so the run could not continue exactly; "
            "resume on the same --world-size, or train both runs with a --reduction whose sum does not depend on it "
            "(train --help lists them)")


# --------------------------------------------------------------------------- putting it back
def restore(stateful: dict, read: Callable[[str], object], mode: str = "full") -> None:
    """``obj.load_state_dict(read(name))`` for every part of ``stateful`` except those ``mode``
    leaves out (:data:`LEFT_OUT`). ``read`` gives a part from a checkpoint folder or a live peer."""
    for name, obj in stateful.items():
        left_out = LEFT_OUT[mode]
        if name not in left_out and not ("rank parts" in left_out and store.written_by_rank(name) is not None):
            obj.load_state_dict(read(name))


def extend_schedule(optimizer, scheduler, saved: TrainConfig, now: TrainConfig, steps_per_epoch: int) -> str | None:
    """Extending a run ("ten more epochs") changes the length its LR decay was planned for. The
    rate of the next step is already in the optimizer (restored with it), and a new schedule
    would only act one step late: recompute it. The linear decay is stretched to the new end,
    as Hugging Face's Trainer does; the steps already done are unchanged. Returns the note to
    print, or ``None`` when the length did not change."""
    before, after = saved.schedule_length(steps_per_epoch), now.schedule_length(steps_per_epoch)
    if before == after:
        return None
    planned = optimizer.param_groups[0]["lr"]
    for group, base, fn in zip(optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * fn(scheduler.last_epoch)
    return (f"NOTE: the learning-rate schedule was planned for {before} steps and now runs to {after}: its linear "
            f"decay is stretched to end at step {after}, so the next step uses lr {optimizer.param_groups[0]['lr']:.3g} "
            f"(as planned: {planned:.3g}). Steps up to the checkpoint are unchanged. To extend bit-identically to a run "
            "planned that long, give both the same --schedule-steps.")
