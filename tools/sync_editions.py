"""Keep the Chinese edition (``notebooks/zh/``) in step with the English one.

    python tools/sync_editions.py            # rewrite notebooks/zh/*.ipynb
    python tools/sync_editions.py --check    # exit 1 if a Chinese notebook is out of step

The English notebooks own the code: each Chinese notebook is rebuilt cell by cell in the
English order, code cells copied from English, prose cells taken from the Chinese notebook by
cell id. A prose cell that exists only in English stops the rebuild with its id: write its
Chinese text first (in the chapter's own terms, not word for word). Outputs stay stripped.
"""
import argparse
import json
import sys
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def rebuild(en: dict, zh: dict, name: str) -> dict:
    prose = {c["id"]: c for c in zh["cells"] if c["cell_type"] == "markdown"}
    missing = [c["id"] for c in en["cells"] if c["cell_type"] == "markdown" and c["id"] not in prose]
    if missing:
        raise SystemExit(f"zh/{name}: no Chinese text for cell(s) {', '.join(missing)}; add them to zh/{name}")
    cells = [dict(c, outputs=[], execution_count=None) if c["cell_type"] == "code" else prose[c["id"]]
             for c in en["cells"]]
    return {**en, "cells": cells}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    stale = []
    for en_path in sorted(NOTEBOOKS.glob("*.ipynb")):
        zh_path = NOTEBOOKS / "zh" / en_path.name
        if not zh_path.exists():
            raise SystemExit(f"{zh_path} is missing: translate {en_path.name} first")
        old = json.loads(zh_path.read_text(encoding="utf-8"))
        new = rebuild(json.loads(en_path.read_text(encoding="utf-8")), old, en_path.name)
        if new != old:
            stale.append(zh_path.name)
            if not a.check:
                zh_path.write_text(json.dumps(new, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(("out of step: " if a.check else "rewritten: ") + (", ".join(stale) or "none"))
    return 1 if a.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
