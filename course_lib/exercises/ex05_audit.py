"""Notebook 05's last exercise (05.audit): a given loop whose save and load the learner fixes,
judged by the audit, with real faults, until it says exact."""
from __future__ import annotations

import sys
from pathlib import Path

from course_lib.audit import AuditError, audit
from course_lib.exercises.base import Exercise, Fail, register, say
from course_lib.exercises.carry import carry_for_check
from course_lib.lab.audit_view import audit_verdict, finding_line

LOOP = Path(__file__).resolve().parent / "audit_loop.py"
FAULTS = 4  # one run, killed four times: a SIGKILL, a SIGTERM, a cut save, a kill right after a save


def _check_audit(funcs: dict, seed: int, lang: str) -> tuple[str, dict]:
    workdir, module = carry_for_check("05.audit", funcs, lang)
    try:
        report = audit([sys.executable, str(LOOP), "--out", "{run}", "--learner", module], out=workdir / "audit",
                       faults=FAULTS, per_run=FAULTS, seed=seed, grace=10, progress=False,
                       references=1)  # the loop is the kit's and seeded: its determinism is not what is checked
    except AuditError as err:
        raise Fail(say(lang, "the loop does not run with your functions: {err}", "用你的函数，训练循环跑不起来：{err}",
                       err=err)) from None
    details = {"report": str(report.out / "report.json")}
    first = next((f for f in report.findings if f.defect or f.lost), None)  # lost work too: the loop saves on SIGTERM
    if first is None and report.exact:
        return audit_verdict(report, lang), details
    line, fix = finding_line(first, lang)
    raise Fail(say(lang, "not exact yet: {line}. Fix: {fix}", "还不是逐位相同：{line}。修正：{fix}", line=line, fix=fix),
               details)


register(Exercise(
    "05.audit", ("Fix a loop until the audit says exact", "修一个训练循环，直到审计的结论是逐位相同"),
    ("save_checkpoint", "load_checkpoint"), _check_audit,
    hints=[("Run the check and read its one line: the audit names the first piece of state or the first habit that "
            "breaks the resume. Fix that, run it again: one finding at a time.",
            "运行检查，读它给出的那一行：审计会指出第一个让续训出错的状态或习惯做法。改掉它，再运行：一次只改一个问题。"),
           ("The next step reads the model, the optimizer's state, the scheduler (the learning rate), torch's RNG "
            "(dropout: torch.get_rng_state / set_rng_state) and where the loop is: the epoch and the step within it.",
            "下一步要读的是：模型、优化器状态、学习率调度器（决定当前的学习率）、torch 的随机数生成器（dropout："
            "torch.get_rng_state / set_rng_state），以及训练循环的位置：epoch 和 epoch 内的步。"),
           ("Write the file atomically: torch.save into path + '.tmp' opened with open(..., 'wb'), f.flush(), "
            "os.fsync(f.fileno()), then os.replace(tmp, path); load_checkpoint returns (epoch, step).",
            "原子地写文件：用 open(..., 'wb') 打开 path + '.tmp'，torch.save 写进去，f.flush()，"
            "os.fsync(f.fileno())，再 os.replace(tmp, path)；load_checkpoint 返回 (epoch, step)。")],
    solution="course_lib.exercises.solutions.ex05_audit", spawns=True))
