"""State an exported function closes over must come out of the export as it went in.

Tracing runs ``fn`` on JAX tracers. A model that ``fn`` takes as an argument
is rebuilt around the tracers, cells and all, so what ``fn`` writes into its
``State`` cells (BatchNorm's running statistics, in the training phase) is
the artifact's to return. A model ``fn`` *closes over* (``lambda x:
model(x)``) is the user's own: a write there would leave a tracer in the
user's model and statistics the artifact silently drops. So the cells
reachable from ``fn`` (its closure, its globals by name, a bound method's
object, a ``functools.partial``'s arguments) are read before tracing; any
that changed are put back and the export is refused, naming the cell.

An optimizer ``fn`` closes over is the same case: ``opt.update`` inside the
trace would leave tracers in its slots and step count, which the artifact
cannot carry either (a training step takes the slots as an argument and
returns them). Its attributes, and the lists and dicts among them, are kept
and put back the same way.
"""

from __future__ import annotations

import functools
import types

from ..optimizers import Optimizer
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


def _snapshot(value):
    """``value`` with its lists and dicts (an optimizer's slots) copied at every depth."""
    if isinstance(value, list):
        return value, [_snapshot(item) for item in value]
    if isinstance(value, dict):
        return value, {key: _snapshot(item) for key, item in value.items()}
    return value, None


def _put_back(saved) -> bool:
    """Restore the containers of :func:`_snapshot` in place; whether anything had changed
    (by identity: no value is compared, a tensor's numbers may be a tracer's)."""
    value, contents = saved
    if contents is None:
        return False
    keys = range(len(contents)) if isinstance(value, list) else contents.keys()
    now = list(value) if isinstance(value, list) else dict(value)
    changed = len(now) != len(contents) or any(
        (key not in now if isinstance(value, dict) else False) or now[key] is not contents[key][0]
        for key in keys)
    changed = any([_put_back(item) for item in (
        contents if isinstance(value, list) else contents.values())]) or changed
    if changed:
        if isinstance(value, list):
            value[:] = [item for item, _ in contents]
        else:
            value.clear()
            value.update({key: item for key, (item, _) in contents.items()})
    return changed


def _restore(optimizer, saved: dict) -> bool:
    """Put the attributes ``saved`` by :func:`_snapshot` back; whether anything changed."""
    attributes = vars(optimizer)
    changed = set(attributes) != set(saved) or any(
        attributes.get(name) is not value for name, (value, _) in saved.items())
    changed = any([_put_back(item) for item in saved.values()]) or changed
    if changed:
        attributes.clear()
        attributes.update({name: value for name, (value, _) in saved.items()})
    return changed


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
        self._optimizers: list = []
        seen: set = set()
        for name, value in _referenced(fn):
            if isinstance(value, Optimizer):
                self._optimizers.append(
                    (name, value, {k: _snapshot(v) for k, v in vars(value).items()}))
            elif not isinstance(value, (types.ModuleType, type)):
                _cells(value, name, self._cells, seen)

    def restore(self) -> list[str]:
        """Put every changed cell and optimizer back; return their paths (empty when none
        changed)."""
        changed = []
        for path, cell, value in self._cells.values():
            if cell.value is not value:
                cell.value = value
                changed.append(path)
        changed += [f"{name} (an optimizer)" for name, optimizer, saved in self._optimizers
                    if _restore(optimizer, saved)]
        return changed
