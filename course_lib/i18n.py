"""The widgets' words in English and Chinese (the notebooks' two editions).

The two editions share their code cells to the character, so a widget cannot be told its
language in code; it finds it: ``COURSE_LIB_LANG`` if set, else the notebook's folder
(``notebooks/zh/`` -> Chinese), from Jupyter's ``JPY_SESSION_NAME`` (the notebook's path) or
the kernel's working directory (JupyterLab and papermill start kernels in the notebook's
folder). Pass ``lang=`` to choose.
"""
from __future__ import annotations

import os
from pathlib import Path

LANGS = ("en", "zh")

LABELS = {
    "kill at step": "在第几步中断",
    "kill mode": "中断方式",
    "then kill at": "之后再中断于",
    "resume mode": "续训方式",
    "world size": "进程数",
    "resume on": "续训于",
    "same ranks": "原进程数",
    "1 rank": "1 个进程",
    "2 ranks": "2 个进程",
    "reduction": "梯度归约",
    "run length": "训练步数",
    "Run": "运行",
    "kill now": "立即中断",
    "idle": "空闲",
    "reference run": "参照训练",
    "interrupted run": "中断训练",
    "done": "完成",
    "identical": "完全一致",
    "different": "不一致",
    "already running": "正在运行",
    "sent SIGKILL to pid": "已向进程发送 SIGKILL，pid",
    "the run finished before the kill step (no interruption)": "训练在中断步之前已结束（没有发生中断）",
    "mean time between failures (s)": "平均故障间隔（秒）",
    "save cost (s)": "保存耗时（秒）",
    "covered by survivors' save": "幸存进程紧急保存覆盖的比例",
    "optimum": "最优间隔",
    "every {k} steps, expected loss {loss:.1%} of wall time": "每 {k} 步保存一次，预计损失 {loss:.1%} 的总时间",
    "every 10 epochs = {k} steps: expected loss {loss:.1%}": "每 10 个 epoch（{k} 步）保存一次：预计损失 {loss:.1%}",
    "this run saved every {k} steps: expected loss {loss:.1%}": "本次训练每 {k} 步保存一次：预计损失 {loss:.1%}",
    "predict": "预测",
    "type a review": "输入一条影评",
    "positive": "正面",
    "negative": "负面",
    # the timeline of a node lost and gained back (course_lib.elastic.timeline, plots.elastic_timeline)
    "node {node} lost after step {step}": "第 {step} 步后失去节点 {node}",
    "node {node} joins after step {step}": "第 {step} 步后节点 {node} 加入",
    "node killed (SIGKILL: agent and worker)": "节点被杀死（SIGKILL：代理进程和工作进程）",
    "node started (its torchrun agent)": "节点启动（它的 torchrun 代理进程）",
    "a survivor noticed": "幸存进程察觉到",
    "the running ranks saw it at a step boundary": "运行中的进程在一步结束时看到它",
    "its worker process started": "它的工作进程启动",
    "it asked to join (data, model, optimizer ready)": "它请求加入（数据、模型、优化器已就绪）",
    "the members agreed on the new group": "成员商定了新的进程组",
    "its process group formed": "新的进程组建立",
    "state from a live peer: {mb:.1f} MB in {s:.2f} s": "从存活的对等进程取得状态：{mb:.1f} MB，用时 {s:.2f} 秒",
    "a restarted worker reached its process group": "重启的工作进程加入了进程组",
    "checkpoint of step {step} committed": "第 {step} 步的检查点已提交",
    "first step on fewer ranks": "进程数减少后的第一步",
    "first step on more ranks": "进程数增加后的第一步",
    "seconds since the event": "距事件发生的秒数",
}


def notebook_language() -> str:
    """``"zh"`` in the Chinese edition, else ``"en"`` (see the module docstring)."""
    chosen = os.environ.get("COURSE_LIB_LANG", "").lower()
    if chosen in LANGS:
        return chosen
    where = Path(os.environ.get("JPY_SESSION_NAME") or Path.cwd())
    return "zh" if "zh" in where.parts[-2:] else "en"


def resolve(lang: str | None) -> str:
    lang = lang or notebook_language()
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}, got {lang!r}")
    return lang


def tr(text: str, lang: str, **values) -> str:
    """``text`` in ``lang`` (English is the key), formatted with ``values``."""
    out = LABELS.get(text, text) if lang == "zh" else text
    return out.format(**values) if values else out
