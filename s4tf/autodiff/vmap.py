"""``s4tf.vmap``: a function of one example made a function of a batch, by batching rules.

The arguments' tensors are wrapped in batch tracers of a new
:class:`~s4tf.autodiff.batching.BatchTrace` (their mapped axis hidden), the
function runs once, and each primitive it applies runs its batching rule on
the whole batch. The results' batch axes are then moved to ``out_axes``.
"""

from __future__ import annotations

import functools

from .. import random as _random
from ..creation import full
from ..ops.batching_helpers import move_axis
from ..ops.broadcasting import broadcast_to
from ..ops.shapes import expand_dims, shape_of
from ..tensor import Tensor
from ..tree import join_path, tree_children, tree_flatten, tree_leaf_paths
from .batching import BatchTrace, BatchTracer

__all__ = ["vmap"]


def _is_axis(axes) -> bool:
    return axes is None or (isinstance(axes, int) and not isinstance(axes, bool))


_FAMILIES = {"list": "sequence", "tuple": "sequence", "dict": "mapping", "node": "mapping"}


def _leaf_axes(value, axes, path, what, out) -> None:
    """Append the axis of each leaf of ``value`` (``tree_flatten`` order) given ``axes``.

    ``axes`` is an int or None for the whole of ``value``, or a structure of
    ``value``'s shape (a list/tuple for a sequence; a dict for a dict or a
    Differentiable value's fields) holding ints, None or further structure.
    """
    if _is_axis(axes):
        for leaf_path in tree_leaf_paths(value):
            out.append((axes, path if leaf_path == "value" else join_path(path, leaf_path)))
        return
    kind, children = tree_children(value)
    axes_kind, axes_children = tree_children(axes)
    if kind is None or axes_kind is None or _FAMILIES.get(kind) != _FAMILIES.get(axes_kind):
        raise ValueError(
            f"vmap: {what} at {_place(path, what)} is {axes!r:.80}, which does not match the "
            f"value there (a {type(value).__name__}). Give an int (the axis to map), None (not "
            "mapped), or a structure of the value's shape holding those."
        )
    given = {key: child for key, child, _ in axes_children}
    if len(given) != len(children) if _FAMILIES[kind] == "sequence" else not set(given) <= {
            key for key, _, _ in children}:
        raise ValueError(
            f"vmap: {what} at {_place(path, what)} has the entries {sorted(map(str, given))}, "
            f"but the value there has {[str(key) for key, _, _ in children]}; give one entry "
            "per element (a dict may leave fields out: they get None)."
        )
    for key, child, _ in children:
        _leaf_axes(child, given.get(key), join_path(path, key), what, out)


def _argument_axes(args, in_axes):
    if _is_axis(in_axes):
        return in_axes
    if isinstance(in_axes, list | tuple):
        if len(in_axes) != len(args):
            raise ValueError(
                f"vmap: in_axes has {len(in_axes)} entries but the function got {len(args)} "
                "arguments; give one entry per argument (an int, None, or a structure of that "
                "argument's shape), or one int for all."
            )
        return tuple(in_axes)
    raise TypeError(
        f"vmap: in_axes must be an int, None, or a tuple with one entry per argument; got "
        f"{type(in_axes).__name__}."
    )


def _normal_axis(axis, positions, name, what):
    """``axis`` in ``[0, positions)``, negative ones counted from the end; else a ValueError."""
    if not -positions <= axis < positions:
        rank = positions if what == "in_axes" else positions - 1
        raise ValueError(
            f"vmap: {what} asks for axis {axis} of {name}, which has rank {rank}; use an axis "
            f"in [{-positions}, {positions - 1}]."
        )
    return axis % positions


def _place(path, what):
    """Where ``path`` is, for messages: ``args[1].weight`` or ``the result.0``."""
    if what == "out_axes":
        return f"the result{'.' + path if path else ''}"
    index, dot, rest = path.partition(".")
    return f"args[{index}]{dot}{rest}" if path else "the arguments"


def _wrap_arguments(args, in_axes):
    """A new :class:`BatchTrace` and ``args`` with their mapped tensors wrapped in its tracers."""
    leaves, treedef = tree_flatten(tuple(args))
    axes = []
    _leaf_axes(tuple(args), _argument_axes(args, in_axes), "", "in_axes", axes)
    sizes, mapped = {}, []
    for leaf, (axis, path) in zip(leaves, axes, strict=True):
        name = _place(path, "in_axes")
        if axis is None:
            mapped.append(None)
            continue
        if not isinstance(leaf, Tensor):
            raise ValueError(
                f"vmap: in_axes maps axis {axis} of {name}, a Python {type(leaf).__name__}, which "
                "has no axes; give it None in in_axes (it is then the same for every example) or "
                "pass a Tensor."
            )
        shape = shape_of(leaf)
        if not shape:
            raise ValueError(
                f"vmap: in_axes maps axis {axis} of {name}, a scalar tensor, which has no axes; "
                "give it None.")
        axis = _normal_axis(axis, len(shape), name, "in_axes")
        sizes[name] = shape[axis]
        mapped.append(axis)
    if not sizes:
        raise ValueError(
            "vmap: no argument is mapped (every in_axes entry is None, or the arguments hold no "
            "tensors); map at least one tensor's axis, e.g. in_axes=0."
        )
    if len(set(sizes.values())) > 1:
        found = ", ".join(f"{name}: {size}" for name, size in sizes.items())
        raise ValueError(
            f"vmap: the mapped axes have different sizes ({found}); every mapped axis must have "
            "the batch's size."
        )
    trace = BatchTrace(next(iter(sizes.values())))
    wrapped = [leaf if axis is None else BatchTracer(trace, leaf, axis)
               for leaf, axis in zip(leaves, mapped, strict=True)]
    return trace, treedef.unflatten(wrapped)


