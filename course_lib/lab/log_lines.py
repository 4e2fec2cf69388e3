"""The ranks' log lines in the Chinese edition: the trainer writes its logs in English (the core
knows no language, and a log file is read by tools); the notebook shows each line a person reads
through :func:`chinese_line`, which :func:`show_ranks_in` sets as the view of
:mod:`course_lib._runtime.rank_output` when the notebook is the Chinese one.

Each entry pairs the English line, as the trainer formats it, with the Chinese one; ``{name}``
stands for what the line carries (a number, a path), copied as written. A line no entry matches
is shown as written: the chapter's own ``Rank 0, Epoch [..], Step [..], Loss: ..`` is its code's
output, and stays as the chapter prints it.
"""
from __future__ import annotations

import re

from course_lib._runtime.rank_output import set_line_view
from course_lib.lab.i18n import resolve

LINES = {
    "Held-out accuracy {acc} on {n} reviews ({reduction}); parameters identical on all {w} ranks ({digest})":
        "留出集准确率 {acc}（{n} 条影评，归约方式 {reduction}）；{w} 个 Rank 上的参数逐位相同（{digest}）",
    "Resumed from {source}: epoch {epoch}, step {step}, mode {mode}, last loss {loss}":
        "从 {source} 续训：第 {epoch} 个 epoch，第 {step} 步，续训方式 {mode}，最后的损失 {loss}",
    "NOTE: a {saved}-rank checkpoint resumed on {w} rank(s) with the {reduction} reduction: the run continues "
    "bit-identically.":
        "注意：{saved} 个 Rank 保存的检查点在 {w} 个 Rank 上续训（归约方式 {reduction}）：训练逐位相同地继续。",
    "NOTE: the learning-rate schedule was planned for {before} steps and now runs to {after}: its linear decay is "
    "stretched to end at step {end}, so the next step uses lr {lr} (as planned: {planned}). Steps up to the "
    "checkpoint are unchanged. To extend bit-identically to a run planned that long, give both the same "
    "--schedule-steps.":
        "注意：学习率调度原计划 {before} 步，现在要走到第 {after} 步：线性衰减被拉长到第 {end} 步才结束，所以下一步的"
        "学习率是 {lr}（原计划 {planned}）。检查点之前的步不变。要与一开始就计划这么长的训练逐位相同，两次都给同样的 "
        "--schedule-steps。",
    "Stop requested ({why}): saved step {step}, exiting for a later --resume auto":
        "收到停止请求（{why}）：第 {step} 步已保存，退出，之后用 --resume auto 续训",
    "Rank {rank}: checkpoint at step {step} NOT saved ({err}); previous one kept":
        "Rank {rank}：第 {step} 步的检查点没有保存（{err}）；上一个检查点保留",
    "Rank {rank}: a peer is gone ({err}); emergency checkpoint {name} of the last finished step saved, exiting for "
    "--resume auto":
        "Rank {rank}：有一个 Rank 不在了（{err}）；最后一个完成的步已存为紧急检查点 {name}，退出，之后用 --resume auto 续训",
    "The group re-formed in-process on {w} rank(s) ({reason}), {s} s after it noticed; step {step} next":
        "通信组在进程内重新组成，共 {w} 个 Rank（{reason}），发现后 {s} 秒；下一步是第 {step} 步",
    "kill at step {step} (rank {rank}, {mode}) already fired in an earlier attempt; it does not fire again":
        "第 {step} 步的中断（Rank {rank}，{mode}）在之前的某次启动中已经发生；不会再发生",
    "WARNING: kill at step {step} will not fire: the run ends at step {total}":
        "警告：第 {step} 步的中断不会发生：训练在第 {total} 步就结束了",
    "WARNING: kill at step {step} will not fire: this attempt resumes after step {start}; pick a later step":
        "警告：第 {step} 步的中断不会发生：这次启动从第 {start} 步之后续训；请选更晚的一步",
}


def _pattern(english: str) -> re.Pattern:
    parts = re.split(r"\{(\w+)\}", english)  # text, name, text, name, ..., text
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts)) + "$")


PATTERNS = [(_pattern(en), zh) for en, zh in LINES.items()]


def chinese_line(line: str) -> str:
    """``line`` in Chinese when it is one of the trainer's :data:`LINES`, else as written."""
    for pattern, zh in PATTERNS:
        m = pattern.match(line)
        if m:
            return zh.format(**m.groupdict())
    return line


def show_ranks_in(lang: str | None = None) -> str:
    """Show the ranks' lines in ``lang`` (default: the notebook's) from now on in this process; returns it."""
    lang = resolve(lang)
    set_line_view(chinese_line if lang == "zh" else None)
    return lang
