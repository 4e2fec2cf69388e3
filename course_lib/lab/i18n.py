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
    "world size": "进程总数",
    "resume on": "续训时的进程总数",
    "same ranks": "不变",
    "1 rank": "1 个 Rank",
    "2 ranks": "2 个 Rank",
    "reduction": "归约方式",
    "run length": "训练步数",
    "Run": "运行",
    "kill now": "立即中断",
    "idle": "空闲",
    "reference run": "对照训练",
    "interrupted run": "被中断的训练",
    "done": "完成",
    "identical": "逐位相同",
    "different": "有分歧",
    "already running": "已经在运行",
    "sent SIGKILL to pid": "已发送 SIGKILL 给进程",
    "the run finished before the kill step (no interruption)": "训练在到达中断的那一步之前就结束了（没有发生中断）",
    "mean time between failures (s)": "平均故障间隔（秒）",
    "save cost (s)": "每次保存的开销（秒）",
    "covered by survivors' save": "幸存 Rank 紧急保存覆盖的比例",
    "optimum": "最优间隔",
    "every {k} steps, expected loss {loss:.1%} of wall time": "每 {k} 步保存一次，预计浪费总用时的 {loss:.1%}",
    "every 10 epochs = {k} steps: expected loss {loss:.1%}": "每 10 个 epoch（{k} 步）保存一次：预计浪费总用时的 {loss:.1%}",
    "this run saved every {k} steps: expected loss {loss:.1%}": "本次训练每 {k} 步保存一次：预计浪费总用时的 {loss:.1%}",
    "predict": "预测",
    "type a review": "输入一条英文影评（模型是用英文影评训练的）",
    "positive": "正面",
    "negative": "负面",
    "to the batch's longest review": "填充到本批次最长的影评",
    "to {n} tokens": "填充到 {n} 个词元",
    "padded": "填充方式",
    "padding share": "填充占比",
    "mask": "注意力掩码",
    "used": "使用",
    "ignored (all ones)": "忽略（全为 1）",
    "same answer as alone": "与单独打分时的判断相同",
    "largest change in P(positive)": "P(正面) 的最大变化",
    "early loss": "前期损失",
    "late loss": "后期损失",
    "falls with the others?": "与其他 Rank 同步下降？",
    "yes": "是",
    "NO": "否",
    # tables (course_lib.lab.tables and the notebooks' facts)
    "what": "项目",
    "value": "值",
    "no": "否",
    "none": "无",
    "run": "训练",
    "text": "文本",
    "identical?": "是否逐位相同",
    "first divergent step": "第一个出现分歧的步",
    "largest loss difference": "最大损失差",
    "samples skipped": "跳过的样本数",
    "samples repeated": "重复的样本数",
    "final parameters identical?": "最终参数是否逐位相同",
    "every step equal; the final parameters differ": "每一步都相同，但最终参数不同",
    "vocabulary": "词表大小",
    "tokens per review": "每条影评的词元数",
    "unknown-token rate": "未知词元比例",
    "source": "数据来源",
    "requested": "指定的来源",
    "package": "软件包",
    "split": "原始划分",
    "raw reviews": "原始影评数",
    "exact duplicates removed": "精确去重删掉的条数",
    "unique reviews": "去重后的影评数",
    "limit": "抽样上限",
    "train": "训练集（条数）",
    "test": "留出集（条数）",
    "held out": "留出集",
    "reviews": "影评数",
    "candidate pairs": "候选对",
    "near-duplicate pairs": "近似重复对",
    "near duplicate pairs": "近似重复对",
    "straddling pairs": "跨训练集与留出集的近似重复对",
    "reviews dropped": "删去的影评数",
    "seconds": "用时（秒）",
    "bands x rows": "分段数 × 每段行数",
    "threshold": "阈值",
    "planted": "植入的近似重复对",
    "found involving planted": "找到的、涉及植入副本的对",
    "recall": "召回率",
    "precision": "精确率",
    "samples/s": "每秒样本数",
    "vs the first": "与第一行之比",
    "parameter count": "参数量",
    "gradient MB": "梯度的数据量（MB）",
    "ranks vs {n}": "进程总数（与 {n} 个 Rank 比较）",
    "file": "文件",
    "holds": "内容",
    "why a resume needs it": "续训为什么需要它",
    "in the chapter's checkpoint": "本章的检查点里有没有",
    "parameters": "参数",
    "the weights themselves": "权重本身",
    "AdamW moments + step counts": "AdamW 的一阶、二阶矩和步数",
    "without them the first steps after a resume jump (weights-only mode)":
        "没有它们，续训后的头几步会跳变（weights-only 方式）",
    "LR schedule position": "学习率调度的进度",
    "without it warm-up restarts and the learning rate jumps": "没有它，预热从头开始，学习率跳变",
    "epoch, step in epoch, global step, last loss, config": "epoch、epoch 内的步数、全局步数、最近的损失、配置",
    "where in the data to continue; which run this is": "从数据的哪里接着读；这是哪一次训练",
    "Python, NumPy, torch (and CUDA) RNG states of one rank": "一个 Rank 的 Python、NumPy、torch（和 CUDA）随机数生成器状态",
    "dropout masks continue exactly (no-rng mode diverges)": "dropout 掩码精确接续（no-rng 方式会出现分歧）",
    "not needed by this run: the invariant reduction seeds each micro-batch's dropout from (seed, step, index)":
        "这次训练用不到：不变归约按 (seed, step, index) 为每个微批次的 dropout 设种子",
    "sha256 + size of every file, step, world size, versions": "每个文件的 sha256 和大小、步数、进程总数、版本",
    "proves the checkpoint is complete and undamaged": "证明检查点完整、没有损坏",
    "review": "影评",
    "truth": "正确标签",
    "model": "模型的判断",
    "right?": "对吗",
    "push towards positive": "推向正面的力度",
    "token or pair": "词元或相邻词元对",
    "held-out accuracy": "留出集准确率",
    "out-of-domain accuracy": "领域外准确率",
    "training reviews": "训练影评数",
    "optimizer steps": "优化器步数",
    "interrupted": "中断情况",
    "rank {rank} killed by {signal} after step {step}": "Rank {rank} 在第 {step} 步之后被 {signal} 杀掉",
    "rank {rank} exited with code {code} after step {step}": "Rank {rank} 在第 {step} 步之后退出，退出码 {code}",
    "; it was not killed: the end of {log}:": "；它不是被杀掉的，而是自己出错退出。{log} 的末尾：",
    "; it was not killed, and failed before its log was open: its error is on the terminal (or the Jupyter server's log)":
        "；它不是被杀掉的，而是在打开日志之前就出错退出：报错在终端里（或 Jupyter 服务器的日志里）",
    "resumed from step": "从第几步续训",
    "checkpoints on disk": "磁盘上的检查点",
    "wall time (s)": "总用时（秒）",
    "loss before the resume": "续训前的损失",
    "loss after it": "续训后的损失",
    "the chapter's test": "本章的验收标准",
    "passes": "通过",
    "fails": "未通过",
    "IDENTICAL": "逐位相同",
    "DIFFERENT": "有分歧",
    "{verdict}: {b} vs reference {a}": "{verdict}：{b}（对照训练：{a}）",
    "steps: {a} vs {b}": "步数：{a} 与 {b}",
    "first divergent step: {s}": "第一个出现分歧的步：{s}",
    "largest loss difference: {d:.3g}": "最大损失差：{d:.3g}",
    "samples skipped: {s}, repeated: {r}": "被跳过的样本：{s}，被重复的样本：{r}",
    "final parameters identical: {v}": "最终参数是否逐位相同：{v}",
    # the book against the kit (course_lib.textbook.lessons)
    "the book, never interrupted": "原书代码，不中断",
    "the book, killed at step {k}, resume_training('{f}')": "原书代码，第 {k} 步被杀掉，resume_training('{f}')",
    "the kit, killed at step {k}, --resume auto": "本套件，第 {k} 步被杀掉，--resume auto",
    "identical to its run never interrupted": "与自己从未中断的训练逐位相同",
    "steps lost and redone": "丢失并重做的步数",
    "samples skipped / repeated": "跳过 / 重复的样本数",
    "the chapter's acceptance test": "本章的验收标准",
    "passes ({after:.4f} < {before:.4f})": "通过（{after:.4f} < {before:.4f}）",
    "fails ({after:.4f} >= {before:.4f})": "未通过（{after:.4f} >= {before:.4f}）",
    "reference": "对照训练",
    "on disk after the kill": "被杀掉之后磁盘上的文件",
    "the resume": "续训结果",
    "the book, killed while saving epoch {n}": "原书代码，保存第 {n} 个 epoch 的检查点时被杀掉",
    "the kit, killed while saving step {s}": "本套件，保存第 {s} 步的检查点时被杀掉",
    "loads": "可以加载",
    "unreadable": "无法读取",
    "resume_training('{f}') crashed: {err}": "resume_training('{f}') 崩溃：{err}",
    "--resume auto continued from step {s}": "--resume auto 从第 {s} 步续训",
    "- (the run cannot continue)": "-（训练无法继续）",
    "valid": "有效",
    "not a checkpoint: never committed": "不是检查点：从未提交",
    "resumed (unexpected)": "续训成功（出乎意料）",
    "the kit, never interrupted": "本套件，从未中断",
    "run directory": "训练目录",
    "attempt": "第几次启动",
    "steps done": "已完成的步数",
    "held-out accuracy (the chapter's Test Accuracy line)": "留出集准确率（原书的 Test Accuracy 那一行）",
    "label": "标签",
    "matched": "命中的规则",
    "conflict": "规则冲突",
    # row and column names the notebooks pass in
    "correct run: share of steps repeating epoch 1's order": "正确的训练：与第 1 个 epoch 顺序相同的步所占比例",
    "without set_epoch": "忘了 set_epoch",
    "pretrained WordPiece": "预训练的 WordPiece",
    "own WordPiece": "自己训练的 WordPiece",
    "pretrained BPE": "预训练的 BPE",
    "own BPE": "自己训练的 BPE",
    "unique texts with set()": "set() 之后不同的文本数",
    "groups of copies": "副本组数",
    "for example (first copy: later copies)": "例如（第一条：其后的副本）",
    "characters": "字符数",
    "sentence chunks": "按句切出的片段数",
    "coverage": "覆盖率",
    "windows of 60 words, 15 shared with the next": "60 个词的窗口数（与下一个窗口共享 15 个词）",
    "WordPiece vocabulary": "WordPiece 词表大小",
    "GPT-2 BPE vocabulary": "GPT-2 BPE 词表大小",
    "'Hello world!' in GPT-2 ids": "'Hello world!' 的 GPT-2 词元编号",
    "cache, first call": "缓存，第一次调用",
    "cache, second call": "缓存，第二次调用",
    "hit": "命中",
    "miss": "未命中",
    "training tokens": "训练词元数",
    "tokens of the longest review": "最长影评的词元数",
    "window length (tokens)": "窗口长度（词元）",
    "windows": "窗口数",
    "reviews per rank per epoch": "每个 Rank 每个 epoch 的影评数",
    "steps per epoch (32 reviews a step)": "每个 epoch 的步数（每步 32 条影评）",
    "steps the run took": "这次训练的总步数",
    "epochs": "epoch 数",
    "verify exit code (0 = every checkpoint valid)": "verify 的退出码（0 = 每个检查点都有效）",
    "was killed by {signal}": "被 {signal} 杀掉",
    "stopped on SIGTERM after saving a checkpoint": "收到 SIGTERM，保存检查点后停下",
    "exited with code {code}": "退出，退出码 {code}",
    "rank {rank} {how} after step {step}; newest valid checkpoint: {checkpoint}. Continue with --resume auto.":
        "Rank {rank} 在第 {step} 步之后{how}；最新的有效检查点：{checkpoint}。用 --resume auto 续训。",
    "== Stations 1+2: IMDB -> clean, exact + near-duplicate dedup, split, WordPiece tokens":
        "== 第 1、2 站：IMDB -> 清洗、精确去重与近似去重、划分、WordPiece 分词",
    ("   source {source}: {raw} reviews, {exact} exact duplicates removed, {near} near-duplicates dropped from train, "
     "{leaks} train/test leaks dropped from test"):
        "   数据来源 {source}：{raw} 条影评，精确去重删掉 {exact} 条，训练集中删掉 {near} 条近似重复，"
        "留出集中删掉 {leaks} 条跨训练集与留出集的泄漏",
    "   train {train} / held-out {test} reviews, {tokens:,} training tokens (cache {cache})":
        "   训练集 {train} 条 / 留出集 {test} 条影评，{tokens:,} 个训练词元（缓存{cache}）",
    ("== Stations 3+4: {ranks}-rank training ({model}, {reduction} reduction, {steps} steps, checkpoint every "
     "{every} steps, TensorBoard in {tb})"):
        "== 第 3、4 站：{ranks} 个 Rank 的训练（{model}，归约方式 {reduction}，{steps} 步，每 {every} 步存一个检查点，"
        "TensorBoard 在 {tb}）",
    "== Station 5: {what}": "== 第 5 站：{what}",
    "   resuming automatically from the newest valid checkpoint ...": "   正在从最新的有效检查点自动续训……",
    ("== Done in {s} s: held-out accuracy {acc:.2%} on {n} reviews (out of domain: {ood:.2%} on {m:,} Rotten "
     "Tomatoes sentences); resumed from step {r}; summary in {path}"):
        "== 完成，用时 {s} 秒：留出集 {n} 条影评上准确率 {acc:.2%}（领域外：{m:,} 条烂番茄短评上 {ood:.2%}）；"
        "从第 {r} 步续训；汇总见 {path}",
    "{acc:.2%} on {n:,} reviews": "{acc:.2%}（{n:,} 条影评）",
    # the timeline of a node lost and gained back (tables.elastic_timeline, plots.elastic_timeline)
    "node {node} lost after step {step}": "第 {step} 步后节点 {node} 丢失",
    "node {node} joins after step {step}": "第 {step} 步后节点 {node} 加入",
    "node killed (SIGKILL: agent and worker)": "节点被杀掉（SIGKILL：代理和工作进程）",
    "node started (its torchrun agent)": "节点启动（torchrun 代理启动）",
    "a survivor noticed": "幸存的 Rank 发现节点丢失",
    "the running ranks saw it at a step boundary": "正在训练的 Rank 在一步结束时看到加入请求",
    "its worker process started": "新节点的工作进程启动",
    "it asked to join (data, model, optimizer ready)": "新节点请求加入（数据、模型、优化器已就绪）",
    "the members agreed on the new group": "成员商定了新的通信组",
    "its process group formed": "新的通信组建立",
    "state from a live peer: {mb:.1f} MB in {s:.2f} s": "从一个活着的 Rank 取得状态：{mb:.1f} MB，用时 {s:.2f} 秒",
    "a restarted worker reached its process group": "重启的工作进程加入了通信组",
    "checkpoint of step {step} committed": "第 {step} 步的检查点已提交",
    "first step on fewer ranks": "Rank 减少后的第一步",
    "first step on more ranks": "Rank 增加后的第一步",
    "refused before any rank started": "在任何 Rank 启动之前就被拒绝",
    # notebook 03, "Is the gradient sync working?" (tables.sync_claim)
    "synchronised (DDP)": "梯度同步（DDP）",
    "never synchronised": "梯度从不同步",
    "rank {rank}: loss early -> late": "Rank {rank}：前期损失 -> 后期损失",
    "ranks apart at the end": "结束时各 Rank 损失之差",
    "parameters identical on every rank?": "各 Rank 的参数逐位相同？",
    "the check at the end says": "训练结束时的检查结果",
    # notebook 04, "At real scale" (tables.real_scale_figures, tables.real_scale, widgets.ScaleExplorer)
    "published or assumed": "公开发表还是假设",
    "H100 GPUs of the 405B pre-training": "405B 预训练所用的 H100 GPU",
    "the snapshot of pre-training whose interruptions were counted": "统计中断次数的那一段预训练",
    "unexpected interruptions in those days (466 in all, 47 planned); about 78% confirmed or suspected hardware":
        "这些天里的意外中断（共 466 次，其中 47 次是计划内的）；约 78% 确认或疑似是硬件故障",
    "the model's size": "模型的参数量",
    "what a checkpoint keeps per parameter": "检查点为每个参数保存的字节数",
    "assumed: fp32 weights and AdamW's two fp32 moments (the bf16 copy and the gradients are not saved)":
        "假设：fp32 权重加 AdamW 的两个 fp32 矩（bf16 副本和梯度不保存）",
    "storage write throughput (Tectonic, sustained; 7 TB/s peak)": "存储的写入吞吐（Tectonic，持续值；峰值 7 TB/s）",
    "one optimizer step of 16M tokens": "一个 1600 万词元的优化器步",
    "assumed: 6 x 405e9 x 16M FLOPs on 16,384 H100s at about 40% of their bf16 peak (the paper reports 38-43% MFU)":
        "假设：每步 6 × 405e9 × 16M 次浮点运算，16,384 张 H100 发挥 bf16 峰值的约 40%（论文报告的 MFU 为 38-43%）",
    "from a failure to training again (find it, reschedule, load)": "从故障发生到重新开始训练（定位故障、重新分配机器、加载检查点）",
    "assumed: the paper gives none; it reports over 90% effective training time":
        "假设：论文没有给出；它只报告有效训练时间超过 90%",
    "share of a save that still blocks training when it is written in the background": "异步保存时，一次保存中仍会让训练等待的比例",
    "synchronous save": "同步保存",
    "background save": "异步保存",
    "mean time between failures": "平均故障间隔（MTBF）",
    "checkpoint size": "检查点大小",
    "training waits per save": "每次保存训练要等",
    "best interval": "最佳保存间隔",
    "every {k} steps ({m:.1f} min)": "每 {k} 步（{m:.1f} 分钟）",
    "time lost at the best interval": "按最佳间隔保存时浪费的时间",
    "of it, restarts alone": "其中仅重启一项",
    "time lost saving once an hour": "每小时保存一次时浪费的时间",
    "unexpected interruptions in 54 days": "54 天里的意外中断次数",
    "checkpoint bytes per parameter": "检查点每个参数的字节数",
    "storage writes (TB/s)": "存储写入速度（TB/s）",
    "restart (minutes)": "重启开销（分钟）",
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
