"""Results as a teacher shows them: small tables and one-line readings, in the notebook's language.

A learner should not have to read a nested ``dict`` repr: a pandas ``DataFrame`` renders as a table
in JupyterLab and in an HTML export, its labels through :func:`course_lib.lab.i18n.tr`. Every
station's tables are here, so that the core needs neither pandas nor the translations.

Importing this module shows every character of every table the kernel displays, the other
modules' frames too (one pandas setting, ``display.max_colwidth``: pandas cuts a cell at 50
characters by default, and a learner read "write the checkpoint to a temporary file, fsyn..."
where the lesson was the rest of the sentence). Every notebook imports it in its first code cell.
"""
from __future__ import annotations

import difflib
import html
import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import torch

from course_lib.beyond.elastic.drill import first_step_after
from course_lib.beyond.real_scale import LongRun
from course_lib.config import ConfigError
from course_lib.data.sources import clean_text
from course_lib.data.text_tools import POLICIES, Rule, RuleLabeler
from course_lib.data.tokenization import encode_texts
from course_lib.ddp.launch import RunInterrupted
from course_lib.lab.i18n import resolve, tr, tr_line
from course_lib.paths import read_config
from course_lib.predict import load_classifier
from course_lib.watch.monitor import ledger_ranks, read_attempts, read_jsonl, read_ledger

pd.set_option("display.max_colwidth", None)  # no cell cut at 50 characters (the module docstring)


def _label(key: str, lang: str | None) -> str:
    """``raw_reviews`` -> "raw reviews"; a key that is already a phrase stays as written."""
    return tr(key if " " in key else key.replace("_", " "), lang)


def _value(value, lang: str | None):
    if isinstance(value, bool):
        return tr("yes" if value else "no", lang)
    if value is None:
        return tr("none", lang)
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(_value(v, lang)) for v in value)
    if isinstance(value, str):  # a word such as "hit" has its Chinese, and so has a sentence of the core's
        return tr_line(value, lang)
    return value


def facts(values: dict, lang: str | None = None, skip: tuple[str, ...] = ()) -> pd.DataFrame:
    """A flat ``dict`` as a two-column table (nested dicts and ``skip`` keys left out, lists
    joined). Used in notebook 01 (§1), notebook 02 (opening), notebook 03 (§3) and notebook 04 (optional deep-dive B)."""
    rows = [(_label(k, lang), _value(v, lang)) for k, v in values.items() if k not in skip and not isinstance(v, dict)]
    frame = pd.DataFrame(rows, columns=[tr("what", lang), tr("value", lang)], dtype=object)  # 1600, not 1600.0
    return frame.set_index(tr("what", lang))


COMPARISON = {"refused": "refused before any rank started", "identical": "identical?",
              "first_divergent_step": "first divergent step",
              "max_loss_diff": "largest loss difference", "skipped_samples": "samples skipped",
              "repeated_samples": "samples repeated", "final_params_identical": "final parameters identical?"}


