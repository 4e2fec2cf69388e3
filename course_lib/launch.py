"""Starting one process per rank: ``torch.multiprocessing`` from Python or a notebook (spawn's
API, with a forkserver where the OS has one: :mod:`course_lib.rank_start`), or ``torchrun``
from a shell (one or several machines), with the same per-rank entry point.

What ``launch`` takes care of, so that a notebook cell can start a 2-rank run safely:

* a free port on loopback (or ``MASTER_ADDR``/``MASTER_PORT`` when set, checked first), and
  what the platform needs before a process group forms (:mod:`course_lib.portability`);
* the backend: NCCL when every rank can have its own GPU, else gloo;
* threads: each rank gets ``cores // ranks`` intra-op threads (two ranks with two threads
  each on two cores run slower than one rank);
* worker output: each rank writes to ``DIR/logs/rank{R}.log`` and the parent prints new lines
  as they come (:mod:`course_lib.rank_output`), so both ranks' lines appear in the notebook
  cell. A file per rank survives a SIGKILL, a shared queue would not;
* failure: when a rank raises or dies, the parent raises :class:`RankFailed` or
  :class:`RunInterrupted` naming the rank (and its traceback or signal), never hangs; the
  process group is destroyed on every path;
* bad settings: :func:`check_before_start` refuses them (:class:`ConfigError`, one sentence
  with the fix) before data is prepared or any process starts;
* one run per directory: a second launch into a directory that a live run holds is refused
  (:func:`run_dir_lock`), since two runs would interleave their checkpoints and ledgers.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Callable, NoReturn

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from .config import ConfigError, TrainConfig
from .faults import EXIT_PREEMPTED
from .monitor import LAUNCHED_ENV
from .portability import (apply_process_group_env, check_kill_modes, check_spawn_safe, choose_port, free_port,  # noqa: F401
                          killed_hard, tcpstore_uses_libuv)  # free_port: launch.free_port for elastic and the tests
from .rank_output import RankOutput, Reporter
from .rank_start import start_ranks
from .spawn_check import try_spawn  # noqa: F401  (launch.try_spawn, as notebook 03 calls it)
from .torchrun import torchrun_command  # noqa: F401  (launch.torchrun_command, as notebook 03 calls it)


class RankFailed(RuntimeError):
    """A rank raised an exception; the message carries its traceback."""

    def __init__(self, rank: int, detail: str):
        super().__init__(f"rank {rank} failed:\n{detail}")
        self.rank = rank


class RunInterrupted(RuntimeError):
    """A rank was ended by a signal or exited non-zero (e.g. preempted with SIGTERM)."""

    def __init__(self, rank: int, exit_code: int | None, signal_name: str | None, step: int, checkpoint: str | None):
        self.rank, self.exit_code, self.signal_name, self.step, self.checkpoint = rank, exit_code, signal_name, step, checkpoint
        super().__init__(self.describe("en"))

    def describe(self, lang: str | None = None) -> str:
        """What happened, in ``lang`` (the notebook's language by default)."""
        from .i18n import resolve, tr

        lang = resolve(lang)
        if self.signal_name:
            how = tr("was killed by {signal}", lang, signal=self.signal_name)
        elif self.exit_code == EXIT_PREEMPTED:
            how = tr("stopped on SIGTERM after saving a checkpoint", lang)
        else:
            how = tr("exited with code {code}", lang, code=self.exit_code)
        return tr("rank {rank} {how} after step {step}; newest valid checkpoint: {checkpoint}. Continue with --resume auto.",
                  lang, rank=self.rank, how=how, step=self.step, checkpoint=self.checkpoint or tr("none", lang))


# --------------------------------------------------------------------------- before anything starts
def check_before_start(cfg: TrainConfig) -> None:
    """Refuse settings that would otherwise fail inside the ranks, after data preparation and
    process start-up, as a traceback per rank. One :class:`ConfigError`, one line, with the fix."""
    from . import paths
    from .config import DATA_SOURCES as SOURCES  # data.SOURCES, without importing datasets (~1 s)
    from .models import MODELS

    problems = []
    if cfg.model not in MODELS:
        problems.append(f"--model {cfg.model!r} is not a model here; choose one of {', '.join(MODELS)}")
    if cfg.data_source not in SOURCES:
        problems.append(f"--data-source {cfg.data_source!r} is not a source; choose one of {', '.join(SOURCES)}")
    if cfg.data_source == "path" and not cfg.data_path:
        problems.append("--data-source path needs --data-path (an aclImdb folder, or a CSV/parquet file with "
                        "'text' and 'label' columns)")
    checks = [lambda: paths.output_dir(cfg.run_dir), lambda: _check_resume(cfg)]
    if cfg.data_path:
        checks.append(lambda: paths.data_path(cfg.data_path))
    if cfg.cache_dir:
        checks.append(lambda: paths.output_dir(cfg.cache_dir, "--cache-dir"))
    if cfg.kill_at_step:
        checks.append(lambda: check_kill_modes(cfg.kill_mode))
    for check in checks:
        try:
            check()
        except ConfigError as err:
            problems.append(str(err))
    if problems:
        raise ConfigError("; ".join(problems))


def _check_resume(cfg: TrainConfig) -> None:
    """The checkpoint a resume would load: there, valid, and of this run's shape (else the
    ranks would refuse it after start-up)."""
    from .checkpoint import config_differences, latest_valid, load_part, verify
    from .config import SHAPE_KEYS

    if cfg.resume == "none":
        return
    if cfg.resume == "auto":
        path = latest_valid(cfg.run_dir, log=None) if Path(cfg.run_dir).is_dir() else None
        if path is None:
            return  # a fresh start: the ranks say so
    else:
        path = Path(cfg.resume)
        if not path.exists():
            raise ConfigError(f"--resume {path} does not exist; use --resume auto (newest valid checkpoint of "
                              "--run-dir) or name a checkpoint folder DIR/checkpoints/step-N")
        if not (path / "manifest.json").exists():
            newest = latest_valid(path, log=None) if path.is_dir() else None
            hint = f"--resume {newest}" if newest else "--resume auto with --run-dir set to the run"
            raise ConfigError(f"--resume {path} is not a checkpoint folder (no manifest.json); use {hint}")
        ok, reason = verify(path)
        if not ok:
            raise ConfigError(f"--resume {path} is not a valid checkpoint ({reason}); use --resume auto to take "
                              "the newest valid one")
    saved = json.loads(load_part(path, "trainer.pt")["config"])
    diff = config_differences(saved, cfg.to_dict(), SHAPE_KEYS)
    if diff:
        raise ConfigError(f"checkpoint {path} does not fit this config ("
                          + ", ".join(f"{k}: checkpoint {a!r}, now {b!r}" for k, (a, b) in diff.items())
                          + "); resume with the run's own settings, or pick a new --run-dir")


@contextlib.contextmanager
def run_dir_lock(run_dir: str | Path, shared: bool = False):
    """Hold ``DIR/.lock`` for the life of a run. The kernel releases it when the holder dies,
    SIGKILL included, so a crashed run never leaves a stale lock behind. The members of an
    elastic group (``shared``) hold it together: no other run gets in, and nodes may come and go."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, as before
        yield
        return
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(run_dir) / ".lock", "a+") as f:
        try:
            fcntl.flock(f, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            raise ConfigError(f"{run_dir} is in use by another run ({f.read().strip() or 'unknown process'}); "
                              "wait for it to end, stop it, or pick another --run-dir") from None
        if not shared:
            f.truncate(0)
        f.write(f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%H:%M:%S')}\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


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


def threads_per_rank(cfg: TrainConfig, local_world_size: int) -> int:
    """``cores // ranks``; but the invariant reduction needs a thread count that does not
    depend on the world size (a kernel may sum in another order with more threads): 1."""
    if cfg.threads_per_rank:
        return cfg.threads_per_rank
    return 1 if cfg.reduction == "invariant" else max(1, (os.cpu_count() or 1) // local_world_size)


def run_rank(cfg: TrainConfig, rank: int, world_size: int, local_rank: int, local_world_size: int,
             report: Reporter, init_method: str = "env://", data_file: str | None = None) -> dict:
    """Everything one rank does: threads, device, process group, training, clean-up."""
    from .train import Trainer

    apply_process_group_env(os.environ.get("MASTER_ADDR", "127.0.0.1"))
    torch.set_num_threads(threads_per_rank(cfg, local_world_size))
    device = choose_device(cfg, local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    backend = choose_backend(cfg, device)
    timeout = timedelta(seconds=cfg.timeout_s)
    if cfg.elastic_endpoint:  # the kit's elastic group: the Trainer joins it, and it re-forms in-process
        from .membership import run_member

        return run_member(cfg, device, report, backend, timeout)
    store = _elastic_store(rank, world_size, timeout)
    if store is not None:
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=timeout)
    else:
        dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world_size, timeout=timeout)
    hold_process_group()
    try:
        return Trainer(cfg, rank, world_size, device, report, data_file).train()
    finally:
        dist.destroy_process_group()


def _elastic_store(rank: int, world_size: int, timeout: timedelta):
    """Under torchrun, a store whose keys are private to this attempt.

    With the agents' shared store (torchrun's default), every restart reuses one TCPStore, and
    gloo can read the addresses the previous, killed attempt published there: the restarted
    ranks then hang in ``init_process_group`` (seen here; cf. pytorch/pytorch#135712). A prefix
    per ``TORCHELASTIC_RESTART_COUNT`` keeps each attempt's keys apart. Without it
    (``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``, the kit's elastic commands) every round has a store
    of its own, which rank 0 hosts on a fresh port, and no prefix: the nodes' restart counts
    differ (a failure counts on its node only), so a prefix by them would part the ranks."""
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if restart is None or "MASTER_ADDR" not in os.environ:
        return None
    agent_hosts = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    base = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world_size,
                         is_master=not agent_hosts and rank == 0, timeout=timeout, multi_tenant=not agent_hosts,
                         use_libuv=tcpstore_uses_libuv())
    return dist.PrefixStore(f"course_lib/attempt-{restart}", base) if agent_hosts else base


def _spawned_worker(rank: int, cfg_dict: dict, port: int, log_dir: str, data_file: str) -> None:
    """Entry point of a rank started by ``launch`` (:mod:`course_lib.rank_start`). It lives in
    the package because a function defined in a notebook cannot be pickled into a new process."""
    log = open(Path(log_dir) / f"rank{rank}.log", "a", buffering=1)
    os.dup2(log.fileno(), 1)  # fd-level: tracebacks and C++ warnings land in the log too
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    cfg = TrainConfig.from_dict(cfg_dict)
    run_then_exit(lambda: run_rank(cfg, rank, cfg.world_size, rank, cfg.world_size, Reporter(rank, progress=True),
                                   init_method=f"tcp://127.0.0.1:{port}", data_file=data_file))


def run_then_exit(work: Callable[[], object]) -> NoReturn:
    """Run a rank's ``work``, then leave with its exit code (0, or the code of the
    ``SystemExit`` it raised: 143 after a SIGTERM's save, :data:`EXIT_SURVIVED` after an
    emergency save) without the interpreter's teardown. At interpreter exit a rank sometimes
    died with "terminate called without an active exception" (a c10d thread still joinable):
    SIGABRT after its work was on disk, which the parent must read as a crash. That happened
    after a clean finish and, in CI, after a SIGTERM's save (reported as "killed by SIGABRT").
    An exception other than ``SystemExit`` propagates: its traceback is the report."""
    try:
        work()
    except SystemExit as stop:
        exit_now(stop.code if isinstance(stop.code, int) else 1)
    exit_now(0)


_HELD_GROUPS: list = []


def hold_process_group() -> None:
    """Keep this rank's default process group referenced until the rank leaves through
    :func:`exit_now`, so that its C++ destructor never runs. ``~ProcessGroupGloo`` joins gloo's
    worker threads, and it runs inside a Python object's deallocation, which holds the GIL; a
    worker thread still freeing a finished collective's tensor needs the GIL: a deadlock. Seen
    here when a rank's last reference to a DDP model (its reducer holds the group) went at the
    end of the book's ``train``, after ``all_gather_object``: the rank never exited."""
    _HELD_GROUPS.append(dist.group.WORLD)


def exit_now(code: int) -> NoReturn:
    """Flush this rank's output and leave at once, with ``code`` (see :func:`run_then_exit`)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# --------------------------------------------------------------------------- the parent
def launch(cfg: TrainConfig, quiet: bool = False, on_start: Callable[[list[int]], None] | None = None,
           launched_at: float | None = None) -> dict:
    """Train ``cfg`` with one spawned process per rank and return rank 0's summary.

    ``on_start(pids)`` is called once the workers run (the lab uses it for "kill now").
    ``launched_at`` (default: now) is when this start began, for the restart cost that
    ``attempts.jsonl`` records (the command line passes its own start time).
    """
    launched = repr(launched_at or time.time())  # for these ranks only: a torchrun started later must not read it
    check_spawn_safe()  # before anything is written (starting the ranks asks again)
    check_before_start(cfg)
    with run_dir_lock(cfg.run_dir):
        return _launch(cfg, quiet, on_start, launched)


def _launch(cfg: TrainConfig, quiet: bool, on_start, launched: str) -> dict:
    from .checkpoint import latest_valid
    from .monitor import read_ledger
    from .prepare import prepare_for

    cores = os.cpu_count() or 1
    if cfg.world_size > cores and cfg.device != "cuda":
        warnings.warn(f"world_size {cfg.world_size} > {cores} CPU cores: ranks will share cores and each step "
                      "will be slower than with fewer ranks (the run is still correct)", stacklevel=3)
    choose_device(cfg, 0)  # fail here, in the parent, if CUDA is asked for and missing
    port = choose_port()  # a busy MASTER_PORT is refused before anything is written
    run_dir = Path(cfg.run_dir)
    log_dir = run_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    cfg.save(run_dir / "config.json")
    try:
        data = prepare_for(cfg, progress=not quiet)  # errors surface here, once; ranks read the file
    except (ValueError, TypeError, KeyError, OSError) as err:  # data or tokenizer that cannot be read
        raise ConfigError(f"cannot prepare the data ({' '.join(str(err).split())[:300]}); check --data-source, "
                          "--data-path and --tokenizer") from err
    apply_process_group_env()  # the spawned ranks inherit it

    tail = RankOutput(log_dir, cfg.world_size, quiet)
    ctx = start_ranks(_spawned_worker, (cfg.to_dict(), port, str(log_dir), str(data.path)), cfg.world_size,
                      cfg.start_method, env={LAUNCHED_ENV: launched})
    if on_start:
        on_start(ctx.pids())
    try:
        while not ctx.join(timeout=0.2, grace_period=10):
            tail.poll()
    except (mp.ProcessRaisedException, mp.ProcessExitedException) as err:
        killed = _killed_rank(ctx)  # a rank's SIGKILL makes its peers raise too; report the cause
        if isinstance(err, mp.ProcessRaisedException) and killed is None:
            raise RankFailed(err.error_index, str(err)) from None
        rank = killed if killed is not None else err.error_index
        code = ctx.processes[rank].exitcode
        step = max((r["step"] for r in read_ledger(run_dir, rank, last_attempt=False)), default=0)
        newest = latest_valid(run_dir, log=None)
        raise RunInterrupted(rank, code if code >= 0 else None, signal.Signals(-code).name if code < 0 else None,
                             step, newest.name if newest else None) from None
    except KeyboardInterrupt:  # a notebook's "interrupt kernel": ask the ranks to save and stop
        for pid in ctx.pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + cfg.timeout_s
        while time.time() < deadline and any(p.is_alive() for p in ctx.processes):
            tail.poll()
            time.sleep(0.2)
        raise
    finally:
        tail.close()
        for path in ctx.error_files:  # spawn leaves a failed rank's traceback file in /tmp
            Path(path).unlink(missing_ok=True)
    return json.loads((run_dir / "final" / "summary.json").read_text())


def _killed_rank(ctx) -> int | None:
    """The first rank that died by SIGKILL (the cause when a peer then fails on a lost
    connection), or ``None``."""
    for rank, proc in enumerate(ctx.processes):
        if killed_hard(proc.exitcode):
            return rank
    return None
