"""Station 3 (notebook 03): one process per rank, DDP, the training loop.

Its modules: docs/README.md#layout.
"""
