"""Small configurations shared by the process-level tests."""
import subprocess
import sys
from pathlib import Path

from course_lib.config import TrainConfig


def small_cfg(run_dir, **kw) -> TrainConfig:
    """A 2-rank bag-model run on 1,200 reviews: seconds, yet every mechanism is exercised. With the
    chapter's DDP, as notebooks 03-05 run it: there every piece of state matters (``no-rng`` parts,
    a changed world size is close, not exact); tests of the default reduction say ``invariant``."""
    base = dict(run_dir=str(run_dir), train_limit=1200, epochs=2, global_batch_size=64, save_every_steps=5, embed_dim=8,
                log_every=1000, eval_limit=200, warmup_steps=5, reduction="ddp")
    return TrainConfig(**{**base, **kw})


def cli(*args, timeout=300, env=None) -> subprocess.CompletedProcess:
    """``python -m course_lib ARGS`` in a real subprocess."""
    return subprocess.run([sys.executable, "-m", "course_lib", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)


def cfg_args(cfg: TrainConfig) -> list[str]:
    """The command-line flags that reproduce ``cfg``."""
    return ["--run-dir", cfg.run_dir, *cfg.to_args(skip=("run_dir",))]


def assert_run_directory(run, reference=None) -> None:
    """The run-directory contract, whatever started the run (``launch``, ``python -m course_lib
    train``, torchrun, elastic agents): rank 0 wrote ``config.json``, and ``compare`` (against
    ``reference``), ``verify``, ``predict`` and ``advise`` accept the folder (through the command
    line's own ``main``, in this process)."""
    from course_lib.cli import main

    assert (Path(run) / "config.json").is_file(), f"{run} has no config.json"
    if reference is not None:
        assert main(["compare", str(reference), str(run)]) == 0
    assert main(["verify", str(run)]) == 0
    assert main(["predict", str(run), "A wonderful film, I loved every minute."]) == 0
    assert main(["advise", str(run), "--mtbf", "1h"]) == 0


def digest_of_checkpoint(path) -> str:
    """The digest a member of an elastic group sends with its state
    (``peer_state.training_state_digest``), of the checkpoint ``path`` of the same step, read from disk."""
    from course_lib.beyond.elastic.peer_state import training_state_digest
    from course_lib.checkpoint.store import STATE_PARTS, load_part

    return training_state_digest({name: load_part(path, name) for name in STATE_PARTS})


def solution_lines(exercise: str) -> set[str]:
    """The reference solution's lines a diagnosis must not show (16 characters or more, no comments)."""
    import inspect

    from course_lib.exercises import solution_of

    return {line.strip() for fn in solution_of(exercise) for line in inspect.getsource(fn).splitlines()[1:]
            if len(line.strip()) >= 16 and not line.strip().startswith("#")}
