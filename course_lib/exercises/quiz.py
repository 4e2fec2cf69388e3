"""A self-check quiz per notebook: the chapter's takeaways and what the kit measured.

``quiz("04")`` returns an ipywidgets box, one question per row: choose an answer, click
"check", read why. Every wrong answer has its explanation. The options are shuffled, with a seed
of (notebook, question number): the right one is not always first, and the order is the same in
every run and in both editions. A number a question states comes from where it says (a bench
result file, docs/guarantee.md, the data themselves); tests/test_exercises.py keeps them in step.
Offline; driven in the tests by setting ``.value`` and calling ``.click()`` (ipywidgets' own
way), no browser needed.
"""
from __future__ import annotations

import random

import ipywidgets as W

from course_lib.lab import i18n

# (question), [(answer, why it is wrong or None when right), ...]; each text as (English, Chinese);
# the right answer is written first here and shuffled when shown (options())
QUESTIONS = {
    "01": [
        (("The chapter removes duplicates with set() of the cleaned texts. On the 25,000 offline IMDB reviews, what "
          "does it find?", "本章对清洗后的文本用 set() 去重。在 25,000 条离线 IMDB 影评上它能找到什么？"),
         [(("98 identical copies (25,000 -> 24,902); lightly edited re-posts slip through",
            "98 条完全相同的副本（25,000 -> 24,902）；稍作改动的转贴会漏掉"), None),
          (("every near-duplicate as well", "连近似重复也全部找到"),
           ("set() compares whole strings: one changed word makes another string. The near-duplicate step (Jaccard "
            ">= 0.8) found 19 more pairs among the 24,902 that set() kept.",
            "set() 比较整个字符串：改一个词就是另一个字符串。近似去重（Jaccard >= 0.8）在 set() 留下的 24,902 条里"
            "又找出了 19 对。")),
          (("nothing: IMDB has no duplicates", "什么也找不到：IMDB 没有重复"),
           ("Once cleaned, the offline train split holds 98 copies (measured: 25,000 -> 24,902).",
            "清洗之后，离线训练集里有 98 条副本（实测：25,000 -> 24,902）。"))]),
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
          "一条影评切分成每个片段 50 个词、相邻片段重叠 10 个词。重叠有什么用？"),
         [(("a phrase cut at a chunk boundary appears whole in one of the two chunks",
            "在片段边界被切断的短语，会完整地出现在相邻两个片段之一"), None),
          (("fewer chunks", "片段更少"),
           ("Overlap means more chunks, not fewer: each new chunk advances 40 words, not 50.",
            "有重叠，片段只会更多：每个新片段只前进 40 个词，而不是 50 个。")),
          (("nothing: it only duplicates words", "没用，只是重复了词"),
           ("Without overlap a sentence split across two chunks is whole in neither; the model never sees it together.",
            "没有重叠，跨两个片段的句子在哪个片段里都不完整，模型永远看不到它的全貌。"))]),
    ],
    "02": [
        (("The chapter's example: WordPiece splits 'unbelievable' into pieces. bert-base-uncased keeps it whole. Why?",
          "本章的例子：WordPiece 会把 'unbelievable' 拆成几个子词。bert-base-uncased 却把它整个保留。为什么？"),
         [(("whether a word splits depends on the vocabulary: a frequent word has its own entry among the 30,522",
            "一个词拆不拆取决于词表：常见词在 30,522 个词条里有自己的一条"), None),
          (("WordPiece never splits words", "WordPiece 从不拆词"),
           ("It does: a word missing from the vocabulary is split into pieces, the later ones marked '##'.",
            "会拆的：词表里没有的词会拆成几个子词，后面的子词以 '##' 开头。")),
          (("the tokenizer is broken", "分词器坏了"),
           ("Its vocabulary size is asserted (30,522) when it loads; the chapter's example simply used another "
            "vocabulary.", "加载时会核对词表大小（30,522）；本章的例子只是用了另一份词表。"))]),
        (("What does attention_mask tell the model?", "attention_mask 告诉模型什么？"),
         [(("which positions hold real tokens (1) and which are padding (0)",
            "哪些位置是真实词元（1），哪些是填充（0）"), None),
          (("which tokens are important", "哪些词元更重要"),
           ("It is not a weight: it only marks padding, so that a padded review is predicted as it is alone.",
            "它不是权重：只标出填充，使填充后的影评与单独输入时预测相同。")),
          (("where each sentence ends", "每个句子在哪里结束"),
           ("Sentence ends are tokens like any other; the mask only separates the review from its padding.",
            "句子结尾也只是普通词元；注意力掩码只区分影评本身和填充。"))]),
        (("Dynamic padding plus length grouping, against padding every batch to max_length: what did the kit measure?",
          "动态填充加按长度分组，与每个批次都填充到 max_length 相比，本套件测得什么？"),
         [(("96% fewer padded tokens", "填充的词元减少了 96%"), None),
          (("about the same padding", "填充差不多"),
           ("Padding to 256 makes most of a batch padding for short reviews; grouping similar lengths removed 96% "
            "of it (bench/results/tokenizer.json).", "填充到 256 时，短影评的批次大部分是填充；把长度相近的放在一起，"
            "去掉了其中 96%（bench/results/tokenizer.json）。")),
          (("more padding, but faster", "填充更多，但更快"),
           ("Grouping means less padding, never more: every batch is padded only to its own longest review.",
            "分组只会减少填充：每个批次只填充到本批次最长的影评。"))]),
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
        (("You forget sampler.set_epoch(epoch). What does the ledger show?",
          "忘了调用 sampler.set_epoch(epoch)，训练账本会显示什么？"),
         [(("every epoch repeats epoch 1's order", "每个 epoch 都重复第 1 个 epoch 的顺序"), None),
          (("both ranks train on the same reviews", "两个 Rank 训练相同的影评"),
           ("The ranks still get disjoint shares; what repeats is the order, epoch after epoch.",
            "各 Rank 的份额仍然互不重叠；重复的是一个又一个 epoch 的顺序。")),
          (("the run crashes", "训练崩溃"),
           ("Nothing fails: the run goes on, silently less random. Only the ledger shows it.",
            "什么都不会报错：训练照常进行，只是悄悄地不再随机。只有训练账本能看出来。"))]),
        (("Why must the worker function live in a package, not in a notebook cell?",
          "为什么工作函数必须放在包里，而不能定义在 notebook 的单元格中？"),
         [(("spawn starts new interpreters that import the function by name; one defined in a cell is not importable",
            "spawn 启动新的解释器，按名字导入函数；单元格里定义的函数导入不到"), None),
          (("cells run too slowly", "单元格运行太慢"),
           ("Speed is the same; the spawned process simply cannot find the function.",
            "速度一样；只是子进程找不到这个函数。")),
          (("DDP forbids notebooks", "DDP 禁止在 notebook 中使用"),
           ("DDP runs fine from a notebook when the worker is importable: this kit does it.",
            "只要工作函数可以导入，DDP 在 notebook 里运行得很好：本套件就是这样做的。"))]),
        (("The chapter: total throughput = one card x the number of cards. 2 ranks x 1 thread with minilm, against "
          "1 rank x 1 thread, measured here:", "本章说：总吞吐 = 单卡 x 卡数。这里用 minilm 实测 2 个 Rank x 1 线程，"
          "与 1 个 Rank x 1 线程相比："),
         [(("2.1x: the rule holds when compute dominates (a little over 2x, since each rank's half batch also runs "
            "faster per sample)", "2.1 倍：计算占主导时规则成立（略高于 2 倍，因为每个 Rank 只算半个批次，"
            "平摊到每个样本上也更快）"), None),
          (("exactly 2x, always", "永远正好 2 倍"),
           ("Not always: for the small bag model the exchange dominates and 2 ranks ran at 0.52x of one. Nor exactly: "
            "minilm gave 2.1x, more than 2, because each rank computes half the batch, and one rank given half a "
            "batch is already faster per sample (4.58 against 4.08 samples/s, bench/results/scaling.json; most "
            "likely because smaller activations fit the CPU's caches better).",
            "不是永远：对小的 bag 模型，通信占了大头，2 个 Rank 只有 1 个的 0.52 倍。也不是正好：minilm 得到 2.1 倍，"
            "超过 2 倍，因为每个 Rank 只算半个批次，而 1 个 Rank 只算半个批次时，每个样本本来就更快（每秒样本数 "
            "4.58 对 4.08，bench/results/scaling.json；多半是因为激活值更小，更容易放进 CPU 的缓存）。")),
          (("1x: two processes on two cores gain nothing", "1 倍：两核上两个进程毫无收益"),
           ("Measured 8.55 against 4.06 samples/s (bench/results/scaling.json): the two ranks did divide the work.",
            "实测每秒样本数 8.55 对 4.06（bench/results/scaling.json）：两个 Rank 确实分担了工作。"))]),
    ],
    "04": [
        (("The chapter's checkpoint holds model, optimizer and loss. Resumed from it mid-epoch, what does the kit "
          "measure?", "本章的检查点存模型、优化器和损失。从它在 epoch 中途续训，本套件测得什么？"),
         [(("the run parts from the one never interrupted: the RNG, the LR schedule and the position in the epoch "
            "are missing", "与不中断的训练出现分歧：缺了随机数生成器状态、学习率调度和 epoch 内的位置"), None),
          (("it continues exactly", "完全无缝地继续"),
           ("Measured: without the RNG state the runs part at the first step after the resume; without the "
            "position 263 samples were repeated (docs/guarantee.md).",
            "实测：没有随机数生成器状态，续训后的第一步就出现分歧；没有位置，263 个样本被重复（docs/guarantee.md）。")),
          (("it cannot be loaded", "根本加载不了"),
           ("It loads fine (even with weights_only=True); it just does not hold enough.",
            "它能正常加载（weights_only=True 也行）；只是存得不够。"))]),
        (("Why write a checkpoint to a temporary file and then rename it?", "为什么先把检查点写到临时文件，再重命名？"),
         [(("a kill during the write leaves the old checkpoint whole: the rename is atomic",
            "写到一半被杀，旧检查点仍然完好：重命名是原子操作"), None),
          (("it is faster", "更快"), ("It costs the same writing; it is about what a crash leaves on disk.",
                                   "写入量一样；关键在于崩溃后磁盘上留下什么。")),
          (("copying the temporary file over the checkpoint would do as well", "把临时文件复制过去覆盖检查点也一样"),
           ("A copy writes the checkpoint's bytes one after another: killed half-way, the path holds half a file "
            "(04.save's check kills a save inside its copy). os.replace swaps the file in one step.",
            "复制是把检查点的字节一个接一个写过去：复制到一半被杀，原路径上就是半个文件（04.save 的检查会在复制"
            "途中杀掉进程）。os.replace 一步就换好文件。")),
          (("torch.save requires it", "torch.save 要求这样"),
           ("torch.save writes wherever it is told, half a file included when the process dies.",
            "torch.save 写到哪里都行，进程死掉时也会留下半个文件。"))]),
        (("How often to save? Young's interval is about ...", "多久保存一次？Young 的间隔大约是……"),
         [(("sqrt(2 x save cost x mean time between failures)", "sqrt(2 x 保存开销 x 平均故障间隔)"), None),
          (("every 10 epochs, as the chapter does", "每 10 个 epoch，和本章一样"),
           ("A habit, not a number: the right interval depends on what a save costs and how often failures come; "
            "under real random failures the predicted optimum was the measured best.",
            "这是习惯，不是计算：合适的间隔取决于保存开销和故障有多频繁；在真实的随机故障下，预测的最优间隔就是"
            "实测最好的。")),
          (("as often as possible", "越频繁越好"),
           ("Each save costs time: with a failure every 20 s on average, saving every 9 steps took 82.2 s against "
            "55.5 s every 74 steps, the optimum (medians of 5 runs, bench/results/save_interval.json).",
            "每次保存都有开销：平均每 20 秒一次故障时，每 9 步保存一次用了 82.2 秒，而按最优间隔每 74 步保存一次"
            "只用 55.5 秒（各 5 次训练的中位数，bench/results/save_interval.json）。"))]),
        (("Why torch.load(..., weights_only=True)?", "为什么用 torch.load(..., weights_only=True)？"),
         [(("a checkpoint is data: a full pickle can run code when it is loaded",
            "检查点是数据：完整的 pickle 在加载时可以执行代码"), None),
          (("it loads only the weights and skips the optimizer", "它只加载权重，跳过优化器"),
           ("The name misleads: it loads tensors, numbers, strings and containers, optimizer states included.",
            "名字有误导性：它加载张量、数字、字符串和容器，优化器状态也包括在内。")),
          (("it is faster", "更快"), ("The point is safety, not speed.", "重点是安全，不是速度。"))]),
    ],
    "05": [
        (("The book's run, killed in epoch 12 and resumed from model_epoch_10.pth, passes the chapter's acceptance "
          "test (a lower loss after the resume). Is it the run never interrupted?",
          "原书代码在第 12 个 epoch 被杀，从 model_epoch_10.pth 续训，通过了本章的验收标准（续训后损失更低）。"
          "它与不中断的训练相同吗？"),
         [(("no: compare shows it diverges at step 161, the first step after the checkpoint (the RNG was not saved)",
            "不同：compare 显示它从第 161 步起出现分歧，即检查点后的第一步（没有保存随机数生成器状态）"), None),
          (("yes, the loss kept falling", "相同，损失一直在下降"),
           ("A falling loss only says training goes on. compare_runs tells exact from plausible: this resume passes "
            "the acceptance test and still parts at step 161.", "损失下降只说明训练还在继续。compare_runs 才能区分"
            "\"逐位相同\"和\"看起来合理\"：这次续训通过了验收，却在第 161 步出现分歧。"))]),
        (("A kill comes half-way through writing model_epoch_20.pth. What does the book's resume do?",
          "写 model_epoch_20.pth 到一半时进程被杀。原书的续训会怎样？"),
         [(("it crashes on the half-written file; nothing falls back to model_epoch_10.pth",
            "在半个文件上崩溃；没有任何代码退回到 model_epoch_10.pth"), None),
          (("it falls back to model_epoch_10.pth", "自动退回到 model_epoch_10.pth"),
           ("resume_training loads the path it is given and nothing else; the kit's commit protocol and latest_valid "
            "are what fall back.", "resume_training 只加载给定的路径；能退回的是本套件的提交协议和 latest_valid。")),
          (("it loads the half it can read", "读出能读的那一半"),
           ("torch.load refuses a truncated file (its zip directory is at the end).",
            "torch.load 拒绝被截断的文件（zip 目录在文件末尾）。"))]),
        (("Resumed at the start of the epoch instead of the saved position (epoch-start), the kit measured ...",
          "不从保存的位置、而从 epoch 开头续训（epoch-start），本套件测得……"),
         [(("263 samples repeated", "263 个样本被重复"), None),
          (("no samples repeated: the sampler is deterministic", "没有重复：采样器是确定性的"),
           ("Deterministic, yes: so the steps of the epoch before the checkpoint come again, with the same samples "
            "(263 of them, docs/guarantee.md).", "确定性正是原因：检查点之前那部分 epoch 的步会以同样的样本再来一遍"
            "（263 个样本，docs/guarantee.md）。"))]),
        (("sorted(['model_epoch_8.pth', 'model_epoch_10.pth'])[-1] is ...",
          "sorted(['model_epoch_8.pth', 'model_epoch_10.pth'])[-1] 是……"),
         [(("'model_epoch_8.pth'", "'model_epoch_8.pth'"), None),
          (("'model_epoch_10.pth'", "'model_epoch_10.pth'"),
           ("Strings compare character by character: '8' > '1'. Sort by the number in the name.",
            "字符串逐个字符比较：'8' > '1'。应按文件名中的数字排序。"))]),
    ],
}


