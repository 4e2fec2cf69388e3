"""Results as a teacher shows them: small tables and one-line readings, in the notebook's language.

A learner should not have to read a nested ``dict`` repr. A pandas ``DataFrame`` renders as a
table in JupyterLab and in an HTML export with no HTML written by hand; its labels go through
:func:`course_lib.i18n.tr`, so the Chinese edition (same code cells) shows Chinese tables.
"""
from __future__ import annotations

import pandas as pd

from .i18n import resolve, tr


def _label(key: str, lang: str) -> str:
    """``raw_reviews`` -> "raw reviews"; a key that is already a phrase stays as written."""
    return tr(key if " " in key else key.replace("_", " "), lang)


def _value(value, lang: str):
    if isinstance(value, bool):
        return tr("yes" if value else "no", lang)
    if value is None:
        return tr("none", lang)
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(_value(v, lang)) for v in value)
    return value


def facts(values: dict, lang: str | None = None, skip: tuple[str, ...] = ()) -> pd.DataFrame:
    """A flat ``dict`` as a two-column table (nested dicts and ``skip`` keys left out, lists
    joined)."""
    lang = resolve(lang)
    rows = [(_label(k, lang), _value(v, lang)) for k, v in values.items() if k not in skip and not isinstance(v, dict)]
    frame = pd.DataFrame(rows, columns=[tr("what", lang), tr("value", lang)], dtype=object)  # 1600, not 1600.0
    return frame.set_index(tr("what", lang))


COMPARISON = {"identical": "identical?", "first_divergent_step": "first divergent step",
              "max_loss_diff": "largest loss difference", "skipped_samples": "samples skipped",
              "repeated_samples": "samples repeated", "final_params_identical": "final parameters identical?"}


def comparisons(results: dict[str, dict], lang: str | None = None, index: str = "run") -> pd.DataFrame:
    """One row per compared run (a :func:`course_lib.compare.compare_runs` result each)."""
    lang = resolve(lang)
    rows = {name: {tr(label, lang): _value(r[k], lang) for k, label in COMPARISON.items() if k in r}
            for name, r in results.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = tr(index, lang)
    return frame


def reading(result: dict, lang: str | None = None) -> str:
    """The comparison in one line: ``identical: yes`` or ``identical: no; first divergent step: 22``."""
    lang = resolve(lang)
    line = f"{tr('identical?', lang)} {_value(result['identical'], lang)}"
    if not result["identical"]:
        first = result["first_divergent_step"]
        line += f"; {tr('first divergent step', lang)}: {_value(first, lang)}"
        if first is None:
            line += f" ({tr('every step equal; the final parameters differ', lang)})"
    return line
