"""s4tf values as JAX pytrees, registered without importing JAX.

Every Differentiable class, :class:`~s4tf.Tensor` and :class:`~s4tf.State` is
registered with ``jax.tree_util``, so that ``jax.jit``, ``jax.grad``,
``jax.vmap``, ``jax.lax.scan`` and optax take s4tf models as they take
Equinox modules:

* a Tensor is a node with one child, its values as a ``jax.Array`` (the
  backend's :meth:`~s4tf.backends.base.Backend.to_jax`: the device buffer
  itself on xla and jax, a copy from the host on naive). Rebuilt from a JAX
  *tracer* it is a tensor of the ``jax`` backend around the tracer, so s4tf
  ops inside the transformation run their JAX kernels; rebuilt from a
  concrete ``jax.Array`` (a transformation's results, ``jax.tree.map``) it
  lands on the current backend (:func:`s4tf.get_backend`; without a copy on
  xla and jax). Anything else JAX rebuilds a tree from (``None``, shapes,
  ``ShapeDtypeStruct``) is kept as it is. The node carries no backend, so a
  model's structure is the same wherever its tensors live (``lax.scan``
  checks that its carry keeps one structure);
* a Differentiable's children are the fields that hold data (tensors,
  ``State`` cells, Differentiable values, containers holding them, and floats
  outside ``no_derivative`` fields: JAX leaves, as JAX treats Python floats);
  every other field (ints, strings, activation functions, ``no_derivative``
  floats such as a BatchNorm's momentum) is static structure, so jit does
  not trace it and Python control flow on it keeps working;
* a ``State`` cell is a node with one child, its value (a new cell is made
  on rebuilding, as :func:`s4tf.tree_unflatten` does).

Importing JAX takes a second or more, so s4tf never imports it just for
this: classes defined while JAX is not loaded wait in a list, and an import
hook registers them right after the program's own ``import jax``.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types

import numpy as np

from ..backends.base import current_backend, get_backend_object
from ..tensor import Tensor
from ..tree import node_type
from .state import State

__all__ = ["register", "register_pending"]  # tensor_from_jax is shared with s4tf.interop

_PENDING: list = [Tensor, State]


def register(cls) -> None:
    """Register ``cls`` (already registered with :mod:`s4tf.tree`) with JAX, now or once
    JAX is imported."""
    jax = sys.modules.get("jax")
    if jax is None:
        _PENDING.append(cls)
        return
    _register_with(jax, cls)


class _Static:
    """The static fields of one value, as JAX's auxiliary data: compared by value.

    ``jax.jit`` hashes a tree's structure to find its compiled program, so
    this must hash; a field value that cannot (a list of sizes) hashes by
    its type, which only makes equal structures share a bucket.
    """

    __slots__ = ("items",)

    def __init__(self, items: tuple) -> None:
        self.items = items

    def __eq__(self, other) -> bool:
        if type(other) is not _Static or len(other.items) != len(self.items):
            return False
        for (name, a), (other_name, b) in zip(self.items, other.items, strict=True):
            if name != other_name or not _same(a, b):
                return False
        return True

    def __hash__(self) -> int:
        return hash(tuple((name, _hash(value)) for name, value in self.items))

    def __repr__(self) -> str:
        return f"static({', '.join(name for name, _ in self.items)})"


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # an array-valued ==, or one that refuses: only identity counts
        return False


def _hash(value) -> int:
    try:
        return hash(value)
    except TypeError:
        return hash(type(value).__qualname__)


def _holds_data(value, jax_array: type, float_is_data: bool) -> bool:
    """Whether a field's value has JAX leaves: tensors, cells, nodes, JAX arrays (or floats)."""
    kind = type(value)
    if kind is Tensor or kind is State or isinstance(value, Tensor | jax_array):
        return True
    if kind is float:
        return float_is_data
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        return any(_holds_data(v, jax_array, float_is_data) for v in value)
    if isinstance(value, dict):
        return any(_holds_data(v, jax_array, float_is_data) for v in value.values())
    found = node_type(value.__class__)
    return found is not None