def _output(leaf, axis, path, trace):
    """One leaf of the result with the batch on ``axis`` (None: not batched)."""
    batched = type(leaf) is BatchTracer and leaf._trace is trace
    name = _place(path, "out_axes")
    if axis is None:
        if batched:
            raise ValueError(
                f"vmap: out_axes gives None for {name}, but it differs between examples; give "
                "it an axis for the batch."
            )
        return leaf
    if batched:
        rank = len(shape_of(leaf._primal))
        return move_axis(leaf._primal, leaf._batch_dim, _normal_axis(axis, rank, name, "out_axes"))
    # The same for every example: repeated along the batch axis, as jax.vmap does.
    if not isinstance(leaf, Tensor):
        return full((trace.size,), leaf)
    shape = shape_of(leaf)
    axis = _normal_axis(axis, len(shape) + 1, name, "out_axes")
    return broadcast_to(expand_dims(leaf, axis), (*shape[:axis], trace.size, *shape[axis:]))


def vmap(f, in_axes=0, out_axes=0):
    """``f`` vectorised over an axis of its arguments: one call runs every example at once.

    Each primitive ``f`` applies runs its batching rule on the whole batch (a
    rule per primitive, beside its derivative rules): there is no Python loop
    over examples, and on the lazy xla backend the batched graph is what is
    recorded and compiled. ``vmap`` composes with every differential operator
    in both orders and with itself: ``vmap(gradient(of=loss))`` gives
    per-example gradients, ``gradient(of=vmap(f))`` differentiates a batched
    function, ``vmap(vmap(f))`` maps two axes.

    Parameters
    ----------
    f : callable
        A function of one example's values.
    in_axes : int, None, or tuple
        The axis of each argument to map: an int or None (not mapped: the same
        for every example) for all arguments, or a tuple with one entry per
        argument, each an int, None, or a structure of that argument's shape
        (a list/tuple for a sequence, a dict for a dict or a Differentiable
        value's fields; fields left out are not mapped). Every Tensor leaf
        under an int is mapped (int tensors too: labels); Python numbers
        cannot be mapped.
    out_axes : int, None, or structure
        Where the batch axis goes in each result leaf. A result that is the
        same for every example is repeated along it (None keeps it as it is,
        and is refused for a result that differs between examples).

    Returns
    -------
    callable
        The batched function.

    Notes
    -----
    Random draws inside ``f`` (``s4tf.random``, dropout) are made for the
    whole batch at once: each example gets its own numbers, as per-example
    dropout expects. Python control flow cannot branch on a batched value
    (``bool()`` of one raises); use ``s4tf.where``.

    Examples
    --------
    >>> import s4tf
    >>> x = s4tf.Tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> s4tf.vmap(lambda row: (row * row).sum())(x).tolist()
    [5.0, 25.0, 61.0]
    >>> w = s4tf.Tensor([1.0, -1.0])
    >>> s4tf.vmap(lambda w, row: row @ w, in_axes=(None, 0))(w, x).tolist()
    [-1.0, -1.0, -1.0]

    Per-example gradients: the gradient of each example's loss, in one pass.

    >>> loss = lambda w, row: ((row * w).sum()) ** 2
    >>> s4tf.vmap(s4tf.gradient(of=loss), in_axes=(None, 0))(w, x)[0].tolist()
    [[-2.0, -4.0], [-6.0, -8.0], [-10.0, -12.0]]
    """
    if not callable(f):
        raise TypeError(f"vmap: f must be callable, got {type(f).__name__}.")
    if not _is_axis(in_axes) and not isinstance(in_axes, list | tuple):
        raise TypeError(
            f"vmap: in_axes must be an int, None, or a tuple with one entry per argument; got "
            f"{type(in_axes).__name__}."
        )

    # Not f's __dict__: a model's fields copied onto the function would be extra
    # references to its tensors, and its updates would copy instead of writing in place.
    @functools.wraps(f, updated=())
    def vectorized(*args):
        trace, batched_args = _wrap_arguments(args, in_axes)

        def batched(value):
            return BatchTracer(trace, value, 0)

        with _random.per_example(trace.size, batched):
            result = f(*batched_args)
        leaves, treedef = tree_flatten(result)
        axes = []
        _leaf_axes(result, out_axes, "", "out_axes", axes)
        return treedef.unflatten([_output(leaf, axis, path, trace)
                                  for leaf, (axis, path) in zip(leaves, axes, strict=True)])

    return vectorized
