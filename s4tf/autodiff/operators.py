"""The differential operators: gradient, pullback, derivative, differential, ...

All take the points first and the function as ``of=``; with several points the
function gets several arguments and tangents come back as a tuple. Called with
``of=`` alone, each returns the derived function instead.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ..creation import ones_like, zeros_like
from ..ops.tracer import Tracer, is_float_like, strip
from ..tensor import Tensor, from_numpy
from ..tree import is_zero, tree_flatten, tree_map
from ..tree.flatten import LEAF_DEF
from .diagnostics import warn_zero_derivative
from .forward import ForwardTrace, ForwardTracer
from .reverse import ReverseTrace, ReverseTracer, backward

__all__ = [
    "derivative", "differential", "gradient", "pullback", "value_with_derivative",
    "value_with_differential", "value_with_gradient", "value_with_pullback",
    "without_derivative",
]


def _operator(fn):
    """Let ``op(of=f)`` return the derived function ``lambda *points: op(*points, of=f)``.

    Keyword options after ``of=`` (``jacobian``'s ``mode=``) go to ``fn`` and are
    kept by the derived function.
    """

    allowed = [name for name, parameter in inspect.signature(fn).parameters.items()
               if parameter.kind is parameter.KEYWORD_ONLY and name != "of"]

    @functools.wraps(fn)
    def operator(*points, of=None, **options):
        if options and not options.keys() <= set(allowed):
            unknown = sorted(options.keys() - set(allowed))
            raise TypeError(f"{fn.__name__}() got unexpected keyword argument(s) {unknown}; "
                            f"its keywords are {['of', *allowed]}.")
        if of is None:
            raise TypeError(f"{fn.__name__}() needs the function to differentiate as of=...")
        if not callable(of):
            raise TypeError(f"{fn.__name__}(): of= must be callable, got {type(of).__name__}.")
        if not points:
            derived = functools.partial(operator, of=of, **options)
            functools.update_wrapper(derived, of, assigned=("__name__", "__doc__"), updated=())
            return derived
        return fn(*points, of=of, **options)

    return operator


def _flatten_point(point, index):
    leaves, treedef = tree_flatten(point, differentiable=True)
    if not leaves:
        kind = type(point).__name__
        raise TypeError(
            f"cannot differentiate with respect to argument {index} ({kind} {point!r:.60}): it "
            "holds no floats or floating tensors. Pass floats (3.0, not 3), floating tensors "
            "or Differentiable values."
        )
    return leaves, treedef


def _filled(tensor, value):
    """A new tensor of ``tensor``'s shape, dtype and backend holding ``value`` everywhere.

    ``zeros_like``/``ones_like`` without their generic dispatch, for plain Tensors:
    every gradient starts from one such seed and ends with one per unreached point.
    """
    dtype, shape = tensor.dtype, tuple(tensor._data.shape)
    # np.full is a Python-level helper; a 0-d seed (a loss) needs only np.array.
    host = np.full(shape, value, dtype.numpy) if shape else np.array(value, dtype.numpy)
    return from_numpy(host, dtype, like=tensor)


def _finish(tangent, primal):
    """A zero for a missing tangent; a Python float for a float point."""
    if type(primal) is Tensor:
        # The common case: a tensor point's own cotangent, or zeros when none reached it.
        return tangent if tangent is not None else _filled(primal, 0)
    if tangent is None:
        # Of one example's shape under vmap (a batch tracer's shape hides the batch).
        return 0.0 if is_float_like(primal) else zeros_like(primal)
    if is_float_like(primal) and isinstance(tangent, Tensor):
        if type(tangent) is Tensor:
            return float(tangent.item())
        return tangent.reshape(())
    return tangent


def _pack(tangents):
    return tangents[0] if len(tangents) == 1 else tuple(tangents)


# Reverse mode.
@_operator
def value_with_pullback(*points, of):
    """``(f(*points), pullback)``; ``pullback(cotangent)`` gives the points' cotangents.

    Examples
    --------
    >>> import s4tf
    >>> y, pb = s4tf.value_with_pullback(s4tf.Tensor([1.0, 2.0]), of=lambda x: x * x)
    >>> pb(s4tf.Tensor([1.0, 1.0])).tolist()
    [2.0, 4.0]
    """
    return traced_pullback(ReverseTrace(), points, of)


def traced_pullback(trace, points, of):
    """``value_with_pullback(*points, of=of)``, recorded on ``trace``.

    ``trace`` is a new :class:`~.reverse.ReverseTrace` or a subclass of it
    (:func:`s4tf.linear_transpose`'s checks that each op is linear).

    Examples
    --------
    >>> from s4tf.autodiff.operators import traced_pullback
    >>> from s4tf.autodiff.reverse import ReverseTrace
    >>> value, pb = traced_pullback(ReverseTrace(), (3.0,), lambda x: x * x)
    >>> value, pb(1.0)
    (9.0, 6.0)
    """
    inputs, traced_points = [], []
    for i, point in enumerate(points):
        if type(point) is Tensor and point.dtype.is_floating:
            tracer = trace.new_leaf(point)  # one tensor: its own leaf, nothing to flatten
            inputs.append((LEAF_DEF, [tracer]))
            traced_points.append(tracer)
            continue
        leaves, treedef = _flatten_point(point, i)
        tracers = [trace.new_leaf(leaf) for leaf in leaves]
        inputs.append((treedef, tracers))
        traced_points.append(treedef.unflatten(tracers))
    result = of(*traced_points)
    if type(result) is ReverseTracer and result._trace is trace:
        # The common case, a traced tensor or float, needs no flattening.
        out_def, ours, value, roots = LEAF_DEF, (True,), result._primal, [result._node]
    else:
        out_leaves, out_def = tree_flatten(result, differentiable=True)
        ours = [isinstance(leaf, ReverseTracer) and leaf._trace is trace for leaf in out_leaves]
        value = out_def.unflatten(
            [leaf._primal if mine else leaf for leaf, mine in zip(out_leaves, ours, strict=True)])
        roots = [leaf._node for leaf, mine in zip(out_leaves, ours, strict=True) if mine]
        if not roots:
            warn_zero_derivative(getattr(of, "__name__", "function"))

    def pullback(cotangent):
        if out_def is LEAF_DEF and ours[0]:  # one traced result: its seed, unless a zero
            seeds = [None if is_zero(cotangent) else cotangent]
        else:
            seeds_all = out_def.tangent_leaves(cotangent)
            seeds = [s for s, mine in zip(seeds_all, ours, strict=False) if mine]
        table = backward(roots, seeds, trace.nodes)
        get = table.get
        tangents = []
        for treedef, tracers in inputs:
            leaves = []
            for t in tracers:
                g = get(id(t._node))
                # The common leaf, a tensor point reached by a cotangent, as it is.
                leaves.append(g if g is not None and type(t._primal) is Tensor else _finish(g, t._primal))
            tangents.append(treedef.tangent_unflatten(leaves))
        return _pack(tangents)

    return value, pullback


@_operator
def pullback(*points, of):
    """The pullback of ``of`` at ``points``: cotangent of the result -> cotangents of points.

    Examples
    --------
    >>> import s4tf
    >>> pb = s4tf.pullback(3.0, of=lambda x: x * x)
    >>> pb(1.0)
    6.0
    """
    return value_with_pullback(*points, of=of)[1]


def _scalar_seed(value):
    if type(value) is float:
        return 1.0
    if type(value) is Tensor and value.dtype.is_floating and value.size == 1:
        return _filled(value, 1)
    leaves = tree_flatten(value, differentiable=True)[0]
    if len(leaves) != 1 or (isinstance(leaves[0], Tensor) and leaves[0].size != 1):
        shape = leaves[0].shape if len(leaves) == 1 else f"{len(leaves)} values"
        raise ValueError(
            f"gradient needs a function that returns one scalar; this one returned {shape}. "
            "Reduce it (e.g. .sum() or .mean()), or use s4tf.pullback with a cotangent."
        )
    leaf = leaves[0]
    # A float result seen through an outer level is a tracer (a Tensor subclass) of a float.
    if is_float_like(leaf):
        return 1.0
    # One example's shape under vmap: the same seed for every example.
    return ones_like(leaf)


@_operator
def value_with_gradient(*points, of):
    """``(f(*points), gradient)`` for a scalar-valued ``of``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.value_with_gradient(2.0, 3.0, of=lambda x, y: x * y)
    (6.0, (3.0, 2.0))
    """
    value, pb = value_with_pullback.__wrapped__(*points, of=of)  # of= is checked already
    return value, pb(_scalar_seed(value))


@_operator
def gradient(*points, of):
    """The gradient of scalar-valued ``of`` at ``points`` (reverse mode).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.gradient(3.0, of=lambda x: x * x)
    6.0
    >>> s4tf.gradient(s4tf.Tensor([1.0, 2.0]), of=lambda x: (x * x).sum()).tolist()
    [2.0, 4.0]
    """
    return value_with_gradient(*points, of=of)[1]


# Forward mode.
def _jvp(points, tangents, of):
    trace = ForwardTrace()
    traced_points = []
    for i, (point, tangent) in enumerate(zip(points, tangents, strict=False)):
        leaves, treedef = _flatten_point(point, i)
        leaf_tangents = treedef.tangent_leaves(tangent)
        traced_points.append(treedef.unflatten(
            [leaf if t is None else ForwardTracer(trace, leaf, t) for leaf, t in zip(leaves, leaf_tangents, strict=False)]
        ))
    result = of(*traced_points)
    out_leaves, out_def = tree_flatten(result, differentiable=True)
    primals, out_tangents, any_traced = [], [], False
    for leaf in out_leaves:
        if isinstance(leaf, ForwardTracer) and leaf._trace is trace:
            primals.append(leaf._primal)
            out_tangents.append(_finish(leaf._tangent, leaf._primal))
            any_traced = True
        else:
            primals.append(leaf)
            out_tangents.append(_finish(None, leaf))
    return out_def.unflatten(primals), out_def.tangent_unflatten(out_tangents), any_traced


@_operator
def value_with_differential(*points, of):
    """``(f(*points), differential)``; ``differential(*tangents)`` pushes tangents forward.

    Examples
    --------
    >>> import s4tf
    >>> value, df = s4tf.value_with_differential(3.0, of=lambda x: x * x)
    >>> value, df(1.0)
    (9.0, 6.0)
    """
    value = of(*points)

    def differential(*tangents):
        if len(tangents) != len(points):
            raise TypeError(f"the differential takes {len(points)} tangent(s), got {len(tangents)}.")
        _, tangent, traced = _jvp(points, tangents, of)
        if not traced:
            warn_zero_derivative(getattr(of, "__name__", "function"))
        return tangent

    return value, differential


@_operator
def differential(*points, of):
    """The differential of ``of`` at ``points``: tangents of points -> tangent of the result.

    Examples
    --------
    >>> import s4tf
    >>> df = s4tf.differential(2.0, of=lambda x: x ** 3)
    >>> df(1.0)
    12.0
    """
    return value_with_differential(*points, of=of)[1]


def _unit_tangent(point):
    leaves = tree_flatten(point, differentiable=True)[0]
    if len(leaves) != 1 or (isinstance(leaves[0], Tensor) and leaves[0].size != 1):
        raise ValueError(
            "derivative needs scalar points (a float or a one-element tensor); use "
            "s4tf.differential(x, of=f)(tangent) for other values."
        )
    leaf = leaves[0]
    return 1.0 if is_float_like(leaf) else ones_like(leaf)


@_operator
def value_with_derivative(*points, of):
    """``(f(*points), derivative)`` by forward mode for scalar points.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.value_with_derivative(3.0, of=lambda x: x * x)
    (9.0, 6.0)
    """
    tangents = [_unit_tangent(p) for p in points]
    value, tangent, traced = _jvp(points, tangents, of)
    if not traced:
        warn_zero_derivative(getattr(of, "__name__", "function"))
    return value, tangent


@_operator
def derivative(*points, of):
    """The derivative of ``of`` at scalar ``points`` (forward mode; summed over points).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.derivative(3.0, of=lambda x: x * x)
    6.0
    >>> s4tf.derivative(2.0, of=s4tf.derivative(of=lambda x: x ** 3))
    12.0
    """
    return value_with_derivative(*points, of=of)[1]


def without_derivative(value):
    """``value`` as a constant: derivatives do not flow through it (a stop-gradient).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.gradient(3.0, of=lambda x: x * s4tf.without_derivative(x))
    3.0
    """
    if isinstance(value, Tracer):
        return strip(value)
    return tree_map(strip, value)
