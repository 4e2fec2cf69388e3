"""Stations 4 and 5 (notebooks 04 and 05): checkpoints that hold the whole state, survive a crash
mid-write, and resume exactly. Its modules: docs/README.md#layout.
"""
