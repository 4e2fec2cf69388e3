"""The executed edition: a notebook run offline top to bottom and written as HTML with its
outputs and figures embedded; the per-section times the headers quote; no reference solution in
it, unless it is the teacher's edition."""
import pytest

from bench import notebook_times
from course_lib.lab import edition
from course_lib.lab.i18n import tr

SOLUTION_LINE = "start += size - overlap"  # a line of 01.chunk's reference solution


def _text(page: str) -> str:
    """What a reader of the HTML page sees: no tags (code is highlighted token by token), no entities."""
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _small_notebook(root):
    """Two sections, the second optional: a figure, a tqdm bar, printed text, an exercise's
    solution cell as a learner runs it (a notice, no answer). The real notebooks run through the
    same ``execute`` in tests/test_notebooks.py; this one checks the page."""
    import nbformat

    v4 = nbformat.v4
    cells = [v4.new_markdown_cell("# A notebook\nWhat it is about."),
             v4.new_code_cell("N = 3", metadata={"tags": ["parameters"]}),
             v4.new_markdown_cell("## 1. A figure and a bar\nThe curve, then a loop with a progress bar."),
             v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]);"),
             v4.new_code_cell("from tqdm.auto import tqdm\nfor _ in tqdm(range(N)):\n    pass\nprint('counted to', N)"),
             v4.new_code_cell("from course_lib.exercises import solution\nsolution('01.chunk')"),
             v4.new_markdown_cell("## Optional deep-dive A · More\nFor those with time."),
             v4.new_code_cell("print(N * 2)")]
    root.mkdir()
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(v4.new_notebook(cells=cells, metadata=kernel), str(root / "01_small.ipynb"))


@pytest.mark.slow
def test_a_notebook_becomes_a_readable_html_page(tmp_path):
    _small_notebook(tmp_path / "notebooks")
    index = edition.build_edition(tmp_path / "ed", langs=("en",), small=True, progress=lambda _: None,
                                  root=tmp_path / "notebooks")
    page = (tmp_path / "ed" / "en" / "01_small.html").read_text(encoding="utf-8")
    assert "data:image/png;base64" in page  # the figures travel inside the page
    assert "counted to 3" in page  # a cell's real output
    assert "one call away" in _text(page) and SOLUTION_LINE not in _text(page) and "def chunk_words" not in _text(page)
    assert "0%|" not in page and "100%|" not in page  # no frozen progress bar
    assert "01_small" in index.read_text(encoding="utf-8")
    parts = notebook_times.sections(__import__("nbformat").read(str(tmp_path / "ed" / "work" / "en" / "01_small.ipynb"), 4))
    assert [p["title"] for p in parts] == ["(opening)", "1. A figure and a bar", "Optional deep-dive A · More"]
    assert [p["optional"] for p in parts] == [False, False, True]
    assert sum(p["run_seconds"] for p in parts) > 0 and all(notebook_times.read_seconds(p) >= 0 for p in parts)
    assert [p["printed_lines"] for p in parts] == [0, 2, 1]  # "counted to 3" and the solution notice; "6"


def test_reading_time_counts_words_characters_code_printed_lines_and_outputs():
    en = {"words": 180, "cjk": 0, "code_lines": 10, "printed_lines": 5, "outputs": 1}
    zh = {"words": 0, "cjk": 300, "code_lines": 0, "printed_lines": 0, "outputs": 0}
    assert notebook_times.read_seconds(en) == 60 + 30 + 15 + 20 and notebook_times.read_seconds(zh) == 60


def test_printed_source_is_read_and_a_progress_bar_is_not():
    cell = {"outputs": [{"output_type": "stream", "name": "stdout", "text": "def train():\n    pass\n\nRank 0\n"},
                        {"output_type": "stream", "name": "stderr", "text": "100%|##########| 3/3\n"},
                        {"output_type": "display_data", "data": {"image/png": ""}}]}
    assert notebook_times.printed_lines(cell) == 3


def test_unknown_edition_or_notebook_is_a_clear_error():
    from course_lib.config import ConfigError

    with pytest.raises(ConfigError, match="unknown edition 'fr'"):
        edition.notebook_paths(("fr",))
    with pytest.raises(ConfigError, match="no notebook '09'"):
        edition.notebook_paths(("en",), only=["09"])


def test_static_copy_drops_progress_bars_and_names_widgets():
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
    widget = {"model_id": "x", "version_major": 2, "version_minor": 0}
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", {"text/plain": " 0%|   | 0/3", edition.WIDGET: widget}),
                           nbformat.v4.new_output("display_data", {"text/plain": "VBox(...)", edition.WIDGET: widget})]
    edition.make_static(nb, "zh")
    assert [o["data"]["text/plain"] for o in nb.cells[0].outputs] == [tr(edition.STATIC_NOTE, "zh")]


def test_static_copy_replaces_a_live_tensorboard_frame():
    """``%tensorboard`` leaves a frame pointing at the kernel's localhost: in a file it would show
    whatever the reader runs on that port (a directory listing, in one review)."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
    frame = '<iframe id="tensorboard-frame-1" width="100%" height="800" frameborder="0"></iframe><script>' \
            'const url = new URL("/", window.location); url.port = 6006;</script>'
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", {"text/html": frame, "text/plain": "<IPython...>"})]
    edition.make_static(nb, "en")
    assert nb.cells[0].outputs[0]["data"] == {"text/plain": edition.LIVE_NOTE}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_teachers_edition_ends_each_page_with_its_solutions(tmp_path, monkeypatch, lang):
    """``--teacher`` (``appendix=solutions_section``): each page ends with a section labelled as the
    teacher's, holding its notebook's exercises' revealed solutions; the learners' page has none.
    (The notebook is not executed here: the test of the page above runs a kernel.)"""
    import nbformat

    from course_lib.exercises.teacher import HEADING, solutions_section

    root = tmp_path / "notebooks"
    _small_notebook(root)
    (root / "zh").mkdir()
    nbformat.write(nbformat.read(str(root / "01_small.ipynb"), 4), str(root / "zh" / "01_small.ipynb"))

    def read_as_executed(path, parameters=None, cwd=None):
        cwd.mkdir(parents=True, exist_ok=True)
        return nbformat.read(str(path), 4)

    monkeypatch.setattr(edition, "execute", read_as_executed)
    for out, appendix in (("learners", None), ("teacher", solutions_section)):
        edition.build_edition(tmp_path / out, langs=(lang,), progress=lambda _: None, root=root, appendix=appendix)
    learners = _text((tmp_path / "learners" / lang / "01_small.html").read_text(encoding="utf-8"))
    teacher = _text((tmp_path / "teacher" / lang / "01_small.html").read_text(encoding="utf-8"))
    assert SOLUTION_LINE not in learners and HEADING[lang] not in learners
    assert HEADING[lang] in teacher and SOLUTION_LINE in teacher and "def remove_duplicates" in teacher
    assert teacher.index(HEADING[lang]) > teacher.index("Optional deep-dive A")  # at the end of the page
    assert "reference solutions" in _text((tmp_path / "teacher" / "index.html").read_text(encoding="utf-8"))
    assert solutions_section(nbformat.v4.new_notebook(), lang, "09_none.ipynb") == 0  # no exercise, no section
