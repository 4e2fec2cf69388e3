"""The widgets' words in English and Chinese (the notebooks' two editions).

The two editions share their code cells to the character, so a widget cannot be told its
language in code; it finds it: ``COURSE_LIB_LANG`` if set, else the notebook's folder
(``notebooks/zh/`` -> Chinese), from Jupyter's ``JPY_SESSION_NAME`` (the notebook's path) or
the kernel's working directory (JupyterLab and papermill start kernels in the notebook's
folder). Pass ``lang=`` to choose. The Chinese words themselves: :mod:`course_lib.lab.labels_zh`.
"""
from __future__ import annotations

import os
from pathlib import Path

from course_lib.lab.labels_zh import LABELS

LANGS = ("en", "zh")


def resolve(lang: str | None) -> str:
    """``lang``, else the notebook's: ``"zh"`` in the Chinese edition, else ``"en"`` (see the module docstring)."""
    if not lang:
        lang = os.environ.get("COURSE_LIB_LANG", "").lower()
        where = Path(os.environ.get("JPY_SESSION_NAME") or Path.cwd())
        lang = lang if lang in LANGS else "zh" if "zh" in where.parts[-2:] else "en"
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}, got {lang!r}")
    return lang


def tr(text: str, lang: str | None, **values) -> str:
    """``text`` in ``lang`` (``None``: the notebook's, :func:`resolve`; English is the key), formatted with ``values``."""
    out = LABELS.get(text, text) if resolve(lang) == "zh" else text
    return out.format(**values) if values else out
