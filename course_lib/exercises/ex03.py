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
from course_lib.exercises.base import Exercise, Fail, book_data, learner_call, register
from course_lib.exercises.carry import carry_for_check
from course_lib.lab.i18n import both, tr
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


def _run_ranks(settings: BookSettings, ex_id: str, lang: str, timeout: float, stuck: str) -> None:
    """Run the ranks; what went wrong in them becomes a :class:`Fail` (``stuck``: what to say when
    they do not finish in ``timeout`` s, in the learner's language)."""
    try:
        outcome = run_ranks(settings, WORLD, timeout=timeout)
    except RankFailed as err:
        text = str(err)
        if "ranks ended with different parameters" in text:
            raise Fail(tr("the ranks ended with different parameters: wrap the model in DDP(model), which averages the "
                          "gradients over the ranks at every step", lang)) from None
        if any(words in text for words in PEER_LOST_WORDS):
            raise Fail(tr("a rank waited in a collective (dist.all_reduce) that its peer never joined: every rank must "
                          "make the same collective calls, as many times (all_reduce once, after the loop)", lang)) from None
        raise Fail(tr("{ex}: a rank raised an exception:\n{tb}", lang, ex=ex_id,
                      tb="\n".join(text.splitlines()[-12:]))) from None
    except TimeoutError:
        raise Fail(tr("the ranks did not finish within {t:.0f} s: {why}", lang, t=timeout, why=stuck)) from None
    if outcome:
        raise Fail(outcome)


