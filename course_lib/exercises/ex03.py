"""Notebook 03's exercises, run in real spawned ranks: each rank's share of the data (03.split,
judged by the ledger), and an evaluation the ranks share (03.worker: each scores its part of the
held-out reviews, ``all_reduce`` adds up the counts; judged against one process scoring them all).
"""
from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import torch
import torch.distributed as dist

from course_lib.beyond.invariant_trainer import PEER_LOST_WORDS
from course_lib.checkpoint.store import serialize, write_atomic
from course_lib.ddp.launch import RankFailed
from course_lib.exercises.base import Exercise, Fail, book_data, learner_call, register, say
from course_lib.exercises.carry import carry_for_check
from course_lib.textbook.run import BookSettings, run_ranks
from course_lib.watch.compare import repeated_epoch_order
from course_lib.watch.monitor import read_ledger

EPOCHS, N, WORLD = 2, 1024, 2


def split_worker(rank: int, world_size: int, settings: BookSettings) -> None:
    """The reconstruction of the chapter's loop with the learner's ``rank_indices`` in place of ``DistributedSampler``."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    from course_lib.data.batching import pad_batch
    from course_lib.ddp.models import build_model
    from course_lib.exercises.carry import load_module
    from course_lib.textbook.book import IMDBReviews
    from course_lib.textbook.observer import Observer

    rank_indices = load_module(settings.learner).rank_indices
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(settings.seed)
    dataset = IMDBReviews(settings.data_file, "train", N)
    model = DDP(build_model("bag", dataset.vocab_size, dim=8))
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr)
    kit = Observer(settings, rank, world_size, N // world_size // settings.batch_size)
    for epoch in range(settings.epochs):
        mine = rank_indices(N, epoch, rank, world_size, settings.seed)
        for step in range(len(mine) // settings.batch_size):
            batch = pad_batch([dataset[i] for i in mine[step * settings.batch_size:(step + 1) * settings.batch_size]],
                              dataset.pad_id)
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(batch["input_ids"], batch["attention_mask"]), batch["label"])
            loss.backward()
            optimizer.step()
            kit.record(epoch, step, loss.item(), batch)
    kit.finish(model.module, None)
    dist.destroy_process_group()


def _settings(ex_id: str, funcs: dict, seed: int, lang: str, worker: str) -> BookSettings:
    """The learner's functions carried to a fresh work folder, and the settings of a 2-rank run of
    the kit's ``worker`` that uses them."""
    workdir, learner = carry_for_check(ex_id, funcs, lang)
    return BookSettings(run_dir=str(workdir / "run"), data_file=str(book_data().path), epochs=EPOCHS, save_interval=10**6,
                        seed=seed % 1000, worker=worker, learner=learner)


def _run_ranks(settings: BookSettings, ex_id: str, lang: str, timeout: float, stuck: tuple[str, str]) -> None:
    """Run the ranks; what went wrong in them becomes a :class:`Fail` (``stuck``: what to say when
    they do not finish in ``timeout`` s, English and Chinese)."""
    try:
        outcome = run_ranks(settings, WORLD, timeout=timeout)
    except RankFailed as err:
        text = str(err)
        if "ranks ended with different parameters" in text:
            raise Fail(say(lang, "the ranks ended with different parameters: wrap the model in DDP(model), which "
                                 "averages the gradients over the ranks at every step",
                           "各 Rank 最终的参数不一样：用 DDP(model) 包装模型，它在每一步对各 Rank 的梯度求平均")) from None
        if any(words in text for words in PEER_LOST_WORDS):
            raise Fail(say(lang, "a rank waited in a collective (dist.all_reduce) that its peer never joined: every "
                                 "rank must make the same collective calls, as many times (all_reduce once, after "
                                 "the loop)", "有一个 Rank 在集合通信（dist.all_reduce）里等待，而另一个 Rank "
                                 "根本没有参加：每个 Rank 的集合通信调用必须一样，次数也一样（在循环结束后 all_reduce "
                                 "一次）")) from None
        raise Fail(say(lang, "{ex}: a rank raised an exception:\n{tb}", "{ex}：有一个 Rank 抛出了异常：\n{tb}",
                       ex=ex_id, tb="\n".join(text.splitlines()[-12:]))) from None
    except TimeoutError:
        raise Fail(say(lang, "the ranks did not finish within {t:.0f} s: {why}", "各 Rank 在 {t:.0f} 秒内没有结束：{why}",
                       t=timeout, why=say(lang, *stuck))) from None
    if outcome:
        raise Fail(outcome)


