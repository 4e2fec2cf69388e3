"""Process plumbing the stations share: starting ranks, their output, waiting for them, the
platform's differences, the torchrun command lines. Its modules: docs/README.md#layout.
"""
