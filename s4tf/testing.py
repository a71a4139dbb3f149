"""Testing helpers: the finite-difference gradient checker every op test uses.

:func:`check_gradients` compares what the AD engine computes (reverse mode via
``s4tf.pullback``/``s4tf.gradient``, forward mode via ``s4tf.differential``, and
optionally second order) against central differences in float64, for points
that are Tensors, floats or any Differentiable value. One checker for every op
and every backend, as autograd's ``check_grads``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .tensor import Tensor
from .tree import tree_flatten

__all__ = ["assert_allclose", "check_gradients"]

_MODES = ("reverse", "forward")


def _as_array(value) -> np.ndarray:
    if isinstance(value, Tensor):
        return np.asarray(value.numpy(), dtype=np.float64)
    if value is None:
        return np.zeros(())
    return np.asarray(value, dtype=np.float64)


def assert_allclose(actual, expected, atol: float = 1e-6, rtol: float = 1e-6, what: str = "value"):
    """Assert two values (Tensors, floats, arrays or pytrees of them) agree elementwise.

    Tangent vectors, Differentiable values, dicts and lists of tensors are
    compared field by field; ``None`` counts as zero of any shape (as in tangents).
    Shapes must match exactly: nothing is broadcast, so a gradient of the wrong
    shape fails even when its numbers would broadcast to the expected ones.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.testing import assert_allclose
    >>> assert_allclose(s4tf.Tensor([1.0, 2.0]) * 2, [2.0, 4.0])
    """
    from .differentiable import Differentiable

    if isinstance(expected, Differentiable) or isinstance(actual, Differentiable):
        cls = type(expected if isinstance(expected, Differentiable) else actual)
        names = getattr(cls, "_s4tf_field_names", None) or cls._s4tf_all_fields
        for name in names:
            assert_allclose(getattr(actual, name, None), getattr(expected, name, None),
                            atol, rtol, f"{what}.{name}")
        return
    if isinstance(expected, dict) or isinstance(actual, dict):
        if not isinstance(expected, dict) or not isinstance(actual, dict) or set(actual) != set(expected):
            raise AssertionError(f"{what}: got {actual!r:.200}, expected {expected!r:.200}.")
        for key in expected:
            assert_allclose(actual[key], expected[key], atol, rtol, f"{what}[{key!r}]")
        return
    if _is_structure(expected) or _is_structure(actual):
        if len(actual) != len(expected):
            raise AssertionError(f"{what}: {len(actual)} items, expected {len(expected)}.")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_allclose(a, e, atol, rtol, f"{what}[{i}]")
        return
    a_arr, e_arr = _as_array(actual), _as_array(expected)
    if actual is None:
        a_arr = np.zeros_like(e_arr)
    elif expected is None:
        e_arr = np.zeros_like(a_arr)
    _compare(a_arr, e_arr, atol, rtol, what)


def _is_structure(value) -> bool:
    """A list/tuple holding tensors or containers (not a nested list of numbers)."""
    from .differentiable import Differentiable

    return isinstance(value, list | tuple) and any(
        isinstance(v, Tensor | Differentiable | dict | list | tuple) or v is None for v in value
    )


def _compare(actual, expected, atol, rtol, what):
    if actual.shape != expected.shape:
        # Never broadcast: (3,) against (2, 3) is a wrong answer, not a close one.
        raise AssertionError(
            f"{what}: shape {actual.shape} does not match the expected shape {expected.shape}."
        )
    error = np.abs(actual - expected)
    bad = ~(error <= atol + rtol * np.abs(expected))  # NaNs count as failures
    if bad.any():
        worst = np.unravel_index(np.nanargmax(np.where(bad, error, -1.0)), error.shape) if error.ndim else ()
        raise AssertionError(
            f"{what} is off: max abs error {np.nanmax(np.where(bad, error, 0.0)):.3g} "
            f"(atol={atol}, rtol={rtol}) at index {tuple(int(i) for i in worst)}: "
            f"got {actual[worst]!r}, expected {expected[worst]!r}; "
            f"{int(bad.sum())} of {bad.size} elements differ."
        )


class _Point:
    """One differentiation argument, flattened to float64 leaves."""

    def __init__(self, value, index):
        self.leaves, self.treedef = tree_flatten(value, differentiable=True)
        if not self.leaves:
            raise TypeError(
                f"check_gradients: argument {index} ({type(value).__name__}) holds no floats or "
                "floating tensors to differentiate; pass float64 Tensors, floats or "
                "Differentiable values."
            )
        for j, leaf in enumerate(self.leaves):
            if isinstance(leaf, Tensor) and leaf.dtype.name != "float64":
                raise TypeError(
                    f"check_gradients: argument {index}, leaf {j} is {leaf.dtype}; finite "
                    "differences need float64 for accuracy. Pass s4tf.Tensor(..., dtype=s4tf.float64)."
                )
        self.arrays = [_as_array(leaf) for leaf in self.leaves]

    def rebuild(self, arrays):
        leaves = [
            Tensor(a, dtype="float64") if isinstance(leaf, Tensor) else float(a)
            for leaf, a in zip(self.leaves, arrays, strict=True)
        ]
        return self.treedef.unflatten(leaves)

    def tangent(self, arrays):
        leaves = [
            Tensor(a, dtype="float64") if isinstance(leaf, Tensor) else float(a)
            for leaf, a in zip(self.leaves, arrays, strict=True)
        ]
        return self.treedef.tangent_unflatten(leaves)

    def tangent_arrays(self, tangent):
        return [None if t is None else _as_array(t) for t in self.treedef.tangent_leaves(tangent)]


def _output_arrays(value):
    leaves = tree_flatten(value, differentiable=True)[0]
    return [_as_array(leaf) for leaf in leaves]


def _random_like(rng, arrays):
    return [rng.standard_normal(a.shape) for a in arrays]


def _numeric_directional(f, points, directions, eps):
    """``d/dh f(points + h * directions)`` at 0 by central differences, per output leaf."""
    def at(h):
        args = [p.rebuild([a + h * d for a, d in zip(p.arrays, ds, strict=True)]) for p, ds in zip(points, directions, strict=True)]
        return _output_arrays(f(*args))

    plus, minus = at(eps), at(-eps)
    return [(a - b) / (2 * eps) for a, b in zip(plus, minus, strict=True)]


def _numeric_gradient(f, points, cotangent, eps):
    """The gradient of ``<cotangent, f(points)>`` by central differences, leaf by leaf."""
    grads = []
    for i, point in enumerate(points):
        per_leaf = []
        for j, array in enumerate(point.arrays):
            grad = np.zeros_like(array)
            for k in np.ndindex(array.shape):
                directions = [[np.zeros_like(a) for a in p.arrays] for p in points]
                directions[i][j][k] = 1.0
                deriv = _numeric_directional(f, points, directions, eps)
                grad[k] = sum(float(np.sum(c * d)) for c, d in zip(cotangent, deriv, strict=True))
            per_leaf.append(grad)
        grads.append(per_leaf)
    return grads


def _name(f):
    return getattr(f, "__name__", type(f).__name__)


def _pullback_of(f, args, cotangent):
    """``f``'s pullback at ``args`` applied to ``cotangent`` (NumPy arrays, one per output leaf)."""
    from .autodiff import value_with_pullback

    out, pb = value_with_pullback(*args, of=f)
    out_leaves, out_def = tree_flatten(out, differentiable=True)
    return pb(out_def.tangent_unflatten([
        Tensor(c, dtype=leaf.dtype) if isinstance(leaf, Tensor) else float(c)
        for c, leaf in zip(cotangent, out_leaves, strict=True)
    ]))