def judge_ledger(run_dir, lang: str) -> str:
    """What the ledger proves about the data split: disjoint shares within each step, every
    review once per epoch, a new order every epoch."""
    rows = read_ledger(run_dir, 0)
    if not rows:
        raise Fail(say(lang, "no ledger rows: keep the line kit.record(epoch, step, loss.item(), batch) in your loop",
                       "训练账本里没有记录：请保留循环里的 kit.record(epoch, step, loss.item(), batch) 这一行"))
    per_epoch = Counter(r["epoch"] for r in rows)
    if set(per_epoch.values()) != {N // WORLD // 32}:
        raise Fail(say(lang, "each rank ran {got} steps per epoch, expected {want}: each rank takes 1/{w} of the "
                             "{n} reviews, {b} per step", "每个 Rank 每个 epoch 跑了 {got} 步，应为 {want}：每个 Rank "
                             "取 {n} 条影评的 1/{w}，每步 {b} 条", got=sorted(set(per_epoch.values())),
                       want=N // WORLD // 32, w=WORLD, n=N, b=32))
    for r in rows:
        shared = len(r["batch_ids"]) - len(set(r["batch_ids"]))
        if shared:
            raise Fail(say(lang, "in step {s} the ranks trained on the same reviews ({k} of {n} shared): rank r must "
                                 "take its own share, e.g. every world_size-th index starting at r",
                           "第 {s} 步各 Rank 训练了相同的影评（{n} 条里有 {k} 条重复）：Rank r 应只取自己那一份，"
                           "例如从第 r 个开始每隔 world_size 取一个", s=r["step"], k=shared, n=len(r["batch_ids"])))
    for epoch in sorted(per_epoch):
        seen = Counter(i for r in rows if r["epoch"] == epoch for i in r["batch_ids"])
        if len(seen) != N or max(seen.values()) > 1:
            raise Fail(say(lang, "in epoch {e}, {m} reviews were never trained on and {d} more than once: together the "
                                 "ranks must cover every review exactly once per epoch",
                           "第 {e} 个 epoch 有 {m} 条影评没被训练，{d} 条被训练了不止一次：所有 Rank 合起来，"
                           "每个 epoch 每条影评恰好一次", e=epoch + 1, m=N - len(seen), d=sum(v > 1 for v in seen.values())))
    if repeated_epoch_order(run_dir) == 1.0:
        raise Fail(say(lang, "every epoch repeats epoch 1's order: the shuffle must depend on the epoch "
                             "(DistributedSampler: call sampler.set_epoch(epoch) at the start of each epoch)",
                       "每个 epoch 都重复第 1 个 epoch 的顺序：打乱必须随 epoch 变化"
                       "（DistributedSampler：每个 epoch 开始时调用 sampler.set_epoch(epoch)）"))
    return say(lang, "the ledger of {n} steps on {w} real ranks: disjoint shares in every step, every review once "
                     "per epoch, a new order each epoch", "{w} 个真实 Rank、{n} 步的训练账本：每步各 Rank 的数据互不重叠，"
                     "每个 epoch 每条影评恰好一次，每个 epoch 顺序都不同", n=len(rows), w=WORLD)


def _check_split(funcs: dict, seed: int, lang: str) -> str:
    shares = {(e, r): learner_call("03.split", lang, funcs["rank_indices"], N, e, r, WORLD, seed % 1000)
              for e in range(EPOCHS) for r in range(WORLD)}
    sizes = {k: len(v) for k, v in shares.items()}
    if not all(sizes.values()):
        raise Fail(say(lang, "rank_indices returned no index for some rank: each rank needs its share of the {n} reviews",
                       "rank_indices 对某个 Rank 没有返回任何下标：每个 Rank 都需要 {n} 条影评中属于自己的一份", n=N))
    if len(set(sizes.values())) != 1:
        raise Fail(say(lang, "the ranks get different numbers of indices ({sizes}): every rank must take the same "
                             "number, or DDP waits forever for the rank that ran out", "各 Rank 分到的数量不同（{sizes}）："
                             "每个 Rank 必须一样多，否则 DDP 会一直等那个先用完数据的 Rank",
                       sizes=", ".join(f"epoch {e + 1} rank {r}: {n}" for (e, r), n in sizes.items())))
    bad = [i for v in shares.values() for i in v if not (isinstance(i, int) and 0 <= i < N)]
    if bad:
        raise Fail(say(lang, "rank_indices must return ints in 0..{m}; got {b!r}", "rank_indices 必须返回 0..{m} 的整数；"
                             "却得到 {b!r}", m=N - 1, b=bad[0]))
    settings = _settings("03.split", funcs, seed, lang, "course_lib.exercises.ex03:split_worker")
    _run_ranks(settings, "03.split", lang, 90, (
        "does every rank run the same number of steps? A rank waiting in an all-reduce for a peer that has stopped "
        "waits forever", "每个 Rank 的步数一样吗？在 all-reduce 里等一个已停下的 Rank，会永远等下去"))
    return judge_ledger(settings.run_dir, lang)


# ------------------------------------------------------------------ 03.worker: an evaluation the ranks share
EVAL_MODEL_STEPS, EVAL_LR, TOLERANCE = 32, 2e-2, 1e-6


class WatchedModel(torch.nn.Module):
    """The model handed to the learner, recording which reviews it scores (each row's real tokens,
    where ``attention_mask`` is 1, looked up among the dataset's reviews: -1 for a row that is none of
    them) and how many rows it scored in training mode (dropout on)."""

    def __init__(self, model: torch.nn.Module, dataset: torch.utils.data.Dataset):
        super().__init__()
        self.model, self.scored, self.rows_training = model, [], 0
        self.index = {tuple(dataset[i]["input_ids"]): i for i in range(len(dataset))}  # unique: deduplicated

    def forward(self, input_ids, attention_mask):
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist(), strict=True):
            self.scored.append(self.index.get(tuple(t for t, m in zip(ids, mask, strict=True) if m), -1))
        self.rows_training += len(input_ids) if self.training else 0
        return self.model(input_ids, attention_mask)


def eval_model(data) -> torch.nn.Module:
    """The ``bag`` model the evaluation scores with: trained for 2 epochs of the 1,024 training reviews
    (about 80% on the held-out ones), once, then kept in the cache; returned in training mode."""
    from course_lib.data.prepare import cache_root
    from course_lib.ddp.models import build_model

    path = cache_root() / "exercises" / f"eval-model-{EVAL_MODEL_STEPS}.pt"
    torch.manual_seed(0)
    model = build_model("bag", data.info["tokenizer"]["vocab_size"], dim=8, dropout=0.1)
    if path.exists():
        model.load_state_dict(torch.load(path, weights_only=True))
        return model
    optimizer = torch.optim.AdamW(model.parameters(), lr=EVAL_LR)
    order = torch.randperm(len(data.train)).tolist()
    per_epoch = len(order) // 64
    for step in range(EVAL_MODEL_STEPS):
        batch = data.train.batch(order[step % per_epoch * 64:(step % per_epoch + 1) * 64], data.info["tokenizer"]["pad_id"])
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(batch["input_ids"], batch["attention_mask"]), batch["label"]).backward()
        optimizer.step()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, serialize(model.state_dict()))  # a kill mid-write leaves no half cache behind
    return model


