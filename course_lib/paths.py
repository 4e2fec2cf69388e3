"""The folders and files a person hands the kit, checked before anything runs: each problem
is one :class:`ConfigError` line that names it and the fix (the command line prints it, exit 2).

A *run directory* is what ``train --run-dir`` writes (``config.json`` first, then the ledger,
checkpoints, TensorBoard files, ``final/``). The usual wrong turns: a path that is not there,
a file where the folder belongs, an empty folder, the folder *above* the runs (``runs/``
instead of ``runs/pipeline``), a run cut off before its ``config.json`` was whole, and files
that are not UTF-8 text.
"""
from __future__ import annotations

import codecs
import csv
import io
import json
import os
from pathlib import Path

from course_lib.config import ConfigError, TrainConfig

# what a run writes into its folder: only a folder holding nothing else may be wiped and reused
RUN_ENTRIES = {"config.json", "metrics", "tb", "checkpoints", "final", "logs", "attempts.jsonl", "faults.jsonl",
               ".lock", "supervisor.log"}
RUN_DIR_HINT = "give the --run-dir of a train run"


def _exists_as(path: Path, folder: bool, what: str, hint: str) -> None:
    """Missing, the wrong kind, or unreadable: one line each."""
    if not path.exists():
        raise ConfigError(f"{path} does not exist; give {what} {hint}")
    if folder and not path.is_dir():
        raise ConfigError(f"{path} is a file, not a folder; give {what} {hint}")
    if not folder and path.is_dir():
        raise ConfigError(f"{path} is a folder, not a file; give {what} {hint}")
    if not os.access(path, os.R_OK | (os.X_OK if folder else 0)):
        raise ConfigError(f"{path} cannot be read (permission denied); let yourself read it "
                          f"(chmod u+r{'x' if folder else ''} {path}) or {what} another one")


def run_dir(path: str | Path, command: str) -> Path:
    """``path`` if it is a run directory with a readable, whole ``config.json``; else raises ConfigError
    with the line that says what it is instead (e.g. the folder above the runs)."""
    path = Path(path)
    _exists_as(path, True, command, "a run directory (the --run-dir of a train run)")
    if not (path / "config.json").is_file():
        runs = sorted(p.name for p in path.iterdir() if (p / "config.json").is_file())
        if runs:
            raise ConfigError(f"{path} is not a run but holds {len(runs)} run{'s' * (len(runs) > 1)} "
                              f"({', '.join(runs[:3])}{', ...' if len(runs) > 3 else ''}); give one of them, "
                              f"e.g. {path / runs[0]}")
        raise ConfigError(f"{path} is not a run directory (no config.json); {RUN_DIR_HINT}")
    read_config(path)
    return path


def read_config(path: str | Path) -> TrainConfig:
    """``DIR/config.json`` as a :class:`TrainConfig`; raises ConfigError (one line) for a file that is
    unreadable, empty, cut off, not UTF-8 or not a run's config."""
    f = Path(path) / "config.json"
    if not os.access(f, os.R_OK):
        raise ConfigError(f"{f} cannot be read (permission denied); chmod u+r {f}")
    text = f.read_bytes()
    half = "a run cut off before it began writes this; train it again or " + RUN_DIR_HINT
    if not text.strip():
        raise ConfigError(f"{f} is empty ({half})")
    try:
        values = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{f} is not UTF-8 text, so not a config a run wrote; {RUN_DIR_HINT}") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{f} is not whole JSON ({err.msg} at line {err.lineno}; {half})") from None
    if not isinstance(values, dict):
        raise ConfigError(f"{f} holds a JSON {type(values).__name__}, not a run's settings; {RUN_DIR_HINT}")
    try:
        return TrainConfig.from_dict(values)
    except (ConfigError, TypeError) as err:
        raise ConfigError(f"{f} cannot be rebuilt into a TrainConfig ({' '.join(str(err).split())}): was it "
                          "written by another version of course_lib? Train the run again") from None


def text_file(path: str | Path, what: str) -> str:
    """The contents of a UTF-8 text file a person names (``predict --file``); raises ConfigError for a
    path that is missing, a folder, unreadable or not UTF-8."""
    path = Path(path)
    _exists_as(path, False, what, "a UTF-8 text file")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path} is not UTF-8 text ({err.reason} at byte {err.start}); save it as UTF-8 "
                          f"(e.g. iconv -f latin1 -t utf-8) and give it to {what} again") from None


def data_path(path: str | Path) -> None:
    """Raises ConfigError unless ``--data-path`` is an aclImdb folder, a non-empty parquet file or a
    UTF-8 CSV with ``text`` and ``label`` columns."""
    path = Path(path).expanduser()
    hint = "an aclImdb folder or a CSV/parquet file with 'text' and 'label' columns"
    _exists_as(path, path.is_dir(), "--data-path", hint)  # a folder or a file: both may be right
    if path.is_dir():
        if not ((path / "train" / "pos").is_dir() and (path / "train" / "neg").is_dir()):
            raise ConfigError(f"--data-path {path} is a folder but not aclImdb (no train/pos and train/neg "
                              f"folders of .txt reviews); give {hint}")
        return
    if path.suffix not in (".csv", ".parquet"):
        raise ConfigError(f"--data-path {path} is neither .csv nor .parquet; give {hint}")
    if path.stat().st_size == 0:
        raise ConfigError(f"--data-path {path} is empty; give {hint}")
    if path.suffix == ".csv":
        with open(path, "rb") as f:
            head = f.read(1 << 20)
        try:  # an incremental decoder: a character cut at the end of the sample is not an error
            text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
        except UnicodeDecodeError as err:
            raise ConfigError(f"--data-path {path} is not UTF-8 text ({err.reason} at byte {err.start}); "
                              "save the CSV as UTF-8") from None
        header = next(csv.reader(io.StringIO(text)), [])
        missing = [c for c in ("text", "label") if c not in header]
        if missing:
            raise ConfigError(f"--data-path {path} has no {' and no '.join(repr(c) for c in missing)} column "
                              f"(its header: {', '.join(header[:5]) or 'empty'}); give {hint}")


def output_dir(path: str | Path, flag: str = "--run-dir") -> None:
    """Raises ConfigError unless ``path`` is a folder the run may create or write into."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{flag} {path} is a file; give a folder (it is created if missing)")
    parent = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {path}: {parent} is not writable (permission denied); pick a folder you can write")


def disposable_run_dir(path: str | Path, flag: str = "--run-dir") -> None:
    """Raises ConfigError unless ``path`` may be deleted and started afresh: missing, empty, or holding
    only what a run writes. Your files, the repository, are refused, never wiped."""
    output_dir(path, flag)
    path = Path(path)
    foreign = sorted(p.name for p in path.iterdir() if p.name not in RUN_ENTRIES) if path.is_dir() else []
    if foreign:
        raise ConfigError(f"{flag} {path} holds files a run does not write ({', '.join(foreign[:3])}"
                          f"{', ...' if len(foreign) > 3 else ''}), and this command starts its folder afresh; "
                          "pick a new --run-dir")
