"""Starting one process per rank: :func:`launch` from Python or a notebook (spawn's API, from a
forkserver where the OS has one: :mod:`course_lib._runtime.rank_start`), or ``torchrun`` from a
shell (one or several machines), with the same per-rank entry point, :func:`run_rank`.

``launch`` lets a notebook cell start a 2-rank run safely: bad settings refused before anything
starts, a free port, the backend (NCCL when every rank has its own GPU, else gloo) and threads per
rank, each rank's output in ``DIR/logs/rank{R}.log``, which survives a SIGKILL
(:mod:`course_lib._runtime.rank_output`), a failed or killed rank named, never a hang, one run per
directory. How a rank trains is its :class:`Reduction`: the core's is :data:`DDP_REDUCTION`; an
extension passes its own (``launch(cfg, reduction=...)``), with the traits of its gradient sync.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from course_lib._runtime import portability
from course_lib._runtime.processes import join_ranks, run_dir_lock
from course_lib._runtime.rank_output import RankOutput, Reporter, log_to
from course_lib._runtime.rank_start import attempt_store, hold_process_group, run_then_exit, start_ranks
from course_lib.checkpoint.faults import FaultInjector
from course_lib.checkpoint.resume import check_resume
from course_lib.checkpoint.store import CheckpointError
from course_lib.config import ConfigError, TrainConfig
from course_lib.ddp.outcome import EXIT_PREEMPTED, Outcome, exit_code
from course_lib.ddp.seams import DDP_TRAITS, SyncTraits
from course_lib.ddp.train import Trainer
from course_lib.watch.monitor import LAUNCHED_ENV


class RankFailed(RuntimeError):
    """A rank raised an exception; the message carries its traceback."""

    def __init__(self, rank: int, detail: str):
        super().__init__(f"rank {rank} failed:\n{detail}")
        self.rank = rank


class RunInterrupted(RuntimeError):
    """A rank was ended by a signal or exited non-zero (e.g. preempted with SIGTERM)."""

    def __init__(self, rank: int, exit_code: int | None, signal_name: str | None, step: int, checkpoint: str | None):
        self.rank, self.exit_code, self.signal_name = rank, exit_code, signal_name
        self.step, self.checkpoint = step, checkpoint
        if signal_name:
            how = f"was killed by {signal_name}"
        elif exit_code == EXIT_PREEMPTED:
            how = "stopped on SIGTERM (or SIGINT) after saving a checkpoint"
        else:
            how = f"exited with code {exit_code}"
        super().__init__(f"rank {rank} {how} after step {step}; newest valid checkpoint: {checkpoint or 'none'}. "
                         "Continue with --resume auto.")


def faults_for(cfg: TrainConfig, rank: int) -> FaultInjector | None:
    """The kills ``cfg`` plans for ``rank`` (``--kill-at-step``), or ``None``: a trainer meets a
    fault only when one is asked for."""
    return FaultInjector(cfg, rank) if cfg.kill_at_step else None


def resume_and_train(trainer: Trainer) -> Outcome:
    """Resume if ``--resume`` says so, say which planned kills cannot fire now, train."""
    trainer.resume()
    if isinstance(trainer.faults, FaultInjector) and trainer.rank == 0:
        for line in trainer.faults.explain(trainer.state.global_step, trainer.total_steps):
            trainer.report.line(line)
    return trainer.train()


def train_with_ddp(cfg: TrainConfig, rank: int, world_size: int, device: torch.device, report: Reporter,
                   data_file: str | None = None) -> Outcome:
    """One rank's run with DDP, the chapter's: its trainer built, resumed if ``--resume`` says so, trained."""
    return resume_and_train(Trainer(cfg, rank, world_size, device, report, data_file, faults=faults_for(cfg, rank)))


@dataclass(frozen=True)
class Reduction:
    """How a rank trains for one ``--reduction``, and what the launcher must know before any
    rank starts. ``train(cfg, rank, world_size, device, report, data_file)`` is one rank's run (a
    module-level function: it travels to the ranks by name) and returns its :class:`Outcome`;
    ``traits``, those of its gradient sync; ``check(cfg)``, why ``cfg`` cannot be trained so, or None."""
    name: str
    train: Callable[..., Outcome]
    traits: SyncTraits = DDP_TRAITS
    check: Callable[[TrainConfig], str | None] | None = None

    def threads_per_rank(self, cfg: TrainConfig, local_world_size: int) -> int:
        """Two ranks of two threads on two cores run slower than one rank: the cores are shared out."""
        return cfg.threads_per_rank or self.traits.threads or max(1, (os.cpu_count() or 1) // local_world_size)


DDP_REDUCTION = Reduction("ddp", train_with_ddp)


# --------------------------------------------------------------------------- before anything starts
def check_before_start(cfg: TrainConfig, reduction: Reduction = DDP_REDUCTION) -> None:
    """Refuse settings that would otherwise fail inside the ranks, after data preparation and
    process start-up, as a traceback per rank. One :class:`ConfigError`, one line, with the fix."""
    from course_lib import paths
    from course_lib.config import DATA_SOURCES as SOURCES  # data.sources.SOURCES, without importing datasets (~1 s)
    from course_lib.ddp.models import MODELS

    problems = []
    if cfg.model not in MODELS:
        problems.append(f"--model {cfg.model!r} is not a model here; choose one of {', '.join(MODELS)}")
    if cfg.data_source not in SOURCES:
        problems.append(f"--data-source {cfg.data_source!r} is not a source; choose one of {', '.join(SOURCES)}")
    if cfg.data_source == "path" and not cfg.data_path:
        problems.append("--data-source path needs --data-path (an aclImdb folder, or a CSV/parquet file with "
                        "'text' and 'label' columns)")
    why = reduction.check(cfg) if reduction.check else None
    if why:
        problems.append(why)
    checks = [lambda: paths.output_dir(cfg.run_dir), lambda: check_resume(cfg, reduction.traits.any_world_size)]
    if cfg.data_path:
        checks.append(functools.partial(paths.data_path, cfg.data_path))
    if cfg.cache_dir:
        checks.append(functools.partial(paths.output_dir, cfg.cache_dir, "--cache-dir"))
    if cfg.kill_at_step:
        checks.append(lambda: portability.check_kill_modes(cfg.kill_mode))
    for check in checks:
        try:
            check()
        except (ConfigError, CheckpointError) as err:
            problems.append(str(err))
    if problems:
        raise ConfigError("; ".join(problems))


# --------------------------------------------------------------------------- one rank
def choose_device(cfg: TrainConfig, local_rank: int) -> torch.device:
    want = cfg.device
    if want == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' was asked for but this machine has no CUDA GPU "
                           "(torch.cuda.is_available() is False); use --device cpu or auto")
    if want in ("cuda", "auto") and torch.cuda.is_available():
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")


def choose_backend(cfg: TrainConfig, device: torch.device) -> str:
    if cfg.backend != "auto":
        if cfg.backend == "nccl" and device.type != "cuda":
            raise RuntimeError("backend 'nccl' needs CUDA GPUs; on CPU use gloo (or --backend auto)")
        return cfg.backend
    return "nccl" if device.type == "cuda" else "gloo"


def rank_setup(cfg: TrainConfig, local_rank: int, local_world_size: int, reduction: Reduction) -> tuple:
    """What a rank settles before its process group: the platform's settings, its threads,
    deterministic kernels if asked for, its device (one GPU per rank where there are GPUs), the
    backend and the collectives' timeout."""
    portability.apply_process_group_env(os.environ.get("MASTER_ADDR", "127.0.0.1"))
    torch.set_num_threads(reduction.threads_per_rank(cfg, local_world_size))
    if cfg.deterministic:  # before the first cuBLAS call, which reads the workspace setting
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    device = choose_device(cfg, local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device, choose_backend(cfg, device), timedelta(seconds=cfg.timeout_s)


def run_rank(cfg: TrainConfig, rank: int, world_size: int, local_rank: int, local_world_size: int,
             report: Reporter, init_method: str = "env://", data_file: str | None = None,
             reduction: Reduction = DDP_REDUCTION) -> Outcome:
    """Everything one rank does (the DDP tutorial's ``ddp_setup`` + ``Trainer``): threads, device,
    process group, the reduction's training, clean-up; returns why it ended."""
    device, backend, timeout = rank_setup(cfg, local_rank, local_world_size, reduction)
    store = attempt_store(rank, world_size, timeout)
    if store is not None:
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=timeout)
    else:
        dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world_size, timeout=timeout)
    hold_process_group()
    try:
        return reduction.train(cfg, rank, world_size, device, report, data_file)
    finally:
        dist.destroy_process_group()


