"""Arguments a captured step's body changed in place: found on every run of the body, refused.

A replay runs the compiled program and rebuilds the results; it does not run
the body's Python, so a change the body makes to an argument in place (an
item of a list or dict, an attribute of an object) would happen on the calls
that run the body and on no other, and the later calls would compute with
what the capture saw. Before each run of the body (a capture or a
verification) a :class:`Snapshot` records, for every mutable container and
plain object reachable from the arguments, what it holds, by identity (a
tuple of its items, of its ``__dict__``'s items): no copy of a tensor
(tensors are immutable), no deep comparison. After the body,
:meth:`Snapshot.check` compares and raises :class:`CaptureError` naming the
argument, the path to what changed, and the fix.

What captured steps change by design is not looked at: optimizers (their
slots, step counts and the settings the body assigns are carried by the
capture), ``State`` cells (BatchNorm's statistics: the replay writes them),
and Differentiable values themselves (frozen; an update that consumes a
model empties the old object, which is not a change the body made, and a
container holding it still holds the same object). What their fields hold
(a model's list of layers) is looked at like any other container.
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

from ..optimizers.optimizer import Optimizer
from ..tensor import Tensor
from ..tree import is_leaf, tree_children

__all__ = ["CaptureError", "Snapshot"]

# Values that cannot change in place, or whose changes are not the step's data.
_UNCHANGING = (str, bytes, int, float, complex, bool, type(None), frozenset, range, type,
               types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
               types.MethodType, functools.partial, Optimizer)
# The common leaves and static values, skipped by one type lookup (a long list of strings).
_ATOMIC = frozenset({str, int, float, bool, type(None), Tensor})
# A NumPy argument larger than this is not copied to compare (a data set passed in).
_MAX_ARRAY_BYTES = 1 << 20


class CaptureError(RuntimeError):
    """A captured step (:func:`s4tf.xla.compile`) did something its replays could not repeat.

    Raised on a call that runs the step's body (its capture, or a
    verification) when the body changed one of its arguments in place: an
    item of a list or dict, a key added or removed, an attribute of an
    object. A replay does not run the body's Python, so the change would
    happen only on some calls. The message names the argument and what
    changed; return the new value instead.

    Examples
    --------
    >>> import s4tf
    >>> @s4tf.xla.compile
    ... def step(state, x):
    ...     state["total"] = state["total"] + x      # changes the argument
    ...     return x * 2
    >>> x = s4tf.ones([2]).to("xla")
    >>> try:
    ...     step({"total": x}, x)
    ... except s4tf.xla.CaptureError as error:
    ...     print(str(error).splitlines()[0])
    s4tf.xla.compile: step changed its argument 'state' in place: key 'total' was replaced.
    """


class Snapshot:
    """What each mutable container and object in a call's arguments held before the body ran.

    Attributes
    ----------
    entries : list of tuple
        ``(object, what it held, path)``, ``path`` starting with the
        argument's position or keyword.

    Examples
    --------
    >>> lst = [1, 2]
    >>> before = Snapshot(lambda lst: lst.append(3), (lst,), {})
    >>> lst.append(3)
    >>> try:
    ...     before.check("step")
    ... except CaptureError as error:
    ...     print(str(error).splitlines()[0])
    s4tf.xla.compile: step changed its argument 'lst' in place: it grew from 2 to 3 items.
    """

    __slots__ = ("fn", "entries")

    def __init__(self, fn, args, kwargs) -> None:
        self.fn = fn  # for the names of its parameters in an error
        self.entries: list = []
        seen: set[int] = set()
        # Depth first, without recursion: a chain of objects may be longer than Python's stack.
        stack = [(value, (name,)) for name, value in kwargs.items()][::-1]
        stack += [(value, (i,)) for i, value in enumerate(args)][::-1]
        while stack:
            value, path = stack.pop()
            if type(value) in _ATOMIC or id(value) in seen or is_leaf(value) \
                    or isinstance(value, _UNCHANGING):
                continue
            seen.add(id(value))
            stack.extend(reversed(self._visit(value, path)))

    def _visit(self, value, path) -> list:
        """Record ``value`` if it can change in place; return its children with their paths."""
        kind, children = tree_children(value)
        if kind == "cell":
            return []  # a State cell's value is the step's to change; a replay writes it
        if kind is not None:
            if kind in ("list", "dict"):
                self.entries.append((value, _contents(value), path))
            step = "item" if kind in ("list", "tuple") else "key" if kind == "dict" else "field"
            return [(child, (*path, (step, key))) for key, child, _ in children
                    if type(child) not in _ATOMIC]
        contents = _contents(value, private=len(path) == 1)
        if contents is None:
            return []
        if not _frozen(value):  # a frozen dataclass cannot change, but what it holds can
            self.entries.append((value, contents, path))
        if not isinstance(contents, dict):
            return []
        return [(child, (*path, ("attribute", name))) for name, child in contents.items()
                if type(child) not in _ATOMIC]

    def check(self, name: str) -> None:
        """Raise :class:`CaptureError` if the body changed anything recorded (``name``: the step's)."""
        for value, before, path in self.entries:
            change = _change(value, before, private=len(path) == 1)
            if change is not None:
                raise CaptureError(
                    f"s4tf.xla.compile: {name} changed its {self._where(path)} in place: "
                    f"{change}.\nA replay runs the compiled program without the step's Python, "
                    "so it would not make that change, and later calls would compute with the "
                    "old contents. Return the new value from the step instead (`return "
                    "new_value, loss`, then pass it in on the next call), or make the change "
                    "outside the step. (Tensors are never changed in place: an optimizer's "
                    "slots, its step count and State cells such as BatchNorm's statistics are "
                    "carried by the capture.)"
                )

    def _where(self, path) -> str:
        first, rest = path[0], path[1:]
        where = f"argument {_parameter_name(self.fn, first)!r}"
        return ", ".join([where, *(f"{step} {key!r}" for step, key in rest)])


def _contents(value, private: bool = True):
    """What ``value`` holds, to compare by identity after the body (None: nothing to follow).

    An object's attributes whose names start with ``_`` count only for an
    argument itself (``self._model``): inside other objects they are those
    objects' own business (a logger's cache, a lock), which the step's calls
    change without changing what the step computes.
    """
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return tuple(value.items())
    if isinstance(value, set | bytearray):
        return value.copy()
    if isinstance(value, np.ndarray):
        if not value.flags.writeable or value.nbytes > _MAX_ARRAY_BYTES:
            return None
        return value.copy()
    state = getattr(value, "__dict__", None)
    if not isinstance(state, dict):
        return None
    return {k: v for k, v in state.items() if private or not k.startswith("_")}


def _frozen(value) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return params is not None and params.frozen


def _change(value, before, private: bool) -> str | None:
    """How ``value`` differs from what it held (``before``), in words; None if it does not."""
    if isinstance(value, list):
        if len(value) != len(before):
            verb = "grew" if len(value) > len(before) else "shrank"
            return f"it {verb} from {len(before)} to {len(value)} items"
        for i, (old, new) in enumerate(zip(before, value, strict=True)):
            if old is not new:
                return f"item {i} was replaced"
        return None
    if isinstance(value, dict):
        return _mapping_change(dict(before), value, "key")
    if isinstance(value, set):
        return None if value == before else "its elements changed"
    if isinstance(value, bytearray | np.ndarray):
        same = np.array_equal(np.asarray(before), np.asarray(value), equal_nan=True) \
            if isinstance(value, np.ndarray) and value.dtype.kind in "fc" else \
            np.array_equal(np.asarray(before), np.asarray(value))
        return None if same else "its contents were written"
    # A functools.cached_property fills itself in on first use: not a change of the value.
    state = {k: v for k, v in vars(value).items()
             if k in before or (private or not k.startswith("_")) and not isinstance(
                 getattr(type(value), k, None), functools.cached_property)}
    return _mapping_change(before, state, "attribute")


def _mapping_change(before: dict, after: dict, word: str) -> str | None:
    for key, old in before.items():
        if key not in after:
            return f"{word} {key!r} was removed"
        if after[key] is not old:
            return f"{word} {key!r} was replaced" if word == "key" else \
                f"{word} {key!r} was set to a new value"
    for key in after:
        if key not in before:
            return f"{word} {key!r} was added"
    return None


def _parameter_name(fn, position) -> str:
    """The name of ``fn``'s parameter that received argument ``position`` (an index or a keyword)."""
    if isinstance(position, str):
        return position
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return f"#{position}"
    for i, parameter in enumerate(parameters):
        if parameter.kind is parameter.VAR_POSITIONAL:
            return f"{parameter.name}[{position - i}]"
        if i == position and parameter.kind in (parameter.POSITIONAL_ONLY,
                                                parameter.POSITIONAL_OR_KEYWORD):
            return parameter.name
    return f"#{position}"
