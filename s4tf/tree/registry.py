"""The registry: how instances of a registered class decompose.

A *node* class (every :class:`s4tf.Differentiable` subclass, registered when
it is created, as with JAX's ``register_pytree_node``) decomposes into its
fields, some of which differentiation does not see; a *cell* class
(:class:`s4tf.State`) holds one value that differentiation never enters. The
walks of :mod:`s4tf.tree` dispatch on this registry, so they need no class
above :class:`~s4tf.tensor.Tensor`.
"""

from __future__ import annotations

__all__ = ["NodeType", "new_instance", "node_type", "register_cell", "register_node"]

class NodeType:
    """How instances of one registered class decompose (see :func:`register_node`).

    Attributes
    ----------
    cls : type
    fields : tuple of str
        Every field, in order (a cell's one field is ``"value"``).
    no_derivative : frozenset of str
        The fields differentiation does not see (all of a cell's).
    tangent : type or None
        The class of the instances' tangent vectors (``Type.TangentVector``);
        a class that is its own tangent class is a vector space.
    cell : bool
        Whether instances are mutable cells, rebuilt with ``cls(value)`` and
        static as a whole under differentiation; nodes are rebuilt without
        ``__init__`` (``object.__new__`` and their ``__dict__``).
    """

    __slots__ = ("cls", "fields", "no_derivative", "tangent", "cell")

    def __init__(self, cls, fields, no_derivative, tangent, cell) -> None:
        self.cls, self.fields, self.no_derivative = cls, tuple(fields), frozenset(no_derivative)
        self.tangent, self.cell = tangent, cell

    def children(self, value) -> list:
        """The values of ``value``'s fields, in order."""
        if self.cell:
            return [value.value]
        state = value.__dict__
        try:
            return [state[name] for name in self.fields]
        except KeyError:  # a field left at its class default
            return [state[name] if name in state else getattr(value, name) for name in self.fields]

    def build(self, fields):
        """A new instance with these field values, a dict or ``(name, value)`` pairs (a
        node's are all it keeps)."""
        if self.cell:
            return self.cls(dict(fields)["value"])
        return new_instance(self.cls, fields)

    def __repr__(self) -> str:
        return f"NodeType({self.cls.__qualname__}, fields={self.fields}, cell={self.cell})"


# Registered classes live as long as the program, so plain dicts are the registry and
# the cache of lookups (class -> its own or its nearest base's registration, or None),
# which a new registration empties.
_REGISTRY: dict[type, NodeType] = {}
_FOUND: dict[type, NodeType | None] = {}


def register_node(cls: type, fields, no_derivative=(), tangent: type | None = None) -> None:
    """Register ``cls`` as a node whose instances decompose into ``fields``.

    ``Differentiable`` does this for every subclass when it is created. Fields
    named in ``no_derivative`` are static structure under differentiation.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.tree import node_type
    >>> class Point(s4tf.Differentiable):
    ...     x: float
    ...     label: str = s4tf.no_derivative(default="p")
    >>> node_type(Point).fields, sorted(node_type(Point).no_derivative)
    (('x', 'label'), ['label'])
    """
    _REGISTRY[cls] = NodeType(cls, fields, no_derivative, tangent, cell=False)
    _FOUND.clear()


def register_cell(cls: type) -> None:
    """Register ``cls`` as a mutable cell holding one child, ``value`` (``State``)."""
    _REGISTRY[cls] = NodeType(cls, ("value",), ("value",), None, cell=True)
    _FOUND.clear()


def node_type(cls: type) -> NodeType | None:
    """The registration of ``cls`` or of its nearest registered base; None if neither.

    Pass ``value.__class__`` to classify a value as ``isinstance`` does (a
    consumed model answers its live class there, and then refuses its fields).
    """
    try:
        return _FOUND[cls]
    except KeyError:
        pass
    found = None
    for base in cls.__mro__:
        found = _REGISTRY.get(base)
        if found is not None:
            break
    _FOUND[cls] = found
    return found


def new_instance(cls, fields):
    """An instance of ``cls`` with these attributes (a dict or pairs), made without ``__init__``."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj
