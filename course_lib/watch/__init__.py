"""Stations 4 and 5: watching a run and judging it. Its modules: docs/README.md#layout."""