def _spawned_worker(rank: int, reduction: Reduction, cfg_dict: dict, port: int, log_dir: str, data_file: str) -> None:
    """Entry point of a rank started by :func:`launch`; it leaves with its outcome's exit code. It
    lives in the package because a function defined in a notebook cannot be pickled into a new
    process (``reduction`` travels by the names of its functions)."""
    log_to(log_dir, rank)
    cfg = TrainConfig.from_dict(cfg_dict)
    run_then_exit(lambda: exit_code(run_rank(cfg, rank, cfg.world_size, rank, cfg.world_size, Reporter(rank, progress=True),
                                   init_method=f"tcp://127.0.0.1:{port}", data_file=data_file,
                                   reduction=reduction)))


# --------------------------------------------------------------------------- the parent
def launch(cfg: TrainConfig, quiet: bool = False, on_start: Callable[[list[int]], None] | None = None,
           launched_at: float | None = None, reduction: Reduction | None = None) -> dict:
    """Train ``cfg`` with one process per rank and return rank 0's summary (notebooks 03-05).
    Raises :class:`ConfigError` (one line, before any rank starts) for settings that cannot work,
    :class:`RankFailed` when a rank raised, :class:`RunInterrupted` when one was killed or stopped;
    an interrupted kernel (Ctrl-C) asks the ranks to save and stop (SIGTERM) before it re-raises.

    ``on_start(pids)`` is called once the workers run (the lab uses it for "kill now").
    ``launched_at`` (default: now) is when this start began, for the restart cost that
    ``attempts.jsonl`` records (the command line passes its own start time). ``reduction``: how
    the ranks train (default DDP; an extension's for another ``cfg.reduction``).
    Notebook 03, §4-5 and deep-dive D; notebook 04, §2.
    """
    launched = repr(launched_at or time.time())  # for these ranks only: a torchrun started later must not read it
    portability.check_spawn_safe()  # before anything is written (starting the ranks asks again)
    if reduction is None and cfg.reduction != DDP_REDUCTION.name:
        raise ConfigError(f"--reduction {cfg.reduction} is not the core's (ddp): pass its Reduction, "
                          "launch(cfg, reduction=...)")
    reduction = reduction or DDP_REDUCTION
    if reduction.name != cfg.reduction:
        raise ConfigError(f"the config asks for --reduction {cfg.reduction}, the Reduction given is {reduction.name}")
    check_before_start(cfg, reduction)
    with run_dir_lock(cfg.run_dir):
        return _launch(cfg, quiet, on_start, launched, reduction)


