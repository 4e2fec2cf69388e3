"""The widgets' words in English and Chinese (the notebooks' two editions).

The two editions share their code cells to the character, so a widget cannot be told its
language in code; it finds it: ``COURSE_LIB_LANG`` if set, else what the notebook file says
(``metadata.course_lib.lang``, which every Chinese notebook carries: a copy of it anywhere still
speaks Chinese), found through Jupyter's ``JPY_SESSION_NAME`` (the notebook's path), else the
notebook's folder (``notebooks/zh/`` -> Chinese), from that path or the kernel's working directory
(JupyterLab and papermill start kernels in the notebook's folder). Pass ``lang=`` to choose. The
Chinese words themselves: :mod:`course_lib.lab.labels_zh`.
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from course_lib.lab.labels_zh import LABELS

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


def tr(text: str, lang: str | None, **values) -> str:
    """``text`` in ``lang`` (``None``: the notebook's, :func:`resolve`; English is the key), formatted with ``values``."""
    out = LABELS.get(text, text) if resolve(lang) == "zh" else text
    return out.format(**values) if values else out
