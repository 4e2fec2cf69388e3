"""Bad input, swept: every subcommand, every folder or file it takes, and the usual wrong
turns (missing, the wrong kind, empty, not UTF-8, unreadable, a folder of runs, a run cut off
half-way, a checkpoint of another run). Each must end in one line that names the problem and
the fix, exit code 2, never a traceback, and before any process starts.

A subcommand added later joins by adding its rows to ``ROWS``."""
import os
import shutil
import subprocess
import sys

import pytest

from course_lib import cli

# what each wrong turn is, made in a fresh folder; "{run}" is a copy of a real finished run
KINDS = {
    "missing": lambda d, run: d / "nothing",
    "a file": lambda d, run: _write(d / "a.txt", b"not a folder\n"),
    "a folder": lambda d, run: _mkdir(d / "folder"),
    "an empty folder": lambda d, run: _mkdir(d / "empty"),
    "an empty file": lambda d, run: _write(d / "empty.txt", b""),
    "not UTF-8": lambda d, run: _write(d / "latin1.txt",
                                       "Un film très réussi, à voir.\n".encode("latin-1") + bytes(range(128, 256))),
    "unreadable": lambda d, run: _unreadable(_write(d / "secret.txt", b"a fine film\n")),
    "unreadable folder": lambda d, run: _unreadable(_copy(run, d / "locked")),
    "a folder of runs": lambda d, run: _copy(run, d / "runs" / "pipeline").parent,
    "config cut off": lambda d, run: _damage(_copy(run, d / "half"), b'{"model": "bag", "epo'),
    "empty config": lambda d, run: _damage(_copy(run, d / "half"), b""),
    "config not UTF-8": lambda d, run: _damage(_copy(run, d / "half"), b"\xff\xfe{\x00"),
    "a file, not a checkpoint": lambda d, run: _write(d / "model.pt", b"\x80\x02}q\x00."),
    "a run, not a checkpoint": lambda d, run: _copy(run, d / "run"),
    "a half-written checkpoint": lambda d, run: _half_checkpoint(_copy(run, d / "run")),
    "a folder of my files": lambda d, run: _write(_mkdir(d / "mine") / "thesis.tex", b"\\begin{document}") .parent,
    "a CSV without text": lambda d, run: _write(d / "reviews.csv", b"review,stars\nfine,5\n"),
}
RUN_DIR_KINDS = ["missing", "a file", "an empty folder", "unreadable folder", "a folder of runs", "config cut off",
                 "empty config", "config not UTF-8"]
TEXT_FILE_KINDS = ["missing", "a folder", "an empty file", "not UTF-8", "unreadable"]

# (command line with {x} where the bad path goes, wrong turn, words the line must hold)
ROWS = [
    *[(["verify", "{x}"], k, ()) for k in RUN_DIR_KINDS],
    *[(["compare", "{x}", "{run}"], k, ()) for k in RUN_DIR_KINDS],
    *[(["compare", "{run}", "{x}"], k, ()) for k in RUN_DIR_KINDS],
    *[(["advise", "{x}", "--mtbf", "6h"], k, ()) for k in RUN_DIR_KINDS],
    *[(["predict", "{x}", "a fine film"], k, ()) for k in RUN_DIR_KINDS],
    *[(["predict", "{run}", "--file", "{x}"], k, ()) for k in TEXT_FILE_KINDS],
    (["train", "--run-dir", "{x}"], "a file", ("is a file",)),
    (["train", "--run-dir", "{run_copy}", "--data-source", "path", "--data-path", "{x}"], "missing", ("does not exist",)),
    (["train", "--run-dir", "{run_copy}", "--data-source", "path", "--data-path", "{x}"], "a folder", ("not aclImdb",)),
    (["train", "--run-dir", "{run_copy}", "--data-source", "path", "--data-path", "{x}"], "an empty file",
     ("neither .csv",)),
    (["train", "--run-dir", "{run_copy}", "--data-source", "path", "--data-path", "{x}.csv"], "an empty file",
     ("is empty",)),
    (["train", "--run-dir", "{run_copy}", "--data-source", "path", "--data-path", "{x}.csv"], "not UTF-8", ("not UTF-8",)),
    (["train", "--run-dir", "{run_copy}", "--data-source", "path", "--data-path", "{x}"], "a CSV without text", ("'text'",)),
    (["train", "--run-dir", "{run_copy}", "--data-source", "path", "--data-path", "{x}"], "unreadable", ("cannot be read",)),
    (["train", "--run-dir", "{run_copy}", "--resume", "{x}"], "missing", ("does not exist",)),
    (["train", "--run-dir", "{run_copy}", "--resume", "{x}"], "a file, not a checkpoint", ("not a checkpoint folder",)),
    (["train", "--run-dir", "{run_copy}", "--resume", "{x}"], "an empty folder", ("not a checkpoint folder",)),
    (["train", "--run-dir", "{run_copy}", "--resume", "{x}"], "a run, not a checkpoint", ("not a checkpoint folder",
                                                                                          "checkpoints/step-")),
    (["train", "--run-dir", "{run_copy}", "--resume", "{x}/checkpoints/step-00000030"], "a half-written checkpoint",
     ("not a valid checkpoint",)),
    (["train", "--run-dir", "{x}", "--resume", "auto", "--embed-dim", "16"], "a run, not a checkpoint",
     ("does not fit", "embed_dim")),
    (["train", "--run-dir", "{run_copy}", "--cache-dir", "{x}"], "a file", ("--cache-dir", "is a file")),
    (["pipeline", "--run-dir", "{x}"], "a file", ("is a file",)),
    (["edition", "--out", "{x}", "--small", "--lang", "en", "--notebooks", "01"], "a file", ("--out", "is a file")),
    (["pipeline", "--run-dir", "{x}"], "a folder of my files", ("thesis.tex", "pick a new --run-dir")),
]
FIXES = ("give", "use ", "pick", "train it", "chmod", "save ", "resume with", "check ", "choose")


