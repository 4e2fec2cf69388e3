"""Process plumbing the stations share: starting ranks (``rank_start``), their output
(``rank_output``), waiting for them and leaving cleanly (``processes``), the platform's
differences (``portability``), why a notebook's worker cannot be spawned (``spawn_check``), and
the ``torchrun`` command lines the kit prints (``torchrun``).
"""
