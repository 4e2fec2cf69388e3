"""Full-state, atomic, verified checkpoints.

The textbook saves model + optimizer + loss every 10 epochs into one file. If the process
dies while that file is being written, the only checkpoint is gone. Here a checkpoint is a
folder that only *exists* once it is complete:

1. every rank writes its files into ``checkpoints/.tmp-step-N-attemptA/`` (written, flushed,
   fsynced): a folder of its own per save, so two saves (of one step by two attempts, say)
   never mix their files;
2. after a barrier, rank 0 checks that every part a ``W``-rank checkpoint must hold is there
   (:func:`required_parts`), hashes every file and writes ``manifest.json`` (sha256 + size of
   each file, the list of parts, step, world size, config hash, library versions), fsynced;
3. rank 0 fsyncs the folder, renames it to ``step-{N:08d}`` (atomic on one file system),
   replaces ``LATEST`` atomically (write ``LATEST.tmp``, fsync, ``os.replace``: a pointer for
   people and tools; the kit finds the newest checkpoint by verifying the folders themselves),
   then fsyncs ``checkpoints/`` and the run's folder, so that no rename is undone.

A folder without a valid manifest is not a checkpoint, and neither is one whose manifest
lacks a part its world size requires. A crash at any instant leaves either the old state or
the new one, never half of one, and so does a power cut (POSIX's worst case: data not fsynced
lost, a create or rename whose folder was not fsynced undone): every file and folder of a
checkpoint is fsynced before it counts, and the ranks' ledgers before each commit. Loading
uses ``weights_only=True`` only: a checkpoint is data, never code. With ``--async-save`` rank 0's
write and commit run in a :class:`BackgroundWriter` thread while training goes on.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import pickle
import platform
import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from course_lib import __version__
from course_lib._runtime.portability import fsync_dir, nice_is_per_thread
from course_lib._runtime.rank_output import say

FORMAT = 1
_STEP_DIR = re.compile(r"^step-(\d{8})$")
_RANK_PART = re.compile(r"^rng-rank(\d+)\.pt$")
STATE_PARTS = ("model.pt", "optimizer.pt", "scheduler.pt", "trainer.pt")  # written by rank 0


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used, with the reason."""


@dataclass
class SaveLedger:
    """Which step a trainer's run holds on disk. ``saved``: the newest step saved or resumed from,
    the same on every rank (so that every rank enters a save's collectives, or none does);
    ``committed`` (rank 0): the newest whose commit went through, since a background commit can
    still fail after every rank counted its step as saved."""
    saved: int | None = None
    committed: int | None = None

    def on_disk(self, step: int) -> None:
        """``step`` is on disk already (resumed from, or saved by an earlier trainer)."""
        self.saved = self.committed = step


# --------------------------------------------------------------------------- paths
def checkpoint_root(run_dir: str | Path) -> Path:
    """``DIR/checkpoints``, where a run's checkpoint folders live. Notebook 04, §4."""
    return Path(run_dir) / "checkpoints"


def step_dir_name(step: int) -> str:
    return f"step-{step:08d}"


def tmp_dir(run_dir: str | Path, step: int, attempt: int = 1) -> Path:
    """Where the save of ``step`` by ``attempt`` is assembled. A run saves a step at most once
    per attempt, so no two saves share this folder."""
    return checkpoint_root(run_dir) / f".tmp-{step_dir_name(step)}-attempt{attempt}"


def rank_part(rank: int) -> str:
    """The part of a checkpoint that rank ``rank`` writes itself: its RNG."""
    return f"rng-rank{rank}.pt"


def written_by_rank(name: str) -> int | None:
    """Which rank writes the part ``name`` itself (its own RNG file), or ``None`` for the shared
    state, which rank 0 writes once every rank has written its own: the one place that says so."""
    m = _RANK_PART.match(name)
    return int(m.group(1)) if m else None