def _write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _mkdir(path):
    path.mkdir(parents=True)
    return path


def _copy(run, dest):
    shutil.copytree(run, dest)
    return dest


def _damage(run, config: bytes):
    (run / "config.json").write_bytes(config)
    return run


def _half_checkpoint(run):
    """What a crash mid-save leaves when the commit's marker is lost: a step folder without a valid manifest."""
    (run / "checkpoints" / "step-00000030" / "manifest.json").write_bytes(b'{"step": 30, "fi')
    return run


def _unreadable(path):
    path.chmod(0)
    return path


@pytest.fixture
def no_processes(monkeypatch):
    """Bad input must be answered before data is prepared or a process starts: if a row got
    that far, this says so instead of training."""
    import course_lib.data.prepare
    import course_lib.lab.edition
    import course_lib.pipeline

    def refuse(*a, **k):
        raise AssertionError("bad input got as far as preparing data / starting processes")
    monkeypatch.setattr(course_lib.data.prepare, "prepare_for", refuse)  # launch imports it when it needs it
    monkeypatch.setattr(course_lib.pipeline, "prepare_for", refuse)
    monkeypatch.setattr(course_lib.lab.edition, "execute", refuse)


@pytest.mark.parametrize("argv,kind,words", ROWS, ids=[f"{' '.join(a[:2])}:{k}" for a, k, _ in ROWS])
def test_bad_input_is_one_line_with_the_fix(argv, kind, words, reference_run, tmp_path, capsys, no_processes):
    if kind.startswith("unreadable") and os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop root from reading, so this row cannot be made here")
    bad = KINDS[kind](tmp_path, reference_run)
    if "{x}.csv" in argv:
        bad = bad.rename(bad.with_suffix(".csv")).with_suffix("")
    run_copy = tmp_path / "fresh"
    argv = [a.replace("{x}", str(bad)).replace("{run_copy}", str(run_copy)).replace("{run}", str(reference_run))
            for a in argv]
    try:
        code = cli.main(argv)
    finally:
        if kind.startswith("unreadable"):
            bad.chmod(0o700)
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), out.err
    line = lines[0]
    assert "Traceback" not in out.err + out.out
    assert any(f in line for f in FIXES), f"no fix named: {line}"
    assert all(w in line for w in words), line
    assert os.path.basename(str(bad).rstrip("/")) in line, f"the path is not named: {line}"


def test_the_real_command_line_answers_in_one_line(reference_run, tmp_path):
    """The issue's case through a real interpreter: predict --file on bytes that are not UTF-8."""
    bad = _write(tmp_path / "random.bin", os.urandom(3000) + b"\xff")
    out = subprocess.run([sys.executable, "-m", "course_lib", "predict", str(reference_run), "--file", str(bad)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "not UTF-8" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
