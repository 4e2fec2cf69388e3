"""The quizzes in Chinese, keyed by their English (:data:`course_lib.exercises.quiz.QUESTIONS`): each
question, then each option and why it is right or wrong, the right one first, as the quiz lists them."""

ZH = {
    # the quiz's own words (exercises.quiz.QuizItem)
    "check": "检查",
    "Choose an answer first.": "先选一个答案。",
    "Right. ": "正确。",
    "Not quite: ": "不对：",
    # 01.1
    "Section 3 ran the chapter's set() on every cleaned review. What did it remove?":
        "第 3 节对清洗后的全部影评跑了本章的 set()。它去掉了什么？",
    "only copies identical to the character": "只有一字不差的副本",
    "set() compares whole strings. A re-post with one word changed is another string and stays; section 4 found such pairs "
    "among the texts set() kept.":
        "set() 比较的是整个字符串。改了一个词的转贴就是另一个字符串，会留下来；第 4 节在 set() "
        "留下的文本里找到了这样的近似重复。",
    "every copy, lightly edited ones too": "所有副本，包括稍作改动的",
    "Cleaning only normalises markup, entities and spaces. One changed word makes another string, which set() keeps: that "
    "is what section 4 is for.":
        "清洗只统一了 HTML 标记、实体和空白。改一个词就是另一个字符串，set() 会把它留下：第 4 节正是为此而设。",
    "nothing: the cleaned texts are unique": "什么也没去掉：清洗让文本各不相同",
    "Cleaning makes copies *more* alike, not less: section 3's table shows fewer unique texts than reviews.":
        "清洗只会让副本更像，而不是更不像：第 3 节的表里，不同文本的条数比影评条数少。",
    # 01.2
    "What does set(cleaned_data) lose that a training set needs?": "set(cleaned_data) 丢掉了训练集需要的什么？",
    "the labels and a repeatable order": "标签，以及可重复的顺序",
    "A set holds texts only, so each text's label is gone, and its order comes from string hashes that Python salts anew "
    "in every process. exact_dedup keeps both.":
        "集合里只有文本，每条文本的标签就没了；它的顺序来自字符串哈希，而 Python 每个进程都重新加盐。exact_dedup "
        "两样都保留。",
    "the punctuation and the upper case": "标点和大写字母",
    "set() does not change a text; it keeps one of each identical group as it is.":
        "set() 不改动文本；每组一模一样的文本，它原样留下一条。",
    "nothing: it only drops the copies": "什么也没丢：它只去掉副本",
    "It drops more than copies: the label of every text, and any fixed order.":
        "它丢掉的不只是副本：还有每条文本的标签，以及任何固定的顺序。",
    # 01.3
    "Why deduplicate before splitting into train and held-out reviews?": "为什么要先去重，再划分训练集和留出集？",
    "so that no review has a copy on each side": "免得同一条影评两边各有一份",
    "A copy in training and one held out makes the held-out score measure memory. Near-duplicates can still leak, which "
    "section 7 counts.":
        "训练集里有一份、留出集里也有一份，留出集分数测的就是记忆力。近似重复仍可能泄漏，第 7 节会统计。",
    "because fewer reviews train much faster": "因为影评少了，训练会快很多",
    "The copies are a tiny share of the reviews; removing them saves almost no time. The reason is the leak across the "
    "split.":
        "副本只占影评的很小一部分，去掉它们几乎不省时间。真正的原因是跨越划分的泄漏。",
    "because a stratified split needs sorted data": "因为分层划分需要排好序的数据",
    "The split is a seeded stratified sample and needs no order; copies on both sides are the problem.":
        "划分是带种子的分层抽样，不需要排序；问题在于两边都有副本。",
    # 01.4
    "A review is cut into chunks of 50 words that overlap by 10. What does the overlap buy?":
        "一条影评切分成每段 50 个词、相邻两段重叠 10 个词的片段。重叠有什么用？",
    "a phrase cut at a chunk's edge is whole in the next": "在边上被切断的短语，下一段里是完整的",
    "Each chunk starts 40 words after the previous one, so the last 10 words of a chunk open the next.":
        "每个片段比前一个晚 40 个词开始，所以一个片段的最后 10 个词也是下一个片段的开头。",
    "fewer chunks, since the shared words count once": "同一条影评切出的片段更少，重叠的词只算一次",
    "Overlap means more chunks, not fewer: each new chunk advances 40 words, not 50.":
        "有重叠，片段只会更多：每个新片段只前进 40 个词，而不是 50 个。",
    "nothing useful: those 10 words are simply trained twice": "没什么用：这 10 个词只是被训练两遍",
    "Without overlap a sentence split across two chunks is whole in neither; the model never reads it together.":
        "没有重叠，跨两个片段的句子在哪个片段里都不完整，模型永远读不到它的全貌。",
    # 02.1
    "The chapter's example: WordPiece splits 'unbelievable' into pieces. Section 2 showed bert-base-uncased keeping it "
    "whole. Why?":
        "本章的例子：WordPiece 把 'unbelievable' 拆成几个子词。第 2 节里 bert-base-uncased 却把它整个保留。为什么？",
    "its vocabulary has an entry for the whole word": "它的词表里有这个词的整词条目",
    "Whether a word splits depends on the vocabulary: a frequent word earns an entry of its own among the 30,522. The "
    "small vocabulary of section 2 splits it.":
        "一个词拆不拆取决于词表：常见词在 30,522 个词条里有自己的一条。第 2 节训练的小词表就把它拆开了。",
    "WordPiece splits only words with a hyphen in them": "WordPiece 只拆带连字符的词",
    "It splits words without one too: 'unwatchable' came out as un · ##watch · ##able in the same table.":
        "没有连字符的词也会拆：同一张表里 'unwatchable' 被拆成了 un · ##watch · ##able。",
    "the tokenizer loaded without its vocabulary": "分词器加载时没带上词表",
    "Its vocabulary size is checked when it loads (30,522); the chapter's example simply assumed another vocabulary.":
        "加载时会核对词表大小（30,522）；本章的例子只是假定了另一份词表。",
    # 02.2
    "What does attention_mask tell the model?": "attention_mask 告诉模型什么？",
    "which positions hold real tokens, which padding": "哪些位置是真实词元，哪些是填充",
    "1 for a real token, 0 for padding: the model leaves the zeros out, so a padded review is read as it is alone.":
        "真实词元为 1，填充为 0：模型不看为 0 的位置，所以填充后的影评和单独输入时读到的一样。",
    "how much each token should weigh in the prediction": "每个词元在预测中该占多大分量",
    "It is not a weight: it is 0 or 1, and it only marks padding.": "它不是权重：只有 0 和 1，只用来标出填充。",
    "where each sentence of the review ends": "影评里每个句子在哪里结束",
    "A sentence's end is a token like any other; the mask only separates the review from its padding.":
        "句子结尾也只是普通词元；注意力掩码只区分影评本身和填充。",
    # 02.3
    "Section 4 compared three ways to make batches. Why does length grouping pad the least?":
        "第 4 节比较了三种组批次的办法。为什么按长度分组填充得最少？",
    "reviews of similar length need little padding": "长度相近的影评只需要很少的填充",
    "Each batch is padded to its own longest review; when its reviews are of similar length, that is close to every one of "
    "them.":
        "每个批次只填充到本批次最长的影评；批次里的影评长度相近，这个长度就和每条都差不多。",
    "it cuts every review to the batch's shortest one": "它把每条影评截断到本批次最短的那条",
    "Nothing is cut: every token of every review is still in its batch.":
        "什么也没截掉：每条影评的每个词元都还在它的批次里。",
    "it skips the padded positions in the loss": "它在计算损失时跳过填充的位置",
    "The loss is one number per review; what padding costs is the computation on padded positions, and grouping makes "
    "fewer of them.":
        "损失是每条影评一个数；填充的代价在于对填充位置的计算，分组让这样的位置变少。",
    # 02.4
    "Section 6 scored one review in two batches, ignoring the mask. Why did its answer change?":
        "第 6 节忽略注意力掩码，把同一条影评放在两个批次里打分。为什么答案变了？",
    "the padding joined the average the model pools": "填充词元混进了模型求的平均",
    "The bag model averages the vectors of every position it is told to read; without the mask that includes the padding, "
    "whose amount depends on the batch-mates.":
        "词 n-gram 袋模型对它被告知要读的每个位置的向量求平均；没有掩码，填充也算在内，而填充有多少取决于同批次的其他影评。",
    "dropout was still switched on while the model scored": "模型打分时 dropout 还开着",
    "Scoring runs in eval mode, without dropout: with the mask the answers were the same in every batch.":
        "打分在 eval 模式下进行，没有 dropout：带上掩码时，每个批次里的答案都一样。",
    "the other reviews' labels leaked into it": "同批次其他影评的标签泄漏进来了",
    "Labels are not an input of the model; only the token ids and the mask are.":
        "标签不是模型的输入；输入只有词元编号和注意力掩码。",
    # 03.1
    "Two ranks, 16 steps an epoch, 32 reviews per rank and step: how many reviews does one epoch train on?":
        "两个 Rank，每个 epoch 16 步，每个 Rank 每步 32 条：一个 epoch 训练多少条影评？",
    "1,024: 16 x 32 on each of 2 ranks": "1,024 条：2 个 Rank 各 16 x 32",
    "The ranks share the epoch between them: each trains on its own 512, disjoint from the other's.":
        "各 Rank 分担同一个 epoch：每个 Rank 训练自己的 512 条，与另一个 Rank 的互不重叠。",
    "512: the two ranks share each batch": "512 条：两个 Rank 共用同一个批次的影评",
    "512 is one rank's share. Each rank has batches of its own: together 1,024.":
        "512 只是一个 Rank 的份额。每个 Rank 有自己的批次：合起来 1,024 条。",
    "2,048: each rank trains on all of them": "2,048 条：每个 Rank 都把全部影评训练一遍",
    "DistributedSampler gives each rank a disjoint half; no review is seen twice in an epoch.":
        "DistributedSampler 给每个 Rank 不重叠的一半；一个 epoch 里没有影评被看两次。",
    # 03.2
    "Section 6's table: one all-reduce of bag's gradient over 1 GbE takes about 0.17 s. What does that mean for 2 ranks on "
    "two machines joined by 1 GbE?":
        "第 6 节的表：走 1 GbE，bag 的梯度做一次 all-reduce 约要 0.17 秒。如果 2 个 Rank 分在两个节点上、之间走 1 GbE，"
        "这意味着什么？",
    "each step waits for the exchange far longer than it computes": "每一步等交换梯度的时间远比计算长",
    "A 2-rank bag step computes for about 0.017 s (bench/results/scaling.json), and the whole gradient is exchanged on top "
    "of it, every step. Even on one machine 2 ranks trained at 0.90x the speed of 1 there (32 reviews per rank); the "
    "compute-bound minilm reached 2.1x.":
        "2 个 Rank 跑 bag 时，一步的计算约 0.017 秒（bench/results/scaling.json），每一步还要另外交换整个梯度。"
        "即使在同一个节点上，这份测试里 2 个 Rank 的速度也只有 1 个 Rank 的 0.90 倍（每个 Rank 32 条）；计算密集的 minilm "
        "达到 2.1 倍。",
    "nothing: the exchange hides behind the backward pass": "没什么影响：交换梯度藏在反向传播的时间里",
    "DDP overlaps the all-reduce with the backward pass only as far as the backward lasts; an exchange that takes far "
    "longer than the whole step cannot hide behind it.":
        "DDP 只能在反向传播进行的那段时间里同时做 all-reduce；比整个一步还长得多的交换藏不住。",
    "each step gets cheaper, since every rank computes half": "每一步更省了，因为每个 Rank 只算一半",
    "Half the batch halves the computing, not the exchange: every rank still sends and receives the whole gradient.":
        "批次减半，计算减半，交换却不减：每个 Rank 仍要收发整个梯度。",
    # 03.3
    "Both ranks' losses fell together and stayed close. What does that prove?":
        "两个 Rank 的损失同步下降、数值接近。这证明了什么？",
    "not yet that the ranks hold the same model": "还证明不了各 Rank 持有同一个模型",
    "Section 5's ranks that never synchronised showed the same curves. Comparing the parameters across ranks is what tells "
    "(the last line of every launch).":
        "第 5 节里从不同步的 Rank 也画出了同样的曲线。要看的是跨 Rank 比较参数（每次启动的最后一行）。",
    "that DDP's all-reduce ran at every step": "DDP 的 all-reduce 每一步都执行了",
    "Ranks that never all-reduced fall together too: each learns the same thing from its half of the data.":
        "从不 all-reduce 的 Rank 也会同步下降：每个 Rank 从自己那一半数据学到的是同样的东西。",
    "that every rank's parameters are identical": "每个 Rank 的参数都逐位相同",
    "The losses cannot show it: section 5's unsynchronised ranks had close losses and different models.":
        "损失看不出这一点：第 5 节里没有同步的 Rank 损失接近，模型却不同。",
    # 03.4
    "Section 2's template saves model_epoch_10.pth and writes TensorBoard. Which rank does that?":
        "第 2 节的模板代码保存 model_epoch_10.pth、写 TensorBoard。是哪个 Rank 做的？",
    "rank 0 alone: both sit under if rank == 0": "只有 Rank 0：两处都在 if rank == 0 之下",
    "DDP keeps every rank's copy identical, so one copy is enough to save; rank 0 writes it and the log, the others only "
    "train.":
        "DDP 让每个 Rank 的副本一致，存一份就够了；由 Rank 0 写检查点和 TensorBoard 事件文件，其他 Rank 只管训练。",
    "every rank, each into a file of its own": "每个 Rank 都存，各写各的文件",
    "The template's save sits under if rank == 0: one file per save, whatever the world size.":
        "模板代码的保存放在 if rank == 0 下面：不论进程总数多少，每次只存一个文件。",
    "the rank that finishes its epoch last": "最后一个跑完这个 epoch 的 Rank",
    "The order in which ranks finish plays no part; the code names rank 0.":
        "各 Rank 谁先跑完无关紧要；代码里写明的是 Rank 0。",
    # 03.5
    "In section 6's static group of two nodes, one worker fails. What happens to the job?":
        "第 6 节两个节点的固定通信组里，一个工作进程出了故障。作业会怎样？",
    "it ends: a static group cannot re-form": "作业结束：固定通信组无法重组",
    "Every rank waits for every other at each step, and a static group has a fixed size. Nodes that re-form a group "
    "together need torch's c10d rendezvous (station 5, optional deep-dive C).":
        "每一步每个 Rank 都要等其他所有 Rank，而固定通信组的大小是定死的。要让各节点一起重组通信组，需要 torch 的 c10d "
        "汇合（第 5 站选读 C）。",
    "its work moves over to the other node": "它的工作转到另一个节点上继续",
    "Nothing in a static launch moves work between nodes; the other node's ranks wait for the lost one.":
        "固定启动方式里没有任何东西会在节点之间转移工作；另一个节点的 Rank 只会等那个丢掉的进程。",
    "the other ranks simply carry on without it": "其余的 Rank 不带它继续训练",
    "They cannot: every all-reduce needs every rank of the group, so they wait and then fail.":
        "做不到：每次 all-reduce 都需要通信组里的每个 Rank，所以它们只能等待，然后出错。",
    # 04.1
    "The chapter's checkpoint holds model, optimizer and loss. What else does a resume in the middle of an epoch need to "
    "continue exactly?":
        "本章的检查点存模型、优化器和损失。在 epoch 中途续训，要完全接上，还缺什么？",
    "the RNG state and the position in the epoch": "随机数生成器状态和 epoch 内的位置",
    "The chapter's template has no learning-rate schedule, so model and optimizer cover its numbers. The dropout masks "
    "come from the RNG, and the step within the epoch says where to go on; station 5 removes each with a real kill.":
        "本章的模板代码没有学习率调度，模型和优化器已包含它的全部数值。dropout 掩码来自随机数生成器，epoch "
        "内的步数说明从哪里接着训练；第 5 站会用真实的中断逐项去掉它们。",
    "the last step's gradients and the loss curve": "最后一步的梯度，以及整条损失曲线的记录",
    "Gradients are zeroed before every step and the curve is in TensorBoard's event files: neither is needed to take the "
    "next step.":
        "梯度在每一步之前都会清零，曲线在 TensorBoard 的事件文件里：这两样都不是下一步所需要的。",
    "nothing: model and optimizer are all of it": "什么也不缺：模型和优化器就是训练的全部状态",
    "Not in the middle of an epoch: the dropout masks and the place in the data order are state too.":
        "在 epoch 中途不是这样：dropout 掩码和数据顺序中的位置也是状态。",
    # 04.2
    "Why write a checkpoint to a temporary file and then rename it?": "为什么先把检查点写到临时文件，再重命名？",
    "a kill during the write leaves the old one whole": "写到一半被杀，旧检查点仍然完好",
    "A rename is atomic: the path holds the old file or the new one, never half of one.":
        "重命名是原子操作：路径上要么是旧文件，要么是新文件，绝不会是半个文件。",
    "a rename writes the file faster than torch.save": "重命名比 torch.save 写得更快",
    "It costs the same writing; it is about what a crash leaves on disk.": "写入量一样；关键在于崩溃后磁盘上留下什么。",
    "a copy onto the old file would work as well": "把临时文件复制过去覆盖旧文件也一样",
    "A copy writes the bytes one after another: killed half-way, the path holds half a file (04.save's check kills a save "
    "inside its copy). os.replace swaps the file in one step.":
        "复制是把字节一个接一个写过去：复制到一半被杀，原路径上就是半个文件（04.save 的检查会在复制途中杀掉进程）。"
        "os.replace 一步就换好文件。",
    "torch.save refuses to write over an existing file": "torch.save 不肯覆盖已有的文件",
    "torch.save writes wherever it is told, and leaves half a file when the process dies.":
        "torch.save 写到哪里都行，进程死掉时也会留下半个文件。",
    # 04.3
    "Each save costs time, and a failure loses the work since the last save. Which interval is best?":
        "每次保存都有开销，一次故障又会丢掉上次保存以来的工作。保存间隔怎样最好？",
    "one that balances the two costs": "在两种开销之间取得平衡的间隔",
    "Too often and the saves cost more than they protect; too rarely and failures throw away long stretches. "
    "bench/results/save_interval.json: with a failure every 20 s on average, saving every 9 steps took 82.2 s against 55.5 "
    "s every 74 steps, the advisor's optimum. Optional deep-dive A derives it.":
        "保存太勤，保存的开销超过它保护的工作；太少，每次故障都丢掉一大段。bench/results/save_interval.json：平均每 20 "
        "秒一次故障时，每 9 步保存一次用了 82.2 秒，按建议的最优间隔每 74 步保存一次用了 55.5 秒。选读 A 推导了这个间隔。",
    "as often as possible: a save never hurts": "越频繁越好：保存没有坏处",
    "Each save stops training while the state is written; saved too often, that is where the time goes.":
        "每次保存时，训练都要等状态写完；保存太勤，时间就花在这里。",
    "every 10 epochs, whatever the run": "每 10 个 epoch 一次，什么训练都一样",
    "The chapter's 10 is a habit, not a calculation: the right interval depends on what a save costs and how often "
    "failures come.":
        "本章的 10 是习惯，不是计算：合适的间隔取决于保存开销和故障有多频繁。",
    # 04.4
    "Since PyTorch 2.6 torch.load defaults to weights_only=True. Why does the kit still say it?":
        "从 PyTorch 2.6 起，torch.load 默认就是 weights_only=True。本套件为什么还要写明？",
    "older torch loads any pickle, code included": "旧版本会执行 pickle 里的代码",
    "Before 2.6 a plain torch.load runs whatever a pickle holds. Written out, the rule holds on every version and says "
    "what a checkpoint is: data, never code.":
        "2.6 之前，不带参数的 torch.load 会执行 pickle 里的任何东西。写明了，这条规则在每个版本上都成立，"
        "也说清了检查点是什么：数据，绝不是代码。",
    "it loads the weights and skips the optimizer": "它只加载模型的权重，跳过优化器状态",
    "The name misleads: it loads tensors, numbers, strings and containers, optimizer states included.":
        "名字有误导性：它加载张量、数字、字符串和容器，优化器状态也包括在内。",
    "it makes a large checkpoint load faster": "它让大的检查点加载得更快、更省内存",
    "The point is safety, not speed.": "重点是安全，不是速度。",
    # 05.1
    "The book's run, killed in epoch 12 and resumed from model_epoch_10.pth, passes the chapter's acceptance test. Is it "
    "the run never interrupted?":
        "原书代码在第 12 个 epoch 被杀，从 model_epoch_10.pth 续训，通过了本章的验收标准。它与从未中断的训练相同吗？",
    "no: the two part right after the checkpoint": "不同：检查点之后就出现分歧",
    "compare finds the first divergent step at the first step after epoch 10: the RNG was not saved, so the dropout masks "
    "differ from there on.":
        "compare 找到的第一个出现分歧的步，就是第 10 个 epoch 之后的第一步：没有保存随机数生成器状态，从那以后 dropout "
        "掩码就不同了。",
    "yes: its loss went on falling after the resume": "相同：续训之后，损失一直在往下降",
    "A falling loss only says training goes on; section 2's table shows the runs parting.":
        "损失下降只说明训练还在继续；第 2 节的表显示两次训练出现了分歧。",
    "yes: both model and optimizer came back": "相同：模型和优化器的状态都恢复了",
    "They did, and the RNG did not: the dropout masks after the resume are other masks.":
        "它们是恢复了，随机数生成器状态却没有：续训后的 dropout 掩码换了一套。",
    # 05.2
    "In section 3 the chapter's acceptance test judged every resume mode. What did it find?":
        "第 3 节用本章的验收标准评判了每种续训方式。结果如何？",
    "every mode passed, the amnesiac one too": "每种方式都通过了，失忆的那种也通过",
    "The test asks whether training goes on, and it does in every mode; only compare tells an exact resume from a "
    "plausible one.":
        "这个标准问的是训练能不能接着走下去，每种方式都能；只有 compare 才分得清逐位相同的续训和看起来合理的续训。",
    "only full passed; every other mode failed it": "只有 full 通过了，其余都没通过",
    "They all passed: a model that lost its optimizer state still trains, and its loss still falls.":
        "它们都通过了：丢了优化器状态的模型照样能训练，损失照样下降。",
    "weights-only failed: its loss jumped": "weights-only 没通过：它的损失跳了一下",
    "The loss after it was still lower than before the resume, which is all the test asks.":
        "续训后的损失仍比续训前低，而这个标准只问这一点。",
    # 05.3
    "Section 3's epoch-start resume repeated samples. Which ones?":
        "第 3 节里 epoch-start 方式的续训重复了一些样本。是哪些？",
    "those of the epoch's steps before the checkpoint": "本 epoch 在检查点之前那些步的样本",
    "It starts the interrupted epoch over. The sampler's order is the same, so those steps come again with the same "
    "samples.":
        "它把被中断的 epoch 从头再来。采样器的顺序不变，所以那些步会带着同样的样本再来一遍。",
    "none: the sampler is deterministic, nothing repeats": "一个也没有：采样器是确定性的，所以不会重复",
    "Deterministic is why they repeat: the same order, started again from the epoch's first step.":
        "正因为是确定性的才会重复：同样的顺序，又从这个 epoch 的第一步开始。",
    "those of the steps after the kill, drawn twice": "被杀之后那些步的样本，又抽了一遍",
    "Those had never been trained: the kill came before them.": "那些步还从没训练过：中断发生在它们之前。",
    # 05.4
    "A kill comes half-way through writing model_epoch_20.pth. What does the book's resume do?":
        "写 model_epoch_20.pth 到一半时进程被杀。原书的续训会怎样？",
    "it crashes on the half-written file": "在那个只写了一半的文件上崩溃",
    "resume_training loads the path it is given and nothing else. The kit's commit protocol and latest_valid are what fall "
    "back to the previous checkpoint.":
        "resume_training 只加载给定的路径。能退回到前一个检查点的，是本套件的提交协议和 latest_valid。",
    "it goes back to model_epoch_10.pth": "自动退回到 model_epoch_10.pth",
    "Nothing in the book's code tries another file.": "原书的代码里没有任何地方会去试另一个文件。",
    "it loads the half that it can read": "读出文件里能读的那一半内容",
    "torch.load refuses a truncated file: its zip directory is at the end.":
        "torch.load 拒绝被截断的文件：zip 目录在文件末尾。",
    # 05.5
    "sorted(['model_epoch_8.pth', 'model_epoch_10.pth'])[-1] is ...":
        "sorted(['model_epoch_8.pth', 'model_epoch_10.pth'])[-1] 是……",
    "'model_epoch_8.pth'": "'model_epoch_8.pth'",
    "Strings compare character by character: '8' > '1'. Sort by the number in the name.":
        "字符串逐个字符比较：'8' > '1'。应按文件名中的数字排序。",
    "'model_epoch_10.pth'": "'model_epoch_10.pth'",
    "That is the newest, but sorted() compares strings character by character, and '8' > '1'.":
        "它才是最新的，可是 sorted() 逐个字符比较字符串，而 '8' > '1'。",
    "a TypeError: 8 and 10": "TypeError：8 和 10",
    "Sorting strings raises nothing: the numbers inside are just characters.": "给字符串排序不会报错：里面的数字只是字符。",
}