def eval_worker(rank: int, world_size: int, settings: BookSettings) -> None:
    """One rank of 03.worker's check: the learner's ``evaluate`` on the held-out reviews in a gloo
    group; what it returned and the reviews the model scored go to ``DIR/eval-rank{R}.json``."""
    from course_lib._runtime.rank_start import hold_process_group
    from course_lib.data.prepare import PreparedData
    from course_lib.exercises.carry import load_module
    from course_lib.textbook.book import IMDBReviews

    task = json.loads(Path(settings.run_dir, "task.json").read_text())
    evaluate = load_module(settings.learner).evaluate
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    hold_process_group()  # the rank leaves through os._exit: no destructor joins gloo's threads
    dataset = IMDBReviews(settings.data_file, "test", task["n"])
    model = WatchedModel(eval_model(PreparedData.load(settings.data_file)), dataset)
    got = evaluate(model, dataset, rank, world_size)
    try:
        accuracy = float(got)
    except (TypeError, ValueError):
        accuracy = None
    Path(settings.run_dir, f"eval-rank{rank}.json").write_text(json.dumps({
        "accuracy": accuracy, "returned": type(got).__name__, "scored": model.scored,
        "rows_training": model.rows_training}))


def _scored_alone(model: torch.nn.Module, data, n: int) -> list[bool]:
    """Whether one process, scoring each of the first ``n`` held-out reviews alone, gets it right."""
    model.eval()
    with torch.no_grad():
        return [bool(model(ids := data.test.sequence(i).unsqueeze(0), torch.ones_like(ids)).argmax(1).item()
                     == int(data.test.labels[i])) for i in range(n)]


