"""One glossary is the source of the Chinese edition's terms (docs/glossary.zh-CN.md): the
variants it marks in bold ("never, in any sense") appear nowhere in the Chinese notebooks,
READMEs, docs or the labels the code prints. Quotations of the chapter (「...」) and code
(`...`) are exempt."""
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GLOSSARY = REPO / "docs" / "glossary.zh-CN.md"


def never() -> set[str]:
    rows = [line for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    return {v for line in rows[2:] for v in re.findall(r"\*\*([^*]+)\*\*", line.split("|")[3])}


def chinese_texts():
    for path in sorted((REPO / "notebooks" / "zh").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                yield f"{path.name}:{cell['id']}", "".join(cell["source"])
    for path in [REPO / "README.zh-CN.md", *sorted((REPO / "docs").glob("*.zh-CN.md"))]:
        if path != GLOSSARY:
            yield path.name, path.read_text(encoding="utf-8")
    for path in sorted((REPO / "course_lib").rglob("*.py")):
        yield str(path.relative_to(REPO)), path.read_text(encoding="utf-8")


def test_the_glossary_marks_what_is_never_written():
    assert {"进程数", "完全一致", "载入", "补齐"} <= never()


def test_no_banned_variant_anywhere():
    banned = never()
    found = []
    for where, text in chinese_texts():
        text = re.sub(r"「[^」]*」|`[^`\n]*`", "", text)
        found += [(where, v) for v in banned if v in text]
    assert not found, found
