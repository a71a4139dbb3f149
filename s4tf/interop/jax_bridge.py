"""s4tf values in JAX and back: ``to_jax``, ``from_jax`` and :func:`as_jax_function`.

Three pieces meet here (how they work: ``s4tf/HOW_IT_WORKS.md``, "Interop"):

* the ``jax`` backend (:mod:`s4tf.backends.jax`), whose tensors hold JAX
  arrays or JAX tracers and whose kernels are the lazy backend's JAX replay
  kernels, called at once: s4tf ops on a traced value are ``jax.numpy`` calls;
* the pytree registration (:mod:`s4tf.differentiable.jax_pytrees`): tensors
  flatten to JAX arrays, so every s4tf value is a JAX pytree whose leaves are
  arrays, and come back as tensors of the jax backend around JAX's tracers;
* :func:`as_jax_function`, which turns an s4tf function of s4tf values into a
  pure JAX function of flat arrays (what ``jax.export`` and jax2onnx take).
"""

from __future__ import annotations

import importlib

from ..backends.base import backend as backend_scope
from ..tensor import Tensor
from ..tree import tree_flatten

__all__ = ["JaxFunctionTree", "as_jax_function", "from_jax", "jax_backend", "to_jax"]


def _jax():
    try:
        return importlib.import_module("jax")
    except ImportError as error:
        raise ImportError(
            f"s4tf's JAX interoperability needs JAX, which could not be imported ({error}). "
            "Install it with: pip install 's4tf[xla]'"
        ) from error


def jax_backend():
    """The ``jax`` backend object: tensors holding JAX arrays or tracers (imports JAX).

    Examples
    --------
    >>> from s4tf.interop import jax_bridge
    >>> jax_bridge.jax_backend().name
    'jax'
    """
    _jax()
    from ..backends.base import get_backend_object

    return get_backend_object("jax")


def _is_tensor(value) -> bool:
    return isinstance(value, Tensor)


def to_jax(value):
    """``value`` with every tensor replaced by a ``jax.Array`` of its values.

    On the xla and jax backends the array *is* the tensor's buffer (no copy; a
    pending lazy value is computed first, and the buffer is never donated to
    XLA afterwards, since you hold it now); on naive it is a copy of the host
    array. Models, lists, dicts and tuples keep their structure (a model's
    fields then hold JAX arrays: it is a pytree optax and JAX functions take);
    floats and other fields stay as they are.

    Parameters
    ----------
    value : Tensor or any s4tf value
        A tensor, a model, an optimizer's slots, a batch, ...

    Returns
    -------
    jax.Array or the same structure with ``jax.Array`` leaves.

    Examples
    --------
    >>> import s4tf
    >>> x = s4tf.to_jax(s4tf.Tensor([1.0, 2.0]))
    >>> type(x).__name__, x.tolist()
    ('ArrayImpl', [1.0, 2.0])
    >>> params = s4tf.to_jax(s4tf.layers.Dense(3, 2))
    >>> type(params.weight).__name__, params.weight.shape
    ('ArrayImpl', (3, 2))
    """
    jax = _jax()
    if isinstance(value, Tensor):
        return _array_of(value)
    return jax.tree_util.tree_map(lambda leaf: _array_of(leaf) if _is_tensor(leaf) else leaf,
                                  value, is_leaf=_is_tensor)


def _array_of(tensor: Tensor):
    if tensor._traced:
        from ..non_differentiable import NonDifferentiableError

        raise NonDifferentiableError(
            "to_jax() of a value being differentiated by s4tf: s4tf's derivative cannot follow "
            "it into JAX. Differentiate with JAX instead (jax.grad over the s4tf function), or "
            "call to_jax on the result."
        )
    return tensor._backend.to_jax(tensor._data)