def _pick_n(right: list[bool], seed: int) -> int:
    """An odd number of reviews (so the two ranks' shares differ in size) for which the mean of the
    two shares' accuracies is clearly not the accuracy of all of them."""
    for n in random.Random(seed).sample(range(231, len(right), 2), k=len(range(231, len(right), 2))):
        a0, a1 = (sum(right[r:n:WORLD]) / len(right[r:n:WORLD]) for r in range(WORLD))
        if abs((a0 + a1) / 2 - sum(right[:n]) / n) > 20 * TOLERANCE:
            return n
    raise RuntimeError("no size of the held-out set tells an average of the ranks' accuracies from the accuracy")


def _judge_eval(run_dir: Path, right: list[bool], n: int, lang: str) -> str:
    results = [json.loads((run_dir / f"eval-rank{r}.json").read_text()) for r in range(WORLD)]
    truth = sum(right) / n
    for r, res in enumerate(results):
        if res["accuracy"] is None:
            raise Fail(say(lang, "rank {r}'s evaluate returned {t}: every rank returns the accuracy, a number",
                           "Rank {r} 的 evaluate 返回了 {t}：每个 Rank 都要返回准确率（一个数）", r=r, t=res["returned"]))
    if any(res["rows_training"] for res in results):
        raise Fail(say(lang, "the model scored reviews in training mode, with dropout on: call model.eval() first, and "
                             "score under torch.no_grad(), as the chapter's evaluate does",
                       "模型是在训练模式下打分的，dropout 还开着：先调用 model.eval()，并在 torch.no_grad() 下打分，"
                       "和本章的 evaluate 一样"))
    scored = [Counter(res["scored"]) for res in results]
    strange = sum(share.pop(-1, 0) for share in scored)
    if strange:
        raise Fail(say(lang, "the model was given {k} row(s) that are none of the reviews: keep each review's input_ids "
                             "as they are, with attention_mask 1 on them and 0 on the padding",
                       "模型收到了 {k} 行不属于任何一条影评的数据：每条影评的 input_ids 保持原样，attention_mask 在这些"
                       "词元上为 1，在填充上为 0", k=strange))
    idle = [r for r, share in enumerate(scored) if not share]
    if idle:
        raise Fail(say(lang, "rank {r} scored no review: every rank scores its own share (every world_size-th "
                             "review, starting at its rank)", "Rank {r} 一条影评也没有打分：每个 Rank 都要给自己那一份打分"
                             "（从第 rank 条开始，每隔 world_size 条取一条）", r=idle[0]))
    if all(len(share) == n for share in scored):
        raise Fail(say(lang, "each rank scored all {n} reviews: the work was not shared, and added up every review "
                             "counts {w} times; rank r scores only every world_size-th review, starting at r",
                       "每个 Rank 都给全部 {n} 条影评打了分：工作没有分担，加起来每条影评被算了 {w} 次；"
                       "Rank r 只应从第 r 条开始，每隔 world_size 条取一条", n=n, w=WORLD))
    total = sum(scored, Counter())
    twice = sorted(i for i, k in total.items() if k > 1)
    if twice:
        where = [r for r, share in enumerate(scored) if twice[0] in share]
        raise Fail(say(lang, "{k} review(s) were counted twice (e.g. #{i}, on rank {where}): DistributedSampler makes "
                             "the shares equal by repeating reviews (padding); score range(rank, len(dataset), "
                             "world_size), which counts every review once",
                       "有 {k} 条影评被算了两次（例如 #{i}，在 Rank {where} 上）：DistributedSampler 为了让各份一样大，"
                       "会重复几条影评来填充；改用 range(rank, len(dataset), world_size)，每条影评只算一次",
                       k=len(twice), i=twice[0], where=say(lang, " and ", " 和 ").join(map(str, where))))
    missing = sorted(set(range(n)) - set(total))
    if missing:
        raise Fail(say(lang, "{k} review(s) were scored by no rank (e.g. #{i}): together the ranks score every review "
                             "once (DistributedSampler with drop_last=True leaves the last ones out)",
                       "有 {k} 条影评没有任何 Rank 打分（例如 #{i}）：所有 Rank 合起来，每条影评都要打一次分"
                       "（DistributedSampler 用 drop_last=True 会漏掉最后几条）", k=len(missing), i=missing[0]))
    own = [sum(right[i] * k for i, k in share.items()) / sum(share.values()) for share in scored]
    got = [res["accuracy"] for res in results]
    if abs(got[0] - got[1]) > TOLERANCE:
        mine = all(abs(g - o) <= TOLERANCE for g, o in zip(got, own))
        raise Fail(say(lang, "the ranks returned different accuracies (rank 0: {a:.4%}, rank 1: {b:.4%}){own}: add up "
                             "the counts of all ranks with dist.all_reduce before dividing, so that every rank returns "
                             "the accuracy of all {n} reviews", "各 Rank 返回的准确率不同（Rank 0：{a:.4%}，"
                             "Rank 1：{b:.4%}）{own}：除法之前先用 dist.all_reduce 把所有 Rank 的计数加起来，"
                             "每个 Rank 才会返回全部 {n} 条影评的准确率", a=got[0], b=got[1], n=n,
                       own=say(lang, ", each that of its own share", "，各是自己那一份的准确率") if mine else ""))
    if abs(got[0] - truth) <= TOLERANCE:
        return say(lang, "{w} real ranks (gloo) scored {n} held-out reviews, {a} and {b} each, and both returned {t:.4%}: "
                         "what one process scoring all {n} gets", "{w} 个真实的 Rank（gloo 后端）给 {n} 条留出集影评打分，"
                         "各 {a} 条和 {b} 条，两者都返回 {t:.4%}：与单个进程给全部 {n} 条打分的结果相同",
                   w=WORLD, n=n, a=len(scored[0]), b=len(scored[1]), t=truth)
    if abs(got[0] - sum(own) / WORLD) <= TOLERANCE:
        raise Fail(say(lang, "you averaged the ranks' accuracies ({a:.4%} on {na} reviews, {b:.4%} on {nb}): the shares "
                             "differ in size, so their mean ({m:.6f}) is not the accuracy of all {n} ({t:.6f}); "
                             "all_reduce the counts (correct, total), then divide",
                       "你把各 Rank 的准确率取了平均（{na} 条上 {a:.4%}，{nb} 条上 {b:.4%}）：各份大小不同，平均值"
                       "（{m:.6f}）不是全部 {n} 条的准确率（{t:.6f}）；应先 all_reduce 计数（答对数、总数），再相除",
                       a=own[0], na=len(scored[0]), b=own[1], nb=len(scored[1]), m=sum(own) / WORLD, n=n, t=truth))
    raise Fail(say(lang, "every rank returned {g:.6f}; one process scoring all {n} reviews gets {t:.6f}",
                   "每个 Rank 都返回 {g:.6f}；单个进程给全部 {n} 条影评打分得到 {t:.6f}", g=got[0], n=n, t=truth))


