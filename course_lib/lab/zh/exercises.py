"""The exercises' words in Chinese, keyed by the English each check writes (``tr(english, lang, ...)``
in :mod:`course_lib.exercises`): diagnoses, notices, the result's table, the teacher's edition. A new
message gets its Chinese here (``tests/test_i18n.py`` finds a missing one)."""

ZH = {
    # exercises/base.py
    "check('{id}', ...) takes your functions {names}, in that order":
        "check('{id}', ...) 需要传入你的函数 {names}（按这个顺序）",
    "{ex}: your {fn}() raised an exception:\n{tb}": "{ex}：你的 {fn}() 抛出了异常：\n{tb}",
    "fail": "未通过",
    "pass": "通过",
    "exercise": "练习",
    "result": "结果",
    "diagnosis": "诊断",
    "seed (to reproduce)": "随机种子（复现用）",
    # exercises/__init__.py
    "# reference solution of {id}: {path}\n# run it through the same check: check('{id}', *solution_of('{id}'))\n\n":
        "# {id} 的参考答案：{path}\n# 用同一个检查运行它：check('{id}', *solution_of('{id}'))\n\n",
    "Hint {k} of {n} ({id}): {h}": "提示 {k}/{n}（{id}）：{h}",
    "hint(\"{id}\") gives the next hint ({k} of {n} left)": "hint(\"{id}\") 给出下一条提示（共 {n} 条，还剩 {k} 条）",
    "You have seen all {n} hints of {id}": "{id} 的 {n} 条提示你都看过了",
    "The reference solution of {id} is one call away: solution(\"{id}\", reveal=True). Stuck? {hints}.":
        "{id} 的参考答案只差一步：solution(\"{id}\", reveal=True)。卡住了？{hints}。",
    # exercises/carry.py
    "{name} is not a plain function (def ...): write it with def in a cell":
        "{name} 不是普通函数：请在单元格里用 def 定义它",
    "a lambda cannot be sent to the spawned processes: write it with def in a cell":
        "lambda 无法送到子进程：请在单元格里用 def 定义",
    "{name} is defined inside another function (it uses {vars} from there): define it at the top level of a cell":
        "{name} 定义在另一个函数内部（用到了那里的 {vars}）：请在单元格的最外层定义它",
    "the source of {name} cannot be found (defined with exec, or the cell was deleted): run its cell again, or put it in a "
    ".py file next to the notebook":
        "找不到 {name} 的源代码（用 exec 定义，或单元格已删除）：请重新运行它所在的单元格，或把它写进 notebook 旁边的 .py "
        "文件",
    "{fn} uses {name} ({kind}) from your notebook, which cannot be sent to the spawned processes: create it inside {fn}, "
    "or pass it in":
        "{fn} 用到了 notebook 里的 {name}（{kind}），它无法送到子进程：请在 {fn} 内部创建它",
    # exercises/ex01.py
    "{n} reviews in, {k} kept: all {e} exact and {m} near-duplicate copies removed, no original lost":
        "输入 {n} 条，保留 {k} 条：{e} 条精确副本和 {m} 条近似副本全部去掉，原文一条不少",
    "{n} real reviews chunked (size={s}, overlap={o}): every word covered, overlaps exact":
        "{n} 条真实影评已切分（size={s}，overlap={o}）：每个词都被覆盖，重叠正好",
    "remove_duplicates must return the indices it keeps (a list of ints), got {t}":
        "remove_duplicates 应返回保留下来的下标（int 列表），实际返回了 {t}",
    "remove_duplicates returned no index: return the indices of the reviews to keep":
        "remove_duplicates 没有返回任何下标：请返回要保留的影评下标",
    "for #{s} and its copy #{c} you kept the copy: keep the first occurrence (labels and order follow the original)":
        "#{s} 和它的副本 #{c}，你留下了副本：应保留第一次出现的那条",
    "kept {k} of {n} exact copies (e.g. #{c} is #{s} again, character for character): compare the texts exactly first (a "
    "set of the texts seen, as the chapter's set())":
        "{n} 条完全相同的副本留下了 {k} 条（例如 #{c} 与 #{s} 一字不差）：先做精确比较（像本章的 set() 那样记下见过的文本）",
    "kept {k} of {n} near-duplicates (e.g. #{c} is #{s} with a word or two and the punctuation changed): exact comparison "
    "misses them; compare word 3-shingle sets, case and punctuation folded, and drop a review whose Jaccard similarity to "
    "a kept one is >= 0.8":
        "{n} 条近似重复留下了 {k} 条（例如 #{c} 只是把 #{s} 改了一两个词和标点）：精确比较找不到它们；请比较词级 3-shingle "
        "集合（忽略大小写和标点），与已保留影评的 Jaccard 相似度 >= 0.8 的就丢掉",
    "dropped {k} reviews that have no copy (e.g. #{i}): your test of 'the same review' is too loose (Jaccard >= 0.8 of "
    "word 3-shingles)":
        "丢掉了 {k} 条没有副本的影评（例如 #{i}）：你判断\"同一条\"的标准太松了（应为词级 3-shingle 的 Jaccard >= 0.8）",
    "review #{r} ({n} words, size={s}, overlap={o}): your chunks cover {c} words; consecutive chunks must share exactly "
    "{o} words (the next starts size - overlap = {step} words later)":
        "影评 #{r}（{n} 个词，size={s}，overlap={o}）：你的片段共覆盖 {c} 个词；相邻两个片段必须恰好共享 {o} "
        "个词（下一个片段晚 size - overlap = {step} 个词开始）",
    "chunk_words must return a list of chunks, each a string of words; got {g!r}":
        "chunk_words 应返回片段列表，每个片段是由词组成的字符串；实际得到 {g!r}",
    "review #{r}: a chunk has {n} words, more than size={s}": "影评 #{r}：有一个片段 {n} 个词，超过了 size={s}",
    "review #{r}: an empty chunk; stop as soon as a chunk reaches the last word":
        "影评 #{r}：出现了空片段；某个片段到达最后一个词就应停止",
    "review #{r} ({n} words, size={s}, overlap={o}): the last words are in no chunk (your last chunk ends with {last!r}): "
    "keep going until a chunk reaches the last word":
        "影评 #{r}（{n} 个词，size={s}，overlap={o}）：最后几个词不在任何片段里（最后一个片段以 {last!r} 结尾）："
        "要一直切分到某个片段到达最后一个词",
    # exercises/ex02.py
    "{k} real reviews of {lo} to {hi} tokens: a real bag model and a transformer predict each one in your padded batch "
    "exactly as alone":
        "{k} 条真实影评（{lo} 到 {hi} 个词元）：真实的 bag 模型和 transformer 对你的填充批次中每一条的预测与单独预测完全一"
        "样",
    "{n} real reviews in batches of {s}: {m:.1%} padding against {r:.1%} for random batches, in a random order":
        "{n} 条真实影评、每个批次 {s} 条：填充占 {m:.1%}，随机组成的批次为 {r:.1%}，批次的顺序是随机的",
    "the batch has no {k}: return a dict with input_ids, attention_mask and label":
        "批次里没有 {k}：请返回包含 input_ids、attention_mask 和 label 的字典",
    "{k} must be a torch tensor (dtype torch.long), got {t}": "{k} 必须是 torch 张量（dtype torch.long），实际是 {t}",
    "input_ids is {a} and attention_mask {b}; expected {w}: one row per review, padded to the longest review of this batch":
        "input_ids 是 {a}，attention_mask 是 {b}；应为 {w}：每条影评一行，填充到本批次最长影评的长度",
    "label does not follow the reviews' order": "label 的顺序和影评的顺序对不上",
    "every review must be in exactly one batch: {m} missing, {e} repeated":
        "每条影评必须恰好在一个批次里：{m} 条缺失，{e} 条重复",
    "batches must hold at most {s} reviews and not be needlessly small ({n} batches for {r} reviews)":
        "每个批次最多 {s} 条，也不要无谓地切得太小（{r} 条影评切成了 {n} 个批次）",
    "your batches leave {m:.0%} of the tokens as padding, random batches {r:.0%}: put reviews of similar length together":
        "你的批次里 {m:.0%} 的词元是填充，随机组成的批次是 {r:.0%}：把长度相近的影评放在一起",
    "your batches come sorted by length: shuffle the order of the batches, or every epoch is the same curriculum from "
    "short to long":
        "你的批次按长度排好了序：请打乱批次的顺序，否则每个 epoch 都是从短到长的同一套课程",
    "another seed gives the same batches: use the seed for the shuffles": "换了种子批次却一样：打乱时要用上 seed",
    "row {r} does not start with review {r}'s tokens: put the tokens first and the padding after them (right padding)":
        "第 {r} 行不是以第 {r} 条影评的词元开头：词元在前，填充在后（右填充）",
    "row {r}'s attention_mask is wrong: 1 on its {n} real tokens, 0 on the {p} padding positions":
        "第 {r} 行的 attention_mask 不对：{n} 个真实词元处为 1，{p} 个填充位置为 0",
    "row {r} is padded with something other than pad_id={p}": "第 {r} 行填充的不是 pad_id={p}",
    "the {m} model's output for review {r} changes when it is padded in your batch ({a} alone, {b} in the batch)":
        "{m} 模型对第 {r} 条影评的输出，在你的批次里填充后变了（单独 {a}，批次中 {b}）",
    # exercises/ex03.py
    "the ledger of {n} steps on {w} real ranks: disjoint shares in every step, every review once per epoch, a new order "
    "each epoch":
        "{w} 个真实 Rank、{n} 步的训练账本：每步各 Rank 的数据互不重叠，每个 epoch 每条影评恰好一次，每个 epoch 顺序都不同",
    "{w} real ranks (gloo) scored {n} held-out reviews, {a} and {b} each, and both returned {t:.4%}: what one process "
    "scoring all {n} gets":
        "{w} 个真实的 Rank（gloo 后端）给 {n} 条留出集影评打分，各 {a} 条和 {b} 条，两者都返回 {t:.4%}：与单个进程给全部 "
        "{n} 条打分的结果相同",
    "every rank returned {g:.6f}; one process scoring all {n} reviews gets {t:.6f}":
        "每个 Rank 都返回 {g:.6f}；单个进程给全部 {n} 条影评打分得到 {t:.6f}",
    "no ledger rows: keep the line kit.record(epoch, step, loss.item(), batch) in your loop":
        "训练账本里没有记录：请保留循环里的 kit.record(epoch, step, loss.item(), batch) 这一行",
    "each rank ran {got} steps per epoch, expected {want}: each rank takes 1/{w} of the {n} reviews, {b} per step":
        "每个 Rank 每个 epoch 跑了 {got} 步，应为 {want}：每个 Rank 取 {n} 条影评的 1/{w}，每步 {b} 条",
    "every epoch repeats epoch 1's order: the shuffle must depend on the epoch (DistributedSampler: call "
    "sampler.set_epoch(epoch) at the start of each epoch)":
        "每个 epoch 都重复第 1 个 epoch 的顺序：打乱必须随 epoch 变化（DistributedSampler：每个 epoch 开始时调用 "
        "sampler.set_epoch(epoch)）",
    "rank_indices returned no index for some rank: each rank needs its share of the {n} reviews":
        "rank_indices 对某个 Rank 没有返回任何下标：每个 Rank 都需要 {n} 条影评中属于自己的一份",
    "the ranks get different numbers of indices ({sizes}): every rank must take the same number, or DDP waits forever for "
    "the rank that ran out":
        "各 Rank 分到的数量不同（{sizes}）：每个 Rank 必须一样多，否则 DDP 会一直等那个先用完数据的 Rank",
    "rank_indices must return ints in 0..{m}; got {b!r}": "rank_indices 必须返回 0..{m} 的整数；却得到 {b!r}",
    "the model scored reviews in training mode, with dropout on: call model.eval() first, and score under torch.no_grad(), "
    "as the chapter's evaluate does":
        "模型是在训练模式下打分的，dropout 还开着：先调用 model.eval()，并在 torch.no_grad() 下打分，和本章的 evaluate 一样",
    "the model was given {k} row(s) that are none of the reviews: keep each review's input_ids as they are, with "
    "attention_mask 1 on them and 0 on the padding":
        "模型收到了 {k} 行不属于任何一条影评的数据：每条影评的 input_ids 保持原样，attention_mask 在这些词元上为 1，"
        "在填充上为 0",
    "rank {r} scored no review: every rank scores its own share (every world_size-th review, starting at its rank)":
        "Rank {r} 一条影评也没有打分：每个 Rank 都要给自己那一份打分（从第 rank 条开始，每隔 world_size 条取一条）",
    "each rank scored all {n} reviews: the work was not shared, and added up every review counts {w} times; rank r scores "
    "only every world_size-th review, starting at r":
        "每个 Rank 都给全部 {n} 条影评打了分：工作没有分担，加起来每条影评被算了 {w} 次；Rank r 只应从第 r 条开始，每隔 "
        "world_size 条取一条",
    "{k} review(s) were counted twice (e.g. #{i}, on rank {where}): DistributedSampler makes the shares equal by repeating "
    "reviews (padding); score range(rank, len(dataset), world_size), which counts every review once":
        "有 {k} 条影评被算了两次（例如 #{i}，在 Rank {where} 上）：DistributedSampler 为了让各份一样大，"
        "会重复几条影评来填充；改用 range(rank, len(dataset), world_size)，每条影评只算一次",
    "{k} review(s) were scored by no rank (e.g. #{i}): together the ranks score every review once (DistributedSampler with "
    "drop_last=True leaves the last ones out)":
        "有 {k} 条影评没有任何 Rank 打分（例如 #{i}）：所有 Rank 合起来，每条影评都要打一次分（DistributedSampler 用 "
        "drop_last=True 会漏掉最后几条）",
    "the ranks returned different accuracies (rank 0: {a:.4%}, rank 1: {b:.4%}){own}: add up the counts of all ranks with "
    "dist.all_reduce before dividing, so that every rank returns the accuracy of all {n} reviews":
        "各 Rank 返回的准确率不同（Rank 0：{a:.4%}，Rank 1：{b:.4%}）{own}：除法之前先用 dist.all_reduce 把所有 Rank "
        "的计数加起来，每个 Rank 才会返回全部 {n} 条影评的准确率",
    "you averaged the ranks' accuracies ({a:.4%} on {na} reviews, {b:.4%} on {nb}): the shares differ in size, so their "
    "mean ({m:.6f}) is not the accuracy of all {n} ({t:.6f}); all_reduce the counts (correct, total), then divide":
        "你把各 Rank 的准确率取了平均（{na} 条上 {a:.4%}，{nb} 条上 {b:.4%}）：各份大小不同，平均值（{m:.6f}）不是全部 {n} "
        "条的准确率（{t:.6f}）；应先 all_reduce 计数（答对数、总数），再相除",
    "{ex}: a rank raised an exception:\n{tb}": "{ex}：有一个 Rank 抛出了异常：\n{tb}",
    "the ranks did not finish within {t:.0f} s: {why}": "各 Rank 在 {t:.0f} 秒内没有结束：{why}",
    "in step {s} the ranks trained on the same reviews ({k} of {n} shared): rank r must take its own share, e.g. every "
    "world_size-th index starting at r":
        "第 {s} 步各 Rank 训练了相同的影评（{n} 条里有 {k} 条重复）：Rank r 应只取自己那一份，例如从第 r 个开始每隔 "
        "world_size 取一个",
    "in epoch {e}, {m} reviews were never trained on and {d} more than once: together the ranks must cover every review "
    "exactly once per epoch":
        "第 {e} 个 epoch 有 {m} 条影评没被训练，{d} 条被训练了不止一次：所有 Rank 合起来，每个 epoch 每条影评恰好一次",
    "rank {r}'s evaluate returned {t}: every rank returns the accuracy, a number":
        "Rank {r} 的 evaluate 返回了 {t}：每个 Rank 都要返回准确率（一个数）",
    "the ranks ended with different parameters: wrap the model in DDP(model), which averages the gradients over the ranks "
    "at every step":
        "各 Rank 最终的参数不一样：用 DDP(model) 包装模型，它在每一步对各 Rank 的梯度求平均",
    "a rank waited in a collective (dist.all_reduce) that its peer never joined: every rank must make the same collective "
    "calls, as many times (all_reduce once, after the loop)":
        "有一个 Rank 在集合通信（dist.all_reduce）里等待，而另一个 Rank 根本没有参加：每个 Rank 的集合通信调用必须一样，"
        "次数也一样（在循环结束后 all_reduce 一次）",
    ", each that of its own share": "，各是自己那一份的准确率",
    " and ": " 和 ",
    "does every rank run the same number of steps? A rank waiting in an all-reduce for a peer that has stopped waits "
    "forever":
        "每个 Rank 的步数一样吗？在 all-reduce 里等一个已停下的 Rank，会永远等下去",
    "does every rank call dist.all_reduce, as many times? A rank waiting in an all_reduce that its peer never calls waits "
    "forever":
        "每个 Rank 都调用了 dist.all_reduce 吗？次数一样吗？在一个对方永远不会调用的 all_reduce 里等待，会永远等下去",
    # exercises/ex04.py
    "loss, learning rate and gradient norm logged at all 12 steps, read back from the event files":
        "12 步的损失、学习率和梯度范数都已记录，并从事件文件中读回核对",
    "TensorBoard has no '{tag}' (it has: {have}). Log loss, learning rate and gradient norm under these three names: the "
    "loss alone gives no clue why a run goes wrong":
        "TensorBoard 里没有 '{tag}'（现有：{have}）。请用这三个名字记录损失、学习率和梯度范数：只看损失，出问题时找不到线索",
    "'{tag}' was logged at steps {steps}, expected 1..12: pass the step as add_scalar's global_step":
        "'{tag}' 记录在第 {steps} 步，应为 1..12：把 step 作为 add_scalar 的 global_step",
    "'{tag}' at step {step} is {got:.6g}, the truth is {want:.6g}: {hint}":
        "第 {step} 步的 '{tag}' 是 {got:.6g}，实际应为 {want:.6g}：{hint}",
    "read it from optimizer.param_groups[0]['lr'] (warm-up changes it each step)":
        "从 optimizer.param_groups[0]['lr'] 读取（预热期间每步都在变）",
    "the L2 norm of all gradients after backward: sqrt(sum of p.grad.pow(2).sum())":
        "backward 之后所有梯度的 L2 范数：sqrt(各 p.grad.pow(2).sum() 之和)",
    "log loss.item() of this step": "记录本步的 loss.item()",
    # exercises/ex05.py
    "picked {want}: the newest file that loads ({half} was half-written by a real kill)":
        "选中了 {want}：能加载的最新文件（写 {half} 写到一半时，进程被真实地杀掉了）",
    "your function returned {got!r}: not the newest model_epoch_N.pth of the folder that loads":
        "你的函数返回了 {got!r}：这不是文件夹里能加载的最新的 model_epoch_N.pth",
    "{half} does not load: a kill came half-way through its save. Try to load each candidate, newest first, and skip those "
    "that fail":
        "{half} 无法加载：保存到一半时进程被杀。按从新到旧逐个尝试加载，跳过失败的",
    "'{got}' is the largest name as a string, not the newest: sort by the epoch number (int) in the name":
        "'{got}' 只是按字符串排序最大，不是最新的：应按文件名中的 epoch 数字排序",
    "your function returned None, but the folder holds {n} model_epoch_N.pth files and all but one of them load":
        "你的函数返回了 None，可是文件夹里有 {n} 个 model_epoch_N.pth 文件，除了一个之外都能加载",
    "in a folder with no checkpoint your function returned {got!r}; return None: there is nothing to resume from":
        "文件夹里没有检查点，你的函数却返回了 {got!r}；应返回 None：没有可续训的检查点",
    # exercises/audited.py
    "not written yet: {names}. Each body still only returns fixed values, as the notebook hands it out: write the code, "
    "run its cell, then run this check again (it runs the training loop with your functions and really kills it)":
        "还没有写好："
        "{names}。函数体里只有占位的固定返回值，还没有你的代码。写好后运行它所在的单元格，再重新运行这个检查（检查会用你的函数跑训练循环，并真实地杀掉进程）",
    "not exact yet: {line}. Fix: {fix}": "还不是逐位相同：{line}。修正：{fix}",
    "not exact yet: {v}": "还不是逐位相同：{v}",
    "not checked: {line}. {fix}": "没能完成检查：{line}。{fix}",
    "the loop does not run with your functions: {err}": "用你的函数，训练循环跑不起来：{err}",
    "save_checkpoint must write the checkpoint with torch.save (the check kills inside it)":
        "save_checkpoint 必须用 torch.save 写检查点（检查会在它写到一半时杀掉进程）",
    "write the checkpoint to a temporary file, then put it in place with os.replace(tmp, path): written at its path "
    "directly, a kill mid-write leaves half a file there":
        "先把检查点写进临时文件，再用 os.replace(tmp, path) 原子重命名到检查点的路径上：直接写在检查点的路径上，"
        "进程写到一半被杀掉，那里就只剩半个文件",
    "the loop must train all its steps with your functions, saving every 5 steps":
        "用你的函数，训练循环必须把所有步都训练完，并每 5 步保存一次",
    # exercises/teacher.py
    "Teacher's edition: reference solutions": "教师版：参考答案",
    "Not part of the learners' edition. Each solution runs through the same check as a learner's answer: `check(id, "
    "*solution_of(id))`; a learner sees it with `solution(id, reveal=True)`.":
        "学习者版没有这一节。每个参考答案都和学习者的答案走同一个检查：`check(id, *solution_of(id))`；学习者用 "
        "`solution(id, reveal=True)` 才能看到它。",
}
