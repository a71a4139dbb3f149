"""State cells an exported function closes over must come out of the export as they went in.

Tracing runs ``fn`` on JAX tracers. A model that ``fn`` takes as an argument
is rebuilt around the tracers, cells and all, so what ``fn`` writes into its
``State`` cells (BatchNorm's running statistics, in the training phase) is
the artifact's to return. A model ``fn`` *closes over* (``lambda x:
model(x)``) is the user's own: a write there would leave a tracer in the
user's model and statistics the artifact silently drops. So the cells
reachable from ``fn`` (its closure, its globals by name, a bound method's
object, a ``functools.partial``'s arguments) are read before tracing; any
that changed are put back and the export is refused, naming the cell.
"""

from __future__ import annotations

import functools
import types

from ..tree import join_path, tree_children

__all__ = ["StateGuard"]


def _referenced(fn) -> list:
    """``(name, value)`` of what ``fn`` can reach without arguments."""
    found, seen = [], set()
    stack = [fn]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, functools.partial):
            found += [(f"{getattr(value.func, '__name__', 'partial')}'s argument", v)
                      for v in (*value.args, *value.keywords.values())]
            stack.append(value.func)
        elif isinstance(value, types.MethodType):
            found.append((value.__func__.__name__ + "'s self", value.__self__))
            stack.append(value.__func__)
        elif isinstance(value, types.FunctionType):
            code = value.__code__
            for name, cell in zip(code.co_freevars, value.__closure__ or (), strict=True):
                try:
                    found.append((name, cell.cell_contents))
                except ValueError:  # a name the enclosing function has not bound yet
                    pass
            names = set(code.co_names)
            for constant in code.co_consts:  # nested functions and comprehensions
                if isinstance(constant, types.CodeType):
                    names.update(constant.co_names)
            found += [(name, value.__globals__[name]) for name in sorted(names)
                      if name in value.__globals__]
            found += [(f"default of {value.__name__}", d) for d in value.__defaults__ or ()]
        elif callable(value) and not isinstance(value, type):
            found.append((type(value).__name__, value))  # a model or other callable object
    return found


def _cells(value, path: str, out: dict, seen: set) -> None:
    if id(value) in seen:
        return
    seen.add(id(value))
    kind, children = tree_children(value)
    if kind == "cell":
        out.setdefault(id(value), (path, value, value.value))
        return
    for key, child, _ in children:
        _cells(child, join_path(path, key), out, seen)


class StateGuard:
    """Read the ``State`` cells ``fn`` reaches; :meth:`restore` puts back and names changed ones.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.exporting.state_guard import StateGuard
    >>> norm = s4tf.layers.BatchNorm(2)
    >>> guard = StateGuard(lambda x: norm(x))
    >>> norm.running_mean.value = s4tf.ones([2])
    >>> guard.restore(), norm.running_mean.value.tolist()
    (['norm.running_mean'], [0.0, 0.0])
    """

    def __init__(self, fn) -> None:
        self._cells: dict = {}
        seen: set = set()
        for name, value in _referenced(fn):
            if not isinstance(value, (types.ModuleType, type)):
                _cells(value, name, self._cells, seen)

    def restore(self) -> list[str]:
        """Put every changed cell's value back; return their paths (empty when none changed)."""
        changed = []
        for path, cell, value in self._cells.values():
            if cell.value is not value:
                cell.value = value
                changed.append(path)
        return changed
