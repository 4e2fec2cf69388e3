"""Elastic groups (notebook 05, optional): nodes that leave and join a running group, which
re-forms in-process (``membership``: who is in; ``regroup``: the member's trainer; ``peer_state``:
the state from a live peer's memory; ``commands``: their torchrun lines; ``drill``: torchrun agents playing the nodes)."""
