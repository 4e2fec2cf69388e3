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
    "type a review": "输入一条英文影评（模型是用英文影评训练的）",
    "positive": "正面",
    "negative": "负面",
    "to the batch's longest review": "补齐到本批最长的评论",
    "to {n} tokens": "补齐到 {n} 个词元",
    "padded": "填充方式",
    "padding share": "填充占比",
    "mask": "注意力掩码",
    "used": "使用",
    "ignored (all ones)": "忽略（全为 1）",
    "same answer as alone": "与单独打分时判断相同",
    "largest change in P(positive)": "P(正面) 的最大变化",
    "early loss": "开始时的损失",
    "late loss": "结束时的损失",
    "falls with the others?": "与其他 Rank 同步下降？",
    "yes": "是",
    "NO": "否",
    # tables (course_lib.tables and the notebooks' facts)
    "what": "项目",
    "value": "值",
    "no": "否",
    "none": "无",
    "run": "训练",
    "text": "文本",
    "identical?": "是否完全一致",
    "first divergent step": "首个出现差异的步",
    "largest loss difference": "最大损失差",
    "samples skipped": "被跳过的样本",
    "samples repeated": "被重复的样本",
    "final parameters identical?": "最终参数是否逐位相同",
    "every step equal; the final parameters differ": "每一步都相同，但最终参数不同",
    "vocabulary": "词表大小",
    "tokens per review": "每条评论的词元数",
    "unknown-token rate": "未知词元比例",
    "source": "数据来源",
    "requested": "请求的来源",
    "package": "软件包",
    "split": "原始划分",
    "raw reviews": "原始评论数",
    "exact duplicates removed": "去掉的完全重复",
    "unique reviews": "去重后的评论数",
    "limit": "抽样上限",
    "train": "训练集",
    "test": "留出集",
    "held out": "留出集",
    "reviews": "评论数",
    "candidate pairs": "候选对",
    "near-duplicate pairs": "近似重复对",
    "near duplicate pairs": "近似重复对",
    "straddling pairs": "跨训练集与留出集的重复对",
    "reviews dropped": "去掉的评论",
    "seconds": "秒",
    "bands x rows": "分段数 × 每段行数",
    "threshold": "阈值",
    "planted": "植入的重复对",
    "found involving planted": "找到的含植入副本的对",
    "recall": "召回率",
    "precision": "精确率",
    "samples/s": "样本/秒",
    "vs the first": "相对第一行",
    "parameter count": "参数个数",
    "gradient MB": "梯度大小（MB）",
    "ranks vs {n}": "进程数（对照 {n} 个）",
    "file": "文件",
    "holds": "内容",
    "why a resume needs it": "续训为什么需要它",
    "in the chapter's checkpoint": "本章的检查点里有吗",
    "parameters": "参数",
    "the weights themselves": "权重本身",
    "AdamW moments + step counts": "AdamW 的一阶、二阶矩和步数",
    "without them the first steps after a resume jump (weights-only mode)": "没有它们，续训后的头几步会跳变（weights-only 方式）",
    "LR schedule position": "学习率调度走到了哪一步",
    "without it warm-up restarts and the learning rate jumps": "没有它，预热从头开始，学习率跳变",
    "epoch, step in epoch, global step, last loss, config": "epoch、epoch 内的步数、全局步数、最近的损失、配置",
    "where in the data to continue; which run this is": "从数据的哪里接着读；这是哪一次训练",
    "Python, NumPy, torch (and CUDA) RNG states of one rank": "一个 Rank 的 Python、NumPy、torch（和 CUDA）随机数生成器状态",
    "dropout masks continue exactly (no-rng mode diverges)": "dropout 掩码精确接续（no-rng 方式会产生分歧）",
    "sha256 + size of every file, step, world size, versions": "每个文件的 sha256 和大小、步数、进程总数、版本",
    "proves the checkpoint is complete and undamaged": "证明检查点完整、没有损坏",
    "review": "影评",
    "truth": "人的判断",
    "model": "模型的判断",
    "right?": "判断对了吗",
    "push towards positive": "推向正面的力度",
    "token or pair": "词元或相邻词元对",
    "held-out accuracy": "留出集准确率",
    "out-of-domain accuracy": "领域外准确率",
    "training reviews": "训练评论数",
    "optimizer steps": "优化器步数",
    "interrupted": "中断",
    "rank {rank} {signal} after step {step}": "Rank {rank} 在第 {step} 步之后收到 {signal}",
    "resumed from step": "从第几步续训",
    "checkpoints on disk": "磁盘上的检查点",
    "wall time (s)": "总用时（秒）",
    "loss before the resume": "续训前的损失",
    "loss after it": "续训后的损失",
    "the chapter's test": "本章的验收标准",
    "passes": "通过",
    "fails": "未通过",
    "IDENTICAL": "完全一致",
    "DIFFERENT": "不一致",
    "{verdict}: {b} vs reference {a}": "{verdict}：{b} 对照参照训练 {a}",
    "steps: {a} vs {b}": "步数：{a} 对 {b}",
    "first divergent step: {s}": "第一个出现分歧的步：{s}",
    "largest loss difference: {d:.3g}": "最大损失差：{d:.3g}",
    "samples skipped: {s}, repeated: {r}": "被跳过的样本：{s}，被重复的样本：{r}",
    "final parameters identical: {v}": "最终参数逐位相同：{v}",
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
