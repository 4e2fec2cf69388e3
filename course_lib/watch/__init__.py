"""Stations 4 and 5: watching a run and judging it.

``monitor`` (the per-step ledger of every rank and rank 0's TensorBoard files), ``compare`` (are
two runs the same run? the first step where they part, samples skipped or repeated, the final
parameters bit for bit).
"""
