"""A self-check quiz per notebook: the chapter's takeaways and what the kit measured.

``quiz("04")`` returns an ipywidgets box, one question per row: choose an answer, click
"check", read why. Every wrong answer has its explanation. Offline; driven in the tests by
setting ``.value`` and calling ``.click()`` (ipywidgets' own way), no browser needed.
"""
from __future__ import annotations

import ipywidgets as W

from course_lib.lab import i18n

# (question), [(answer, why it is wrong or None when right), ...]; each text as (English, Chinese)
QUESTIONS = {
    "01": [
        (("The chapter removes duplicates with set(). On the 25,000 offline IMDB reviews, what does it find?",
          "本章用 set() 去重。在 25,000 条离线 IMDB 影评上它能找到什么？"),
         [(("96 byte-identical copies (25,000 -> 24,904); lightly edited re-posts slip through",
            "96 条逐字节相同的副本（25,000 -> 24,904）；稍作改动的转贴会漏掉"), None),
          (("every near-duplicate as well", "连近似重复也全部找到"),
           ("set() compares whole strings: one changed word makes another string. The near-duplicate step (Jaccard >= 0.8) "
            "found 21 more pairs that set() kept.", "set() 比较整个字符串：改一个词就是另一个字符串。近似去重（Jaccard >= 0.8）"
            "又找出了 set() 留下的 21 对。")),
          (("nothing: IMDB has no duplicates", "什么也找不到：IMDB 没有重复"),
           ("The offline train split holds 96 exact duplicates (measured: 25,000 -> 24,904).",
            "离线训练集里有 96 条完全重复（实测：25,000 -> 24,904）。"))]),
        (("Why deduplicate before splitting into train and held-out reviews?", "为什么要先去重、再划分训练集和留出集？"),
         [(("so that no review has a copy on both sides: a copy in both makes the held-out score measure memory",
            "这样就没有影评在两边都有副本：两边都有，留出集分数测的就是记忆力"), None),
          (("to make training faster", "为了让训练更快"),
           ("Removing 0.4% of the reviews saves almost no time; the reason is the leak across the split.",
            "去掉 0.4% 的影评几乎不省时间；真正的原因是跨越划分的泄漏。")),
          (("because the split needs sorted data", "因为划分需要排好序的数据"),
           ("The split is a seeded stratified sample and needs no order; copies on both sides are the problem.",
            "划分是带种子的分层抽样，不需要排序；问题在于两边都有副本。"))]),
        (("A review is cut into chunks of 50 words with an overlap of 10. What does the overlap buy?",
          "一条影评切成每块 50 个词、重叠 10 个词。重叠有什么用？"),
         [(("a phrase cut at a chunk boundary appears whole in one of the two chunks",
            "在块边界被切断的短语，会完整地出现在相邻两块之一"), None),
          (("fewer chunks", "块更少"), ("Overlap means more chunks, not fewer: each new chunk advances 40 words, not 50.",
                                     "有重叠块只会更多：每一块只前进 40 个词，而不是 50 个。")),
          (("nothing: it only duplicates words", "没用，只是重复了词"),
           ("Without overlap a sentence split across two chunks is whole in neither; the model never sees it together.",
            "没有重叠，跨两块的句子在哪一块都不完整，模型永远看不到它的全貌。"))]),
    ],
    "02": [
        (("The chapter's example: WordPiece splits 'unbelievable' into pieces. bert-base-uncased keeps it whole. Why?",
          "本章的例子：WordPiece 会把 'unbelievable' 拆成几块。bert-base-uncased 却把它整个保留。为什么？"),
         [(("whether a word splits depends on the vocabulary: a frequent word has its own entry among the 30,522",
            "一个词拆不拆取决于词表：常见词在 30,522 个词条里有自己的位置"), None),
          (("WordPiece never splits words", "WordPiece 从不拆词"),
           ("It does: a word missing from the vocabulary is split into pieces, the later ones marked '##'.",
            "会拆的：词表里没有的词会拆成几块，后面的块以 '##' 开头。")),
          (("the tokenizer is broken", "分词器坏了"),
           ("Its vocabulary size is asserted (30,522) when it loads; the chapter's example simply used another vocabulary.",
            "加载时会核对词表大小（30,522）；本章的例子只是用了另一份词表。"))]),
        (("What does attention_mask tell the model?", "attention_mask 告诉模型什么？"),
         [(("which positions hold real tokens (1) and which are padding (0)", "哪些位置是真实词元（1），哪些是填充（0）"), None),
          (("which tokens are important", "哪些词元更重要"),
           ("It is not a weight: it only marks padding, so that a padded review is predicted as it is alone.",
            "它不是权重：只标出填充，使填充后的影评与单独输入时预测相同。")),
          (("where each sentence ends", "每个句子在哪里结束"),
           ("Sentence ends are tokens like any other; the mask only separates the review from its padding.",
            "句子结尾也只是普通词元；mask 只区分影评本身和填充。"))]),
        (("Dynamic padding plus length grouping, against padding every batch to max_length: what did the kit measure?",
          "动态填充加按长度分组，与每批都填充到 max_length 相比，本套件测得什么？"),
         [(("96% fewer padded tokens", "填充的词元减少了 96%"), None),
          (("about the same padding", "填充差不多"),
           ("Padding to 256 makes most of a batch padding for short reviews; grouping similar lengths removed 96% of it "
            "(BENCHMARKS.md).", "填充到 256 时，短影评的批次大部分是填充；把长度相近的放在一起，去掉了其中 96%（BENCHMARKS.md）。")),
          (("more padding, but faster", "填充更多，但更快"),
           ("Grouping means less padding, never more: every batch is padded only to its own longest review.",
            "分组只会减少填充：每个批次只填充到本批最长的影评。"))]),
    ],
    "03": [
        (("Two ranks, 16 steps an epoch, 32 reviews per rank and step: how many reviews does one epoch train on?",
          "两个 Rank，每个 epoch 16 步，每个 Rank 每步 32 条：一个 epoch 训练多少条影评？"),
         [(("1,024 (16 x 32 x 2)", "1,024 条（16 x 32 x 2）"), None),
          (("512", "512 条"), ("That is one rank's share. The ranks divide the epoch between them: together 1,024.",
                              "那只是一个 Rank 的份额。各 Rank 分担同一个 epoch：合起来 1,024 条。")),
          (("2,048: each rank trains on all of them", "2,048 条：每个 Rank 都训练全部"),
           ("DistributedSampler gives each rank a disjoint half; no review is seen twice in an epoch.",
            "DistributedSampler 给每个 Rank 不重叠的一半；一个 epoch 里没有影评被看两次。"))]),
        (("You forget sampler.set_epoch(epoch). What does the ledger show?", "忘了调用 sampler.set_epoch(epoch)，账本会显示什么？"),
         [(("every epoch repeats epoch 1's order", "每个 epoch 都重复第 1 个 epoch 的顺序"), None),
          (("both ranks train on the same reviews", "两个 Rank 训练相同的影评"),
           ("The ranks still get disjoint shares; what repeats is the order, epoch after epoch.",
            "各 Rank 的份额仍然互不重叠；重复的是一个又一个 epoch 的顺序。")),
          (("the run crashes", "训练崩溃"), ("Nothing fails: the run goes on, silently less random. Only the ledger shows it.",
                                           "什么都不会报错：训练照常进行，只是悄悄地不再随机。只有账本能看出来。"))]),
        (("Why must the worker function live in a package, not in a notebook cell?", "为什么工作函数必须放在包里，而不能定义在笔记本单元格中？"),
         [(("spawn starts new interpreters that import the function by name; one defined in a cell is not importable",
            "spawn 启动新的解释器，按名字导入函数；单元格里定义的函数导入不到"), None),
          (("cells run too slowly", "单元格运行太慢"), ("Speed is the same; the spawned process simply cannot find the function.",
                                                   "速度一样；只是子进程找不到这个函数。")),
          (("DDP forbids notebooks", "DDP 禁止在笔记本中使用"), ("DDP runs fine from a notebook when the worker is importable: "
                                                          "this kit does it.", "只要工作函数可以导入，DDP 在笔记本里运行得很好：本套件就是这样做的。"))]),
        (("The chapter: total throughput = one card x the number of cards. 2 ranks x 1 thread with minilm, measured here:",
          "本章说：总吞吐 = 单卡 x 卡数。这里用 minilm、2 个 Rank x 1 线程实测："),
         [(("2.11x one rank x 1 thread: the rule holds when compute dominates", "是 1 个 Rank x 1 线程的 2.11 倍：计算占主导时规则成立"), None),
          (("exactly 2x, always", "永远正好 2 倍"),
           ("Every rank pays the optimizer step on its whole copy and the all-reduce grows with the model; for the "
            "small bag model the exchange dominates.", "每个 Rank 都要对完整模型做一次优化器更新，all-reduce 随模型变大；"
            "对小的 bag 模型，通信占了大头。")),
          (("1x: two processes on two cores gain nothing", "1 倍：两核上两个进程毫无收益"),
           ("Measured 8.55 against 4.06 samples/s (BENCHMARKS.md): the two ranks did divide the work.",
            "实测 8.55 对 4.06 样本/秒（BENCHMARKS.md）：两个 Rank 确实分担了工作。"))]),
    ],
    "04": [
        (("The chapter's checkpoint holds model, optimizer and loss. Resumed from it mid-epoch, what does the kit measure?",
          "本章的检查点存模型、优化器和损失。从它在 epoch 中途续训，本套件测得什么？"),
         [(("the run parts from the one never interrupted: the RNG, the LR schedule and the position in the epoch are missing",
            "与不中断的训练分道扬镳：缺了随机数状态、学习率调度和 epoch 内的位置"), None),
          (("it continues exactly", "完全无缝地继续"),
           ("Measured: without the RNG state the runs part at the first step after the resume; without the position "
            "263 samples were repeated.", "实测：没有随机数状态，续训后的第一步就出现分歧；没有位置，263 个样本被重复。")),
          (("it cannot be loaded", "根本加载不了"), ("It loads fine (even with weights_only=True); it just does not hold enough.",
                                                 "它能正常加载（weights_only=True 也行）；只是存得不够。"))]),
        (("Why write a checkpoint to a temporary file and then rename it?", "为什么先把检查点写到临时文件，再改名？"),
         [(("a kill during the write leaves the old checkpoint whole: the rename is atomic", "写到一半被杀，旧检查点仍然完好：改名是原子操作"), None),
          (("it is faster", "更快"), ("It costs the same writing; it is about what a crash leaves on disk.",
                                   "写入量一样；关键在于崩溃后磁盘上留下什么。")),
          (("torch.save requires it", "torch.save 要求这样"), ("torch.save writes wherever it is told, half a file included "
                                                           "when the process dies.", "torch.save 写到哪里都行，进程死掉时也会留下半个文件。"))]),
        (("How often to save? Young's interval is about ...", "多久保存一次？Young 的间隔大约是……"),
         [(("sqrt(2 x save cost x mean time between failures)", "sqrt(2 x 保存耗时 x 平均故障间隔)"), None),
          (("every 10 epochs, as the chapter does", "每 10 个 epoch，和本章一样"),
           ("A habit, not a number: the right interval depends on what a save costs and how often failures come; under "
            "real random failures the predicted optimum was the measured best.", "这是习惯，不是计算：合适的间隔取决于保存耗时和故障频率；"
            "在真实随机故障下，预测的最优值就是实测最好的。")),
          (("as often as possible", "越频繁越好"), ("Each save costs time; saving every 10 steps took 87.0 s against 60.9 s at "
                                                 "the optimum (BENCHMARKS.md).", "每次保存都有开销；每 10 步保存一次用了 87.0 秒，"
                                                 "最优间隔是 60.9 秒（BENCHMARKS.md）。"))]),
        (("Why torch.load(..., weights_only=True)?", "为什么用 torch.load(..., weights_only=True)？"),
         [(("a checkpoint is data: a full pickle can run code when it is loaded", "检查点是数据：完整的 pickle 在加载时可以执行代码"), None),
          (("it loads only the weights and skips the optimizer", "它只加载权重，跳过优化器"),
           ("The name misleads: it loads tensors, numbers, strings and containers, optimizer states included.",
            "名字有误导性：它加载张量、数字、字符串和容器，优化器状态也包括在内。")),
          (("it is faster", "更快"), ("The point is safety, not speed.", "重点是安全，不是速度。"))]),
    ],
    "05": [
        (("The book's run, killed in epoch 12 and resumed from model_epoch_10.pth, passes the chapter's acceptance test "
          "(a lower loss after the resume). Is it the run never interrupted?",
          "原书代码在第 12 个 epoch 被杀，从 model_epoch_10.pth 续训，通过了本章的验收标准（续训后损失更低）。它与不中断的训练相同吗？"),
         [(("no: compare shows it diverges at step 161, the first step after the checkpoint (the RNG was not saved)",
            "不同：compare 显示它从第 161 步起出现分歧，即检查点后的第一步（没有保存随机数状态）"), None),
          (("yes, the loss kept falling", "相同，损失一直在下降"),
           ("A falling loss only says training goes on. compare_runs tells exact from plausible: this resume passes "
            "the acceptance test and still parts at step 161.", "损失下降只说明训练还在继续。compare_runs 才能区分"
            "\"逐位相同\"和\"看起来合理\"：这次续训通过了验收，却在第 161 步出现分歧。"))]),
        (("A kill comes half-way through writing model_epoch_20.pth. What does the book's resume do?",
          "写 model_epoch_20.pth 到一半时进程被杀。原书的续训会怎样？"),
         [(("it crashes on the half-written file; nothing falls back to model_epoch_10.pth", "在半个文件上崩溃；没有任何代码退回到 model_epoch_10.pth"), None),
          (("it falls back to model_epoch_10.pth", "自动退回到 model_epoch_10.pth"),
           ("resume_training loads the path it is given and nothing else; the kit's commit protocol and latest_valid "
            "are what fall back.", "resume_training 只加载给定的路径；能退回的是本套件的提交协议和 latest_valid。")),
          (("it loads the half it can read", "读出能读的那一半"),
           ("torch.load refuses a truncated file (its zip directory is at the end).", "torch.load 拒绝被截断的文件（zip 目录在文件末尾）。"))]),
        (("Resumed at the start of the epoch instead of the saved position (epoch-start), the kit measured ...",
          "不从保存的位置、而从 epoch 开头续训（epoch-start），本套件测得……"),
         [(("263 samples repeated", "263 个样本被重复"), None),
          (("no samples repeated: the sampler is deterministic", "没有重复：采样器是确定性的"),
           ("Deterministic, yes: so the steps of the epoch before the checkpoint come again, with the same samples.",
            "确定性正是原因：检查点之前那部分 epoch 的步会以同样的样本再来一遍。"))]),
        (("sorted(['model_epoch_8.pth', 'model_epoch_10.pth'])[-1] is ...", "sorted(['model_epoch_8.pth', 'model_epoch_10.pth'])[-1] 是……"),
         [(("'model_epoch_8.pth'", "'model_epoch_8.pth'"), None),
          (("'model_epoch_10.pth'", "'model_epoch_10.pth'"),
           ("Strings compare character by character: '8' > '1'. Sort by the number in the name.",
            "字符串逐个字符比较：'8' > '1'。应按文件名中的数字排序。"))]),
    ],
}