def from_jax(tree, like):
    """``like`` with its tensors replaced by the JAX arrays of ``tree``, on ``like``'s backends.

    The reverse of :func:`to_jax`: ``tree`` has ``like``'s structure with
    arrays in place of tensors (``to_jax(like)``, or what JAX or optax made of
    it). Each array becomes a tensor on the backend of the tensor it replaces,
    without a copy on xla and jax (JAX arrays are never written, and the lazy
    backend never donates a buffer it got this way); a JAX tracer becomes a
    tensor of the ``jax`` backend. An array of another dtype is cast to the
    dtype of the tensor it replaces.

    Parameters
    ----------
    tree : jax.Array or pytree of them
        The new values, in ``like``'s structure.
    like : Tensor or any s4tf value
        The value to rebuild: its structure, static fields and backends.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> import s4tf
    >>> dense = s4tf.layers.Dense(3, 2)
    >>> doubled = s4tf.from_jax({"weight": jnp.zeros((3, 2)), "bias": jnp.ones(2)}["bias"],
    ...                         like=dense.bias)
    >>> doubled.tolist(), doubled.backend
    ([1.0, 1.0], 'naive')
    >>> new = s4tf.from_jax(s4tf.to_jax(dense), like=dense)
    >>> type(new).__name__, bool((new.weight == dense.weight).numpy().all())
    ('Dense', True)
    """
    jax = _jax()
    like_leaves, like_def = jax.tree_util.tree_flatten(like, is_leaf=_is_tensor)
    arrays, tree_def = jax.tree_util.tree_flatten(tree)
    if len(arrays) != len(like_leaves):
        raise ValueError(
            f"from_jax: the tree has {len(arrays)} leaves but like= has {len(like_leaves)} "
            f"({tree_def} against {like_def}). Pass the structure to_jax(like) returned, with "
            "one array per tensor."
        )
    from ..differentiable.jax_pytrees import tensor_from_jax

    rebuilt = []
    for i, (old, new) in enumerate(zip(like_leaves, arrays, strict=True)):
        if isinstance(old, Tensor):
            if not isinstance(new, jax.Array):
                new = jax.numpy.asarray(new)
            if tuple(new.shape) != old.shape:
                raise ValueError(
                    f"from_jax: leaf {i} has shape {tuple(new.shape)} but like='s tensor there "
                    f"has shape {old.shape}; the tree must hold arrays of like's shapes."
                )
            if new.dtype != old.dtype.numpy:  # like= decides dtypes too (x64 JAX makes float64)
                new = new.astype(old.dtype.numpy)
            rebuilt.append(tensor_from_jax(new, old._backend))
        else:
            rebuilt.append(new)
    return like_def.unflatten(rebuilt)


class JaxFunctionTree:
    """How the flat arrays of an :func:`as_jax_function` map to s4tf values, and back.

    The arrays are the **tensor** leaves of the value, in
    :func:`s4tf.tree_leaves` order (JAX arrays; integer tensors included);
    Python floats among the leaves (hyperparameters such as a BatchNorm's
    momentum, a float argument) and every static field are constants of the
    function, fixed at the example's values.

    Attributes
    ----------
    treedef : s4tf.TreeDef
        The structure, as :func:`s4tf.tree_flatten` gives it.
    num_leaves : int
        How many arrays the function takes (``in_tree``) or returns (``out_tree``).
    shapes, dtypes : tuple
        Each array's shape and NumPy dtype, in order.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.interop import as_jax_function
    >>> jfn, in_tree, out_tree = as_jax_function(lambda x, s: x * s, s4tf.ones([2]), 3.0)
    >>> in_tree.num_leaves, in_tree.shapes, out_tree.num_leaves
    (1, ((2,),), 1)
    >>> out_tree.unflatten(jfn(*in_tree.flatten((s4tf.ones([2]), 3.0)))).tolist()
    [3.0, 3.0]
    """

    def __init__(self, treedef, leaves) -> None:
        self.treedef = treedef
        self._positions = tuple(i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor))
        self._constants = list(leaves)
        tensors = [leaves[i] for i in self._positions]
        for leaf in tensors:
            if leaf._traced:
                _array_of(leaf)  # raises, naming the fix
        self.shapes = tuple(t.shape for t in tensors)
        self.dtypes = tuple(t.dtype.numpy for t in tensors)
        for i in self._positions:
            self._constants[i] = None  # no tensor is kept alive by the function

    @property
    def num_leaves(self) -> int:
        return len(self._positions)

    def flatten(self, value) -> list:
        """The arrays of ``value`` (which must have this structure), for the function."""
        leaves, treedef = tree_flatten(value)
        if len(leaves) != len(self._constants) or any(
                not isinstance(leaves[i], Tensor) for i in self._positions):
            raise ValueError(
                f"This value has {len(leaves)} leaves where the function's example had "
                f"{len(self._constants)} ({self.num_leaves} of them tensors): pass values of the "
                "structure of the example the function was made from."
            )
        return [_array_of(leaves[i]) for i in self._positions]

    def unflatten(self, arrays, backend=None):
        """The s4tf value of this structure around ``arrays`` (see :func:`from_jax` for where
        they land: tracers on ``jax``, concrete arrays on ``backend`` or the current one)."""
        jax = _jax()
        from ..differentiable.jax_pytrees import tensor_from_jax

        arrays = list(arrays)
        if len(arrays) != len(self._positions):
            raise TypeError(
                f"The function takes {len(self._positions)} arrays (the tensors of its example "
                f"arguments, in s4tf.tree_leaves order); got {len(arrays)}."
            )
        leaves = list(self._constants)
        for i, array in zip(self._positions, arrays, strict=True):
            leaves[i] = tensor_from_jax(jax.numpy.asarray(array), backend)
        return self.treedef.unflatten(leaves)

    def __repr__(self) -> str:
        return f"JaxFunctionTree({self.num_leaves} arrays: {list(self.shapes)})"


