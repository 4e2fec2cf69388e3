"""course_lib: the real code behind the "keeping long training runs alive" notebooks.

Stations: ``data`` / ``near_dup`` / ``text_tools`` (1), ``tokenization`` / ``batching`` /
``prepare`` (2), ``config`` / ``models`` / ``sampling`` / ``launch`` / ``train`` (3),
``monitor`` / ``checkpoint`` / ``advisor`` / ``random_failures`` (4), ``faults`` / ``compare`` /
``predict`` / ``widgets`` (5), ``i18n`` for the Chinese edition, ``pipeline`` and ``cli`` for
the whole kit. Import the submodule you need; importing the
package itself is cheap.
"""
__version__ = "0.1.0"
