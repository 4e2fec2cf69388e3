"""Build ``course_lib/lab/fonts/course-lib-cjk.otf``: the Chinese glyphs the kit's figures can draw,
cut out of Noto Sans CJK SC (SIL Open Font License 1.1), so the Chinese edition's figures are
Chinese on any machine, offline, without a 16 MB font in the repository or a system package.

The characters are every CJK character and full-width punctuation mark in the package's source
(where every label a figure draws lives: ``course_lib.lab.i18n``); a test fails when a new label
needs a character the font lacks, and names this tool. Run it with the full font:

    pip download --no-deps mplfonts -d /tmp/f && unzip -j /tmp/f/mplfonts-*.whl '*NotoSansCJKsc-Regular.otf' -d /tmp/f
    python tools/cjk_font.py /tmp/f/NotoSansCJKsc-Regular.otf

(or Debian's fonts-noto-cjk: /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc, --font-number 2).
The subset is a Modified Version under the OFL, so it carries another family name.
"""
import argparse
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "course_lib" / "lab" / "fonts" / "course-lib-cjk.otf"
FAMILY = "Course Lib CJK"


def wanted(text: str) -> bool:
    return "\u4e00" <= text <= "\u9fff" or "\u3000" <= text <= "\u303f" or "\uff00" <= text <= "\uffef"


def characters() -> set[str]:
    """Every CJK character and full-width mark in the package's Python source."""
    return {ch for path in (ROOT / "course_lib").rglob("*.py") for ch in path.read_text(encoding="utf-8") if wanted(ch)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", help="Noto Sans CJK SC (an .otf, or a .ttc with --font-number)")
    ap.add_argument("--font-number", type=int, default=0)
    a = ap.parse_args()
    font = TTFont(a.source, fontNumber=a.font_number)
    options = subset.Options()
    options.name_IDs, options.layout_features, options.hinting = ["*"], ["*"], False
    sub = subset.Subsetter(options)
    sub.populate(text="".join(sorted(characters())))
    sub.subset(font)
    for record in font["name"].names:
        if record.nameID in (1, 3, 4, 6, 16):
            record.string = FAMILY.replace(" ", "") if record.nameID == 6 else FAMILY
    OUT.parent.mkdir(parents=True, exist_ok=True)
    font.save(OUT)
    print(f"{OUT.relative_to(ROOT)}: {len(characters())} characters, {OUT.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
