"""course_lib.checkpoint.resume: every generator a rank draws from, taken and put back, in a form a
``weights_only`` load accepts."""
import random

import numpy as np
import torch

from course_lib.checkpoint import resume as rng


def test_state_put_back_repeats_the_next_draws_of_every_generator():
    state = rng.rng_state()
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    rng.set_rng_state(state)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == a


def test_state_survives_a_weights_only_load(tmp_path):
    """A checkpoint is data, never code: NumPy's own state tuple would need a pickled class."""
    torch.manual_seed(7)
    state = rng.rng_state()
    torch.save(state, tmp_path / "rng.pt")
    loaded = torch.load(tmp_path / "rng.pt", weights_only=True)
    want = (random.random(), np.random.rand(), torch.rand(1).item())
    rng.set_rng_state(loaded)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == want


def test_each_rank_has_its_own_streams_and_the_same_seed_gives_the_same_ones():
    draws = {}
    for rank in (0, 1, 0):
        rng.seed_rngs(3, rank)
        draws.setdefault(rank, []).append((random.random(), np.random.rand(), torch.rand(1).item()))
    assert draws[0][0] == draws[0][1] and draws[0][0] != draws[1][0]


def test_the_kit_saves_every_rng_the_audit_watches():
    """One list of a rank's RNGs, kept twice on purpose (the core saves states it must load back
    with weights_only=True; the audit's probe, a package of its own, only digests them): both name
    the same generators, so what the kit saves is what the audit would ask of any script."""
    from resume_audit.probe.resume_audit_digests import rng_digests

    from course_lib.checkpoint.resume import rng_state

    assert set(rng_state()) == set(rng_digests()) == {"python", "numpy", "torch"}
