"""Keep the Chinese edition (``notebooks/zh/``) in step with the English one.

    python tools/sync_editions.py            # rewrite notebooks/zh/*.ipynb
    python tools/sync_editions.py --check    # exit 1 if a Chinese notebook is out of step

The English notebooks own the code: each Chinese notebook is rebuilt cell by cell in the
English order, prose cells taken from the Chinese notebook by cell id. A code cell is the same
code in both editions to the token (:func:`code_of`), but its comments and docstrings speak the
edition's language: the Chinese cell is kept while its code is the English cell's, and replaced
by the English cell when the code changed (the rebuild names it: translate its comments and
docstrings again; ``tests/test_notebooks.py`` fails on an English comment in the Chinese
edition). A prose cell that exists only in English stops the rebuild with its id: write its
Chinese text first (in the chapter's own terms, not word for word). Outputs stay stripped.
"""
import argparse
import ast
import io
import json
import sys
import tokenize
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING}


def code_of(source: str) -> list:
    """The cell's code without its comments and docstrings: the tokens (kind, text) in order, a
    docstring written as ``DOCSTRING``. Two cells with the same list run the same code."""
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError):
        return [source]  # not plain Python (a magic, say): compared as text
    docstrings = {(body[0].lineno, body[0].col_offset) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and (body := node.body) and isinstance(body[0], ast.Expr)
                  and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)}
    return [(t.type, "DOCSTRING" if t.type == tokenize.STRING and t.start in docstrings else t.string)
            for t in tokens if t.type not in SKIPPED]


def rebuild(en: dict, zh: dict, name: str) -> tuple[dict, list[str]]:
    """The Chinese notebook rebuilt on the English one, and the ids of code cells copied from
    English (their comments and docstrings to translate)."""
    prose = {c["id"]: c for c in zh["cells"] if c["cell_type"] == "markdown"}
    code = {c["id"]: c for c in zh["cells"] if c["cell_type"] == "code"}
    missing = [c["id"] for c in en["cells"] if c["cell_type"] == "markdown" and c["id"] not in prose]
    if missing:
        raise SystemExit(f"zh/{name}: no Chinese text for cell(s) {', '.join(missing)}; add them to zh/{name}")
    cells, copied = [], []
    for cell in en["cells"]:
        if cell["cell_type"] == "markdown":
            cells.append(prose[cell["id"]])
            continue
        mine = code.get(cell["id"])
        same = mine is not None and code_of("".join(mine["source"])) == code_of("".join(cell["source"]))
        if not same:
            copied.append(cell["id"])
        cells.append(dict(cell, source=mine["source"] if same else cell["source"], outputs=[], execution_count=None))
    metadata = {**en["metadata"], "course_lib": {"lang": "zh"}}  # a copy anywhere still speaks Chinese (lab.i18n)
    return {**en, "metadata": metadata, "cells": cells}, copied


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
        new, copied = rebuild(json.loads(en_path.read_text(encoding="utf-8")), old, en_path.name)
        if new != old:
            stale.append(zh_path.name)
            if not a.check:
                zh_path.write_text(json.dumps(new, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        if copied and not a.check:
            print(f"zh/{en_path.name}: code copied from English into cell(s) {', '.join(copied)}: "
                  "translate their comments and docstrings")
    print(("out of step: " if a.check else "rewritten: ") + (", ".join(stale) or "none"))
    return 1 if a.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
