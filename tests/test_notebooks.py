"""Every notebook executed top to bottom with small parameters (injected after the cell tagged
``parameters``, as papermill does): in CI its Chinese edition once; under ``-m exhaustive`` both
editions one after the other in one run folder (Run All twice). What each shows is checked for its
lesson (tests/notebook_lessons.py), the Chinese ones read for English left in what they show
(tests/chinese_outputs.py); a test keeps the Chinese edition's code identical to the English one."""
import json
import os
import re
import sys
from pathlib import Path

import pytest
from chinese_outputs import FIGURE_RECORDER, english_left
from helpers import solution_lines
from notebook_lessons import RECORDER, VALUES, check_lesson, cut_tables, same_lesson

from course_lib.lab.edition import SMALL, execute  # one source: the HTML edition runs the same notebooks, the same way

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from sync_editions import code_of  # noqa: E402  (the rule the sync applies: code to the token, comments translated)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ZH = NOTEBOOKS / "zh"


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


# CI runs each notebook once, in its Chinese edition: its code is the English one's (the test above), and it is
# read for its lesson and for English left too. CI's 15 minutes are CPU (docs/testing.md): a second edition is another
# 8-42 CPU-seconds a notebook. Notebook 05's is the browser test's Run All in JupyterLab (tests/test_browser.py).
# -m exhaustive runs the pair of every notebook, the English edition then Run All again in its folder: run it after
# changing a notebook or what it calls (CONTRIBUTING); CI keeps the one Run All twice that once failed
# (tests/test_textbook.py, a kill during the book's save)
@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in sorted(SMALL) if not name.startswith("05")])
def test_each_notebook_once_teaches_its_lesson(name, tmp_path, monkeypatch):
    """The Chinese edition, top to bottom as on a JupyterHub without a proxy: it runs and shows its
    lesson (tests/notebook_lessons.py), in Chinese."""
    run_edition(name, "zh", tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.exhaustive
@pytest.mark.parametrize("name", sorted(SMALL))
def test_each_notebook_twice_in_one_folder_teaches_its_lesson(name, tmp_path, monkeypatch):
    """Both editions, one after the other in one run folder: their code cells are the same, so the
    second is Run All again in a used folder (a teacher's Restart & Run All before class). Each must
    run, show its lesson (tests/notebook_lessons.py) and the second the same as the first."""
    first = run_edition(name, "en", tmp_path, monkeypatch)
    second = run_edition(name, "zh", tmp_path, monkeypatch)
    same_lesson(name, first, second)


def run_edition(name: str, lang: str, tmp_path: Path, monkeypatch) -> dict:
    """Run edition ``lang`` of notebook ``name`` top to bottom with small parameters through the HTML
    edition's own runner, its runs in ``tmp_path/runs`` (shared by the editions), as the README starts
    Jupyter: the venv's ``bin`` off ``PATH``; the Chinese edition as on a JupyterHub without a proxy.
    Checks: no error, a figure, no warning a learner cannot act on, no cut table, no hint or solution
    shown, each exercise's check failing on its blank answer, Chinese outputs in Chinese, and the
    lesson. Returns what the lesson showed (:func:`notebook_lessons.check_lesson`)."""
    monkeypatch.delenv("COURSE_LIB_LANG", raising=False)
    venv_bin = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin))
    if lang == "zh":
        monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/course-lib-test/")
    else:
        monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    source, recorded = with_recorders(NOTEBOOKS / name if lang == "en" else ZH / name, tmp_path / lang, name[:2])
    params = dict(SMALL[name])
    if "RUN_DIR" in source.read_text():
        params["RUN_DIR"] = str(tmp_path / "runs")
    nb = execute(source, params, cwd=tmp_path / lang)  # Jupyter starts a kernel in its notebook's folder: the language
    assert_teaches(name, lang, nb, tmp_path / lang / "figures.jsonl", Path(params.get("RUN_DIR", tmp_path / "runs")))
    return check_lesson(name, json.loads(recorded.read_text(encoding="utf-8")), nb, lang)


def assert_teaches(name: str, lang: str, nb, figures: Path, run_dir: Path) -> None:
    """What edition ``lang`` of notebook ``name`` showed after Run All (``nb`` with its outputs, as
    nbclient returns it or JupyterLab saves it): no error, a figure, no warning a learner cannot act
    on, no cut table, no hint or solution shown, each exercise's check failing on its blank answer,
    a Chinese edition's outputs in Chinese (``figures``: the recorder's file), and what each
    notebook's own cells must show (``run_dir``: its runs)."""
    if lang == "zh":
        english = english_left(nb, name[:2], figures)
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
    assert not cut_tables(nb), f"{lang}/{name}: tables cut their text: {cut_tables(nb)}"
    if name.startswith("04"):  # TensorBoard: served in English (the venv off PATH), drawn in place on the "hub"
        board = json.dumps([o for cid, o in outputs if cid == "s2-tensorboard"], ensure_ascii=False)
        assert ("打不开" in board) == (lang == "zh"), board[:300]
    if name.startswith("05"):  # the chapter's acceptance test passes for every resume mode run; compare differs
        shown = "".join(o["data"]["text/plain"] for cid, o in outputs if cid == "s3-accept" and "data" in o)
        passes, fails = ("通过", "未通过") if lang == "zh" else ("passes", "fails")
        assert passes in shown and fails not in shown, shown
        assert "Rotten Tomatoes" in json.dumps(nb)
        report = json.loads((run_dir / "audit" / "report.json").read_text())  # section 5's audit
        found = [f["kind"] for f in report["findings"] if f["defect"] or f["lost_work"]]  # what section 5 says it loses
        assert found == ["not-atomic", "sigterm-no-save", "rng"] and report["exit_code"] == 1, found
        assert [f["kind"] for f in report["findings"] if f["lost_work"]] == ["sigterm-no-save"], "lost work, not a defect"


def with_recorders(source: Path, folder: Path, number: str) -> tuple[Path, Path]:
    """A copy of the notebook at ``source`` in ``folder/notebook/`` with two cells of the test's:
    after the parameters, one recording every figure's words into ``folder/figures.jsonl``
    (:func:`chinese_outputs.english_left` reads it); after the last cell, one writing what the lesson
    rests on into the file returned (:data:`notebook_lessons.RECORDER`)."""
    import nbformat

    nb = nbformat.read(str(source), as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])) + 1
    nb.cells.insert(at, nbformat.v4.new_code_cell(FIGURE_RECORDER.format(path=str(folder / "figures.jsonl"))))
    recorded = folder / "lesson.json"
    nb.cells.append(nbformat.v4.new_code_cell(RECORDER.format(values=VALUES[number], path=str(recorded))))
    copy = folder / "notebook" / source.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(copy))
    return copy, recorded


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
