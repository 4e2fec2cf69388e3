"""The audit's progress bar: tqdm's (a widget in a notebook) where tqdm is installed, else one
line on standard error rewritten in place. The audit needs nothing but the standard library;
a progress bar is not worth a dependency."""
from __future__ import annotations

import sys


def progress_bar(total: int, desc: str, unit: str, disable: bool = False):
    """An object with tqdm's ``update``, ``refresh``, a settable ``total``, and ``with`` support."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Line(total, desc, unit, disable)
    return tqdm(total=total, desc=desc, unit=unit, disable=disable)


class _Line:
    def __init__(self, total: int, desc: str, unit: str, disable: bool):
        self.total, self.n, self.desc, self.unit, self.disable = total, 0, desc, unit, disable

    def update(self, n: int = 1) -> None:
        self.n += n
        self.refresh()

    def refresh(self) -> None:
        if not self.disable:
            sys.stderr.write(f"\r{self.desc}: {self.n}/{self.total} {self.unit}s")
            sys.stderr.flush()

    def __enter__(self):
        self.refresh()
        return self

    def __exit__(self, *exc) -> None:
        if not self.disable:
            sys.stderr.write("\n")
