"""Every random number generator a rank draws from, saved and restored with its checkpoint.

A resumed run is bit-identical only if each rank's dropout masks (and anything else random)
continue where they stopped: Python's ``random``, NumPy's and torch's generators (CUDA's where
there is one). The state is kept as plain tensors and numbers, so a checkpoint holding it still
loads with ``torch.load(..., weights_only=True)``; NumPy's own tuple would need pickled code.
"""
from __future__ import annotations

import random

import numpy as np
import torch


def rng_state() -> dict:
    """Every RNG a rank uses, as plain tensors and numbers (loadable with weights_only)."""
    np_state = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": {"name": np_state[0], "keys": torch.from_numpy(np_state[1].astype(np.int64)),
                  "pos": int(np_state[2]), "has_gauss": int(np_state[3]), "cached_gaussian": float(np_state[4])},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def seed_rngs(seed: int, rank: int) -> None:
    """Each rank's own streams (dropout under plain DDP), seeded from the run's seed; the
    checkpoint saves them as they go on."""
    random.seed(seed * 1000 + rank)
    np.random.seed(seed * 1000 + rank)
    torch.manual_seed(seed * 1000 + rank)


def set_rng_state(state: dict) -> None:
    """Put back what :func:`rng_state` took: the next draw of every generator is the one it would have made."""
    random.setstate((state["python"][0], tuple(state["python"][1]), state["python"][2]))
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
