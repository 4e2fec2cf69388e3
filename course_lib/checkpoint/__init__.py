"""Stations 4 and 5 (notebooks 04 and 05): checkpoints that hold the whole state, survive a crash
mid-write, and resume exactly.

``store`` (the commit protocol: write, manifest, rename; verify, newest valid, keep-last-k;
background saves), ``resume`` (which checkpoint, does it fit, put the state back, every RNG
included), ``faults`` (real kills: SIGKILL, SIGTERM, a kill half-way through a save).
"""
