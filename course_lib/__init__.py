"""course_lib: the real code behind the "keeping long training runs alive" notebooks.

Laid out by station, one folder per notebook's concern, in rings that import only inwards
(``pyproject.toml``'s import contracts, checked by the tests). The folders and where each idea
lives (``module:name``): docs/README.md#layout.

Import the submodule you need; importing the package itself is cheap.
"""
__version__ = "0.1.0"
