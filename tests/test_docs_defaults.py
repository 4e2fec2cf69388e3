"""A default a page names is TrainConfig's: the teacher's guides, the docs, the READMEs and the
notebooks' prose say "the default `--reduction ddp`" only where ``TrainConfig`` has it."""
import dataclasses
import json
import re
from pathlib import Path

from course_lib.config import TrainConfig

REPO = Path(__file__).resolve().parent.parent
OPTION = r"`--(?P<name>[a-z][a-z0-9-]*)[ =](?P<value>[^`\s]+)`"
KEYWORD = r"`(?P<name>[a-z_]+)=[\"']?(?P<value>[^`\"'\s]+)[\"']?`"
# "the default `--x v`", "default, `--x v`", "默认的 `--x v`" / "`--x v` (the default)", "`--x v`, the default",
# "`x=\"v\"` is the default", "`--x v`（默认）"
BEFORE = re.compile(r"(?:\bdefault[,:]?|默认(?:的|值|是|为)?[，：]?)\s*(?:is\s+)?(?:" + OPTION + "|"
                    + KEYWORD.replace("name", "kname").replace("value", "kvalue") + ")", re.I)
AFTER = re.compile(r"(?:" + OPTION + "|" + KEYWORD.replace("name", "kname").replace("value", "kvalue")
                   + r")\s*(?:\(the\s+default\)|\(default\)|,\s+the\s+default\b|is\s+the\s+default\b|（默认）|是默认值)",
                   re.I)
REDUCTION = re.compile(r"\bdefault\s+(?P<value>ddp|invariant)\s+reduction|默认的(?P<zvalue>ddp|不变)归约")


def pages() -> list[tuple[str, str]]:
    """(where, text) of every page that may name a default: docs, READMEs, CONTRIBUTING, notebooks' prose."""
    found = [(str(p.relative_to(REPO)), p.read_text(encoding="utf-8"))
             for p in [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md", REPO / "README.zh-CN.md",
                       REPO / "CONTRIBUTING.md"]]
    for path in sorted((REPO / "notebooks").glob("**/0*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                found.append((f"{path.relative_to(REPO)}:{cell['id']}", "".join(cell["source"])))
    return found


def defaults() -> dict[str, str]:
    """TrainConfig's defaults, as a command line or a keyword writes them."""
    out = {}
    for f in dataclasses.fields(TrainConfig):
        value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        out[f.name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def named_defaults(text: str) -> list[tuple[str, str]]:
    pairs = []
    for pattern in (BEFORE, AFTER):
        for m in pattern.finditer(text):
            name = (m.group("name") or m.group("kname")).replace("-", "_")
            pairs.append((name, m.group("value") or m.group("kvalue")))
    for m in REDUCTION.finditer(text):
        pairs.append(("reduction", {"不变": "invariant"}.get(m.group("zvalue"), m.group("zvalue") or m.group("value"))))
    return pairs


def test_the_pattern_finds_a_named_default():
    assert named_defaults("with the default `--reduction invariant`, on") == [("reduction", "invariant")]
    assert named_defaults("`reduction=\"ddp\"` is the default") == [("reduction", "ddp")]
    assert named_defaults("`--device auto` (the default) gives") == [("device", "auto")]
    assert named_defaults("本套件的默认值 `--reduction invariant` 按") == [("reduction", "invariant")]
    assert named_defaults("`--reduction invariant` (the\ndefault) it") == [("reduction", "invariant")]
    assert named_defaults("under the default invariant reduction `no-rng`") == [("reduction", "invariant")]


def test_every_default_a_page_names_is_trainconfigs():
    known, wrong = defaults(), []
    for where, text in pages():
        wrong += [(where, name, value, known[name]) for name, value in named_defaults(text)
                  if name in known and value != known[name]]
    assert not wrong, f"pages that name a default TrainConfig does not have (page, option, said, TrainConfig's): {wrong}"


def test_the_front_door_stays_short():
    """README.md is the front door: at most 1,200 words; details belong in docs/."""
    words = len((REPO / "README.md").read_text(encoding="utf-8").split())
    assert words <= 1200, f"README.md has {words} words: move details into docs/"