def _launch(cfg: TrainConfig, quiet: bool, on_start, launched: str, reduction: Reduction) -> dict:
    from course_lib.checkpoint.store import latest_valid
    from course_lib.data.prepare import prepare_for
    from course_lib.watch.monitor import read_ledger

    cores = os.cpu_count() or 1
    if cfg.world_size > cores and cfg.device != "cuda":
        warnings.warn(f"world_size {cfg.world_size} > {cores} CPU cores: ranks will share cores and each step "
                      "will be slower than with fewer ranks (the run is still correct)", stacklevel=3)
    choose_device(cfg, 0)  # fail here, in the parent, if CUDA is asked for and missing
    port = portability.choose_port()  # a busy MASTER_PORT is refused before anything is written
    run_dir = Path(cfg.run_dir)
    log_dir = run_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        data = prepare_for(cfg, progress=not quiet)  # errors surface here, once; ranks read the file
    except (ValueError, TypeError, KeyError, OSError) as err:  # data or tokenizer that cannot be read
        raise ConfigError(f"cannot prepare the data ({' '.join(str(err).split())[:300]}); check --data-source, "
                          "--data-path and --tokenizer") from err
    portability.apply_process_group_env()  # the spawned ranks inherit it

    tail = RankOutput(log_dir, cfg.world_size, quiet)
    ctx = start_ranks(_spawned_worker, (reduction, cfg.to_dict(), port, str(log_dir), str(data.path)), cfg.world_size,
                      cfg.start_method, env={LAUNCHED_ENV: launched}, preload=[reduction.train.__module__])
    if on_start:
        on_start(ctx.pids())
    try:
        end = join_ranks(ctx, tail.poll, grace_period=10)  # 10 s: what survivors have to save
    except KeyboardInterrupt:  # a notebook's "interrupt kernel": ask the ranks to save and stop
        for pid in ctx.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.time() + cfg.timeout_s
        while time.time() < deadline and any(p.is_alive() for p in ctx.processes):
            tail.poll()
            time.sleep(0.2)
        raise
    finally:
        tail.close()
    if end is not None and end.error is not None:
        raise RankFailed(end.rank, end.error)
    if end is not None:
        step = max((r["step"] for r in read_ledger(run_dir, end.rank, last_attempt=False)), default=0)
        newest = latest_valid(run_dir, log=None)
        raise RunInterrupted(end.rank, end.exit_code, end.signal, step, newest.name if newest else None)
    return json.loads((run_dir / "final" / "summary.json").read_text())  # every rank ended well: it is there
