"""Beyond the chapter: what the kit adds to keeping long runs alive. Built on the core
(:mod:`course_lib.ddp`, :mod:`course_lib.checkpoint`), which never imports it.

* ``invariant`` + ``invariant_trainer``: ``--reduction invariant``, a gradient sum with the same
  bits on any number of ranks (a resume on another world size is exact), and the survivors' save
  of the last finished step when a peer dies. Importing this package registers it.
* ``elastic``: groups that lose a node and gain one back without a restart (``membership``,
  ``regroup``, ``peer_state``: the state from a live peer), and the drill that shows it (``drill``).
* ``advisor`` (how often to save, from a run's own costs: Young/Daly) and ``random_failures``
  (training through real random failures to check it).
"""
from course_lib.beyond import invariant_trainer  # noqa: F401  (registers --reduction invariant)
