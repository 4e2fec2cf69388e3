"""The executed edition: a notebook run offline top to bottom and written as HTML with its
outputs and figures embedded; the per-section times the headers quote."""
import pytest

from course_lib import edition


@pytest.mark.slow
def test_one_notebook_becomes_a_readable_html_page(tmp_path):
    index = edition.build_edition(tmp_path / "ed", langs=("en",), small=True, only=["01"], progress=lambda _: None)
    page = (tmp_path / "ed" / "en" / "01_data_cleaning_dedup.html").read_text(encoding="utf-8")
    assert "data:image/png;base64" in page  # the figures travel inside the page
    assert "unique texts with set()" in page  # a cell's real output
    assert "0%|" not in page  # no frozen progress bar
    assert "01_data_cleaning_dedup" in index.read_text(encoding="utf-8")
    parts = edition.sections(__import__("nbformat").read(str(tmp_path / "ed" / "work" / "en" / "01_data_cleaning_dedup.ipynb"), 4))
    assert parts[1]["title"].startswith("1.") and any(p["optional"] for p in parts)
    assert sum(p["run_seconds"] for p in parts) > 0 and all(edition.read_seconds(p) >= 0 for p in parts)


def test_reading_time_counts_words_characters_code_and_outputs():
    en = {"words": 180, "cjk": 0, "code_lines": 10, "outputs": 1}
    zh = {"words": 0, "cjk": 300, "code_lines": 0, "outputs": 0}
    assert edition.read_seconds(en) == 60 + 30 + 20 and edition.read_seconds(zh) == 60


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
    assert [o["data"]["text/plain"] for o in nb.cells[0].outputs] == [edition.STATIC_NOTE["zh"]]
