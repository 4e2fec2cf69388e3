"""Matplotlib figures for the notebooks, thin over the readers in ``monitor`` / ``compare``.
Every function returns the figure, so a test can check it and a notebook just shows it.

Each figure speaks the notebook's language (``lang``, else :func:`course_lib.lab.i18n.resolve`):
every title, axis and legend goes through :func:`course_lib.lab.i18n.tr`. The Chinese glyphs come
from the kit's own font (``fonts/course-lib-cjk.otf``; ``tools/cjk_font.py``), a fallback after
matplotlib's, so a machine without a CJK font (most Linux installs) still draws them.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import font_manager

from course_lib.lab.i18n import resolve, tr
from course_lib.watch.monitor import ledger_ranks, read_ledger, read_scalars

CJK_FONT = Path(__file__).resolve().parent / "fonts" / "course-lib-cjk.otf"
CJK_FAMILY = "Course Lib CJK"


def _use_cjk_fallback() -> None:
    """Register the kit's CJK font and put it after the default family (glyph by glyph fallback)."""
    if CJK_FAMILY not in {f.name for f in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(str(CJK_FONT))
    families = list(plt.rcParams["font.family"])
    if CJK_FAMILY not in families:
        plt.rcParams["font.family"] = families + [CJK_FAMILY]


_use_cjk_fallback()


def _words(lang: str | None):
    """``t(text, **values)``: ``text`` in the figure's language."""
    return partial(tr, lang=resolve(lang))


def histogram(values, title: str, xlabel: str, bins: int = 60, labels=None, clip=None, lang: str | None = None):
    """One or several histograms on one axis (``values`` a list of arrays when ``labels``).
    Used in notebook 01 (§2) and notebook 02 (§4)."""
    t = _words(lang)
    fig, ax = plt.subplots(figsize=(7, 3.2), layout="tight")
    series = values if labels else [values]
    for v, lab in zip(series, labels or [None]):
        v = np.asarray(v)
        ax.hist(np.minimum(v, clip) if clip else v, bins=bins, alpha=0.6, label=lab)
    ax.set(title=t(title), xlabel=t(xlabel), ylabel=t("count"))
    if labels:
        ax.legend()
    return fig


def bars(values: dict, title: str, ylabel: str, fmt: str = "{:.2f}", lang: str | None = None, **title_values):
    """One bar per entry of ``values``; ``title`` a template its ``title_values`` fill in.
    Used in notebook 03 (optional deep-dive B)."""
    t = _words(lang)
    fig, ax = plt.subplots(figsize=(6, 3.2), layout="tight")
    names = list(values)
    rects = ax.bar([t(n) for n in names], [values[n] for n in names], color=plt.cm.tab10.colors[: len(names)])
    ax.bar_label(rects, labels=[fmt.format(values[n]) for n in names])
    ax.set(title=t(title, **title_values), ylabel=t(ylabel))
    return fig


def stacked_bars(parts: dict[str, dict[str, float]], title: str, xlabel: str = "seconds", lang: str | None = None,
                 **title_values):
    """One horizontal bar per entry of ``parts``, split into its named pieces (same order in each);
    ``title`` a template its ``title_values`` fill in. Used in notebook 03 (optional deep-dive B)."""
    t = _words(lang)
    fig, ax = plt.subplots(figsize=(7, 0.7 * len(parts) + 1.4), layout="tight")
    names = list(parts)
    shown = [t(n) for n in names]
    left = [0.0] * len(names)
    for piece in next(iter(parts.values())):
        widths = [parts[n][piece] for n in names]
        ax.barh(shown, widths, left=left, label=t(piece))
        left = [a + b for a, b in zip(left, widths)]
    for y, total in enumerate(left):
        ax.text(total, y, f" {total:.3f}", va="center")
    ax.set(title=t(title, **title_values), xlabel=t(xlabel), xlim=(0, max(left) * 1.15))
    ax.legend(loc="lower right", fontsize="small")
    return fig


def batch_heatmap(batch: dict, title: str = "a padded batch", lang: str | None = None):
    """``input_ids`` (colour = token id, grey = padding) next to the ``attention_mask``. Used in notebook 02 (§3)."""
    t = _words(lang)
    ids = batch["input_ids"].numpy().astype(float)
    mask = batch["attention_mask"].numpy()
    fig, axes = plt.subplots(1, 2, figsize=(10, 2.8), sharey=True, layout="tight")
    axes[0].imshow(np.where(mask == 1, ids, np.nan), aspect="auto", cmap="viridis", interpolation="nearest")
    axes[0].set(title=t("{title}: input_ids (blank = padding)", title=t(title)), xlabel=t("position"),
                ylabel=t("review"))
    axes[1].imshow(mask, aspect="auto", cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
    axes[1].set(title=t("attention_mask (black = real token)"), xlabel=t("position"))
    return fig


def losses_by_rank(run_dir: str | Path, title: str = "loss on each rank", lang: str | None = None):
    """Every rank's own (local) loss and the all-reduced global loss, by step. Used in notebook 03 (§5)."""
    t = _words(lang)
    fig, ax = plt.subplots(figsize=(7, 3.2), layout="tight")
    for rank in ledger_ranks(run_dir):
        rows = read_ledger(run_dir, rank)
        ax.plot([r["step"] for r in rows], [r["loss"] for r in rows], lw=0.8, alpha=0.8, label=f"Rank {rank}")
    rows = read_ledger(run_dir, 0)
    ax.plot([r["step"] for r in rows], [r["global_loss"] for r in rows], "k", lw=1.4, label=t("global (mean)"))
    ax.set(title=t(title), xlabel=t("step"), ylabel=t("loss"))
    ax.legend()
    return fig


def scalar_panels(run_dir: str | Path, tags=("train/loss", "train/lr", "train/grad_norm", "train/samples_per_s"),
                  lang: str | None = None, x: str = "step"):
    """Curves read back from the TensorBoard event files (what TensorBoard itself shows;
    notebook 04, "Watching more than the loss"). A series of a few points is drawn with markers
    (a line through one point draws nothing), and axes show plain values, never an offset.
    ``x``: what the event files' step counts, ``"step"`` or ``"epoch"`` (the chapter's writer logs
    once an epoch; notebook 04, §1)."""
    t = _words(lang)
    scalars = read_scalars(run_dir)
    fig, axes = plt.subplots(1, len(tags), figsize=(3.4 * len(tags), 2.8), layout="tight")
    for ax, tag in zip(np.atleast_1d(axes), tags):
        pts = scalars.get(tag, [])
        ax.plot([s for s, _ in pts], [v for _, v in pts], lw=1, marker="o" if len(pts) <= 5 else None)
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
        ax.set(title=tag, xlabel=t(x))  # a tag is TensorBoard's name for the curve, as TensorBoard shows it
        if not pts:
            ax.text(0.5, 0.5, t("no data"), transform=ax.transAxes, ha="center", va="center", color="0.5")
    return fig


def interruption(reference: str | Path, runs: dict, kill_step: int | list[int] | None = None, title: str | None = None,
                 lang: str | None = None):
    """Global loss of the uninterrupted reference and of each resumed run, with a marker at
    the kill and one at each run's first divergence. Used in notebook 05 (§3)."""
    from course_lib.watch.compare import compare_runs

    t = _words(lang)
    fig, ax = plt.subplots(figsize=(8, 3.6), layout="tight")
    ref = read_ledger(reference, 0)
    ax.plot([r["step"] for r in ref], [r["global_loss"] for r in ref], "k", lw=2.5, alpha=0.35, label=t("uninterrupted"))
    for i, ((name, run_dir), color) in enumerate(zip(runs.items(), plt.cm.tab10.colors)):
        rows = read_ledger(run_dir, 0)
        ax.plot([r["step"] for r in rows], [r["global_loss"] for r in rows], lw=1, color=color, label=name)
        first = compare_runs(reference, run_dir)["first_divergent_step"]
        if first is not None:
            y = next((r["global_loss"] for r in rows if r["step"] == first), None)
            if y is not None:
                ax.plot([first], [y], "o", color=color, ms=7, mfc="none", mew=2)
                ax.annotate(t("parts at {step}", step=first), (first, y), textcoords="offset points",
                            xytext=(5, 8 + 13 * i), color=color)  # one line higher per run: nearby steps do not overprint
    for step in filter(None, [kill_step] if isinstance(kill_step, int) else kill_step or []):
        ax.axvline(step, color="red", ls="--", lw=1)
        ax.text(step, ax.get_ylim()[1], " " + t("kill"), color="red", va="top")
    ax.set(title=t(title or "interrupted vs uninterrupted"), xlabel=t("step"), ylabel=t("global loss"))
    ax.legend()
    return fig


def save_interval_curve(costs, mtbf: float, covered: float = 0.0, measured: list[dict] | None = None,
                        epoch_steps: int | None = None, lang: str | None = None):
    """Expected wall time against the save interval (:func:`course_lib.beyond.advisor.expected_wall`),
    its minimum, Young's interval, the textbook's "every 10 epochs" and, when given, the
    measured runs (median and range of each interval's repetitions; a run a budget stopped
    unfinished as a triangle at the time it ran, the least its wall time would have been)."""
    from course_lib.beyond.advisor import advise, expected_wall, failure_free_wall, young_seconds

    t = _words(lang)
    ks = np.unique(np.geomspace(1, max(costs.steps, 2), 400).astype(int))
    walls = expected_wall(ks, costs, mtbf, covered)
    best = advise(costs, mtbf, covered)["optimum_steps"]
    fig, ax = plt.subplots(figsize=(7.5, 3.6), layout="tight")
    ax.plot(ks, walls, c="C0", label=t("expected wall time (Daly's exact expectation)"))
    ax.scatter([best], [float(expected_wall(best, costs, mtbf, covered))], c="C0", zorder=3,
               label=t("optimum: every {k} steps", k=best))
    young = young_seconds(costs.save_blocking_seconds, mtbf / (1 - covered)) / costs.step_seconds
    ax.axvline(young, c="C2", ls=":", label=t("Young: sqrt(2CM) = {k:.0f} steps", k=young))
    if epoch_steps and 10 * epoch_steps <= costs.steps:
        k10 = 10 * epoch_steps
        ax.scatter([k10], [float(expected_wall(k10, costs, mtbf, covered))], marker="s", c="C3", zorder=3,
                   label=t("textbook: every 10 epochs = {k} steps", k=k10))
    elif epoch_steps:
        ax.axvline(costs.steps, c="C3", ls="--", label=t("textbook: every 10 epochs ({k} steps) = only at the end here",
                                                       k=10 * epoch_steps))
    done = [p for p in measured or [] if p.get("median_wall_seconds") is not None]
    if done:
        xs = [p["every_steps"] for p in done]
        med = np.array([p["median_wall_seconds"] for p in done])
        lo = med - np.array([min(p["walls"]) for p in done])
        hi = np.array([max(p["walls"]) for p in done]) - med
        ax.errorbar(xs, med, yerr=[lo, hi], fmt="o", c="k", capsize=3, label=t("measured: median, range"))
    stopped = [(p["every_steps"], w) for p in measured or [] for w, ok in zip(p["walls"], p.get("finished", []))
               if not ok]
    if stopped:
        ax.scatter(*zip(*stopped), marker="^", s=60, facecolors="none", edgecolors="k", zorder=3,
                   label=t("stopped unfinished: ran this long, would have needed more"))
    predicted = [p for p in measured or [] if p.get("predicted_median_wall_seconds") is not None
                 and None not in p.get("predicted_quartiles", [None])]  # None: the model says it would not finish
    if predicted:  # the model's own spread (simulated)
        xs = [p["every_steps"] for p in predicted]
        pm = np.array([p["predicted_median_wall_seconds"] for p in predicted])
        q = np.array([p["predicted_quartiles"] for p in predicted])
        ax.errorbar(np.array(xs) * 1.12, pm, yerr=[pm - q[:, 0], q[:, 1] - pm], fmt="D", mfc="none", c="C1",
                    capsize=3, label=t("predicted: median, quartiles"))
    ax.axhline(failure_free_wall(costs), c="0.6", lw=1, label=t("no failures, no saves"))
    ax.set(xscale="log", xlabel=t("save every ... steps"), ylabel=t("wall time to finish (s)"),
           title=t("mean time between failures {m:.0f} s, save costs {c:.2f} s", m=mtbf, c=costs.save_blocking_seconds))
    top = max([min(float(walls.max()), 4 * float(walls.min()))] + [max(p["walls"]) for p in measured or []])
    ax.set_ylim(0, top * 1.05)
    ax.legend(fontsize=8)
    return fig


def lsh_curve(bands: int, rows: int, threshold: float, lang: str | None = None):
    """The chance that LSH makes two texts of Jaccard similarity ``s`` a candidate pair,
    ``1 - (1 - s**rows) ** bands``, for the chosen banding and for two extremes of the same
    signature length: few long bands (few candidates, misses) and many short ones (finds
    everything, compares too much). Used in notebook 01 (§4)."""
    t = _words(lang)
    s = np.linspace(0, 1, 201)
    fig, ax = plt.subplots(figsize=(6.5, 3.2), layout="tight")
    n = bands * rows
    for b, r, style in ((bands, rows, "-"), (1, n, ":"), (n, 1, "--")):
        ax.plot(s, 1 - (1 - s**r) ** b, style, label=t("{b} bands x {r} rows", b=b, r=r))
    ax.axvline(threshold, c="0.5", lw=1)
    ax.text(threshold, 0.03, " " + t("threshold {x}", x=threshold), color="0.4")
    ax.set(xlabel=t("Jaccard similarity of two reviews"), ylabel=t("P(become a candidate pair)"),
           title=t("LSH with {n} MinHash values per review", n=n))
    ax.legend(fontsize=8)
    return fig


def elastic_timeline(run_dir, lang: str | None = None):
    """One panel per node event of a drill (:func:`course_lib.lab.tables.elastic_timeline`): each moment a
    row, its second a dot, from the node's death (or start) down to the first step after it.
    Used in notebook 05 (optional deep-dive C)."""
    from course_lib.lab.tables import elastic_timeline

    t = _words(lang)
    table = elastic_timeline(run_dir, lang=resolve(lang))
    events = list(dict.fromkeys(table["event"]))
    sizes = [int((table["event"] == e).sum()) for e in events]
    fig, axes = plt.subplots(len(events), 1, figsize=(9, 0.32 * sum(sizes) + 1.1 * len(events)), squeeze=False,
                             gridspec_kw={"height_ratios": sizes}, layout="tight")
    for ax, event in zip(axes[:, 0], events):
        rows = table[table["event"] == event].reset_index(drop=True)
        y = list(range(len(rows)))[::-1]
        ax.hlines(y, 0, rows["seconds"], color="tab:blue", alpha=0.4)
        ax.plot(rows["seconds"], y, "o", color="tab:blue")
        for yi, sec in zip(y, rows["seconds"]):
            ax.annotate(" " + t("{s:.2f} s", s=sec), (sec, yi), va="center", fontsize=8)
        ax.set_yticks(y, rows["moment"], fontsize=8)
        ax.set_xlim(0, rows["seconds"].max() * 1.15 + 0.05)
        ax.set_title(event, fontsize=10, loc="left")
    axes[-1, 0].set_xlabel(t("seconds since the event"))
    return fig


def real_scale_curve(run=None, lang: str | None = None):
    """Share of a long run's wall time lost to saves, redone work and restarts, against how often
    it saves, with synchronous and with background saves (notebook 04, "At real scale")."""
    from course_lib.beyond.advisor import lost_share
    from course_lib.beyond.real_scale import LongRun, scale_advice

    t = _words(lang)
    run = run or LongRun()
    advice = scale_advice(run)
    fig, ax = plt.subplots(figsize=(7.5, 3.4), layout="tight")
    minutes = np.geomspace(0.5, 600, 300)
    for name, background, color in (("sync", False, "C0"), ("async", True, "C1")):
        costs = run.costs(background)
        steps = np.maximum(1, np.round(minutes * 60 / costs.step_seconds))
        ax.plot(minutes, 100 * lost_share(steps, costs, run.mtbf_seconds), c=color,
                label=t("synchronous save" if name == "sync" else "background save"))
        best = advice[name]
        ax.scatter([best["optimum_minutes"]], [100 * best["lost_share"]], c=color, zorder=3)
    ax.axvline(60, c="0.6", ls=":", label=t("once an hour"))
    ax.set(xscale="log", xlabel=t("save every ... minutes"), ylabel=t("wall time lost (%)"), ylim=(0, None),
           title=t("mean time between failures {h:.1f} h, checkpoint {tb:.1f} TB", h=advice["mtbf_hours"],
                   tb=advice["checkpoint_tb"]))
    ax.legend(fontsize=8)
    return fig
