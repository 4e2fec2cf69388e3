"""The chapter this kit follows, as data: its sections, what each claims, and where the kit
shows, checks or corrects each claim. One table, the single source of truth for every
reference to the chapter: ``tools/chapter_map.py`` renders it into the opening cell of each
notebook (both editions) and into the READMEs' notebook tables, and ``tests/test_chapter_map.py``
checks that every claim points at a section heading that exists in both editions.

The chapter: 第 11 章「模型训练实战」(summarised in the kit's ``shared/chapter`` notes as
"11 · 训练实战：让长训练不翻车"). Its sections and their titles are the chapter's own.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    number: str
    title_zh: str   # the chapter's own title
    title_en: str
    notebooks: tuple[str, ...]


SECTIONS = (
    Section("11.1", "数据预处理与Tokenization细节", "Data preprocessing and tokenization details", ("01", "02")),
    Section("11.2", "大规模预训练模型的设置与启动", "Setting up and launching large-scale training", ("03",)),
    Section("11.3", "预训练过程中的监控与中间结果保存", "Monitoring and saving intermediate results", ("04",)),
    Section("11.4", "训练中断与恢复机制", "Interruption and resume", ("05",)),
    Section("11.5", "综合案例：IMDB文本分类训练全流程", "Case study: IMDB text classification end to end", ("05",)),
)

# how the kit meets a claim: run as the chapter states it, and it holds; run, and it does not hold as
# stated; true, with what it leaves out; the chapter's case redone with the kit's own code (not the
# chapter's); what the chapter does not cover at all; a limit the kit reads into the chapter (its
# summary's limits section), which the chapter does not say of itself; or explained but not run on
# the machines the notebooks run on (NCCL needs GPUs)
KINDS = {"confirmed": ("confirmed", "成立"),
         "corrected": ("corrected", "已更正"),
         "context": ("in context", "补上前提"),
         "reproduced": ("reproduced with the kit's code", "用本套件的代码重现"),
         "beyond": ("beyond the chapter", "本章未讲"),
         "reading": ("the kit's reading", "本套件的解读"),
         "explained": ("explained, not run here", "只讲解，这里不运行")}


@dataclass(frozen=True)
class Claim:
    section: str
    en: str
    zh: str
    notebook: str
    cell: str   # id of the markdown heading cell where the kit meets the claim
    kind: str   # a key of KINDS


CLAIMS = (
    Claim("11.1", "raw text becomes training data in four steps: clean, deduplicate, chunk, label",
          "原始语料经过清洗、去重、切分、标注四道工序", "01", "s1", "confirmed"),
    Claim("11.1", "deduplicate by turning the cleaned texts into a set: `set(cleaned_data)`",
          "把清洗后的数据转成集合去重：`set(cleaned_data)`", "01", "s3", "context"),
    Claim("11.1", "(not covered) near-duplicates: re-posts with small edits",
          "（未覆盖）近似去重：改动了几个字的重复文本", "01", "s4", "beyond"),
    Claim("11.1", "cut long texts into short pieces, by sentence or by fixed length",
          "长文本按句子或固定长度切成短片段", "01", "s5", "confirmed"),
    Claim("11.1", "label with simple rules: \"Machine learning ...\" -> Technology",
          "用简单规则标注：Machine learning… → Technology", "01", "s6", "context"),
    Claim("11.1", "BERT uses WordPiece, GPT-2 uses BPE; both return token ids",
          "BERT 用 WordPiece，GPT-2 用 BPE，两者都返回词元编号", "02", "s1", "confirmed"),
    Claim("11.1", "WordPiece splits \"unbelievable\" into pieces such as un + believ + able",
          "WordPiece 把 unbelievable 拆成 un + believ + able 这样的子词", "02", "s2", "corrected"),
    Claim("11.1", "an `attention_mask` marks real tokens and padding; padding makes a batch's lengths equal",
          "`attention_mask` 标出真实词元与填充；填充让一个批次里的句子等长", "02", "s3", "confirmed"),
    Claim("11.1", "the mask tells the model not to look at the padding",
          "掩码告诉模型不要看填充的部分", "02", "s6", "confirmed"),
    Claim("11.2", "one process per GPU (Rank 0, 1, ...), `init_process_group`, gloo in the example",
          "每张卡一个进程（Rank 0、Rank 1……），`init_process_group` 建通信组，示例用 gloo", "03", "s2",
          "confirmed"),
    Claim("11.2", "NCCL is the backend to use on GPUs", "GPU 环境推荐用 NCCL 通信后端", "03", "s1", "explained"),
    Claim("11.2", "Rank is the process id; `Step [k/16]` counts what each card feeds per epoch",
          "输出的读法：Rank 是进程编号；Step 上限 16 是每卡每个 epoch 要喂的份数", "03", "s3", "confirmed"),
    Claim("11.2", "total throughput = one card x number of cards",
          "总吞吐 = 单卡 × 卡数", "03", "deep-b", "context"),
    Claim("11.2", "close losses falling together mean the gradient sync works",
          "各 Rank 损失接近且同步下降，说明梯度同步正常", "03", "s5-sync", "corrected"),
    Claim("11.2", "a rank whose loss diverges is where debugging starts",
          "哪个 Rank 的损失发散，就从那一行查起", "03", "deep-d", "confirmed"),
    Claim("11.2", "several machines: configure the master node's IP address and port",
          "多节点：配置主节点的 IP 地址和端口", "03", "s8", "context"),
    Claim("11.2", "(not covered) bandwidth between the nodes and their topology",
          "（未讲）节点间的带宽和拓扑", "03", "s8", "beyond"),
    Claim("11.3", "the loss to a `SummaryWriter` every epoch, the curve in TensorBoard",
          "每个 epoch 把损失写进 `SummaryWriter`，在 TensorBoard 里看曲线", "04", "s1", "confirmed"),
    Claim("11.3", "every `save_interval = 10` epochs: model state + optimizer state + loss",
          "每 `save_interval`（原书设 10）个 epoch 保存模型状态 + 优化器状态 + 损失值", "04", "s1", "confirmed"),
    Claim("11.3", "(not covered) learning rate, gradient norm, validation besides the loss",
          "（未展开）除损失外还要看学习率、梯度范数、验证指标", "04", "s2", "beyond"),
    Claim("11.3", "three things, not one: the weights alone leave an amnesiac model",
          "检查点要存三样而不是一样：只存权重等于让模型失忆", "04", "s3", "context"),
    Claim("11.3", "(not covered) a crash in the middle of a save",
          "（未覆盖）写检查点写到一半时崩溃", "04", "s4", "beyond"),
    Claim("11.5", "(not said in the chapter) an example model on toy data: the process is real, the scale is "
          "not", "（本章没有这样说）示例模型加玩具数据：流程是真的，规模感是假的", "04", "s6", "reading"),
    Claim("11.4", "a `.pth` every 10 epochs; after an interruption, load model and optimizer, go on from the "
          "saved epoch", "每 10 个 epoch 存一个 .pth；中断后加载模型与优化器状态，接着训练",
          "05", "s1", "confirmed"),
    Claim("11.4", "\"starting from epoch 10 with loss 0.4208\", then a lower loss: the resume is seamless",
          "打印「starting from epoch 10 with loss 0.4208」，之后损失更低：衔接无缝", "05", "s2",
          "corrected"),
    Claim("11.4", "(not answered) does a resumed run converge like one never interrupted?",
          "（未回答）续训后的收敛轨迹与不中断时相同吗？", "05", "s2", "beyond"),
    Claim("11.3", "weights only: the optimizer's momentum and the learning rate are lost",
          "只存权重：优化器的动量、当前学习率全丢", "05", "s3", "confirmed"),
    Claim("11.5", "IMDB end to end: the five stations in one line",
          "IMDB 综合案例：五站串成一条线", "05", "s5", "reproduced"),
    Claim("11.5", "Test Accuracy 89.15%", "测试集准确率 89.15%", "05", "s5", "context"),
    Claim("11.2", "(not covered) fault tolerance across machines",
          "（未讲）多机容错", "05", "deep-c", "beyond"),
)

NOTEBOOKS = {
    "01": "01_data_cleaning_dedup.ipynb",
    "02": "02_tokenization.ipynb",
    "03": "03_ddp_launch.ipynb",
    "04": "04_monitoring_checkpoints.ipynb",
    "05": "05_interruption_resume.ipynb",
}


def section(number: str) -> Section:
    for s in SECTIONS:
        if s.number == number:
            return s
    raise KeyError(f"the chapter has no section {number}; it has {', '.join(s.number for s in SECTIONS)}")


def claims_of(notebook: str) -> list[Claim]:
    return [c for c in CLAIMS if c.notebook == notebook]


def sections_of(notebook: str) -> list[Section]:
    return [s for s in SECTIONS if notebook in s.notebooks]


HEADING = re.compile(r"^##\s+(?:(\d+)\.|Optional deep-dive ([A-Z])|选读 ([A-Z]))", re.M)


def heading_label(markdown: str, lang: str) -> str:
    """"§3" for ``## 3. ...``, "deep-dive A" / "选读 A" for an optional section's heading."""
    m = HEADING.search(markdown)
    if m is None:
        raise ValueError(f"not a section heading: {markdown[:60]!r}")
    if m.group(1):
        return f"§{m.group(1)}"
    letter = m.group(2) or m.group(3)
    return f"选读 {letter}" if lang == "zh" else f"deep-dive {letter}"