def options(notebook: str, number: int) -> list:
    """The answers of question ``number`` (from 1) of ``notebook``'s quiz, in the order shown: shuffled
    with a seed of (notebook, number), so the same in every run and in both editions; each answer keeps
    its "why"."""
    answers = list(QUESTIONS[notebook][number - 1][1])
    random.Random(f"quiz {notebook}.{number}").shuffle(answers)  # a str seed: the same in every process
    return answers


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
            self.feedback.value = ("<span style='color:#b00'>" + ("不对：" if zh else "Not quite: ") + why[self.pick]
                                   + "</span>")

    @property
    def correct(self) -> bool:
        return self.choice.value is not None and self.answers[self.choice.options.index(self.choice.value)][1] is None


class Quiz(W.VBox):
    """The quiz of one notebook; ``items`` holds its questions."""

    def __init__(self, notebook: str, lang: str):
        self.items = [QuizItem(i + 1, q, options(notebook, i + 1), lang) for i, (q, _) in enumerate(QUESTIONS[notebook])]
        super().__init__([item.box for item in self.items])


def quiz(notebook: str, lang: str | None = None) -> Quiz:
    """The self-check quiz of notebook ``"01"`` ... ``"05"``. Used in every notebook (exercises)."""
    if notebook not in QUESTIONS:
        raise KeyError(f"no quiz for notebook {notebook!r}; the quizzes are {', '.join(QUESTIONS)}")
    return Quiz(notebook, i18n.resolve(lang))
