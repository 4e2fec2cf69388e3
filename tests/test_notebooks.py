"""Every notebook of both editions, executed top to bottom with small parameters (injected
after the cell tagged ``parameters``, as papermill does), the Chinese ones read for English left
in what they show (tests/chinese_outputs.py), and the test that keeps the Chinese edition's code
identical to the English one."""
import json
import os
import re
import sys
from pathlib import Path

import pytest
from chinese_outputs import FIGURE_RECORDER, english_left
from helpers import solution_lines

from course_lib.lab.edition import SMALL, execute  # one source: the HTML edition runs the same notebooks, the same way

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from sync_editions import code_of  # noqa: E402  (the rule the sync applies: code to the token, comments translated)

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
    """Same code cells, in order, to the token (the parameters cell too), each comment and
    docstring in the edition's language, and a Chinese prose cell for every English one (same
    ids): the editions cannot drift. ``python tools/sync_editions.py`` copies changed code across."""
    en, zh = _load(NOTEBOOKS / name), _load(ZH / name)
    code = lambda nb: [(c["id"], code_of("".join(c["source"])), c["metadata"].get("tags", []))  # noqa: E731
                       for c in nb["cells"] if c["cell_type"] == "code"]
    assert code(zh) == code(en), f"zh/{name}: code cells differ from the English edition; run tools/sync_editions.py"
    assert [(c["id"], c["cell_type"]) for c in zh["cells"]] == [(c["id"], c["cell_type"]) for c in en["cells"]]
    for cell in (c for c in zh["cells"] if c["cell_type"] == "markdown"):
        text = "".join(cell["source"])
        assert sum("\u4e00" <= ch <= "\u9fff" for ch in text) > 10, f"zh/{name} cell {cell['id']} is not in Chinese"
    for cell in (c for c in zh["cells"] if c["cell_type"] == "code"):
        english = [words for words in comments_and_docstrings("".join(cell["source"]))
                   if re.search(r"[A-Za-z]{3,} [a-z]{2,}", words) and not re.search(r"[\u4e00-\u9fff]", words)]
        assert not english, f"zh/{name} cell {cell['id']}: English comments or docstrings {english}"


def comments_and_docstrings(source: str) -> list[str]:
    import ast
    import io
    import tokenize

    found = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    return found + [ast.get_docstring(node) for node in ast.walk(ast.parse(source))
                    if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node)]


def test_chinese_edition_uses_the_chapters_terms():
    prose = "".join("".join(c["source"]) for n in sorted(SMALL) for c in _load(ZH / n)["cells"]
                    if c["cell_type"] == "markdown")
    for term in ("检查点", "断点续训", "去重", "分词器", "进程编号", "Rank", "优化器状态"):
        assert term in prose, term


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_notebook_runs(name, lang, tmp_path, monkeypatch):
    """Top to bottom with small parameters, through the HTML edition's own runner: no error,
    at least one figure, no warning a learner cannot act on."""
    monkeypatch.delenv("COURSE_LIB_LANG", raising=False)
    if lang == "zh" and name.startswith("05") and browser_runs_notebook_05():
        pytest.skip("run top to bottom in JupyterLab by tests/test_browser.py")
    source = NOTEBOOKS / name if lang == "en" else with_figure_recorder(ZH / name, tmp_path)
    params = {**SMALL[name]}
    if "RUN_DIR" in source.read_text():
        params["RUN_DIR"] = str(tmp_path / "runs")
    cwd = tmp_path / lang  # Jupyter starts a kernel in its notebook's folder: the widgets read their language there
    nb = execute(source, params, cwd=cwd)
    if lang == "zh":
        english = english_left(nb, name[:2], tmp_path / "figures.jsonl")
        assert not english, f"zh/{name} shows English a learner reads: {english}"
    outputs = [(c.get("id"), o) for c in nb["cells"] for o in c.get("outputs", [])]
    assert not [o for _, o in outputs if o.get("output_type") == "error"]
    assert [o for _, o in outputs if "image/png" in o.get("data", {})], f"{name} drew no figure"
    shown = json.dumps([o for _, o in outputs], ensure_ascii=False)
    assert not re.search(r"Hint \d+ of \d+|提示 \d+/\d+|reference solution of|参考答案：course_lib", shown), \
        "Run All printed a hint or a solution: they come on request only"
    assert_checks_fail_and_give_nothing_away(nb)
    noise = [(cid, "".join(o["text"])[:200]) for cid, o in outputs
             if o.get("name") == "stderr" and "Warning" in "".join(o["text"])]
    assert not noise, noise
    if name.startswith("05"):  # the chapter's acceptance test passes for every resume mode run; compare differs
        shown = "".join(o["data"]["text/plain"] for cid, o in outputs if cid == "s3-accept" and "data" in o)
        passes, fails = ("通过", "未通过") if lang == "zh" else ("passes", "fails")
        assert passes in shown and fails not in shown, shown
        assert "Rotten Tomatoes" in json.dumps(nb)
        report = json.loads((tmp_path / "runs" / "audit" / "report.json").read_text())  # section 6's audit
        found = [f["kind"] for f in report["findings"] if f["defect"] or f["lost_work"]]  # what section 6 says it loses
        assert found == ["not-atomic", "sigterm-no-save", "rng"] and report["exit_code"] == 1, found
        assert [f["kind"] for f in report["findings"] if f["lost_work"]] == ["sigterm-no-save"], "lost work, not a defect"


def with_figure_recorder(source: Path, tmp_path: Path) -> Path:
    """A copy of the notebook at ``source`` whose first cell after the parameters records every
    figure's words into ``tmp_path/figures.jsonl`` (:func:`chinese_outputs.english_left` reads it)."""
    import nbformat

    nb = nbformat.read(str(source), as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])) + 1
    nb.cells.insert(at, nbformat.v4.new_code_cell(FIGURE_RECORDER.format(path=str(tmp_path / "figures.jsonl"))))
    copy = tmp_path / "notebook" / source.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(copy))
    return copy


def assert_checks_fail_and_give_nothing_away(nb) -> None:
    """Run All checks every exercise on its unfilled answer, in real processes where the exercise
    spawns them (an audited check's scaffold is told at once): each check fails ("FAIL ..."), and
    shows no line of the reference solution."""
    for cell in nb["cells"]:
        found = re.fullmatch(r"ex-(\d\d)-(\w+)-check", cell.get("id", ""))
        if not found:
            continue
        exercise = f"{found[1]}.{found[2]}"
        shown = "".join("".join(o.get("data", {}).get("text/plain", "")) + "".join(o.get("text", ""))
                        for o in cell["outputs"])
        assert re.search(rf"^FAIL {re.escape(exercise)} ", shown, re.M), (exercise, shown[:300])
        if exercise == "05.audit":  # the audit names the chapter's answer's first defect, with its fix
            assert re.search(r"not exact yet: .+\. Fix: |还不是逐位相同：.+。修正：", shown), shown
        assert not [line for line in solution_lines(exercise) if line in shown], (exercise, shown)
