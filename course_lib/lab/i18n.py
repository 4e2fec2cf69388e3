"""The editions' language and their words: which edition a notebook is, and the one lookup of the
Chinese words (:data:`LABELS`, one dict keyed by the English: :mod:`course_lib.lab.zh`).

The two editions share their code cells to the character, so a view cannot be told its language in
code; it finds it: ``COURSE_LIB_LANG`` if set, else what the notebook file says
(``metadata.course_lib.lang``, which every Chinese notebook carries: a copy of it anywhere still
speaks Chinese), found through Jupyter's ``JPY_SESSION_NAME`` (the notebook's path), else the
notebook's folder (``notebooks/zh/`` -> Chinese), from that path or the kernel's working directory
(JupyterLab and papermill start kernels in the notebook's folder). Pass ``lang=`` to choose.

The code writes English, and English is the key. :func:`tr` says text the code holds (a label, a
template and its values); :func:`tr_line` a line already rendered, above all by the core, which knows
no language: it matches the line against the core's templates (:data:`course_lib.lab.zh.LINES`,
compiled once) and says what the line carries in Chinese too. :func:`both` gives one text in both
editions, for data that shows either (a quiz's options are shuffled once for both);
:func:`show_ranks_in` makes :func:`tr_line` the view of the ranks' lines.
"""
from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

from course_lib._runtime.rank_output import set_line_view
from course_lib.lab.zh import LABELS, LINES

LANGS = ("en", "zh")


def resolve(lang: str | None) -> str:
    """``lang``, else the notebook's: ``"zh"`` in the Chinese edition, else ``"en"`` (see the module docstring)."""
    if not lang:
        lang = os.environ.get("COURSE_LIB_LANG", "").lower()
        where = Path(os.environ.get("JPY_SESSION_NAME") or Path.cwd())
        lang = lang if lang in LANGS else notebook_lang(where) or ("zh" if "zh" in where.parts[-2:] else "en")
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}, got {lang!r}")
    return lang


def notebook_lang(path: Path) -> str | None:
    """The edition the notebook file at ``path`` says it is (``metadata.course_lib.lang``), or ``None``
    (not a notebook, or one that says nothing). Read once per version of the file."""
    try:
        return _lang_in(str(path), path.stat().st_mtime) if path.suffix == ".ipynb" else None
    except OSError:
        return None


@functools.lru_cache(maxsize=8)
def _lang_in(path: str, mtime: float) -> str | None:
    try:
        said = (json.loads(Path(path).read_text(encoding="utf-8")).get("metadata", {}).get("course_lib") or {}).get("lang")
    except (OSError, ValueError, AttributeError):
        return None
    return said if said in LANGS else None


def tr(text: str, lang: str | None, *, context: str = "", **values) -> str:
    """``text`` in ``lang`` (``None``: the notebook's, :func:`resolve`), formatted with ``values``: its
    entry in :data:`LABELS`, else the English. ``context`` tells apart one English word meant two ways
    (its key is ``"context|text"``, as gettext's message context); a value may not be named so."""
    out = LABELS.get(f"{context}|{text}" if context else text, text) if resolve(lang) == "zh" else text
    return out.format(**values) if values else out


def both(text: str, context: str = "") -> tuple[str, str]:
    """``text`` in English and in Chinese, for data that shows either (a quiz's option, an exercise's hint)."""
    return text, tr(text, "zh", context=context)


def _pattern(template: str) -> re.Pattern:
    parts = re.split(r"\{(\w+)\}", template)  # text, name, text, name, ..., text
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts)) + "$")


PATTERNS = [(_pattern(template), LABELS[template]) for template in LINES]


def tr_line(line: str, lang: str | None = None) -> str:
    """``line``, already rendered, in ``lang``: in Chinese its entry in :data:`LABELS`, else the first
    template of the core's lines it matches, what it carries said the same way; else as written (the
    chapter's own ``Rank 0, Epoch [..], Step [..], Loss: ..``, a traceback)."""
    return _chinese_line(line) if resolve(lang) == "zh" else line


def _chinese_line(line: str) -> str:
    if line in LABELS:
        return LABELS[line]
    for pattern, chinese in PATTERNS:
        m = pattern.match(line)
        if m:
            return chinese.format(**{name: _chinese_line(value) for name, value in m.groupdict().items()})
    return line


def show_ranks_in(lang: str | None = None) -> None:
    """Show the ranks' lines (:mod:`course_lib._runtime.rank_output`) in ``lang`` (default: the
    notebook's) from now on in this process."""
    set_line_view(_chinese_line if resolve(lang) == "zh" else None)