def _check_worker(funcs: dict, seed: int, lang: str) -> str:
    settings = _settings("03.worker", funcs, seed, lang, "course_lib.exercises.ex03:eval_worker")
    data = book_data()
    right = _scored_alone(eval_model(data), data, len(data.test))
    n = _pick_n(right, seed)
    run_dir = Path(settings.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "task.json").write_text(json.dumps({"n": n}))
    _run_ranks(settings, "03.worker", lang, 60, (
        "does every rank call dist.all_reduce, as many times? A rank waiting in an all_reduce that its peer never "
        "calls waits forever", "每个 Rank 都调用了 dist.all_reduce 吗？次数一样吗？在一个对方永远不会调用的 "
        "all_reduce 里等待，会永远等下去"))
    return _judge_eval(run_dir, right[:n], n, lang)


register(Exercise(
    "03.split", ("Each rank's share of the data", "每个 Rank 的那一份数据"), ("rank_indices",), _check_split,
    hints=[("Every rank must agree on one order of the n reviews, the same on every rank and new every epoch, and "
            "then take a part of it that no other rank takes.",
            "各 Rank 先要对 n 条影评的顺序达成一致：各 Rank 相同，每个 epoch 不同；然后各取其中别的 Rank 不取的一份。"),
           ("torch.randperm(n, generator=g), with g = torch.Generator() seeded by seed + epoch (g.manual_seed), "
            "gives that order: the same seed and epoch give the same order on every rank (what sampler.set_epoch "
            "does).", "torch.randperm(n, generator=g) 给出这个顺序，其中 g = torch.Generator()，用 seed + epoch "
            "设种子（g.manual_seed）：种子和 epoch 相同，各 Rank 的顺序就相同（sampler.set_epoch 做的正是这件事）。"),
           ("Rank r takes every world_size-th index of the order, starting at r (a slice with a step). Cut n down "
            "to a multiple of world_size first, so that all shares are the same size: DDP waits for a rank that "
            "ran out.", "Rank r 从第 r 个开始，每隔 world_size 个取一个（带步长的切片）。先把 n 截成 world_size 的"
            "整数倍，各份才一样大：有一个 Rank 先用完数据，DDP 就会一直等它。")]))

