"""Small configurations shared by the process-level tests."""
import subprocess
import sys

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
