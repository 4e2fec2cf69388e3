"""TensorBoard beside a notebook (course_lib.lab.board): found without PATH, and where a browser
cannot reach it, the event files drawn in the notebook while they grow. The live server itself,
started from notebook 04 with the venv's bin off PATH, is checked by tests/test_notebooks.py."""
import sys
import time
from pathlib import Path

import pytest

from course_lib.lab import board


def _losses(fig) -> list[float]:
    return list(fig.axes[0].lines[0].get_ydata())


def test_the_tensorboard_beside_the_interpreter_is_found_without_path(monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the README's `.venv/bin/jupyter lab`: the venv is not activated
    found = board.tensorboard_binary()
    assert found is not None and found.parent in (Path(sys.executable).parent, Path(sys.executable).parent / "Scripts")


def test_where_a_browser_reaches_a_server_beside_the_kernel(monkeypatch):
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    assert board.where() == "local"
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/alice/")
    monkeypatch.setattr(board.importlib.util, "find_spec", lambda name: None)  # no jupyter-server-proxy here
    assert board.where() == "remote"


def test_on_a_hub_without_a_proxy_the_curves_are_drawn_and_follow_the_run(tmp_path, monkeypatch, capsys):
    """What a learner on a remote JupyterHub sees instead of a frame its browser cannot open: the
    run's curves from its event files, redrawn while another cell trains, and why."""
    from torch.utils.tensorboard import SummaryWriter

    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/alice/")
    monkeypatch.setattr(board.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(board, "EVERY", 0.1)
    run = tmp_path / "runs" / "run"
    writer = SummaryWriter(str(run / "tb"))
    for step in (1, 2, 3):
        writer.add_scalar("train/loss", 1.0 / step, step)
    writer.flush()
    panel = board.show(tmp_path / "runs", run, lang="en")
    try:
        assert "your browser cannot reach" in capsys.readouterr().out
        assert isinstance(panel, board.LiveCurves) and _losses(panel.figure) == pytest.approx([1.0, 0.5, 1 / 3])
        assert len(panel.output.outputs) == 1 and "run, drawn at" in panel.note.value
        for step in (4, 5):
            writer.add_scalar("train/loss", 1.0 / step, step)
        writer.flush()
        deadline = time.monotonic() + 20
        while len(_losses(panel.figure)) < 5 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(_losses(panel.figure)) == 5, "the panel did not follow the run"
    finally:
        panel.stop()
        writer.close()
    zh = board.LiveCurves(tmp_path / "nothing", lang="zh")
    zh.stop()
    assert "还没有事件文件" in zh.note.value