class QuizItem:
    """One question: ``choice`` (RadioButtons), ``button`` ("check"), ``feedback`` (HTML)."""

    def __init__(self, number: int, question, answers, lang: str):
        pick = 1 if lang == "zh" else 0
        self.answers = answers
        self.label = W.HTML(f"<b>{number}.</b> {question[pick]}")
        self.choice = W.RadioButtons(options=[a[0][pick] for a in answers], value=None, layout={"width": "max-content"})
        self.button = W.Button(description="检查" if lang == "zh" else "check")
        self.feedback = W.HTML("")
        self.lang, self.pick = lang, pick
        self.button.on_click(self._check)
        self.box = W.VBox([self.label, self.choice, W.HBox([self.button, self.feedback])])

    def _check(self, _button=None) -> None:
        zh = self.lang == "zh"
        if self.choice.value is None:
            self.feedback.value = "先选一个答案。" if zh else "Choose an answer first."
            return
        index = self.choice.options.index(self.choice.value)
        why = self.answers[index][1]
        if why is None:
            self.feedback.value = "<span style='color:green'>" + ("正确。" if zh else "Right.") + "</span>"
        else:
            self.feedback.value = "<span style='color:#b00'>" + ("不对：" if zh else "Not quite: ") + why[self.pick] + "</span>"

    @property
    def correct(self) -> bool:
        return self.choice.value is not None and self.answers[self.choice.options.index(self.choice.value)][1] is None


class Quiz(W.VBox):
    """The quiz of one notebook; ``items`` holds its questions."""

    def __init__(self, notebook: str, lang: str):
        self.items = [QuizItem(i + 1, q, a, lang) for i, (q, a) in enumerate(QUESTIONS[notebook])]
        super().__init__([item.box for item in self.items])


def quiz(notebook: str, lang: str | None = None) -> Quiz:
    """The self-check quiz of notebook ``"01"`` ... ``"05"``."""
    if notebook not in QUESTIONS:
        raise KeyError(f"no quiz for notebook {notebook!r}; the quizzes are {', '.join(QUESTIONS)}")
    return Quiz(notebook, i18n.resolve(lang))
