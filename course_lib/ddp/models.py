"""The classifiers. All take ``input_ids`` + ``attention_mask`` and return logits (B, 2).

* ``bag``: fastText-style. Mean of token embeddings plus hashed-bigram embeddings, dropout,
  a linear layer. Fast on CPU; the default, and strong on IMDB (bigrams see "not good").
* ``transformer``: a small encoder trained from scratch that honours the attention mask.
* ``minilm``: the pretrained all-MiniLM-L6-v2 (from the offline package), mean-pooled, with a
  classification head, fine-tuned end to end.
"""
from __future__ import annotations

import torch
from torch import nn

from course_lib.config import TrainConfig

MODELS = ("bag", "transformer", "minilm")


class BagOfNgrams(nn.Module):
    def __init__(self, vocab_size: int, dim: int = 32, buckets: int = 2**17, dropout: float = 0.1, classes: int = 2):
        super().__init__()
        self.vocab_size, self.buckets = vocab_size, buckets
        self.embed = nn.EmbeddingBag(vocab_size + buckets, dim, mode="sum")
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(dim, classes)
        nn.init.uniform_(self.embed.weight, -0.05, 0.05)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        ids = input_ids.long()
        mask = attention_mask.to(torch.float32)
        # hashed bigram (a, b) -> vocab + ((a * P + b) mod buckets); only where both are real
        bigrams = self.vocab_size + (ids[:, :-1] * 1_000_003 + ids[:, 1:]) % self.buckets
        bigram_mask = mask[:, :-1] * mask[:, 1:]
        all_ids = torch.cat([ids, bigrams], dim=1)
        weights = torch.cat([mask, bigram_mask], dim=1)
        counts = weights.sum(dim=1, keepdim=True).clamp(min=1.0)
        # weighted sum with per_sample_weights = mask / count: a mean that ignores padding
        pooled = self.embed(all_ids, per_sample_weights=weights / counts)
        return self.head(self.drop(pooled))


class SmallTransformer(nn.Module):
    def __init__(self, vocab_size: int, dim: int = 128, layers: int = 2, heads: int = 4,
                 max_length: int = 512, dropout: float = 0.1, classes: int = 2):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_length, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.tok(input_ids.long()) + self.pos(positions)[None]
        x = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        m = attention_mask.unsqueeze(-1).to(x.dtype)
        return self.head(self.norm((x * m).sum(1) / m.sum(1).clamp(min=1.0)))


class MiniLMClassifier(nn.Module):
    def __init__(self, dropout: float = 0.1, classes: int = 2):
        super().__init__()
        from transformers import AutoModel

        # no pooler: we mean-pool the last hidden states, and DDP needs every parameter to get a gradient.
        # Loading without it makes transformers print a "LOAD REPORT" of the pooler's unused
        # weights and a progress bar: expected, so kept out of the learner's output
        from transformers.utils import logging as hf_logging

        from course_lib.data.tokenization import minilm_dir

        verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            self.encoder = AutoModel.from_pretrained(str(minilm_dir()), add_pooling_layer=False)
        finally:
            hf_logging.set_verbosity(verbosity)
            if bars:
                hf_logging.enable_progress_bar()
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(self.encoder.config.hidden_size, classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.encoder(input_ids=input_ids.long(), attention_mask=attention_mask).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        return self.head(self.drop((h * m).sum(1) / m.sum(1).clamp(min=1.0)))


def build_model(name: str, vocab_size: int, max_length: int = 512, **kw) -> nn.Module:
    """One constructor for the three models (``kw`` goes to the model's own constructor).
    Notebook 03 (exercises)."""
    if name == "bag":
        return BagOfNgrams(vocab_size, **kw)
    if name == "transformer":
        return SmallTransformer(vocab_size, max_length=max_length, **kw)
    if name == "minilm":
        if vocab_size != 30522:
            raise ValueError("minilm needs the bert-base-uncased WordPiece ids (tokenizer='wordpiece')")
        return MiniLMClassifier(**kw)
    raise ValueError(f"unknown model {name!r}; choose one of {MODELS}")


def model_for(cfg: TrainConfig, vocab_size: int) -> nn.Module:
    """The model ``cfg`` describes, untrained: the one a run trains and the one ``predict`` loads its weights into."""
    return build_model(cfg.model, vocab_size, cfg.max_length, **({"dim": cfg.embed_dim} if cfg.model == "bag" else {}),
                       dropout=cfg.dropout)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