def _check_reverse(f, points, values, rng, eps, atol, rtol, label):
    from .autodiff import gradient

    scalar = len(values) == 1 and values[0].shape == ()
    cotangent = [np.ones(()) if scalar else rng.standard_normal(v.shape) for v in values]
    args = [p.rebuild(p.arrays) for p in points]
    if scalar:
        # The plain gradient is what users call; it must agree with the pullback.
        result = gradient(*args, of=f)
        how = "gradient"
    else:
        result = _pullback_of(f, args, cotangent)
        how = "pullback with a random cotangent"
    results = (result,) if len(points) == 1 else result
    expected = _numeric_gradient(f, points, cotangent, eps)
    for i, (point, tangent, numeric) in enumerate(zip(points, results, expected, strict=True)):
        for j, (got, want) in enumerate(zip(point.tangent_arrays(tangent), numeric, strict=True)):
            _compare(_zero_if_none(got, want), want, atol, rtol,
                     f"{label}: reverse mode ({how}) of {_name(f)} w.r.t. argument {i}, "
                     f"leaf {j} of {len(numeric)}")


def _check_forward(f, points, rng, eps, atol, rtol, label):
    from .autodiff import differential

    directions = [_random_like(rng, p.arrays) for p in points]
    args = [p.rebuild(p.arrays) for p in points]
    tangents = [p.tangent(d) for p, d in zip(points, directions, strict=True)]
    got = _output_arrays_tangent(f(*args), differential(*args, of=f)(*tangents))
    want = _numeric_directional(f, points, directions, eps)
    for j, (g, w) in enumerate(zip(got, want, strict=True)):
        _compare(_zero_if_none(g, w), w, atol, rtol,
                 f"{label}: forward mode (differential with a random tangent) of {_name(f)}, "
                 f"output leaf {j} of {len(want)}")


