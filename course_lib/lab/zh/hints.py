"""Each exercise's title and hints in Chinese, keyed by their English (``Exercise.title``, ``.hints``),
in the order of :data:`course_lib.exercises.EXERCISES`."""

ZH = {
    # 01.dedup
    "Exact and near-duplicate removal": "精确去重与近似去重",
    "Copies come in two kinds: exact ones (the same string) and near ones (a word or two, the case or the punctuation "
    "changed). Keep the first review of every group of copies, drop the later ones, and return the indices you keep, in "
    "order.":
        "副本有两种：完全相同的（同一个字符串），和近似的（改了一两个词、大小写或标点）。每组副本只留第一条，丢掉后面的，"
        "按顺序返回保留下来的下标。",
    "Exact copies: walk through enumerate(texts) and remember the texts already seen in a set(), as the chapter does, but "
    "keep the index. Near copies need a comparison that small edits barely move: the Jaccard similarity of the reviews' "
    "sets of word 3-shingles.":
        "完全相同的副本：遍历 enumerate(texts)，像本章那样用 set() 记下见过的文本，但要记住下标。"
        "近似副本要用一种不怕小改动的比较：两条影评的词级 3-shingle 集合的 Jaccard 相似度。",
    "A review's shingles: lower-case it, turn punctuation into spaces (re.sub(r'[^\\w\\s]', ' ', text)), split into words, "
    "and take the set of tuples of 3 consecutive words. Jaccard(A, B) = len(A & B) / len(A | B); a review whose Jaccard "
    "with one already kept is >= 0.8 is a copy.":
        "一条影评的 shingle：转小写，把标点换成空格（re.sub(r'[^\\w\\s]', ' ', text)），切成词，取相邻 3 "
        "个词组成的元组的集合。Jaccard(A, B) = len(A & B) / len(A | B)；与某条已保留影评的 Jaccard >= 0.8 的就是副本。",
    # 01.chunk
    "Chunks that cover the review": "覆盖全文的片段",
    "A chunk is a window of size words, and consecutive windows share overlap words: each one starts size - overlap words "
    "after the one before. Keep going until a window reaches the review's last word.":
        "一个片段是 size 个词的窗口，相邻两个窗口共享 overlap 个词：每个窗口比前一个晚 size - overlap 个词开始。一直切分，"
        "直到某个窗口到达影评的最后一个词。",
    "text.split() gives the words; the chunk that starts at word start is ' '.join(words[start:start + size]).":
        "text.split() 给出词的列表；从第 start 个词开始的片段是 ' '.join(words[start:start + size])。",
    "Stop right after the chunk that reaches the last word (start + size >= len(words)): one more would only repeat words "
    "already covered. A review shorter than size is one chunk.":
        "到达最后一个词的那个片段（start + size >= len(words)）切完就停：再切一个只会重复已经覆盖的词。比 size "
        "还短的影评就是一个片段。",
    # 02.collate
    "A collate function with attention_mask": "带 attention_mask 的整理函数",
    "A batch is a rectangle: one row per review, as wide as the longest review of this batch (dynamic padding). A review's "
    "tokens go at the start of its row and padding (pad_id) after them; the mask says which positions are which.":
        "一个批次是一个矩形：每条影评一行，宽度等于本批次最长的影评（动态填充）。影评的词元放在这一行的开头，"
        "后面是填充（pad_id）；注意力掩码标出哪些位置是哪一种。",
    "torch.full((rows, width), pad_id, dtype=torch.long) is a rectangle of padding to copy the reviews into; torch.zeros "
    "of the same shape is a mask with nothing real in it yet.":
        "torch.full((rows, width), pad_id, dtype=torch.long) 是一个全是填充的矩形，把各条影评复制进去；同样形状的 "
        "torch.zeros 是一个还没有标出任何真实词元的注意力掩码。",
    "For row r with n tokens: input_ids[r, :n] holds the review's ids and attention_mask[r, :n] is 1. Return a dict with "
    "input_ids, attention_mask and label, all of dtype torch.long.":
        "第 r 行有 n 个词元：input_ids[r, :n] 放这条影评的编号，attention_mask[r, :n] 设为 1。返回一个包含 input_ids、"
        "attention_mask 和 label 的 dict，dtype 都是 torch.long。",
    # 02.group
    "Batches of similar lengths": "长度相近的批次",
    "Sorting all reviews by length gives batches with almost no padding, but then every epoch is the same order, from "
    "short to long. Keep similar lengths together only locally, and let the rest be random.":
        "把所有影评按长度排序，组成的批次几乎没有填充，但这样每个 epoch 都是同一个顺序，从短到长。"
        "只在局部把长度相近的放在一起，其余的保持随机。",
    "random.Random(seed) gives a generator of your own: its shuffle(list) changes with the seed, and the same seed gives "
    "the same batches again.":
        "random.Random(seed) 给你一个自己的随机数生成器：它的 shuffle(list) 随种子变化，同一个种子给出同样的批次。",
    "Shuffle the indices; sort each slice of about 50 batches' worth by length and cut it into batches; at the end, "
    "shuffle the list of batches.":
        "先打乱下标；每次取大约 50 个批次的量，按长度排序后切成批次；最后打乱批次的列表。",
    # 03.split
    "Each rank's share of the data": "每个 Rank 的那一份数据",
    "Every rank must agree on one order of the n reviews, the same on every rank and new every epoch, and then take a part "
    "of it that no other rank takes.":
        "各 Rank 先要对 n 条影评的顺序达成一致：各 Rank 相同，每个 epoch 不同；然后各取其中别的 Rank 不取的一份。",
    "torch.randperm(n, generator=g), with g = torch.Generator() seeded by seed + epoch (g.manual_seed), gives that order: "
    "the same seed and epoch give the same order on every rank (what sampler.set_epoch does).":
        "torch.randperm(n, generator=g) 给出这个顺序，其中 g = torch.Generator()，用 seed + epoch 设种子（g.manual_seed）："
        "种子和 epoch 相同，各 Rank 的顺序就相同（sampler.set_epoch 做的正是这件事）。",
    "Rank r takes every world_size-th index of the order, starting at r (a slice with a step). Cut n down to a multiple of "
    "world_size first, so that all shares are the same size: DDP waits for a rank that ran out.":
        "Rank r 从第 r 个开始，每隔 world_size 个取一个（带步长的切片）。先把 n 截成 world_size 的整数倍，各份才一样大："
        "有一个 Rank 先用完数据，DDP 就会一直等它。",
    # 03.worker
    "An evaluation the ranks share": "各 Rank 分担的评估",
    "Share the work, then combine the counts: each rank scores only its own reviews, and the ranks then add up what they "
    "counted, so that every rank ends with the same totals.":
        "先分担工作，再合并计数：每个 Rank 只给自己那几条影评打分，然后各 Rank 把数出来的结果加起来，每个 Rank "
        "最后都拿到同样的总数。",
    "range(rank, len(dataset), world_size) gives rank its share with no review twice (DistributedSampler would pad the "
    "last share by repeating reviews). dist.all_reduce(tensor) adds a tensor up over the ranks, in place, on every rank.":
        "range(rank, len(dataset), world_size) 给出这个 Rank 的那一份，没有哪条影评出现两次（DistributedSampler "
        "会重复几条影评来填充最后一份）。dist.all_reduce(tensor) 在每个 Rank 上原地把张量对所有 Rank 求和。",
    "Add up counts, not accuracies: with an odd number of reviews the shares differ in size, and the mean of two ratios is "
    "not the ratio of the sums. Score under model.eval() and torch.no_grad(), as the chapter's evaluate does.":
        "加起来的应是计数，而不是准确率：影评条数是奇数时各份大小不同，两个比值的平均不等于总和之比。和本章的 evaluate "
        "一样，在 model.eval() 和 torch.no_grad() 下打分。",
    "The end of it: counts = torch.tensor([correct, total]); dist.all_reduce(counts); then the accuracy is "
    "counts[0].item() / counts[1].item() on every rank.":
        "最后几行：counts = torch.tensor([correct, total])；dist.all_reduce(counts)；然后每个 Rank 上的准确率都是 "
        "counts[0].item() / counts[1].item()。",
    # 04.monitor
    "Log more than the loss": "不只记录损失",
    "The loss alone does not say why a run goes wrong. Log two more numbers at every step: the learning rate this step "
    "used, and how large the gradients were (their norm), under the tags train/loss, train/lr and train/grad_norm, at the "
    "step you are given.":
        "只看损失，说不出训练为什么出问题。每一步再记两个数：这一步用的学习率，以及梯度有多大（梯度范数）；标签分别是 "
        "train/loss、train/lr 和 train/grad_norm，步数用传进来的 step。",
    "writer.add_scalar(tag, value, step) writes one point of a curve. The learning rate this step used is in "
    "optimizer.param_groups[0]['lr'] (warm-up changes it at every step).":
        "writer.add_scalar(tag, value, step) 写下曲线上的一个点。这一步用的学习率在 optimizer.param_groups[0]['lr'] "
        "里（预热期间每一步都在变）。",
    "The gradient norm is the L2 norm of all gradients taken together: add up p.grad.pow(2).sum() over the parameters "
    "whose p.grad is not None, then take the square root of the sum.":
        "梯度范数是把所有梯度放在一起的 L2 范数：对 p.grad 不为 None 的参数，把 p.grad.pow(2).sum() 加起来，"
        "再对总和开平方。",
    # 04.save
    "A checkpoint that survives a kill": "被杀也不坏的检查点",
    "The next step depends on more than the weights. List what changes at every step: the model, AdamW's moments, the "
    "learning rate's place in its schedule, the random numbers dropout draws, and where in the epoch you are.":
        "下一步依赖的不只是权重。数一数每一步都有什么在变：模型、AdamW 的一阶矩和二阶矩、学习率调度走到了哪里、dropout "
        "抽的随机数，以及在 epoch 里走到了哪一步。",
    "model, optimizer and scheduler each have state_dict() and load_state_dict(); torch.get_rng_state() and "
    "torch.set_rng_state() hold the random number generator; progress is a plain dict. Put them all in one dict for "
    "torch.save, and load it with torch.load(path, weights_only=True).":
        "model、optimizer、scheduler 都有 state_dict() 和 load_state_dict()；torch.get_rng_state() 和 "
        "torch.set_rng_state() 管随机数生成器；progress 是普通的 dict。把它们放进一个 dict 交给 torch.save，加载时用 "
        "torch.load(path, weights_only=True)。",
    "Killed in the middle of writing, a file written in place is half a file: the old checkpoint is gone and the new one "
    "does not load. Write the new one under another name first, then put it in place in one step that cannot stop "
    "half-way: an atomic rename, os.replace (the temporary file first, then the checkpoint's path). A copy is no such step "
    "(killed half-way through shutil.copyfile, the path holds half a file).":
        "原地写文件时被杀，留下的是半个文件：旧检查点没了，新的又加载不了。先用另一个名字把新检查点写完，"
        "再用一步不会停在半路的操作把它放到原路径上：原子重命名 os.replace（先传临时文件，再传检查点的路径）。"
        "复制不是这样的一步（shutil.copyfile 复制到一半被杀，原路径上就是半个文件）。",
    "Before the rename, push the temporary file's bytes to the disk: open it yourself and call torch.save(state, f), then "
    "f.flush() and os.fsync(f.fileno()). load_checkpoint restores each part and returns the saved progress dict.":
        "重命名之前，先把临时文件的字节写到磁盘上：自己打开文件，调用 torch.save(state, f)，再 f.flush() 和 "
        "os.fsync(f.fileno())。load_checkpoint 逐个恢复各部分，并返回保存时的 progress 字典。",
    # 05.newest
    "The newest checkpoint that loads": "能加载的最新检查点",
    "Newest means the largest epoch number N in model_epoch_N.pth, and the file must also load: a kill in the middle of a "
    "save leaves a newest file that does not.":
        "最新指的是 model_epoch_N.pth 里 epoch 数字 N 最大的那个，而且这个文件必须能加载：保存到一半时进程被杀，"
        "最新的文件就加载不了。",
    "os.listdir(folder) with re.fullmatch(r'model_epoch_(\\d+)\\.pth', name) finds the files and their N. Sort by int(N), "
    "not by the name: as strings 'model_epoch_8.pth' comes after 'model_epoch_10.pth'.":
        "os.listdir(folder) 加上 re.fullmatch(r'model_epoch_(\\d+)\\.pth', name) 找出文件和它们的 N。按 int(N) 排序，"
        "不要按文件名：按字符串比，'model_epoch_8.pth' 排在 'model_epoch_10.pth' 后面。",
    "Newest first, try torch.load(path, weights_only=True) and return the first path that loads, skipping a file on any "
    "exception; return None when nothing loads.":
        "从最新的开始，试着 torch.load(path, weights_only=True)，返回第一个能加载的路径，出任何异常就跳过；"
        "一个都加载不了就返回 None。",
    # 05.resume
    "The chapter's resume, made exact": "把本章的断点续训补到逐位相同",
    "The chapter's resume_training restores the model and the optimizer and returns the epoch. The run never interrupted "
    "also had a learning-rate schedule, random dropout masks and a place in the middle of an epoch: restore all of it from "
    "the one file you are given.":
        "本章的 resume_training 恢复模型和优化器，返回 epoch。从未中断的那次训练还有学习率调度、随机的 dropout 掩码，"
        "以及它在一个 epoch 中间的位置：把这些都从给你的那个文件里恢复出来。",
    "Which key holds what: read the save that wrote the file, book_style_save in course_lib/exercises/audit_loop.py. Load "
    "the file with torch.load(path, weights_only=True) (a dict); each object with state has its load_state_dict, and the "
    "RNG has torch.set_rng_state.":
        "哪个键存的是什么，去看写这个文件的保存函数：course_lib/exercises/audit_loop.py 里的 book_style_save。用 "
        "torch.load(path, weights_only=True) 加载这个文件（得到一个 dict）；每个有状态的对象都有自己的 load_state_dict，"
        "随机数生成器用 torch.set_rng_state。",
    "Restore the scheduler only when one is given, and return {'epoch': ..., 'step_in_epoch': ..., 'global_step': ...} "
    "exactly as the file holds them: they already count the steps done, and the loop goes on from there.":
        "只在传入 scheduler 时才恢复它；原样返回文件里的 "
        "{'epoch': ..., 'step_in_epoch': ..., 'global_step': ...}：这些数已经把做完的步算在内，训练循环从那里接着走。",
    # 05.audit
    "Fix a loop until the audit says exact": "修一个训练循环，直到审计的结论是逐位相同",
    "Run the check and read its one line: the audit names the first piece of state or the first habit that breaks the "
    "resume. Fix that, run it again: one finding at a time.":
        "运行检查，读它给出的那一行：审计会指出第一个让续训出错的状态或习惯做法。改掉它，再运行：一次只改一个问题。",
    "The next step reads the model, the optimizer's state, the scheduler (the learning rate), torch's RNG (dropout: "
    "torch.get_rng_state / set_rng_state) and where the loop is: the epoch and the step within it.":
        "下一步要读的是：模型、优化器状态、学习率调度器（决定当前的学习率）、torch 的随机数生成器（dropout："
        "torch.get_rng_state / set_rng_state），以及训练循环的位置：epoch 和 epoch 内的步。",
    "Write the file atomically: torch.save into path + '.tmp' opened with open(..., 'wb'), f.flush(), "
    "os.fsync(f.fileno()), then os.replace(tmp, path); load_checkpoint returns (epoch, step).":
        "原子地写文件：用 open(..., 'wb') 打开 path + '.tmp'，torch.save 写进去，f.flush()，os.fsync(f.fileno())，再 "
        "os.replace(tmp, path)；load_checkpoint 返回 (epoch, step)。",
}
