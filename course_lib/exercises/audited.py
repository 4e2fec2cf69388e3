"""Exercises 04.save, 05.resume and 05.audit, checked by the audit: the learner's functions run
in :mod:`.audit_loop` as a script, struck by real faults, each restart judged against the run
never interrupted (the audit, :mod:`resume_audit`, the kit's one resume judge). The first thing to fix
is said with its fix, in the notebook's language."""
from __future__ import annotations

import ast
import inspect
import random
import sys
import textwrap
from pathlib import Path

from resume_audit import AuditError, audit

from course_lib.exercises.base import Fail
from course_lib.exercises.carry import carry_for_check
from course_lib.lab.audit_view import audit_verdict, finding_line
from course_lib.lab.i18n import tr

LOOP = Path(__file__).resolve().parent / "audit_loop.py"
FAULTS = 4  # 05.audit: one run, killed four times: a SIGKILL, a SIGTERM, a cut save, a kill right after a save


def faults_for(ex_id: str, seed: int) -> int | list[str]:
    """The faults of one check, drawn by ``seed``, all in one run (the loop saves after global
    steps 5, 10, 17, 22, 29 and 34). 04.save: a kill as a step begins, one inside a save's
    ``torch.save``, one at the rename or copy that puts a later save in place. 05.resume: a kill
    with two saves before it (the newest file is not the first), one right after a later save."""
    rng = random.Random(seed)
    if ex_id == "04.save":
        return [f"sigkill@{rng.randint(6, 16)}", f"during-save@{rng.choice((17, 22))}",
                f"during-commit@{rng.choice((29, 34))}"]
    if ex_id == "05.resume":
        return [f"sigkill@{rng.randint(12, 16)}", f"after-save@{rng.choice((23, 30))}"]
    return FAULTS


def check_by_audit(ex_id: str, funcs: dict, seed: int, lang: str) -> str:
    """``funcs`` carried into a module the loop imports; the loop run once uninterrupted, then
    one run struck by every fault (``per_run=FAULTS``: no check has more); the first thing to fix,
    or "not checked" when a fault found nothing to strike. A function still as the notebook hands
    it out is said at once, before any process starts."""
    workdir, module = carry_for_check(ex_id, funcs, lang)
    names = unwritten(funcs)
    if names:  # an audit takes seconds of real kills to find that nothing was saved or loaded
        raise Fail(tr("not written yet: {names}. Each body still only returns fixed values, as the notebook hands it out: "
                      "write the code, run its cell, then run this check again (it runs the training loop with your "
                      "functions and really kills it)", lang, names=tr(", ", lang).join(names)))
    try:  # the loop is the kit's and seeded: its determinism is not checked (references=1); the faults are the
        # check's own, no crash points at file events beside them (events=0: each would be a run of its own)
        report = audit([sys.executable, str(LOOP), "--out", "{run}", "--learner", module, "--exercise", ex_id],
                       out=workdir / "audit", faults=faults_for(ex_id, seed), per_run=FAULTS, seed=seed, grace=10,
                       events=0, progress=False, references=1)
    except AuditError as err:
        raise Fail(tr("the loop does not run with your functions: {err}", lang, err=err)) from None
    first = next((f for f in report.findings if f.defect or f.lost), None)  # lost work too: the loop saves on SIGTERM
    if first is not None:
        line, fix = finding_line(first, lang)
        raise Fail(tr("not exact yet: {line}. Fix: {fix}", lang, line=line, fix=fix))
    if not report.exact:
        raise Fail(tr("not exact yet: {v}", lang, v=audit_verdict(report, lang)))
    missed = next((f for f in report.findings if f.kind.startswith("undelivered")), None)
    if missed is not None:  # a fault that found nothing to strike checked nothing
        fix = tr(UNSTRUCK.get(missed.kind, UNSTRUCK["other"]), lang)
        raise Fail(tr("not checked: {line}. {fix}", lang, line=finding_line(missed, lang)[0], fix=fix))
    return audit_verdict(report, lang)


def unwritten(funcs: dict) -> list[str]:
    """The names of ``funcs`` still as the notebook hands them out: a body of a docstring,
    ``pass`` or ``...``, fixed values bound and returned, nothing else (``# your code`` left as it
    is). A source that does not parse as one function (a file edited since it was imported) is
    left to the audit."""
    found = []
    for name, fn in funcs.items():
        try:
            node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]  # carry_for_check found the source
        except (SyntaxError, OSError, TypeError):
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        fixed = {t.id for s in node.body if isinstance(s, ast.Assign) and _fixed(s.value) for t in s.targets
                 if isinstance(t, ast.Name)}
        if all(isinstance(s, ast.Pass) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
               or isinstance(s, ast.Assign) and _fixed(s.value)
               or isinstance(s, ast.Return) and (s.value is None or _fixed(s.value)
                                                  or isinstance(s.value, ast.Name) and s.value.id in fixed)
               for s in node.body):
            found.append(name)
    return found


def _fixed(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError):  # TypeError: e.g. a set of lists
        return False


UNSTRUCK = {  # what to do when a fault found nothing to strike (their Chinese: lab/zh/exercises.py)
    "undelivered-no-save": "save_checkpoint must write the checkpoint with torch.save (the check kills inside it)",
    "undelivered-no-commit": "write the checkpoint to a temporary file, then put it in place with os.replace(tmp, path): "
                             "written at its path directly, a kill mid-write leaves half a file there",
    "other": "the loop must train all its steps with your functions, saving every 5 steps",
}