def _output_arrays_tangent(value, tangent):
    treedef = tree_flatten(value, differentiable=True)[1]
    return [None if t is None else _as_array(t) for t in treedef.tangent_leaves(tangent)]


def _zero_if_none(got, want):
    """A ``None`` tangent is the zero of its leaf; any other must have the leaf's shape."""
    return np.zeros_like(want) if got is None else got


def _projected_vjp(f, points, cotangent, weights):
    """``x -> <weights, pullback_x(cotangent)>``: a scalar whose derivative is a Hessian row."""
    def projected(*args):
        tangents = _pullback_of(f, args, cotangent)
        tangents = (tangents,) if len(points) == 1 else tangents
        total = 0.0
        for point, tangent, ws in zip(points, tangents, weights, strict=True):
            for t, w in zip(point.treedef.tangent_leaves(tangent), ws, strict=True):
                if t is None:
                    continue
                term = (t * Tensor(w)).sum() if isinstance(t, Tensor) else t * float(w)
                total = total + term
        return total

    projected.__name__ = f"<w, pullback of {_name(f)}>"
    return projected


def check_gradients(f, *points, order: int = 1, modes=_MODES, eps: float = 1e-6,
                    atol: float = 1e-5, rtol: float = 1e-4, seed: int = 0) -> None:
    """Check ``f``'s derivatives at ``points`` against central finite differences.

    Reverse mode is checked with ``s4tf.gradient`` (scalar results) or
    ``s4tf.pullback`` with a random cotangent; forward mode with
    ``s4tf.differential`` and random tangents. ``order=2`` also differentiates
    the random projection ``x -> <w, pullback_x(u)>`` again, in the same modes
    (reverse-over-reverse and forward-over-reverse). Points are float64
    Tensors, floats or Differentiable values holding them.

    Parameters
    ----------
    f : callable
        The function, taking one argument per point.
    *points
        Where to check.
    order : int
        1, or 2 to check second derivatives too.
    modes : tuple of str
        Any of ``"reverse"`` and ``"forward"``.
    eps, atol, rtol : float
        Finite-difference step and tolerances (``|ad - fd| <= atol + rtol * |fd|``).
    seed : int
        Seed of the random cotangents, tangents and projections.

    Raises
    ------
    AssertionError
        Naming the mode, the argument and leaf, and the largest error.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.testing import check_gradients
    >>> x = s4tf.Tensor([0.5, -1.0], dtype=s4tf.float64)
    >>> check_gradients(lambda t: s4tf.sin(t) * t, x, order=2)
    """
    unknown = set(modes) - set(_MODES)
    if unknown or not modes:
        raise ValueError(f"check_gradients: modes must be drawn from {_MODES}; got {tuple(modes)}.")
    if order not in (1, 2):
        raise ValueError(f"check_gradients: order must be 1 or 2, got {order}.")
    rng = np.random.default_rng(seed)
    flat = [_Point(p, i) for i, p in enumerate(points)]
    values = _output_arrays(f(*points))
    if not values:
        raise TypeError(f"check_gradients: {_name(f)} returned no floating values to differentiate.")
    if "reverse" in modes:
        _check_reverse(f, flat, values, rng, eps, atol, rtol, "order 1")
    if "forward" in modes:
        _check_forward(f, flat, rng, eps, atol, rtol, "order 1")
    if order == 2:
        cotangent = [rng.standard_normal(v.shape) for v in values]
        weights = [_random_like(rng, p.arrays) for p in flat]
        projected = _projected_vjp(f, flat, cotangent, weights)
        second = [_Point(p, i) for i, p in enumerate(points)]
        # A linear f has a constant first derivative: its zero second derivative is expected.
        with warnings.catch_warnings():
            from .autodiff import ZeroDerivativeWarning

            warnings.simplefilter("ignore", ZeroDerivativeWarning)
            if "reverse" in modes:
                _check_reverse(projected, second, [np.zeros(())], rng, eps, atol, rtol,
                               "order 2 (reverse over reverse)")
            if "forward" in modes:
                _check_forward(projected, second, rng, eps, atol, rtol,
                               "order 2 (forward over reverse)")