def comparisons(results: dict[str, dict], lang: str | None = None, index: str = "run") -> pd.DataFrame:
    """One row per compared run (a :func:`course_lib.watch.compare.compare_runs` result each).
    Used in notebook 05 (optional deep-dive B) and by :func:`course_lib.lab.drills.world_size_study`."""
    shown = [k for k in COMPARISON if any(k in r for r in results.values())]
    rows = {name: {tr(COMPARISON[k], lang): _value(r[k], lang) if k in r else "–" for k in shown}  # refused: no comparison
            for name, r in results.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index", dtype=object)  # 0 samples, not 0.0
    frame.index.name = tr(index, lang)
    return frame


def reading(result: dict, lang: str | None = None) -> str:
    """The comparison in one line: ``identical: yes`` or ``identical: no; first divergent step: 22``.
    Used in notebook 05 (optional deep-dives)."""
    line = f"{tr('identical?', lang)} {_value(result['identical'], lang)}"
    if not result["identical"]:
        first = result["first_divergent_step"]
        line += f"; {tr('first divergent step', lang)}: {_value(first, lang)}"
        if first is None:
            line += f" ({tr('every step equal; the final parameters differ', lang)})"
    return line


# what each file holds, why a resume needs it, and whether the textbook's checkpoint has it
PIECES = {
    "model.pt": ("parameters", "the weights themselves", True),
    "optimizer.pt": ("AdamW moments + step counts",
                     "without them the first steps after a resume jump (weights-only mode)", True),
    "scheduler.pt": ("LR schedule position", "without it warm-up restarts and the learning rate jumps", False),
    "trainer.pt": ("epoch, step in epoch, global step, last loss, config",
                   "where in the data to continue; which run this is", False),
    "rng-rank": ("Python, NumPy, torch (and CUDA) RNG states of one rank",
                 "dropout masks continue exactly (no-rng mode diverges)", False),
    "manifest.json": ("sha256 + size of every file, step, world size, versions",
                      "proves the checkpoint is complete and undamaged", False),
}


def checkpoint_files(path: str | Path, lang: str | None = None) -> pd.DataFrame:
    """One row per file of a checkpoint: size, what it holds, why a resume needs it, and
    whether the chapter's three-item checkpoint has it (notebook 04, "What a checkpoint holds")."""
    rows = []
    for f in sorted(Path(path).iterdir()):
        key = next((k for k in PIECES if f.name.startswith(k)), None)
        holds, why, textbook = PIECES.get(key, ("?", "?", False))
        rows.append({tr("file", lang): f.name, "kB": round(f.stat().st_size / 1024, 1), tr("holds", lang): tr(holds, lang),
                     tr("why a resume needs it", lang): tr(why, lang),
                     tr("in the chapter's checkpoint", lang): tr("yes" if textbook else "no", lang)})
    return pd.DataFrame(rows).set_index(tr("file", lang))


def compare_vocabularies(tokenizers: dict, texts: list[str], lang: str | None = None):
    """Vocabulary size, tokens per text and unknown-token rate of each tokenizer on ``texts``,
    one row per tokenizer. Used in notebook 02 (optional deep-dive B)."""
    out = {}
    for name, tok in tokenizers.items():
        ids = [i for seq in encode_texts(tok, texts)["input_ids"] for i in seq]
        unk = tok.unk_token_id
        out[name] = {tr("vocabulary", lang): len(tok),
                     tr("tokens per review", lang): round(len(ids) / max(len(texts), 1), 1),
                     tr("unknown-token rate", lang): (sum(i == unk for i in ids) / max(len(ids), 1) if unk is not None
                                                      else 0.0)}
    return pd.DataFrame.from_dict({tr(k, lang): v for k, v in out.items()}, orient="index")


def pieces_table(tokenizers: dict, words: list[str], lang: str | None = None):
    """How each tokenizer cuts each word (one row per word, pieces joined by " · "). Whether a
    word splits depends on the vocabulary: a word frequent in the text the vocabulary was
    built from becomes one token, a rarer one is spelled from pieces. Used in notebook 02 (§2)."""
    return pd.DataFrame({tr(name, lang): [" · ".join(tok.tokenize(w)) for w in words] for name, tok in tokenizers.items()},
                        index=pd.Index(words, name=tr("text", lang)))


def policy_table(rules: Iterable[Rule | tuple], texts: Iterable[str], default: str = "Other", lang: str | None = None):
    """One row per text, one column per conflict policy: where the columns differ, rules conflict.
    Used in notebook 01 (§6)."""
    texts = list(texts)
    return pd.DataFrame({policy: RuleLabeler(rules, default, policy).label_all(texts) for policy in POLICIES},
                        index=pd.Index(texts, name=tr("text", lang)))


def policies(rules: Iterable[Rule | tuple], text: str, default: str = "Other", lang: str | None = None) -> pd.DataFrame:
    """How each conflict policy labels ``text``, below every rule it matches (its keyword hits and
    its priority): where the policies disagree, the rules conflict and the policy decides.
    Used in notebook 01 (§6)."""
    rules = [r if isinstance(r, Rule) else Rule(*r) for r in rules]
    hits = [(r, n) for r in rules if (n := r.hits(text))]
    each = [tr("{label}: {n} keyword hit(s), priority {p}", lang, label=r.label, n=n, p=r.priority) for r, n in hits]
    matched = tr("; ", lang).join(each)
    return facts({"rules that match": matched or tr("none", lang),
                  **{policy: RuleLabeler(rules, default, policy)(text) for policy in POLICIES}}, lang)


def straddling_pairs(leakage: dict, lang: str | None = None) -> pd.DataFrame:
    """The near-duplicate pairs with one review on each side of the split, from a leakage report
    (``load_imdb(..., leakage_check=True).provenance["leakage"]``): which training review, which
    held-out one (their row numbers in ``imdb["train"]`` and ``imdb["test"]``), how similar.
    Used in notebook 01 (§7)."""
    columns = [tr("training review (row)", lang), tr("held-out review (row)", lang), "Jaccard"]
    rows = [(i, j, round(s, 3)) for i, j, s in leakage["examples"]]
    return pd.DataFrame(rows, columns=columns).set_index(columns[0])


def addition_order(a: float, b: float, c: float, lang: str | None = None) -> pd.DataFrame:
    """``(a + b) + c`` and ``a + (b + c)`` in floating point, to the last digit Python prints, and
    whether they are equal: the order of an all-reduce's additions matters (notebook 03, optional deep-dive A)."""
    left, right = (a + b) + c, a + (b + c)
    return facts({f"({a!r} + {b!r}) + {c!r}": repr(left), f"{a!r} + ({b!r} + {c!r})": repr(right),
                  "equal?": left == right}, lang)


def padding_shares(report: dict, lang: str | None = None) -> pd.DataFrame:
    """The share of padded positions of each way to make batches (:func:`course_lib.data.batching.padding_report`),
    as a table (notebook 02, §4)."""
    rows = {tr(name, lang): f"{report[key]:.1%}" for key, name in
            (("pad_to_max", "pad every review to max_length"), ("dynamic", "dynamic padding"),
             ("grouped", "length grouping"))}
    frame = pd.DataFrame({tr("share of padded positions", lang): list(rows.values())}, index=list(rows))
    frame.index.name = tr("batches (max_length {m}, batch {b})", lang, m=report["max_length"], b=report["batch_size"])
    return frame


def sync_claim(result: dict, lang: str | None = None) -> pd.DataFrame:
    """The chapter's "close losses falling together mean the gradient sync works", as a table
    of :func:`course_lib.lab.drills.sync_claim`'s two runs (notebook 03, "Reading the output"):
    each rank's loss early and late (its mean over the first and the last fifth of the rank's
    steps), how far apart the ranks end, and the parameter check."""
    lang = resolve(lang)
    rows = {}
    for name, run in result.items():
        early_late = {}
        for rank in ledger_ranks(run["run_dir"]):
            losses = [r["loss"] for r in read_ledger(run["run_dir"], rank)]
            k = max(1, len(losses) // 5)
            early_late[rank] = (sum(losses[:k]) / k, sum(losses[-k:]) / k)
        lates = [late for _, late in early_late.values()]
        rows[tr(name, lang)] = {
            **{tr("rank {rank}: loss early -> late", lang, rank=r): f"{e:.3f} -> {late:.3f}"
               for r, (e, late) in early_late.items()},
            tr("ranks apart at the end", lang): round(max(lates) - min(lates), 3),
            tr("parameters identical on every rank?", lang): tr("yes" if run["parameters_agree"] else "NO", lang),
            tr("the check at the end says", lang): tr_line(run["check"], lang)}
    return pd.DataFrame.from_dict(rows, orient="index")


def format_report(result: dict, lang: str | None = None) -> str:
    """A :func:`~course_lib.watch.compare.compare_runs` result as a few lines a person reads
    (``python -m course_lib compare`` and the interruption lab)."""
    first, verdict = result["first_divergent_step"], tr("identical" if result["identical"] else "different", lang)
    return "\n".join([
        tr("{verdict}: {b} vs reference {a}", lang, verdict=verdict.upper(), a=result["run_a"], b=result["run_b"]),
        "  " + tr("steps: {a} vs {b}", lang, a=result["steps_a"], b=result["steps_b"]),
        "  " + tr("first divergent step: {s}", lang, s=first if first is not None else tr("none", lang)),
        "  " + tr("largest loss difference: {d:.3g}", lang, d=result["max_loss_diff"]),
        "  " + tr("samples skipped: {s}, repeated: {r}", lang, s=result["skipped_samples"], r=result["repeated_samples"]),
        "  " + tr("final parameters identical: {v}", lang, v=tr("yes" if result["final_params_identical"] else "no", lang)),
        *("  " + tr("not read: steps {first}-{last} of {run} are in no ledger (rank {rank}'s lines lost in a crash "
                    "before they were fsynced?); compared on the steps both runs hold", lang, **gap)
          for gap in result["not_read"]),
    ])


def predict_table(run_dir: str | Path, reviews: dict[str, str], lang: str | None = None):
    """The model's answer for each review next to the answer a person gives (``reviews``: text
    -> "positive" or "negative"), with a column that says whether it was right.
    Used in notebook 05 (optional deep-dive D)."""
    answers = load_classifier(run_dir).predict(list(reviews))
    rows = [{tr("review", lang): text, tr("truth", lang): tr(truth, lang), tr("model", lang): tr(p["label"], lang),
             tr("P(positive)", lang): p["positive"], tr("right?", lang): tr("yes" if p["label"] == truth else "NO", lang)}
            for (text, truth), p in zip(reviews.items(), answers)]
    return pd.DataFrame(rows).set_index(tr("review", lang))


@torch.no_grad()
def explain(run_dir: str | Path, text: str, top: int = 6, lang: str | None = None):
    """Why a ``bag`` model says what it says about ``text``: it averages one vector per token
    and per pair of neighbouring tokens, so its verdict is a sum of pushes, one per token or
    pair (``(w_positive - w_negative) . vector / count``). The strongest pushes either way.
    Used in notebook 05 (optional deep-dive D)."""
    # checked before the weights load (a transformer's are large); without a config load_classifier says why
    if (Path(run_dir) / "config.json").exists() and (trained := read_config(run_dir).model) != "bag":
        raise ConfigError(f"explain reads a bag-of-n-grams model; {run_dir} trained {trained!r}")
    clf = load_classifier(run_dir)
    ids = encode_texts(clf.tokenizer, [clean_text(text)], clf.cfg.max_length)["input_ids"][0]
    m = clf.model
    singles = list(zip(clf.tokenizer.convert_ids_to_tokens(ids), ids))
    pairs = [(f"{a} {b}", m.vocab_size + (x * 1_000_003 + y) % m.buckets)  # the model's own bigram hash
             for (a, x), (b, y) in zip(singles[:-1], singles[1:])]
    items = singles + pairs
    direction = m.head.weight[1] - m.head.weight[0]
    pushes: dict[str, float] = {}
    for name, row in items:  # a token that occurs twice pushes twice
        pushes[name] = pushes.get(name, 0.0) + float(m.embed.weight[row] @ direction) / len(items)
    ranked = sorted(pushes.items(), key=lambda p: p[1])
    chosen = ranked if len(ranked) <= 2 * top else ranked[:top] + ranked[-top:]
    return pd.DataFrame({tr("push towards positive", lang): [round(p, 4) for _, p in chosen]},
                        index=pd.Index([n for n, _ in chosen], name=tr("token or pair", lang)))


def elastic_timeline(run_dir: str | Path, lang: str | None = None) -> pd.DataFrame:
    """Each node event of a drill, moment by moment, from the run's own records: seconds since
    the node died (or started), what happened, and which record says so (in the notebook's
    language, :mod:`course_lib.lab.i18n`)."""
    run_dir = Path(run_dir)
    episodes = [e for e in read_jsonl(run_dir / "nodes.jsonl") if e["event"] == "lose" or "after_step" in e]
    generations = read_jsonl(run_dir / "elastic.jsonl")
    saves = {(m := json.loads(path.read_text()))["step"]: m["created"]
             for path in (run_dir / "checkpoints").glob("step-*/manifest.json")}
    attempts = read_attempts(run_dir)
    out = []
    for i, ep in enumerate(episodes):
        if ep["event"] == "crash":  # a worker its agent restarted: it bounds the windows, it is not drawn
            continue
        t0, t1 = ep["time"], episodes[i + 1]["time"] if i + 1 < len(episodes) else float("inf")
        lost = ep["event"] == "lose"
        moments = [(t0, "node killed (SIGKILL: agent and worker)" if lost else "node started (its torchrun agent)", {})]
        gens = [g for g in generations if t0 <= g["decided"] < t1]
        if gens:  # re-formed in-process
            moments += [(min(g["noticed"] for g in gens if "noticed" in g),
                         "a survivor noticed" if lost else "the running ranks saw it at a step boundary", {})]
            moments += [(g["started"], "its worker process started", {}) for g in gens if g.get("started")]
            moments += [(g["asked"], "it asked to join (data, model, optimizer ready)", {}) for g in gens if g.get("asked")]
            moments += [(min(g["decided"] for g in gens), "the members agreed on the new group", {}),
                        (max(g["formed"] for g in gens), "its process group formed", {})]
            moments += [(g["ready"], "state from a live peer: {mb:.1f} MB in {s:.2f} s",
                         {"mb": g["state"]["bytes"] / 2**20, "s": g["state"]["seconds"]})
                        for g in gens if (g.get("state") or {}).get("bytes")]
        restarted = [a["started"] for a in attempts if t0 <= a["started"] < t1 and not a.get("generation")]
        moments += [(min(restarted), "a restarted worker reached its process group", {})] if restarted else []
        first = first_step_after(run_dir, t0, ep.get("world"))
        if first is not None:  # the state the re-formed group starts from: its checkpoint too
            if first[1] - 1 in saves:
                moments.append((saves[first[1] - 1], "checkpoint of step {step} committed", {"step": first[1] - 1}))
            moments.append((first[0], "first step on fewer ranks" if lost else "first step on more ranks", {}))
        name = tr("node {node} lost after step {step}" if lost else "node {node} joins after step {step}", lang,
                  node=ep["node"], step=ep["after_step"])
        out += sorted(({"event": name, "seconds": round(t - t0, 3), "moment": tr(what, lang, **values)}
                       for t, what, values in moments), key=lambda row: row["seconds"])
    return pd.DataFrame(out, columns=["event", "seconds", "moment"])


def interruption(err: RunInterrupted, lang: str | None = None) -> str:
    """What a :class:`~course_lib.ddp.launch.RunInterrupted` says, in the notebook's language (the
    core's own sentence, through :func:`~course_lib.lab.i18n.tr_line`)."""
    return tr_line(str(err), lang)


def pair_table(texts: list[str], pairs: list[tuple[int, int, float]], n: int = 3, chars: int = 400,
               lang: str | None = None) -> str:
    """HTML: the first ``n`` near-duplicate pairs side by side, the words only one of the two
    has struck or marked (notebook 01, "Near duplicates")."""
    rows = []
    for i, j, score in pairs[:n]:
        a, b = texts[i][:chars].split(), texts[j][:chars].split()
        left, right = [], []
        for op, a0, a1, b0, b1 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            wa, wb = html.escape(" ".join(a[a0:a1])), html.escape(" ".join(b[b0:b1]))
            left.append(wa if op == "equal" else f"<del style='background:#fdd'>{wa}</del>")
            right.append(wb if op == "equal" else f"<ins style='background:#dfd'>{wb}</ins>")
        rows.append(f"<tr><td style='vertical-align:top'><b>#{i}</b> {' '.join(left)}</td>"
                    f"<td style='vertical-align:top'><b>#{j}</b> {' '.join(right)}</td><td>{score:.2f}</td></tr>")
    return (f"<table><tr><th>{tr('kept', lang)}</th><th>{tr('near-duplicate', lang)}</th><th>Jaccard</th></tr>"
            + "".join(rows) + "</table>")


def real_scale_figures(lang: str | None = None) -> pd.DataFrame:
    """The figures of a long pre-training run that the advisor is fed (notebook 04, "At real
    scale"): each value, what it is, and its source, or why it is assumed."""
    run = LongRun()
    shown = lambda f: tr(f"{{n}} {f.unit}".strip(), lang, n=f"{f.value:,.0f}" if f.value >= 100 else f"{f.value:g}")  # noqa: E731
    rows = {_label(name, lang): {tr("value", lang): shown(f),
                   tr("what", lang): tr(f.what, lang),
                   tr("published or assumed", lang): f.source if not f.source.startswith("assumed") else
                   tr(f.source, lang)}
            for name, f in run.figures.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def real_scale(advice: dict, lang: str | None = None) -> pd.DataFrame:
    """:func:`course_lib.beyond.real_scale.scale_advice` as a table: one column per way of
    saving (synchronous, in the background)."""
    cols = {}
    for name, label in (("sync", "synchronous save"), ("async", "background save")):
        a = advice[name]
        cols[tr(label, lang)] = {
            tr("mean time between failures", lang): f"{advice['mtbf_hours']:.1f} h",
            tr("checkpoint size", lang): f"{advice['checkpoint_tb']:.1f} TB",
            tr("training waits per save", lang): f"{a['blocking_seconds']:.2f} s",
            tr("best interval", lang): tr("every {k} steps ({m:.1f} min)", lang, k=a["optimum_steps"],
                                          m=a["optimum_minutes"]),
            tr("time lost at the best interval", lang): f"{a['lost_share']:.1%}",
            tr("of it, restarts alone", lang): f"{a['lost_to_restarts']:.1%}",
            tr("time lost saving once an hour", lang): f"{a['lost_saving_every_hour']:.1%}"}
    return pd.DataFrame(cols)