def judge_ledger(run_dir, lang: str) -> str:
    """What the ledger proves about the data split: disjoint shares within each step, every
    review once per epoch, a new order every epoch."""
    rows = read_ledger(run_dir, 0)
    if not rows:
        raise Fail(tr("no ledger rows: keep the line kit.record(epoch, step, loss.item(), batch) in your loop", lang))
    per_epoch = Counter(r["epoch"] for r in rows)
    if set(per_epoch.values()) != {N // WORLD // 32}:
        raise Fail(tr("each rank ran {got} steps per epoch, expected {want}: each rank takes 1/{w} of the {n} reviews, {b} "
                      "per step", lang, got=sorted(set(per_epoch.values())), want=N // WORLD // 32, w=WORLD, n=N, b=32))
    for r in rows:
        shared = len(r["batch_ids"]) - len(set(r["batch_ids"]))
        if shared:
            raise Fail(tr("in step {s} the ranks trained on the same reviews ({k} of {n} shared): rank r must take its own "
                          "share, e.g. every world_size-th index starting at r", lang, s=r["step"], k=shared,
                          n=len(r["batch_ids"])))
    for epoch in sorted(per_epoch):
        seen = Counter(i for r in rows if r["epoch"] == epoch for i in r["batch_ids"])
        if len(seen) != N or max(seen.values()) > 1:
            raise Fail(tr("in epoch {e}, {m} reviews were never trained on and {d} more than once: together the ranks must "
                          "cover every review exactly once per epoch", lang, e=epoch + 1, m=N - len(seen),
                          d=sum(v > 1 for v in seen.values())))
    if repeated_epoch_order(run_dir) == 1.0:
        raise Fail(tr("every epoch repeats epoch 1's order: the shuffle must depend on the epoch (DistributedSampler: call "
                      "sampler.set_epoch(epoch) at the start of each epoch)", lang))
    return tr("the ledger of {n} steps on {w} real ranks: disjoint shares in every step, every review once per epoch, a "
              "new order each epoch", lang, n=len(rows), w=WORLD)


def _check_split(funcs: dict, seed: int, lang: str) -> str:
    shares = {(e, r): learner_call("03.split", lang, funcs["rank_indices"], N, e, r, WORLD, seed % 1000)
              for e in range(EPOCHS) for r in range(WORLD)}
    sizes = {k: len(v) for k, v in shares.items()}
    if not all(sizes.values()):
        raise Fail(tr("rank_indices returned no index for some rank: each rank needs its share of the {n} reviews", lang,
                      n=N))
    if len(set(sizes.values())) != 1:
        raise Fail(tr("the ranks get different numbers of indices ({sizes}): every rank must take the same number, or DDP "
                      "waits forever for the rank that ran out", lang,
                      sizes=", ".join(f"epoch {e + 1} rank {r}: {n}" for (e, r), n in sizes.items())))
    bad = [i for v in shares.values() for i in v if not (isinstance(i, int) and 0 <= i < N)]
    if bad:
        raise Fail(tr("rank_indices must return ints in 0..{m}; got {b!r}", lang, m=N - 1, b=bad[0]))
    settings = _settings("03.split", funcs, seed, lang, "course_lib.exercises.ex03:split_worker")
    _run_ranks(settings, "03.split", lang, 90, tr(
        "does every rank run the same number of steps? A rank waiting in an all-reduce for a peer that has stopped "
        "waits forever", lang))
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
            raise Fail(tr("rank {r}'s evaluate returned {t}: every rank returns the accuracy, a number", lang, r=r,
                          t=res["returned"]))
    if any(res["rows_training"] for res in results):
        raise Fail(tr("the model scored reviews in training mode, with dropout on: call model.eval() first, and score "
                      "under torch.no_grad(), as the chapter's evaluate does", lang))
    scored = [Counter(res["scored"]) for res in results]
    strange = sum(share.pop(-1, 0) for share in scored)
    if strange:
        raise Fail(tr("the model was given {k} row(s) that are none of the reviews: keep each review's input_ids as they "
                      "are, with attention_mask 1 on them and 0 on the padding", lang, k=strange))
    idle = [r for r, share in enumerate(scored) if not share]
    if idle:
        raise Fail(tr("rank {r} scored no review: every rank scores its own share (every world_size-th review, starting at "
                      "its rank)", lang, r=idle[0]))
    if all(len(share) == n for share in scored):
        raise Fail(tr("each rank scored all {n} reviews: the work was not shared, and added up every review counts {w} "
                      "times; rank r scores only every world_size-th review, starting at r", lang, n=n, w=WORLD))
    total = sum(scored, Counter())
    twice = sorted(i for i, k in total.items() if k > 1)
    if twice:
        where = [r for r, share in enumerate(scored) if twice[0] in share]
        raise Fail(tr("{k} review(s) were counted twice (e.g. #{i}, on rank {where}): DistributedSampler makes the shares "
                      "equal by repeating reviews (padding); score range(rank, len(dataset), world_size), which counts "
                      "every review once", lang, k=len(twice), i=twice[0], where=tr(" and ", lang).join(map(str, where))))
    missing = sorted(set(range(n)) - set(total))
    if missing:
        raise Fail(tr("{k} review(s) were scored by no rank (e.g. #{i}): together the ranks score every review once "
                      "(DistributedSampler with drop_last=True leaves the last ones out)", lang, k=len(missing),
                      i=missing[0]))
    own = [sum(right[i] * k for i, k in share.items()) / sum(share.values()) for share in scored]
    got = [res["accuracy"] for res in results]
    if abs(got[0] - got[1]) > TOLERANCE:
        mine = all(abs(g - o) <= TOLERANCE for g, o in zip(got, own))
        raise Fail(tr("the ranks returned different accuracies (rank 0: {a:.4%}, rank 1: {b:.4%}){own}: add up the counts "
                      "of all ranks with dist.all_reduce before dividing, so that every rank returns the accuracy of all "
                      "{n} reviews", lang, a=got[0], b=got[1], n=n,
                      own=tr(", each that of its own share", lang) if mine else ""))
    if abs(got[0] - truth) <= TOLERANCE:
        return tr("{w} real ranks (gloo) scored {n} held-out reviews, {a} and {b} each, and both returned {t:.4%}: what "
                  "one process scoring all {n} gets", lang, w=WORLD, n=n, a=len(scored[0]), b=len(scored[1]), t=truth)
    if abs(got[0] - sum(own) / WORLD) <= TOLERANCE:
        raise Fail(tr("you averaged the ranks' accuracies ({a:.4%} on {na} reviews, {b:.4%} on {nb}): the shares differ in "
                      "size, so their mean ({m:.6f}) is not the accuracy of all {n} ({t:.6f}); all_reduce the counts "
                      "(correct, total), then divide", lang, a=own[0], na=len(scored[0]), b=own[1], nb=len(scored[1]),
                      m=sum(own) / WORLD, n=n, t=truth))
    raise Fail(tr("every rank returned {g:.6f}; one process scoring all {n} reviews gets {t:.6f}", lang, g=got[0], n=n,
                  t=truth))


def _check_worker(funcs: dict, seed: int, lang: str) -> str:
    settings = _settings("03.worker", funcs, seed, lang, "course_lib.exercises.ex03:eval_worker")
    data = book_data()
    right = _scored_alone(eval_model(data), data, len(data.test))
    n = _pick_n(right, seed)
    run_dir = Path(settings.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "task.json").write_text(json.dumps({"n": n}))
    _run_ranks(settings, "03.worker", lang, 60, tr(
        "does every rank call dist.all_reduce, as many times? A rank waiting in an all_reduce that its peer never "
        "calls waits forever", lang))
    return _judge_eval(run_dir, right[:n], n, lang)


register(Exercise(
    "03.split", both("Each rank's share of the data"), ("rank_indices",), _check_split,
    hints=[both("Every rank must agree on one order of the n reviews, the same on every rank and new every epoch, and "
                "then take a part of it that no other rank takes."),
           both("torch.randperm(n, generator=g), with g = torch.Generator() seeded by seed + epoch (g.manual_seed), gives "
                "that order: the same seed and epoch give the same order on every rank (what sampler.set_epoch does)."),
           both("Rank r takes every world_size-th index of the order, starting at r (a slice with a step). Cut n down to "
                "a multiple of world_size first, so that all shares are the same size: DDP waits for a rank that ran "
                "out.")]))

register(Exercise(
    "03.worker", both("An evaluation the ranks share"), ("evaluate",), _check_worker,
    hints=[both("Share the work, then combine the counts: each rank scores only its own reviews, and the ranks then add "
                "up what they counted, so that every rank ends with the same totals."),
           both("range(rank, len(dataset), world_size) gives rank its share with no review twice (DistributedSampler "
                "would pad the last share by repeating reviews). dist.all_reduce(tensor) adds a tensor up over the ranks, "
                "in place, on every rank."),
           both("Add up counts, not accuracies: with an odd number of reviews the shares differ in size, and the mean of "
                "two ratios is not the ratio of the sums. Score under model.eval() and torch.no_grad(), as the chapter's "
                "evaluate does."),
           both("The end of it: counts = torch.tensor([correct, total]); dist.all_reduce(counts); then the accuracy is "
                "counts[0].item() / counts[1].item() on every rank.")]))
