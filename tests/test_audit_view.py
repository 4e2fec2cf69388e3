"""The audit's report in the Chinese edition (notebook 05 §5, exercise 05.audit): every finding
the audit can give, every verdict case and every fault is said in Chinese with the same numbers."""
import string

from resume_audit.findings import EVERY_RANK, FAULTS, KINDS, MORE, ONE_RANK, RNG_NAMES, UNDONE
from resume_audit.report import STRICT, VERDICTS

from course_lib.lab.audit_view import fault_zh
from course_lib.lab.zh import LABELS


def _fields(template: str) -> set[str]:
    return {name.split(":")[0] for _, name, _, _ in string.Formatter().parse(template) if name}


def _chinese(english: str) -> str:
    assert english in LABELS, f"no Chinese for the audit's {english!r} (course_lib/lab/zh/audit.py)"
    return LABELS[english]


def test_every_kind_of_finding_says_its_line_and_fix_in_chinese():
    for kind, (line, fix) in KINDS.items():
        assert _fields(_chinese(line)) == _fields(line), kind  # the same numbers, said in Chinese
        assert not fix or _chinese(fix)


def test_every_verdict_and_fault_is_said_in_chinese():
    for case, english in VERDICTS.items():
        assert _fields(_chinese(english)) <= _fields(english), case
    for english in [*FAULTS.values(), EVERY_RANK, ONE_RANK, MORE, STRICT, *RNG_NAMES.values(), *UNDONE.values()]:
        assert _fields(_chinese(english)) <= _fields(english), english
    assert fault_zh({"kind": "after-save", "at": 11, "rank": 1}) == "第 10 步刚保存完、第 11 步开始时 Rank 1 被 SIGKILL 杀掉"
    assert fault_zh({"kind": "sigterm", "at": 7, "rank": None}) == "第 7 步开始时所有 Rank 收到 SIGTERM"
    event = {"kind": "power-data", "at": 10, "rank": None, "who": "rank1", "n": 12, "op": "rename", "path": "ck.tmp"}
    assert fault_zh(event) == "Rank 1 的第 12 个文件事件（rename ck.tmp，第 10 步）之前断电，没有 fsync 的数据丢失"
    assert fault_zh({**event, "kind": "torn", "who": "main"}).startswith("主进程的第 12 个文件事件")
    threaded = fault_zh({**event, "who": "rank0/checkpoint-writer"})  # a background save's own numbering
    assert threaded.startswith("Rank 0 的 checkpoint-writer 线程的第 12 个文件事件"), threaded
    from resume_audit.findings import Finding

    from course_lib.lab.audit_view import finding_line

    lost = Finding("unsynced-dir", {"fault": event, "newest": 10, "resumed": 5, "lost": 5,
                                    "names": [["rename", "a.tmp", "a.pt"], ["create", "a.tmp"], ["mkdir", "x"]]})
    assert "no fsync of its folder followed the rename of a.tmp to a.pt, the creation of a.tmp (and 1 more)" in lost.line
    line, _ = finding_line(lost, "zh")
    assert "把 a.tmp 重命名为 a.pt、创建 a.tmp（另有 1 处）" in line and "rename of" not in line