def opening_block(notebook: str, headings: dict[str, str], lang: str) -> str:
    """The "the chapter says -> where you see it here" table of a notebook's opening cell;
    ``headings`` maps cell ids to their markdown."""
    zh = lang == "zh"
    rows = ["| 本章 | 本章的说法 | 本 notebook 中 |" if zh else "| chapter | the chapter says | here |", "|---|---|---|"]
    for c in claims_of(notebook):
        kind = KINDS[c.kind][1 if zh else 0]
        rows.append(f"| {c.section} | {c.zh if zh else c.en} | {heading_label(headings[c.cell], lang)}（{kind}） |"
                    if zh else f"| {c.section} | {c.en} | {heading_label(headings[c.cell], lang)} ({kind}) |")
    return "\n".join(rows)


def readme_table(lang: str, times: dict[str, str] | None = None, link_prefix: str = "notebooks/") -> str:
    """The READMEs' notebook table: notebook -> the chapter's sections -> measured time."""
    zh = lang == "zh"
    names = {"01": ("Data", "数据"), "02": ("Tokens", "分词"), "03": ("Launch", "启动"),
             "04": ("Watch", "监控"), "05": ("Resume", "断点续训")}
    head = ("| notebook | 本章章节 | 核心路径用时（阅读 + 运行） |" if zh
            else "| notebook | chapter section | core path (read + run) |")
    rows = [head, "|---|---|---|"]
    for nb, file in NOTEBOOKS.items():
        secs = "; ".join(f"{s.number} {s.title_zh if zh else s.title_en}" for s in sections_of(nb))
        title = names[nb][1 if zh else 0]
        rows.append(f"| [{nb} · {title}]({link_prefix}{file}) | {secs} | {(times or {}).get(nb, '–')} |")
    return "\n".join(rows)
