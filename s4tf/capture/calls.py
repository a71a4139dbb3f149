"""One call of a captured step: its inputs as leaves, the signature that picks a capture, its cells.

The arguments are walked once with :func:`s4tf.tree.tree_children` (Tensors
and floats are leaves, in :func:`s4tf.tree_flatten` order; ints, strings,
callables and the like are static structure) to collect their leaves and the
*signature*: the structure with every static value, each tensor's shape, dtype
and place (host, device, layout), which tensors are the same array, the
learning phase and the backend new tensors are made on. Two calls with equal signatures run
the same Python path (unless the body reads something else, which the
periodic verification catches), so a capture of one replays for the other.

Python floats passed directly as arguments are *parameters* (their values
enter the compiled program); floats inside models or containers (layer
settings such as BatchNorm's momentum) are part of the signature.
"""

from __future__ import annotations

from ..backends.base import get_backend
from ..backends.xla.layouts import placement
from ..learning_phase import current_learning_phase
from ..precision import get_policy
from ..tensor import Tensor
from ..tree import is_leaf, tree_children

__all__ = ["Call", "NotCapturable", "Signature", "loose_statics", "tensor_part"]

_plain = float.__float__


class NotCapturable(Exception):
    """The call cannot run as a capture (a tensor being differentiated); run the body as is."""


class _Identity:
    """An unhashable static value, compared by identity (and kept alive while compared)."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def __eq__(self, other) -> bool:
        return isinstance(other, _Identity) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


class Signature:
    """The parts of a call's signature, hashed once (a dict key looked up several times).

    Examples
    --------
    >>> Signature([("s", int, 3), "training"]) == Signature([("s", int, 3), "training"])
    True
    """

    __slots__ = ("parts", "_hash")

    def __init__(self, parts) -> None:
        parts = tuple(parts)
        try:
            self._hash = hash(parts)
        except TypeError:  # a static value without a hash (a NumPy array, a set)
            parts = tuple(_hashable(part) for part in parts)
            self._hash = hash(parts)
        self.parts = parts

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return (isinstance(other, Signature) and self._hash == other._hash
                and self.parts == other.parts)


def _hashable(part):
    """``part`` with unhashable static values compared by identity instead."""
    if isinstance(part, tuple) and part[:1] == ("s",):
        try:
            hash(part)
        except TypeError:
            return ("s", _Identity(part[2]))
    return part


class Call:
    """The inputs of one call of a captured step.

    Attributes
    ----------
    args, kwargs
        As passed.
    leaves : list
        Their Tensor and float leaves (``tree_flatten`` order).
    signature : Signature
        Equal for calls a capture may replay.
    parameters : list of int
        Indices in ``leaves`` of the floats passed directly as arguments.
    cells : list of tuple
        ``(State cell, index in leaves of its tensor or None)`` for every
        cell in the arguments.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.capture.calls import Call
    >>> x = s4tf.ones([2]).to("xla")
    >>> a, b = Call((x, 0.1, 3), {}), Call((x, 0.2, 3), {})
    >>> a.signature == b.signature, a.parameters      # 0.1 vs 0.2: a parameter
    (True, [1])
    >>> a.signature == Call((x, 0.1, 4), {}).signature  # an int is static
    False
    """

    __slots__ = ("args", "kwargs", "leaves", "signature", "parameters", "cells", "_open")

    def __init__(self, args, kwargs) -> None:
        self.args, self.kwargs = args, kwargs
        self.leaves, self.parameters, self.cells = [], [], []
        parts: list = []
        self._open: set = set()
        self._walk((args, kwargs), 0, parts)
        del self._open
        aliases = {}
        for j, leaf in enumerate(self.leaves):
            if not isinstance(leaf, float):
                first = aliases.setdefault(id(leaf._data), j)
                if first != j:
                    parts.append(("alias", j, first))
        parts.append(current_learning_phase())
        parts.append(get_backend())
        # The precision policy decides what the layers compute in: a step captured
        # under one policy must not replay under another.
        parts.append(get_policy().name)
        self.signature = Signature(parts)

    def _walk(self, value, depth, parts) -> None:
        """Append ``value``'s leaves to ``leaves`` and its signature parts to ``parts``."""
        if is_leaf(value):
            j = len(self.leaves)
            self.leaves.append(value)
            if isinstance(value, float):
                if depth == 2:  # an argument itself: a parameter of the program
                    self.parameters.append(j)
                    parts.append("F")
                else:
                    parts.append(("f", _plain(value)))
            else:
                parts.append(tensor_part(value))
            return
        kind, children = tree_children(value)
        if kind is None:
            parts.append(("s", type(value), value))
            return
        # A container that holds itself (``d["self"] = d``) has no finite signature:
        # say so by name instead of recursing until Python gives up.
        if id(value) in self._open:
            raise TypeError(
                f"s4tf.xla.compile: an argument holds a {type(value).__name__} that contains "
                "itself (a reference cycle); a captured step's arguments must be trees. "
                "Pass the values the step reads instead of the cyclic container."
            )
        self._open.add(id(value))
        if kind == "cell":
            self.cells.append((value, len(self.leaves) if is_leaf(value.value) else None))
        # A node's class and field names, a dict's keys, a tuple's type and length.
        parts.append((kind, value.__class__, tuple(key for key, _, _ in children)))
        leaves = self.leaves
        for _, child, _ in children:
            # A model's tensors, the bulk of the leaves, without a call each (a replay
            # walks every argument on every call); anything else takes the general path.
            if type(child) is Tensor:
                leaves.append(child)
                parts.append(tensor_part(child))
            else:
                self._walk(child, depth + 1, parts)
        self._open.discard(id(value))


def tensor_part(tensor):
    """A tensor argument's part of the signature: shape, dtype and place (host or layout).

    Raises :class:`NotCapturable` for a tensor being differentiated, and
    ``TypeError`` with the fix for one that is not on the xla backend.

    Examples
    --------
    >>> import s4tf
    >>> tensor_part(s4tf.ones([2, 3]).to("xla"))[:2]
    ((2, 3), dtype('float32'))
    """
    if tensor._traced:
        raise NotCapturable
    data = tensor._data
    if tensor._backend.name != "xla":
        raise TypeError(
            f"s4tf.xla.compile: an argument holds a {tensor._backend.name} tensor of shape "
            f"{tensor.shape}; a captured step runs on the lazy xla backend. Make the values "
            "on it (`with s4tf.backend(\"xla\"):`, or s4tf.set_backend(\"xla\")) or move "
            "them there with `.to(\"xla\")` / s4tf.to_backend(value, \"xla\")."
        )
    if data.host:
        return (data.shape, data.dtype, "host")
    return (data.shape, data.dtype, placement(data.buffer))


def loose_statics(value):
    """The static values in ``value`` that are not fields of a Differentiable value.

    Examples
    --------
    >>> import s4tf
    >>> list(loose_statics({"n": 3, "layer": s4tf.layers.Dense(2, 2), "x": 1.0}))
    [3]
    """
    if is_leaf(value):
        return
    kind, children = tree_children(value)
    if kind is None:
        yield value
    elif kind != "node":
        for _, child, _ in children:
            yield from loose_statics(child)
