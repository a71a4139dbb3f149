"""Where the user's code is: the innermost stack frame outside the s4tf package.

Errors and warnings name the user's line, not s4tf's: the differentiation
errors (``autodiff/diagnostics.py``), copy-on-write's notes, the learning-phase
warning and the lazy backend's recompilation warning all ask here. It sits at
the bottom of the package (it imports nothing of s4tf), so every layer may.
"""

from __future__ import annotations

import linecache
import os
import sys

__all__ = ["user_location", "user_stacklevel"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _outside(filename: str, skip_modules) -> bool:
    inside = os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
    return not inside and not filename.startswith("<frozen") and not any(
        filename.endswith(f"{name}.py") for name in skip_modules
    )


def user_stacklevel(skip_modules=("contextlib", "functools")) -> int:
    """The ``warnings.warn`` stacklevel of the first frame outside s4tf, seen from the caller."""
    frame, level = sys._getframe(2), 2
    while frame is not None and not _outside(frame.f_code.co_filename, skip_modules):
        frame, level = frame.f_back, level + 1
    return level


def user_location(skip_modules=("contextlib", "functools")) -> str:
    """``file:line: source`` of the innermost stack frame outside the s4tf package.

    Examples
    --------
    >>> from s4tf._user_code import user_location
    >>> user_location().startswith("<doctest")
    True
    """
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if _outside(filename, skip_modules):
            line = linecache.getline(filename, frame.f_lineno).strip()
            where = f"{filename}:{frame.f_lineno}"
            return f"{where}: {line}" if line else where
        frame = frame.f_back
    return "<unknown location>"