def _register_with(jax, cls):
    if cls is Tensor:
        return _register_tensor(jax)
    if cls is State:
        _register(jax, State, lambda cell: ((cell.value,), None), lambda _, children: State(children[0]))
        return None
    node = node_type(cls)
    no_derivative = node.no_derivative
    fields = node.fields
    jax_array = jax.Array
    new = object.__new__

    # Called on every jax.jit call for every layer of a model: exact types first.
    def flatten(value):
        state = value.__dict__
        children, static, names = [], [], []
        for name in fields:
            child = state[name] if name in state else getattr(value, name)
            kind = type(child)
            if kind is Tensor or kind is State:
                data = True
            elif kind in _STATIC_TYPES:
                data = kind is float and name not in no_derivative
            else:
                data = _holds_data(child, jax_array, name not in no_derivative)
            if data:
                children.append(child)
                names.append(name)
            else:
                static.append((name, child))
        return children, (tuple(names), _Static(tuple(static)))

    def unflatten(aux, children):
        names, static = aux
        value = new(cls)  # as tree_unflatten rebuilds: no __init__, fields only
        state = value.__dict__
        state.update(static.items)
        state.update(zip(names, children, strict=True))
        return value

    _register(jax, cls, flatten, unflatten)
    return None


# Field values that are never containers: static, except floats outside no_derivative.
_STATIC_TYPES = frozenset((float, int, bool, str, type(None), types.FunctionType,
                           types.BuiltinFunctionType))


def _register_tensor(jax):
    jax_array, tracer = jax.Array, jax.core.Tracer
    new = object.__new__

    def flatten(tensor):
        return (tensor._backend.to_jax(tensor._data),), None

    def unflatten(_, children):
        (leaf,) = children
        tensor = new(Tensor)
        if isinstance(leaf, tracer):
            # Looked up here, not at registration: loading the jax backend sets JAX up
            # for s4tf (64-bit types), which a program that only imports JAX must not get.
            tensor._data, tensor._backend = leaf, get_backend_object("jax")
        elif isinstance(leaf, jax_array):
            backend = current_backend()
            tensor._data, tensor._backend = backend.from_jax(leaf), backend
        elif isinstance(leaf, np.ndarray):
            return Tensor(leaf)
        else:
            return leaf  # JAX rebuilding a tree of something else (None, shapes, ...)
        return tensor

    _register(jax, Tensor, flatten, unflatten)


def tensor_from_jax(array, backend=None) -> Tensor:
    """A tensor around ``jax.Array`` ``array``, as JAX's results come back to s4tf.

    A JAX tracer (inside ``jax.jit``, ``grad``, ``vmap``, ...) gives a tensor of
    the ``jax`` backend around it; a concrete array goes to ``backend`` (a
    :class:`~s4tf.backends.base.Backend`; the current backend when omitted),
    without a copy on xla and jax. Shared with :mod:`s4tf.interop`; not user API.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from s4tf.differentiable.jax_pytrees import tensor_from_jax
    >>> tensor_from_jax(jnp.ones(2)).backend
    'naive'
    >>> seen = []
    >>> _ = jax.jit(lambda a: seen.append(tensor_from_jax(a).backend) or a)(jnp.ones(2))
    >>> seen
    ['jax']
    """
    jax = sys.modules["jax"]
    if isinstance(array, jax.core.Tracer):
        backend = get_backend_object("jax")
    elif backend is None:
        backend = current_backend()
    return Tensor._wrap(backend.from_jax(array), backend)


def _register(jax, cls, flatten, unflatten):
    try:
        jax.tree_util.register_pytree_node(cls, flatten, unflatten)
    except ValueError:
        pass  # already registered (a class redefined in a notebook cell)


def register_pending() -> None:
    """Register every class defined before JAX was imported (JAX must be loaded)."""
    jax = sys.modules["jax"]
    while _PENDING:
        _register_with(jax, _PENDING.pop(0))


class _JaxImportHook:
    """Registers pending classes right after ``import jax``, without importing it first:
    the first time JAX is imported, this finder wraps its loader."""

    def find_spec(self, name, path=None, target=None):
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _JaxImportHook)]
            register_pending()

        loader.exec_module = exec_module
        return spec


if "jax" not in sys.modules:
    sys.meta_path.insert(0, _JaxImportHook())
else:
    register_pending()
