"""Stations 1 and 2 (notebooks 01 and 02): real IMDB reviews to ``input_ids`` + ``attention_mask``.

``sources`` (where the reviews come from, cleaning, exact deduplication, the split),
``near_dup`` (MinHash + LSH), ``text_tools`` (chunking, rule labels), ``tokenization`` (WordPiece,
GPT-2 BPE, your own vocabulary), ``batching`` (padding), ``prepare`` (all of it as one cached call,
what training consumes).
"""
