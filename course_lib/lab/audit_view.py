"""An audit's report as the notebooks show it, in their language: what it found (one row per
finding, with its fix) and the verdict in one line.

:mod:`resume_audit` (the audit) writes English from its module templates (a finding's line and fix,
the verdicts, the faults, the RNGs, what a power cut undid) and keeps a finding's facts as data, so
the Chinese edition looks up those same templates in the one store (:mod:`course_lib.lab.zh.audit`)
and fills them with the facts said in Chinese.
"""
from __future__ import annotations

import re

import pandas as pd
from resume_audit.findings import EVERY_RANK, FAULTS, KINDS, MORE, ONE_RANK, RNG_NAMES, UNDONE, undone_list
from resume_audit.report import STRICT, VERDICTS, Report

from course_lib.lab.i18n import resolve, tr

_BETWEEN_CHINESE = re.compile(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])")


def _zh(text: str, **values) -> str:
    return tr(text, "zh", **values)


def _tidy(text: str) -> str:
    """A space between Chinese and Latin words, none between two Chinese ones nor after a Chinese
    comma, never two."""
    return _BETWEEN_CHINESE.sub("", text.replace("  ", " ").replace("， ", "，").replace("（ ", "（")).strip()


def _spaced(word: str) -> str:
    """``word`` as it stands between Chinese words: a space on each side where it is Latin (``Rank 1``)."""
    return (" " if word[0].isascii() else "") + word + (" " if word[-1].isascii() else "")


THREAD = "{who}'s thread {thread}"  # a file event of a thread other than the main one: rank0/checkpoint-writer


def _who(fault: dict) -> str:
    role = fault.get("who")  # a file event's: rank1, main, proc, and a thread's: rank0/checkpoint-writer
    if role is None:
        return _zh(EVERY_RANK) if fault["rank"] is None else _zh(ONE_RANK, rank=fault["rank"])
    role, _, thread = role.partition("/")
    who = _zh(ONE_RANK, rank=role.removeprefix("rank")) if role.startswith("rank") else tr(role, "zh", context="role")
    return _tidy(_zh(THREAD, who=_spaced(who), thread=_spaced(thread))) if thread else who


def fault_zh(fault: dict) -> str:
    """A fault (as :func:`resume_audit.findings.describe_fault` takes it) in Chinese."""
    return _tidy(_zh(FAULTS[fault["kind"]], who=_spaced(_who(fault)), at=fault["at"], prev=fault["at"] - 1,
                     n=fault.get("n"), op=fault.get("op"), path=fault.get("path")))


def rngs_zh(names) -> str:
    said = [_zh(RNG_NAMES.get(n.removeprefix("rng."), n)) for n in names]
    return " " + (said[0] if len(said) == 1 else _zh(", ").join(said[:-1]) + _zh(" and ") + said[-1])


def names_zh(ops: list) -> str:
    """What a power cut undid, in Chinese."""
    return undone_list(ops, {op: _zh(said) for op, said in UNDONE.items()}, _zh(MORE)).replace(", ", _zh(", "))


def finding_line(finding, lang: str) -> tuple[str, str]:
    """A finding's line and fix in ``lang``."""
    if lang != "zh":
        return finding.line, finding.fix
    line, fix = KINDS[finding.kind]
    return _tidy(finding.render(_zh(line), fault_zh, rngs_zh, names_zh)), _zh(fix)


def audit_findings(report: Report, lang: str | None = None) -> pd.DataFrame:
    """What the audit found, in the order to fix it: each finding, after how many faults it was
    seen, its fix. Notebook 05, §5."""
    lang = resolve(lang)
    rows = []
    for f in report.findings:
        line, fix = finding_line(f, lang)
        rows.append({tr("finding", lang): line, tr("faults", lang): f.count, tr("fix", lang): fix or "-"})
    if not rows:
        rows.append({tr("finding", lang): tr("nothing: every fault resumed bit-identically", lang),
                     tr("faults", lang): report.faults, tr("fix", lang): "-"})
    return pd.DataFrame(rows, index=pd.RangeIndex(1, len(rows) + 1))


def audit_verdict(report: Report, lang: str | None = None) -> str:
    """The audit's verdict in one line (its exit code: 0 only when exact). Used by exercise 05.audit's check."""
    if resolve(lang) != "zh":
        return report.verdict
    case, values = report.verdict_case()
    return _zh(VERDICTS[case], **values, strict=_zh(STRICT) if report.strict else "")
