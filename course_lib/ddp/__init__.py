"""Station 3 (notebook 03): one process per rank, DDP, the training loop.

``launch`` (start the ranks: spawn's API or torchrun; ``run_rank`` is one rank), ``train`` (the
``Trainer``: DDP wrap, one step, one save, one resume), ``training`` (what a rank trains, built
once), ``seams`` (where an extension plugs in), ``outcome`` (why a rank ended, its exit code),
``sampling`` (the data order as a pure
function of seed, epoch and step), ``models``, ``evaluation``, ``consistency`` (do all ranks hold
the same parameters?).
"""