def as_jax_function(fn, *example_args):
    """``fn`` as a pure JAX function of flat arrays: ``(jfn, in_tree, out_tree)``.

    ``jfn(*arrays)`` takes the tensor leaves of ``fn``'s arguments (in
    :func:`s4tf.tree_leaves` order over the tuple of arguments), rebuilds the
    arguments as s4tf values around them (tensors of the ``jax`` backend), runs
    ``fn`` with the current backend set to ``jax`` (tensors ``fn`` creates go
    there too) and returns the tensor leaves of its result as a tuple of JAX
    arrays. It is an ordinary JAX function: ``jax.jit``, ``jax.grad``,
    ``jax.vmap``, ``jax.export`` and jax2onnx take it. Python floats among the
    arguments and every static field are constants fixed at the example's
    values (see :class:`JaxFunctionTree`); random draws made inside ``fn``
    (dropout) are constants of a trace too.

    Parameters
    ----------
    fn : callable
        An s4tf function: an inference function ``lambda x: model(x)``, a whole
        training step ``(model, slots, batch) -> (model, slots, loss)``, ...
    *example_args
        Arguments of the structure, shapes and dtypes ``jfn`` will be called
        with; ``fn`` is traced once (abstractly, ``jax.eval_shape``) to find
        its result's structure.

    Returns
    -------
    jfn : callable
        ``jfn(*arrays) -> tuple of arrays``.
    in_tree, out_tree : JaxFunctionTree
        ``in_tree.flatten(args)`` gives ``jfn``'s arrays for new arguments;
        ``out_tree.unflatten(outputs)`` rebuilds ``fn``'s result.

    Examples
    --------
    >>> import jax
    >>> import s4tf
    >>> from s4tf.interop import as_jax_function
    >>> s4tf.random.seed(0)
    >>> model = s4tf.layers.Dense(3, 2)
    >>> x = s4tf.ones([4, 3])
    >>> jfn, in_tree, out_tree = as_jax_function(lambda m, x: m(x), model, x)
    >>> in_tree.num_leaves, out_tree.shapes
    (3, ((4, 2),))
    >>> (y,) = jax.jit(jfn)(*in_tree.flatten((model, x)))
    >>> bool(abs(y - model(x).numpy()).max() < 1e-6)
    True
    """
    jax = _jax()
    arg_leaves, arg_def = tree_flatten(tuple(example_args))
    in_tree = JaxFunctionTree(arg_def, arg_leaves)
    found: list = []

    def jfn(*arrays):
        with backend_scope("jax"):
            args = in_tree.unflatten(arrays)
            result = fn(*args)
            out_leaves, out_def = tree_flatten(result)
        if not found:
            found.append(JaxFunctionTree(out_def, out_leaves))
        elif len(out_leaves) != len(found[0]._constants):
            raise ValueError(
                f"{getattr(fn, '__name__', 'fn')} returned {len(out_leaves)} leaves on this call "
                f"and {len(found[0]._constants)} on its first: a function made into a JAX "
                "function must return the same structure every time."
            )
        return tuple(_array_of(leaf) for leaf in out_leaves if isinstance(leaf, Tensor))

    jfn.__name__ = getattr(fn, "__name__", "fn")
    jfn.__doc__ = getattr(fn, "__doc__", None)
    jax.eval_shape(jfn, *(jax.ShapeDtypeStruct(s, d) for s, d in
                          zip(in_tree.shapes, in_tree.dtypes, strict=True)))
    return jfn, in_tree, found[0]
