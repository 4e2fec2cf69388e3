"""Every notebook of both editions, executed top to bottom with small parameters (papermill
injects them after the cell tagged ``parameters``), and the test that keeps the Chinese
edition's code identical to the English one."""
import json
import os
from pathlib import Path

import papermill as pm
import pytest

from course_lib.edition import SMALL  # one set of small parameters, shared with the HTML edition

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ZH = NOTEBOOKS / "zh"


def browser_runs_notebook_05() -> bool:
    """tests/test_browser.py runs the Chinese notebook 05 top to bottom in JupyterLab: where it
    will, papermill need not run it a second time (two minutes of CI)."""
    import importlib.util
    import shutil

    have = (shutil.which("chromium") or shutil.which("chromium-browser")) and importlib.util.find_spec("playwright")
    return bool(have) or os.environ.get("COURSE_LIB_REQUIRE_BROWSER") == "1"


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_notebook_is_covered_and_stripped():
    found = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert found == sorted(SMALL)
    assert sorted(p.name for p in ZH.glob("*.ipynb")) == found, "notebooks/zh/ must hold the same file names"
    for path in [NOTEBOOKS / n for n in found] + [ZH / n for n in found]:
        code = [c for c in _load(path)["cells"] if c["cell_type"] == "code"]
        assert sum("parameters" in c["metadata"].get("tags", []) for c in code) == 1, path
        assert all(not c["outputs"] and c["execution_count"] is None for c in code), f"{path} has outputs"


@pytest.mark.parametrize("name", sorted(SMALL))
def test_chinese_edition_has_the_english_code(name):
    """Same code cells, in order, to the character (the parameters cell too), and a Chinese
    prose cell for every English one (same ids): the editions cannot drift.
    ``python tools/sync_editions.py`` copies changed code across."""
    en, zh = _load(NOTEBOOKS / name), _load(ZH / name)
    code = lambda nb: [("".join(c["source"]), c["metadata"].get("tags", [])) for c in nb["cells"] if c["cell_type"] == "code"]  # noqa: E731
    assert code(zh) == code(en), f"zh/{name}: code cells differ from the English edition; run tools/sync_editions.py"
    assert [(c["id"], c["cell_type"]) for c in zh["cells"]] == [(c["id"], c["cell_type"]) for c in en["cells"]]
    for cell in (c for c in zh["cells"] if c["cell_type"] == "markdown"):
        text = "".join(cell["source"])
        assert sum("\u4e00" <= ch <= "\u9fff" for ch in text) > 10, f"zh/{name} cell {cell['id']} is not in Chinese"


def test_chinese_edition_uses_the_chapters_terms():
    prose = {n: "".join("".join(c["source"]) for c in _load(ZH / n)["cells"] if c["cell_type"] == "markdown")
             for n in sorted(SMALL)}
    everything = "".join(prose.values())
    for term in ("检查点", "断点续训", "去重", "分词器", "进程编号", "Rank", "优化器状态"):
        assert term in everything, term
    for i, name in enumerate(sorted(SMALL), start=1):
        assert f"11.{i}" in prose[name], f"zh/{name} does not name its section of the chapter (11.{i})"


@pytest.mark.slow
@pytest.mark.parametrize("edition", ["en", "zh"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_notebook_runs(name, edition, tmp_path, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)  # an Agg backend would hide the notebooks' figures
    monkeypatch.delenv("COURSE_LIB_LANG", raising=False)
    if edition == "zh" and name.startswith("05") and browser_runs_notebook_05():
        pytest.skip("run top to bottom in JupyterLab by tests/test_browser.py")
    source = NOTEBOOKS / name if edition == "en" else ZH / name
    params = {**SMALL[name]}
    if "RUN_DIR" in source.read_text():
        params["RUN_DIR"] = str(tmp_path / "runs")
    out = tmp_path / name
    cwd = tmp_path / edition  # Jupyter starts a kernel in its notebook's folder: the widgets read their language there
    cwd.mkdir()
    pm.execute_notebook(str(source), str(out), parameters=params, cwd=str(cwd), progress_bar=False)
    nb = json.loads(out.read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    images = [o for c in nb["cells"] for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, f"{name} drew no figure"
    if name.startswith("05"):  # the chapter's acceptance test passes for every resume mode run; compare differs
        cell = next(c for c in nb["cells"] if c.get("id") == "c10b")
        shown = "".join(cell["outputs"][0]["data"]["text/plain"])
        assert "'passes': True" in shown and "'passes': False" not in shown, shown
        assert "out_of_domain_accuracy" in json.dumps(nb)
