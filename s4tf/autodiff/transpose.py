"""Transposing linear maps: ``s4tf.linear_transpose(f, x)`` (the manifesto's ``@transpose``).

The pullback of a linear map is its transpose, at every point: so transposition
reuses every primitive's VJP rule and needs no table of its own. What it adds
is the check that ``f`` is linear. ``f`` is traced on a :class:`LinearTrace`, a
reverse-mode level that refuses, naming the op and the user's line, any
primitive applied to values depending on ``x`` in a way that is not linear:
a nonlinear op (``tanh``), a product of two such values (``x * x``), or a
division by one. Adding values that do not depend on ``x`` is allowed (as in
``jax.linear_transpose``): an affine ``f`` is transposed as its linear part.

A user's function can carry its own transpose (``@f.transpose`` on an
``s4tf.differentiable`` function, :mod:`.custom`): ``linear_transpose`` then
returns it, and the function's pullback and differential follow from it.
"""

from __future__ import annotations

from ..dtypes import as_dtype
from ..user_frames import user_location
from .custom import CustomDerivative
from .operators import traced_pullback
from .reverse import ReverseTrace, ReverseTracer

__all__ = ["LINEAR_ARGUMENTS", "LinearTrace", "linear_transpose"]

# Primitive name -> (kind, positions): the arguments in which it is linear.
# "sum": linear in those arguments together (any of them may depend on x);
# "product": linear in each alone (at most one of them may depend on x).
# Arguments outside ``positions`` must not depend on x.
LINEAR_ARGUMENTS = {
    "add": ("sum", (0, 1)), "sub": ("sum", (0, 1)), "neg": ("sum", (0,)),
    "reduce_sum": ("sum", (0,)), "reduce_mean": ("sum", (0,)),
    "broadcast_to": ("sum", (0,)), "cast": ("sum", (0,)),
    "reshape": ("sum", (0,)), "transpose": ("sum", (0,)), "getitem": ("sum", (0,)),
    "pad": ("sum", (0,)), "index_add": ("sum", (0, 1)), "gather": ("sum", (0,)),
    "scatter_add": ("sum", (0, 2)), "where": ("sum", (1, 2)), "div": ("sum", (0,)),
    "relu_grad": ("sum", (0,)), "window_sum": ("sum", (0,)),
    "window_sum_transpose": ("sum", (0,)), "max_pool_scatter": ("sum", (1,)),
    "optimization_barrier": ("sum", (0,)),
    "mul": ("product", (0, 1)), "matmul": ("product", (0, 1)),
    "matmul_nt": ("product", (0, 1)), "matmul_tn": ("product", (0, 1)),
    "conv": ("product", (0, 1)), "conv_backprop_input": ("product", (0, 1)),
    "conv_backprop_filter": ("product", (0, 1)),
}


class LinearTrace(ReverseTrace):
    """A reverse-mode level that records only ops linear in its tracers.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.autodiff.operators import traced_pullback
    >>> from s4tf.autodiff.transpose import LinearTrace
    >>> value, pb = traced_pullback(LinearTrace(), (2.0,), lambda x: 3.0 * x)
    >>> pb(1.0)
    3.0
    """

    __slots__ = ()

    def _check(self, primitive, args, params):
        """Raise if ``primitive(*args, **params)`` is not linear in this trace's tracers."""
        traced = [i for i, arg in enumerate(args)
                  if type(arg) is ReverseTracer and arg._trace is self]
        name = primitive.name
        if not traced or name == "concat":  # concat: linear in all its arguments together
            return
        kind, positions = LINEAR_ARGUMENTS.get(name, (None, ()))
        outside = [i for i in traced if i not in positions]
        if kind is None:
            problem = f"{name}, which is not linear, is applied to a value that depends on them"
        elif outside:
            problem = (f"{name} takes a value that depends on them as its argument {outside[0]}, "
                       "in which it is not linear")
        elif kind == "product" and len(traced) > 1:
            problem = f"{name} combines two values that depend on them (a product is not linear)"
        elif name == "cast" and not as_dtype(params["dtype"]).is_floating:
            problem = "cast rounds a value that depends on them to integers"
        else:
            return
        raise ValueError(
            f"s4tf.linear_transpose: the function is not linear in its arguments: {problem} "
            f"(at {user_location()}). Only linear maps have a transpose: sums, scaling by "
            "values that do not depend on the argument, matmuls and convolutions with such "
            "values, reshapes, indexing. For the transpose of a nonlinear function's "
            "derivative at x, use s4tf.pullback(x, of=f)."
        )

    def process(self, primitive, args, params):
        self._check(primitive, args, params)
        return super().process(primitive, args, params)

    def process_binary(self, primitive, x, y):
        self._check(primitive, (x, y), None)
        return super().process_binary(primitive, x, y)


def linear_transpose(f, *points):
    """The transpose of the linear map ``f`` (the manifesto's ``@transpose``).

    For ``f`` linear in its arguments, ``linear_transpose(f, x)`` is the map
    ``ft`` with ``<ft(v), t> == <v, f(t)>`` for every tangent ``t`` of ``x`` and
    cotangent ``v`` of ``f(x)``: ``ft(v)`` has ``x``'s structure (a tuple of
    them for several points). ``x`` only gives the structure and shapes; any
    point does, zeros included. Every primitive's transpose is its VJP rule, so
    this is ``f``'s pullback, with a check that ``f`` is linear.

    Parameters
    ----------
    f : callable
        A linear function of Differentiable values. If it carries its own
        transpose (registered with ``@f.transpose`` on an
        ``s4tf.differentiable`` function), that is returned.
    *points
        Example arguments of ``f``.

    Returns
    -------
    callable
        ``ft(cotangent) -> cotangent(s) of the points``.

    Raises
    ------
    ValueError
        If ``f`` applies an op that is not linear to a value depending on its
        arguments (``tanh``, ``x * x``, division by it), naming the op and the
        line. Adding constants is allowed: an affine map is transposed as its
        linear part.

    Examples
    --------
    >>> import s4tf
    >>> a = s4tf.Tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> ft = s4tf.linear_transpose(lambda x: a @ x, s4tf.zeros([2]))
    >>> ft(s4tf.Tensor([1.0, 0.0, 1.0])).tolist()  # a.T @ v
    [6.0, 8.0]
    >>> @s4tf.differentiable
    ... def double(x):
    ...     return 2.0 * x
    >>> @double.transpose
    ... def _(v):
    ...     return 2.0 * v
    >>> s4tf.linear_transpose(double, 1.0)(3.0), s4tf.gradient(1.0, of=double)
    (6.0, 2.0)
    """
    if not callable(f):
        raise TypeError(f"s4tf.linear_transpose: f must be callable, got {type(f).__name__}.")
    if not points:
        raise TypeError(
            "s4tf.linear_transpose(f, x): give an example point x (any value of the right "
            "structure and shapes, zeros included) after the function."
        )
    if isinstance(f, CustomDerivative) and f.transpose_rule is not None:
        return f.transpose_rule
    _, pullback = traced_pullback(LinearTrace(), points, f)
    return pullback