def required_parts(world_size: int, rank_rng: bool = True) -> list[str]:
    """The files a checkpoint of a ``world_size``-rank run must hold: the shared state and
    one RNG file per rank. A checkpoint missing any of them cannot resume every rank. Runs
    whose randomness belongs to no rank (a sync whose traits say so) need no RNG files."""
    return [*STATE_PARTS, *(rank_part(r) for r in range(world_size if rank_rng else 0))]


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Committed-looking folders, oldest first (validity is checked separately)."""
    root = checkpoint_root(run_dir)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and _STEP_DIR.match(p.name))


def _write_synced(path: Path, data: bytes | memoryview) -> None:
    """``data`` into ``path``, flushed and fsynced: its bytes are on disk before any rename
    publishes it, so a crash after the rename never finds a half-written file."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------- writing
@contextlib.contextmanager
def _no_zip_crc():
    """``torch.save`` without its per-record zip CRC32: the manifest's sha256 already guards
    every byte, and the CRC doubled the serialisation's CPU (CONTRIBUTING)."""
    get = getattr(torch.serialization, "get_crc32_options", None)  # torch >= 2.6
    if get is None:
        yield
        return
    before = get()
    torch.serialization.set_crc32_options(False)
    try:
        yield
    finally:
        torch.serialization.set_crc32_options(before)


def serialize(obj) -> memoryview:
    """``torch.save`` into memory. The bytes are also the asynchronous save's snapshot: once
    serialised, training may change the live tensors. Serialising here, in the training
    thread, instead of cloning the tensors and pickling them in the writer thread, leaves the
    writer only work that releases the GIL (hashing, writing) and copies the state once, not twice."""
    buf = io.BytesIO()
    with _no_zip_crc():
        torch.save(obj, buf)
    return buf.getbuffer()


