"""The reconstruction of the chapter's template in Chinese (:mod:`course_lib.textbook`): its
deviations table, the comments of ``book.train`` as notebook 03 prints them, a checkpoint's contents."""

ZH = {
    # the deviations of the reconstruction (textbook.reconstruction.DEVIATIONS) and its columns
    "the chapter": "本章",
    "this reconstruction": "这里的重建",
    "why": "为什么",
    "deviation|data": "数据",
    "deviation|model": "模型",
    "deviation|dropout": "dropout",
    "deviation|batching": "批次",
    "deviation|optimizer": "优化器",
    "deviation|split and score": "划分与评估",
    "deviation|printed losses": "打印的损失",
    "deviation|seed": "种子",
    "deviation|the file resumed from": "续训用的文件",
    "deviation|the kit's lines": "本套件加的几行",
    "an example model on toy data (11.2-11.4); IMDB through datasets and a tokenizer (11.5)":
        "示例模型加玩具数据（11.2-11.4）；11.5 用 datasets 加分词器读 IMDB",
    "1,024 real IMDB reviews, cleaned, deduplicated and tokenized by station 2's prepare_imdb":
        "1,024 条真实的 IMDB 影评，由第 2 站的 prepare_imdb 清洗、去重、分词",
    "real text, offline; 16 steps an epoch on 2 ranks, as the chapter's output shows":
        "真实文本，离线可用；2 个 Rank 上每个 epoch 16 步，与原书输出一致",
    "an example model; part of 11.5's code is printed as images": "示例模型；11.5 的部分代码以图片呈现",
    "the kit's bag of word n-grams (build_model('bag'))": "本套件的词 n-gram 袋模型（build_model('bag')）",
    "trains in seconds on a CPU; the kit's trainer uses it too, so runs compare":
        "在 CPU 上几秒就能训练；本套件的训练循环也用它，训练之间才能比较",
    "not stated": "未说明",
    "0.1": "0.1",
    "randomness in every step, so a resume has an RNG state to lose (station 5)":
        "每一步都有随机性，续训才有随机数生成器状态可丢（第 5 站）",
    "a DataLoader over a DistributedSampler": "DataLoader 配 DistributedSampler",
    "the same, 32 reviews per rank and step, each batch padded by the kit's pad_batch":
        "同样如此，每个 Rank 每步 32 条，每个批次由本套件的 pad_batch 填充",
    "station 2's dynamic padding and attention_mask": "第 2 站的动态填充和注意力掩码",
    "an optimizer whose state the checkpoint saves": "一个优化器，检查点保存它的状态",
    "AdamW at a fixed 5e-3, no schedule": "AdamW，固定学习率 5e-3，没有学习率调度",
    "the simplest choice that trains this model": "能把这个模型训练起来的最简单的选择",
    "Test Accuracy on IMDB's test set (89.15% in 11.5)": "在 IMDB 测试集上的 Test Accuracy（11.5：89.15%）",
    "the chapter's line, on the kit's held-out 20% of IMDB's training split":
        "原书的那一行输出，算在本套件从 IMDB 训练集留出的 20% 上",
    "the offline copy of IMDB has no test split (station 1)": "离线的 IMDB 副本没有测试集（第 1 站）",
    "1.2345 and 1.3456 in epoch 1, 0.2345 and 0.3456 in epoch 10: digits that read as illustrative, not measured":
        "第 1 个 epoch 1.2345 和 1.3456，第 10 个 epoch 0.2345 和 0.3456：看上去是示意的数字，不是实测",
    "measured, about 0.69 = ln 2 at first (two labels, a model that starts by guessing)":
        "实测值，开头约 0.69 = ln 2（两个标签，模型一开始等于在猜）",
    "the chapter's numbers are not a run to compare with": "原书的数字不是一次可以拿来比较的训练",
    "torch.manual_seed(settings.seed) at the start of train, in every attempt and on every rank, a resumed one too":
        "train 一开头就调用 torch.manual_seed(settings.seed)：每次启动、每个 Rank 都这样，续训时也不例外",
    "without it two runs never interrupted differ, and station 5's audit stops at its first test; with it a resumed "
    "attempt draws its dropout masks from the seed again, not from where the run stopped: the loss the audit names (rng)":
        "不设种子，两次从未中断的训练就不一样，第 5 站的审计在第一项检查就停下；设了种子，续训时 dropout "
        "掩码又从种子开始抽，而不是从中断的地方接着抽：这正是审计指出的问题（rng）",
    "a file the chapter names: model_epoch_10.pth (11.4)": "本章指定的文件：model_epoch_10.pth（11.4）",
    "the newest model_epoch_N.pth by its number N: station 5 passes it by name; python -m course_lib.textbook --resume "
    "auto, the script the audit runs, finds it itself":
        "按编号 N 取最新的 model_epoch_N.pth：第 5 站把它的文件名传进去；审计运行的脚本 python -m course_lib.textbook "
        "--resume auto 自己去找",
    "the audit restarts the same command unattended, so the script must find its own file; by number, since as strings "
    "model_epoch_10.pth sorts before model_epoch_8.pth; whether the file loads is not checked, so a half-written newest "
    "file stops the resume (the audit's not-atomic)":
        "审计无人值守地用同一条命令重启脚本，脚本得自己找到文件；按编号取，因为按字符串排序 model_epoch_10.pth 排在 "
        "model_epoch_8.pth 前面；不检查文件能否加载，所以最新的文件只写了一半时续训就会失败（审计的 not-atomic）",
    "four lines marked # kit: the ledger, the planned kills, the summary": "标着 # kit 的四行：训练账本、计划的中断、汇总",
    "so compare can judge a book run; they change nothing it computes":
        "让 compare 能评判原书代码的训练；它们不改变任何计算结果",
    # book.train's comments, as the Chinese edition prints them (textbook.reconstruction.source)
    "kit: the ledger and the planned faults": "kit：本套件的训练账本和计划好的中断",
    "kit: one ledger row; a planned SIGKILL fires here": "kit：写一行训练账本；计划好的 SIGKILL 在这里触发",
    "kit: a planned kill dies half-way through this file": "kit：计划好的中断让进程在这个文件写到一半时死掉",
    "kit: final/summary.json with the parameters' sha256": "kit：写 final/summary.json，其中有参数的 sha256",
    "the chapter's line, here on the kit's held-out split": "本章的那一行，这里算的是本套件留出集上的准确率",
    # what a book checkpoint holds (textbook.run.checkpoint_contents)
    "{n} tensors, {mb:.1f} MB": "{n} 个张量，{mb:.1f} MB",
    "{names} of {n} parameter tensors; lr {lr:g}": "{n} 个参数张量的 {names}；lr {lr:g}",
    "key": "键",
}
