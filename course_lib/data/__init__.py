"""Stations 1 and 2 (notebooks 01 and 02): real IMDB reviews to ``input_ids`` + ``attention_mask``.

Its modules: docs/README.md#layout.
"""
