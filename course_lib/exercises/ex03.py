"""Notebook 03's exercises, run in real spawned ranks and judged by the ledger: each rank's
share of the data (03.split) and the chapter's whole DDP worker (03.worker)."""
from __future__ import annotations

import re
from collections import Counter

import torch
import torch.distributed as dist

from course_lib.data.prepare import prepare_imdb
from course_lib.ddp.launch import RankFailed
from course_lib.exercises.base import Exercise, Fail, learner_call, register, say
from course_lib.exercises.carry import carry_for_check
from course_lib.textbook.run import DATA_LIMIT, BookSettings, run_ranks
from course_lib.watch.compare import repeated_epoch_order
from course_lib.watch.monitor import read_ledger

EPOCHS, N, WORLD = 2, 1024, 2
LINE = re.compile(r"^Rank [01], Epoch \[\d+/\d+\], Step \[\d+/16\], Loss: \d+\.\d{4}$")


def split_worker(rank: int, world_size: int, settings: BookSettings) -> None:
    """The chapter's loop with the learner's ``rank_indices`` in place of ``DistributedSampler``."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    from course_lib._runtime.rank_start import load_module
    from course_lib.data.batching import pad_batch
    from course_lib.ddp.models import build_model
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


def _run(ex_id: str, funcs: dict, seed: int, lang: str, worker: str):
    workdir, learner = carry_for_check(ex_id, funcs, lang)
    data = prepare_imdb(limit=DATA_LIMIT, progress=False)
    settings = BookSettings(run_dir=str(workdir / "run"), data_file=str(data.path), epochs=EPOCHS, save_interval=10**6,
                            seed=seed % 1000, worker=learner if worker == "learner" else worker, learner=learner)
    try:
        outcome = run_ranks(settings, WORLD, timeout=90)
    except RankFailed as err:
        text = str(err)
        if "ranks ended with different parameters" in text:
            raise Fail(say(lang, "the ranks ended with different parameters: wrap the model in DDP(model), which "
                                 "averages the gradients over the ranks at every step",
                           "各 Rank 最终的参数不一样：用 DDP(model) 包装模型，它在每一步对各 Rank 的梯度求平均")) from None
        raise Fail(say(lang, "{ex}: a rank raised an exception:\n{tb}", "{ex}：有一个 Rank 抛出了异常：\n{tb}",
                       ex=ex_id, tb="\n".join(text.splitlines()[-12:]))) from None
    except TimeoutError:
        raise Fail(say(lang, "the ranks did not finish within 90 s: does every rank run the same number of steps? "
                             "A rank waiting in an all-reduce for a peer that has stopped waits forever",
                       "各 Rank 在 90 秒内没有结束：每个 Rank 的步数一样吗？在 all-reduce 里等一个已停下的 Rank，会永远等下去")) from None
    if outcome:
        raise Fail(outcome)
    return settings.run_dir


def judge_ledger(run_dir, lang: str) -> str:
    """What the ledger proves about the data split: disjoint shares within each step, every
    review once per epoch, a new order every epoch."""
    rows = read_ledger(run_dir, 0)
    if not rows:
        raise Fail(say(lang, "no ledger rows: keep the line kit.record(epoch, step, loss.item(), batch) in your loop",
                       "账本里没有记录：请保留循环里的 kit.record(epoch, step, loss.item(), batch) 这一行"))
    per_epoch = Counter(r["epoch"] for r in rows)
    if set(per_epoch.values()) != {N // WORLD // 32}:
        raise Fail(say(lang, "each rank ran {got} steps per epoch, expected {want}: each rank takes 1/{w} of the "
                             "{n} reviews, {b} per step", "每个 Rank 每个 epoch 跑了 {got} 步，应为 {want}：每个 Rank 取 {n} "
                             "条影评的 1/{w}，每步 {b} 条", got=sorted(set(per_epoch.values())), want=N // WORLD // 32,
                       w=WORLD, n=N, b=32))
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
                     "per epoch, a new order each epoch", "{w} 个真实 Rank、{n} 步的账本：每步各 Rank 的数据互不重叠，"
                     "每个 epoch 每条影评恰好一次，每个 epoch 顺序都不同", n=len(rows), w=WORLD)


def _check_split(funcs: dict, seed: int, lang: str) -> tuple[str, dict]:
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
    return judge_ledger(_run("03.split", funcs, seed, lang, "course_lib.exercises.ex03:split_worker"), lang), {}


def _check_worker(funcs: dict, seed: int, lang: str) -> tuple[str, dict]:
    run_dir = _run("03.worker", {"train": funcs["train"]}, seed, lang, "learner")
    from pathlib import Path

    lines = [line for r in range(WORLD) for line in (Path(run_dir) / "logs" / f"rank{r}.log").read_text().splitlines()
             if line.startswith("Rank ")]
    odd = [line for line in lines if not LINE.match(line)]
    if not lines or odd:
        raise Fail(say(lang, "print one line per rank and step in the chapter's format, e.g. 'Rank 0, Epoch [1/2], "
                             "Step [1/16], Loss: 0.6931'; got {got!r}", "每个 Rank 每一步按本章格式打印一行，例如 "
                             "'Rank 0, Epoch [1/2], Step [1/16], Loss: 0.6931'；实际是 {got!r}",
                       got=odd[0] if odd else "(nothing)"))
    return judge_ledger(run_dir, lang) + say(lang, "; the chapter's lines on both ranks", "；两个 Rank 都按本章格式输出"), {}


register(Exercise(
    "03.split", ("Each rank's share of the data", "每个 Rank 的那一份数据"), ("rank_indices",), _check_split,
    hints=[("Every rank must compute the same permutation of range(n), then take a different part of it.",
            "各 Rank 先算出同一个 range(n) 的排列，再各取其中不同的一份。"),
           ("A torch.Generator seeded with seed + epoch gives a new order each epoch, the same on every rank.",
            "用 seed + epoch 作种子的 torch.Generator：每个 epoch 顺序不同，各 Rank 之间相同。"),
           ("order[rank::world_size] gives disjoint shares; cut n down to a multiple of world_size first so they "
            "are equal.", "order[rank::world_size] 互不重叠；先把 n 截成 world_size 的整数倍，各份才一样大。")],
    solution="course_lib.exercises.solutions.ex03", spawns=True))

register(Exercise(
    "03.worker", ("The chapter's DDP worker", "本章的 DDP 工作函数"), ("train",), _check_worker,
    hints=[("Start with dist.init_process_group('gloo', rank=rank, world_size=world_size).",
            "第一行：dist.init_process_group('gloo', rank=rank, world_size=world_size)。"),
           ("DistributedSampler(dataset, num_replicas=world_size, rank=rank) gives each rank its share; pass it to "
            "DataLoader(..., sampler=sampler).", "DistributedSampler(dataset, num_replicas=world_size, rank=rank) 给每个 Rank "
            "分一份；把它传给 DataLoader(..., sampler=sampler)。"),
           ("Wrap the model: ddp_model = DDP(model). At the start of every epoch: sampler.set_epoch(epoch).",
            "包装模型：ddp_model = DDP(model)。每个 epoch 开始时：sampler.set_epoch(epoch)。")],
    solution="course_lib.exercises.solutions.ex03", spawns=True))