def write_part(folder: Path, name: str, obj) -> dict:
    """Write ``obj`` (or bytes from :func:`serialize`) to ``folder/name``, flushed and fsynced;
    returns its sha256 and size (hashed from memory: the commit need not read the file back)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = obj if isinstance(obj, memoryview) else serialize(obj)
    _write_synced(folder / name, data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def write_atomic(path: Path, data: bytes | memoryview) -> None:
    """Replace ``path`` with ``data`` in one rename (written and fsynced first), then fsync its
    folder (and the folder above, for a folder it creates): readers see the old file or the new
    one, never half of one, and a power cut does not undo it (used for ``config.json``,
    ``final/`` and the exercises' cache). The temporary file is this process's own: two writers
    of one path each rename a whole file."""
    new_folder = not path.parent.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _write_synced(tmp, data)
    os.replace(tmp, path)
    fsync_dir(path.parent)
    if new_folder:
        fsync_dir(path.parent.parent)


def commit(run_dir: str | Path, step: int, meta: dict, known: dict | None = None, attempt: int = 1) -> Path:
    """Rank 0, after every rank has written its parts: the manifest (:func:`write_manifest`),
    then the folder renamed to ``step-{N:08d}`` and ``LATEST`` replaced. A step committed
    before (by an earlier attempt, after an ``epoch-start`` resume) is replaced in two renames,
    and a crash between them leaves every older checkpoint valid. Returns the committed folder."""
    tmp = tmp_dir(run_dir, step, attempt)
    write_manifest(tmp, step, meta, known)
    final = checkpoint_root(run_dir) / step_dir_name(step)
    if final.exists():
        old = tmp.with_name(f".old-{final.name}-attempt{attempt}")
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
    write_latest(run_dir, final)
    return final


def write_manifest(tmp: Path, step: int, meta: dict, known: dict | None = None) -> None:
    """Check that ``tmp`` holds every part a checkpoint of ``meta["world_size"]`` ranks requires
    (``meta["rank_rng"]``: with one RNG file per rank; default True), else raise
    :class:`CheckpointError`; then write ``manifest.json`` (each file's sha256 and size, the
    parts, ``meta``, the library versions), fsync it and the folder: the folder is ready to be
    renamed. ``known``: hashes :func:`write_part` already computed (the others are read back)."""
    known = known or {}
    files = {p.name: known.get(p.name) or {"sha256": _sha256(p), "size": p.stat().st_size}
             for p in sorted(tmp.iterdir()) if p.name != "manifest.json"}
    parts = required_parts(meta["world_size"], meta.get("rank_rng", True))
    missing = [name for name in parts if name not in files]
    if missing:
        raise CheckpointError(f"not committing step {step}: {', '.join(missing)} missing from {tmp.name} "
                              f"(a {meta['world_size']}-rank checkpoint holds {', '.join(parts)})")
    manifest = {
        "format": FORMAT, "step": step, "files": files, "parts": parts, "created": time.time(),
        "versions": {"torch": torch.__version__, "python": platform.python_version(), "course_lib": __version__},
        **meta,
    }
    _write_synced(tmp / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True).encode())
    fsync_dir(tmp)  # the folder's entries on disk before its rename makes it a checkpoint


def write_latest(run_dir: str | Path, final: Path) -> None:
    """Replace ``LATEST`` with ``final``'s name, atomically, then make the commit durable: fsync
    ``checkpoints/`` (the renames of ``final`` and of ``LATEST``) and the run's folder
    (``checkpoints/`` itself, new at the first save). ``LATEST`` is written for people and tools
    (``cat DIR/checkpoints/LATEST``); the kit itself never trusts it: :func:`latest_valid`
    verifies the folders themselves, newest first."""
    root = checkpoint_root(run_dir)
    latest_tmp = root / f"LATEST.tmp-{os.getpid()}"  # one per writer: several may commit at once
    _write_synced(latest_tmp, f"{final.name}\n".encode())
    os.replace(latest_tmp, root / "LATEST")
    fsync_dir(root)
    fsync_dir(root.parent)


def remove_stale_tmp(run_dir: str | Path) -> list[Path]:
    """Uncommitted ``.tmp-*`` folders are leftovers of a crash mid-save: never valid, removed.
    An ``.old-*`` folder is a committed checkpoint that a crashed commit was replacing: put back
    if its replacement never arrived, else removed. Called only as an attempt starts, before
    any rank saves: while a run saves, each save removes only its own folder."""
    root = checkpoint_root(run_dir)
    if not root.is_dir():
        return []
    stale = list(root.glob(".tmp-*"))
    for old in root.glob(".old-*"):
        final = root / old.name[len(".old-"):].rsplit("-attempt", 1)[0]
        if final.exists():
            stale.append(old)
        else:
            os.rename(old, final)
            fsync_dir(root)  # put back for good before this attempt resumes from it
    for p in stale:
        shutil.rmtree(p, ignore_errors=True)
    return stale


# --------------------------------------------------------------------------- verifying
def verify(path: str | Path, sha256: bool = True) -> tuple[bool, str]:
    """``(True, "ok")`` or ``(False, reason)`` for one checkpoint folder: its manifest, the parts its
    world size requires, each file's size and its sha256. ``sha256=False`` reads no file's bytes
    (what a crash mid-save leaves, a torn manifest or a file cut short, is still found): the check
    a launcher makes before any rank starts, which leaves the hashing to the rank that loads."""
    path = Path(path)
    m = _STEP_DIR.match(path.name)
    man_path = path / "manifest.json"
    if not man_path.exists():
        return False, "no manifest.json (never committed)"
    try:
        manifest = json.loads(man_path.read_text())
        files = manifest["files"]
        step = int(manifest["step"])
    except (ValueError, KeyError, TypeError) as err:
        return False, f"manifest unreadable ({type(err).__name__}: {err})"
    if manifest.get("format") != FORMAT:
        return False, f"manifest format {manifest.get('format')!r}, expected {FORMAT}"
    if m and int(m.group(1)) != step:
        return False, f"foreign manifest: it describes step {step}, the folder is {path.name}"
    if not isinstance(manifest.get("world_size"), int) or manifest["world_size"] < 1:
        return False, "manifest does not state the world size, so its completeness cannot be checked"
    parts = required_parts(manifest["world_size"], manifest.get("rank_rng", True))
    unlisted = [name for name in parts if name not in files or name not in manifest.get("parts", parts)]
    if unlisted:
        return False, (f"incomplete: {', '.join(unlisted)} missing (a {manifest['world_size']}-rank checkpoint "
                       f"must hold {', '.join(parts)})")
    extra = sorted({p.name for p in path.iterdir()} - set(files) - {"manifest.json"})
    if extra:
        return False, f"files not in the manifest: {extra}"
    for name, info in files.items():
        f = path / name
        if not f.exists():
            return False, f"{name} is missing"
        if f.stat().st_size != info["size"]:
            return False, f"{name} has {f.stat().st_size} bytes, manifest says {info['size']} (truncated?)"
        if sha256 and _sha256(f) != info["sha256"]:
            return False, f"{name} checksum mismatch (corrupted)"
    return True, "ok"


def latest_valid(run_dir: str | Path, log: Callable[[str], None] | None = say, sha256: bool = True) -> Path | None:
    """The newest checkpoint of ``run_dir`` that verifies (``sha256``: as :func:`verify`), or ``None``;
    every newer one that does not is reported through ``log`` (a person reads it:
    :func:`course_lib._runtime.rank_output.say`). Notebook 04, §3 and deep-dive B."""
    for path in reversed(list_checkpoints(run_dir)):
        ok, reason = verify(path, sha256)
        if ok:
            return path
        if log:
            log(f"skipping checkpoint {path.name}: {reason}")
    return None


def purge(run_dir: str | Path, keep_last: int, newest_valid: Path | None = None) -> list[Path]:
    """Keep-last-k retention: delete older checkpoints, never the newest valid one.
    A caller that has just committed ``newest_valid`` passes it, sparing a re-hash of it."""
    if keep_last < 1:
        return []
    newest_valid = newest_valid or latest_valid(run_dir, log=None)
    doomed = [p for p in list_checkpoints(run_dir)[:-keep_last] if p != newest_valid]
    for p in doomed:
        shutil.rmtree(p, ignore_errors=True)
    return doomed


# --------------------------------------------------------------------------- loading
def load_part(path: str | Path, name: str):
    """``torch.load(..., weights_only=True)`` of one file, with errors that say what to do."""
    f = Path(path) / name
    if not f.exists():
        raise CheckpointError(f"{f} is missing; run `python -m course_lib verify` on the run directory")
    try:
        return torch.load(f, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as err:
        raise CheckpointError(
            f"refusing to load {f}: it contains objects outside plain tensors and containers "
            f"(possibly code), and checkpoints are data only (weights_only=True). Details: {err}"
        ) from None
    except (RuntimeError, EOFError) as err:
        raise CheckpointError(f"{f} is damaged ({err}); fall back with latest_valid()") from None


# --------------------------------------------------------------------------- in the background
class BackgroundWriter:
    """Asynchronous saves: rank 0's write and commit run in a thread while training goes on.
    The training thread serialises the state first (:func:`serialize`: the bytes are the
    snapshot) and hands over a job; at most one job is in flight, a new one waits for it.

    The thread runs at the lowest CPU priority (Linux: ``nice`` applies per thread), so on a
    machine whose cores the ranks keep busy it uses the moments they wait (all-reduce, I/O)
    instead of taking CPU from training: the save lasts longer, training does not. A job that
    raises does so again in the training thread, at the next ``wait`` or ``submit``: a writer
    that fails must not leave the run believing it has checkpoints."""

    def __init__(self):
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(self, kind, *_) -> None:
        """A save in flight lands (or fails) before the block is left, however it is left; while
        an error leaves it, the writer's own error does not hide that one."""
        with contextlib.suppress(Exception) if kind else contextlib.nullcontext():
            self.wait()

    def wait(self) -> None:
        """Until the job in flight is done; its error, if it failed, raised here."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            err, self._error = self._error, None
            raise RuntimeError("the background checkpoint writer failed; see the cause above") from err

    def submit(self, job: Callable[[], None], background: bool) -> None:
        self.wait()
        if not background:
            job()
            return
        self._thread = threading.Thread(target=self._run, args=(job,), name="checkpoint-writer", daemon=True)
        self._thread.start()

    def _run(self, job: Callable[[], None]) -> None:
        try:
            if nice_is_per_thread():
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
            job()
        except BaseException as err:  # noqa: BLE001 - handed to the training thread
            self._error = err