register(Exercise(
    "03.worker", ("An evaluation the ranks share", "各 Rank 分担的评估"), ("evaluate",), _check_worker,
    hints=[("Share the work, then combine the counts: each rank scores only its own reviews, and the ranks then add "
            "up what they counted, so that every rank ends with the same totals.",
            "先分担工作，再合并计数：每个 Rank 只给自己那几条影评打分，然后各 Rank 把数出来的结果加起来，"
            "每个 Rank 最后都拿到同样的总数。"),
           ("range(rank, len(dataset), world_size) gives rank its share with no review twice (DistributedSampler "
            "would pad the last share by repeating reviews). dist.all_reduce(tensor) adds a tensor up over the "
            "ranks, in place, on every rank.",
            "range(rank, len(dataset), world_size) 给出这个 Rank 的那一份，没有哪条影评出现两次（DistributedSampler "
            "会重复几条影评来填充最后一份）。dist.all_reduce(tensor) 在每个 Rank 上原地把张量对所有 Rank 求和。"),
           ("Add up counts, not accuracies: with an odd number of reviews the shares differ in size, and the mean of "
            "two ratios is not the ratio of the sums. Score under model.eval() and torch.no_grad(), as the "
            "chapter's evaluate does.",
            "加起来的应是计数，而不是准确率：影评条数是奇数时各份大小不同，两个比值的平均不等于总和之比。"
            "和本章的 evaluate 一样，在 model.eval() 和 torch.no_grad() 下打分。"),
           ("The end of it: counts = torch.tensor([correct, total]); dist.all_reduce(counts); then the accuracy is "
            "counts[0].item() / counts[1].item() on every rank.",
            "最后几行：counts = torch.tensor([correct, total])；dist.all_reduce(counts)；然后每个 Rank 上的准确率都是 "
            "counts[0].item() / counts[1].item()。")]))
