"""The figures speak the notebook's language: in Chinese every word a figure draws is Chinese
(identifiers and names aside), and every Chinese glyph is in the kit's font."""
import re
import runpy
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

matplotlib.use("Agg")

from course_lib.beyond.advisor import Costs  # noqa: E402
from course_lib.lab import plots  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# names a Chinese figure keeps: code identifiers, people, methods, units
KEPT = {"input_ids", "attention_mask", "Rank", "AdamW", "foreach", "LSH", "MinHash", "Jaccard", "Young", "Daly",
        "sqrt", "CM", "TB", "CPU", "epoch", "bag", "WordPiece", "GPT", "BPE", "P"}
COSTS = Costs(step_seconds=0.05, save_blocking_seconds=0.4, save_write_seconds=0.4, restart_seconds=6.0,
              finish_seconds=1.0, steps=600, save_every_steps=20, async_save=False, sources={})


BATCH = {"input_ids": torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]]),
         "attention_mask": torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])}
FIGURES = {  # each as a notebook draws it, on small real inputs
    "histogram": lambda lang: plots.histogram([[3, 5, 9], [4, 4, 8]], "tokens per review", "tokens",
                                              labels=["WordPiece", "GPT-2 BPE"], lang=lang),
    "bars": lambda lang: plots.bars({"1 rank x 1 thread": 90.0, "2 ranks x 1 thread": 160.0}, "{model} on 2 CPU cores",
                                    "samples/s", "{:.1f}", lang=lang, model="bag"),
    "stacked_bars": lambda lang: plots.stacked_bars(
        {"fused AdamW": {"forward": 0.01, "backward": 0.02, "clip": 0.001, "AdamW step": 0.003}},
        "one {model} step of one rank, 1 thread", lang=lang, model="bag"),
    "batch_heatmap": lambda lang: plots.batch_heatmap(BATCH, "8 reviews", lang=lang),
    "lsh_curve": lambda lang: plots.lsh_curve(16, 4, 0.8, lang=lang),
    "save_interval_curve": lambda lang: plots.save_interval_curve(COSTS, 120.0, epoch_steps=50, lang=lang),
    "real_scale_curve": lambda lang: plots.real_scale_curve(lang=lang),
}


def texts(fig) -> list[str]:
    """The words drawn, less the log axes' math tick labels (``$10^{2}$``)."""
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip() and "$" not in t.get_text()]


def english_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text) if w not in KEPT and not w.isupper()]


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_a_chinese_figure_draws_chinese_and_every_glyph_is_in_the_font(name):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "Glyph")  # a glyph missing from every font is a warning: here a failure
        fig = FIGURES[name]("zh")
        fig.canvas.draw()
    plt.close(fig)
    english = {t: english_words(t) for t in texts(fig) if english_words(t)}
    assert not english, f"{name}: English in a Chinese figure: {english}"
    assert any(re.search(r"[\u4e00-\u9fff]", t) for t in texts(fig))


def test_an_english_figure_stays_english():
    fig = FIGURES["histogram"]("en")
    plt.close(fig)
    assert "tokens per review" in texts(fig)


def test_the_font_holds_every_chinese_character_of_the_package():
    """A new label with a character the font lacks fails here: rebuild it with tools/cjk_font.py."""
    from fontTools.ttLib import TTFont

    tool = runpy.run_path(str(ROOT / "tools" / "cjk_font.py"))
    cmap = TTFont(plots.CJK_FONT).getBestCmap()
    missing = sorted(ch for ch in tool["characters"]() if ord(ch) not in cmap)
    assert not missing, f"not in {plots.CJK_FONT.name}: {''.join(missing)}; run python tools/cjk_font.py (its docstring)"
