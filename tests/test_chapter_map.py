"""The chapter map is the one source of every reference to the chapter: its sections are the
chapter's, every claim points at a section heading that exists in both editions, and the
blocks it renders into the notebooks and READMEs are up to date."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import chapter  # noqa: E402  (tools/chapter.py)

REPO = Path(__file__).resolve().parent.parent
SUMMARY = REPO.parent / "shared" / "chapter"  # the chapter's summary, where the kit's developers keep it


def cells(path: Path) -> dict:
    return {c["id"]: c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]}


def test_sections_are_the_chapters_own():
    assert [s.number for s in chapter.SECTIONS] == ["11.1", "11.2", "11.3", "11.4", "11.5"]
    assert {nb for s in chapter.SECTIONS for nb in s.notebooks} == set(chapter.NOTEBOOKS)
    assert {c.section for c in chapter.CLAIMS} == {s.number for s in chapter.SECTIONS}
    assert all(c.kind in chapter.KINDS for c in chapter.CLAIMS)


@pytest.mark.skipif(not SUMMARY.is_dir(), reason="the chapter's summary (shared/chapter) is not next to this checkout")
def test_sections_match_the_chapter_summary():
    table = (SUMMARY / "README.md").read_text(encoding="utf-8")
    numbers = re.findall(r"^\| (11\.\d) \|", table, re.M)
    assert numbers == [s.number for s in chapter.SECTIONS]
    text = "".join(p.read_text(encoding="utf-8") for p in SUMMARY.glob("*.txt"))
    for s in chapter.SECTIONS:  # the titles, as the summary's footnotes quote them
        assert f"{s.number} {s.title_zh}" in text, s.title_zh
    for quoted in ("set(cleaned_data)", "starting from epoch 10 with loss 0.4208", "89.15%", "save_interval"):
        assert quoted in text


@pytest.mark.parametrize("number", sorted(chapter.NOTEBOOKS))
def test_every_claim_points_at_a_heading_in_both_editions(number):
    name = chapter.NOTEBOOKS[number]
    for lang, path in (("en", REPO / "notebooks" / name), ("zh", REPO / "notebooks" / "zh" / name)):
        nb = cells(path)
        for claim in chapter.claims_of(number):
            assert claim.cell in nb, f"{path.name} ({lang}) has no cell {claim.cell!r} for {claim.en!r}"
            source = "".join(nb[claim.cell]["source"])
            assert chapter.heading_label(source, lang)  # a section heading: "§3" / "deep-dive A" / "选读 A"
        opening = "".join(next(iter(nb.values()))["source"])
        for s in chapter.sections_of(number):
            assert s.number in opening, f"{path.name} ({lang}) does not name its section {s.number}"


def test_rendered_blocks_are_up_to_date():
    run = subprocess.run([sys.executable, str(REPO / "tools" / "chapter_map.py"), "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr + "\nrun: python tools/chapter_map.py"


def test_opening_block_names_the_kind_of_each_claim():
    headings = {c.cell: f"## {i}. x" for i, c in enumerate(chapter.claims_of("01"), start=1)}
    en = chapter.opening_block("01", headings, "en")
    zh = chapter.opening_block("01", headings, "zh")
    assert "`set(cleaned_data)`" in en and "(in context)" in en and "(beyond the chapter)" in en and "(confirmed)" in en
    assert "（成立）" in zh and "（补上前提）" in zh and "本章的说法" in zh
    assert not [zh for _, zh in chapter.KINDS.values() if "验证" in zh]  # 验证 is validation (docs/glossary.zh-CN.md)
    with pytest.raises(ValueError, match="not a section heading"):
        chapter.heading_label("just prose", "en")


def test_what_the_chapter_does_not_say_of_itself_is_labelled_the_kits_reading():
    """The summary's limits section is the kit's reading of the chapter; the only thing the chapter
    admits is that part of 11.5's code is printed as images. A claim the kit redoes with its own code
    is "reproduced", not "confirmed"."""
    for claim in chapter.CLAIMS:
        if claim.kind == "reading":
            assert claim.en.startswith("(not said in the chapter)") and claim.zh.startswith("（本章没有这样说）")
        assert "admit" not in claim.en and "坦白" not in claim.zh
    assert [c.kind for c in chapter.CLAIMS if "IMDB end to end" in c.en] == ["reproduced"]


@pytest.mark.parametrize("number", sorted(chapter.NOTEBOOKS))
def test_every_header_is_short_and_folds_its_chapter_map(number):
    """Objectives, time, prerequisites: at most about 150 words (English) or 75 s of reading at the kit's
    pace (Chinese); the chapter map sits in a collapsed <details> block."""
    name = chapter.NOTEBOOKS[number]
    for lang, path in (("en", REPO / "notebooks" / name), ("zh", REPO / "notebooks" / "zh" / name)):
        opening = "".join(next(iter(cells(path).values()))["source"])
        folded = re.search(r"<details><summary>[^<]+</summary>\s*<!-- chapter-map:start -->.*?<!-- chapter-map:end -->"
                           r"\s*</details>", opening, re.S)
        assert folded, f"{path.name} ({lang}): the chapter map is not in a collapsed <details> block"
        rest = opening.replace(folded.group(0), "")
        cjk = sum("\u4e00" <= ch <= "\u9fff" for ch in rest)
        words = len(re.sub(r"[\u4e00-\u9fff]", " ", rest).split())
        if lang == "en":
            assert words <= 150, f"{path.name}: the header has {words} words"
        else:
            assert words / 3 + cjk / 5 <= 75, f"zh/{path.name}: the header reads in {words / 3 + cjk / 5:.0f} s"
