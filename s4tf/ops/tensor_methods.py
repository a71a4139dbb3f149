"""Tensor's operators and NumPy-named methods: one table, installed by the op library.

:mod:`s4tf.tensor` says what a Tensor *is* (one backend array: storage,
attributes, conversions) and imports no op. Everything a Tensor *does* is an
op, so its operators and methods are written here, above both, and
:func:`install` sets them on the class when :mod:`s4tf.ops` is imported, as
JAX's numpy layer installs ``Array``'s and ``Tracer``'s methods
(``jax/_src/numpy/array_methods.py``). The arrows then run one way: ops import
tensor, never the reverse.

:data:`METHODS` is the whole list. Each entry is a function with its
docstring; installed, it is named ``Tensor.<name>`` of module ``s4tf.tensor``,
so ``help(s4tf.Tensor.sum)``, ``inspect.signature`` and the API reference read
as for a method written in the class. Tracers are Tensors and inherit all of
it.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..non_differentiable import non_differentiable
from ..tensor import Tensor, infer_dtype
from . import numpy_functions
from .elementwise import (
    abs,
    cast,
    clip,
    equal,
    floor_div,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    mod,
    mul,
    neg,
    not_equal,
    power,
)
from .elementwise import add as _add
from .elementwise import div as _div
from .elementwise import sub as _sub
from .indexing import getitem
from .joining import stack
from .linalg import matmul
from .reductions import argmax, argmin, max, mean, min, sum, variance
from .shapes import expand_dims, reshape, squeeze, transpose
from .tracer import is_float_like
from .ufuncs import ARITHMETIC_UFUNCS, UFUNCS

__all__ = ["METHODS", "install"]

def _operator(name: str, op, doc: str, reflected: bool = False):
    """The method ``name`` computing ``op(self, other)`` (``op(other, self)`` when reflected)."""
    if reflected:
        def method(self, other):
            return op(other, self)
    else:
        def method(self, other):
            return op(self, other)
    method.__name__, method.__doc__ = name, doc
    return method


def __neg__(self):
    """``-self``."""
    return neg(self)


def __pos__(self):
    """``+self``: the tensor itself."""
    return self


def __abs__(self):
    """``abs(self)``; the derivative at 0 is 0."""
    return abs(self)


def __invert__(self):
    """``~self``: logical not of a bool tensor."""
    return logical_not(self)


def __getitem__(self, key):
    """``self[key]``: ints, slices, None, ``...``, or one int tensor of indices (:func:`s4tf.ops.getitem`)."""
    return getitem(self, key)


# The arithmetic operators call the primitives' two-operand entry point, their hot
# path, which skips the generic argument handling.
_BINARY = [  # (name, op, what it computes, reflected)
    ("__add__", _add.binary, "``self + other`` (NumPy broadcasting).", False),
    ("__radd__", _add.binary, "``other + self``.", True),
    ("__sub__", _sub.binary, "``self - other``.", False),
    ("__rsub__", _sub.binary, "``other - self``.", True),
    ("__mul__", mul.binary, "``self * other``, elementwise.", False),
    ("__rmul__", mul.binary, "``other * self``, elementwise.", True),
    ("__truediv__", _div.binary, "``self / other``; int tensors give float32.", False),
    ("__rtruediv__", _div.binary, "``other / self``.", True),
    ("__floordiv__", floor_div, "``self // other``.", False),
    ("__rfloordiv__", floor_div, "``other // self``.", True),
    ("__mod__", mod, "``self % other``.", False),
    ("__pow__", power, "``self ** other``; a Python exponent stays static.", False),
    ("__rpow__", power, "``other ** self``.", True),
    ("__matmul__", matmul, "``self @ other`` (:func:`s4tf.matmul`).", False),
    ("__rmatmul__", matmul, "``other @ self``.", True),
    ("__and__", logical_and, "``self & other``: logical and of bool tensors.", False),
    ("__or__", logical_or, "``self | other``: logical or of bool tensors.", False),
    ("__eq__", equal, "``self == other``, elementwise: a bool tensor.", False),
    ("__ne__", not_equal, "``self != other``, elementwise: a bool tensor.", False),
    ("__lt__", less, "``self < other``, elementwise: a bool tensor.", False),
    ("__le__", less_equal, "``self <= other``, elementwise: a bool tensor.", False),
    ("__gt__", greater, "``self > other``, elementwise: a bool tensor.", False),
    ("__ge__", greater_equal, "``self >= other``, elementwise: a bool tensor.", False),
]


# NumPy's protocols.
def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
    """A NumPy ufunc meeting a tensor (``ndarray + tensor``) answers with a Tensor.

    Ufuncs without an s4tf op (or called with ``out=`` and the like) are left to
    NumPy. On a value being differentiated only the Python operators' ufuncs
    work; the others raise :class:`s4tf.NonDifferentiableError`.
    """
    name = ufunc.__name__
    op = UFUNCS.get(name)
    if method == "__call__" and op is not None and not kwargs:
        if not self._traced or name in ARITHMETIC_UFUNCS:
            return op(*inputs)
    if self._traced:
        raise non_differentiable(f"The NumPy function numpy.{name}")
    return NotImplemented


def __array_function__(self, func, types, args, kwargs):
    """A NumPy function meeting a tensor: see :mod:`s4tf.ops.numpy_functions`."""
    return numpy_functions.call(func, args, kwargs)


# Methods with NumPy names.
def astype(self, dtype) -> Tensor:
    """This tensor's values converted to ``dtype`` (differentiable between floats).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([1.5, 2.5]).astype(s4tf.int32).tolist()
    [1, 2]
    """
    return cast(self, dtype=_dtypes.as_dtype(dtype))


def reshape_method(self, *shape) -> Tensor:
    """This tensor with a new shape (one axis may be -1).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.arange(6).reshape(2, -1).shape, s4tf.arange(6).reshape((3, 2)).shape
    ((2, 3), (3, 2))
    """
    if len(shape) == 1 and isinstance(shape[0], list | tuple):
        shape = tuple(shape[0])
    return reshape(self, shape)


def transpose_method(self, *perm) -> Tensor:
    """Axes permuted by ``perm`` (reversed when omitted).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.zeros([2, 3, 4]).transpose(1, 0, 2).shape, s4tf.zeros([2, 3, 4]).transpose().shape
    ((3, 2, 4), (4, 3, 2))
    """
    if len(perm) == 1 and isinstance(perm[0], list | tuple):
        perm = tuple(perm[0])
    return transpose(self, perm or None)


def T(self) -> Tensor:
    """The tensor with its axes reversed (a matrix's transpose).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.zeros([2, 3]).T.shape
    (3, 2)
    """
    return transpose(self, None)


def _reduction(op, doc: str):
    """The method ``t.<op>(axis=None, keepdims=False)`` calling ``op``."""

    def method(self, axis=None, keepdims=False) -> Tensor:
        return op(self, axis=axis, keepdims=keepdims)

    method.__doc__ = doc
    return method


sum_method = _reduction(sum, """Sum over ``axis`` (all axes when None).

Examples
--------
>>> import s4tf
>>> s4tf.Tensor([[1.0, 2.0], [3.0, 4.0]]).sum(axis=1).tolist()
[3.0, 7.0]
""")
mean_method = _reduction(mean, """Arithmetic mean over ``axis`` (all axes when None).

Examples
--------
>>> import s4tf
>>> s4tf.Tensor([1.0, 2.0, 6.0]).mean().item()
3.0
""")
max_method = _reduction(max, """Maximum over ``axis``; a tie splits the derivative evenly.

Examples
--------
>>> import s4tf
>>> s4tf.Tensor([[1.0, 5.0], [7.0, 2.0]]).max(axis=0).tolist()
[7.0, 5.0]
""")
min_method = _reduction(min, """Minimum over ``axis``; a tie splits the derivative evenly.

Examples
--------
>>> import s4tf
>>> s4tf.Tensor([[1.0, 5.0], [7.0, 2.0]]).min(axis=1).tolist()
[1.0, 2.0]
""")
variance_method = _reduction(variance, """Biased variance (divides by N) over ``axis``.

Examples
--------
>>> import s4tf
>>> s4tf.Tensor([1.0, 3.0]).variance().item()
1.0
""")


def argmax_method(self, axis=None) -> Tensor:
    """Index of the largest value along ``axis`` (of the flattened tensor when None), int32.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([[1.0, 5.0], [7.0, 2.0]]).argmax(axis=1).tolist()
    [1, 0]
    """
    return argmax(self, axis=axis)


def argmin_method(self, axis=None) -> Tensor:
    """Index of the smallest value along ``axis`` (of the flattened tensor when None), int32.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([3.0, 1.0, 2.0]).argmin().item()
    1
    """
    return argmin(self, axis=axis)


def squeeze_method(self, axis=None) -> Tensor:
    """This tensor without axes of size 1 (only ``axis`` when given).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.zeros([1, 3, 1]).squeeze().shape, s4tf.zeros([1, 3, 1]).squeeze(0).shape
    ((3,), (3, 1))
    """
    return squeeze(self, axis=axis)


def expand_dims_method(self, axis) -> Tensor:
    """This tensor with a new axis of size 1 at ``axis``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.zeros([3]).expand_dims(-1).shape
    (3, 1)
    """
    return expand_dims(self, axis)


def flatten(self) -> Tensor:
    """The values as one axis, in row-major order.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([[1, 2], [3, 4]]).flatten().tolist()
    [1, 2, 3, 4]
    """
    return reshape(self, (-1,))


def clip_method(self, lo, hi) -> Tensor:
    """The values limited to ``[lo, hi]``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([-2.0, 0.5, 3.0]).clip(0.0, 1.0).tolist()
    [0.0, 0.5, 1.0]
    """
    return clip(self, lo, hi)


def abs_method(self) -> Tensor:
    """The absolute values; the derivative at 0 is 0 (S4TF's convention).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([-2.0, 3.0]).abs().tolist()
    [2.0, 3.0]
    """
    return abs(self)


# Construction of a Tensor from values being differentiated (Tensor.__new__ asks).
def _from_traced(data, dtype) -> Tensor:
    """``Tensor(data, dtype)`` for a value being differentiated, or a list holding some.

    The result is the value itself, cast when ``dtype`` asks for another one
    (differentiable between floating dtypes), or the elements stacked: it stays
    differentiable, as ``jnp.asarray`` does.
    """
    if isinstance(data, list | tuple):
        if dtype is None:
            dtype = _first_dtype(data)
        return stack([Tensor(x, dtype) for x in data])
    if is_float_like(data):
        # A Python float being differentiated: like Tensor(1.5), a float32 scalar.
        target = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.float32
        data = mul(data, Tensor(1.0, target if target.is_floating else _dtypes.float32))
    if dtype is not None and _dtypes.as_dtype(dtype) != data.dtype:
        return cast(data, dtype=_dtypes.as_dtype(dtype))
    return data


def _first_dtype(data) -> _dtypes.DType:
    """The dtype a list gets from its first element (a tracer of a float: float32)."""
    first = data
    while isinstance(first, list | tuple) and first:
        first = first[0]
    if isinstance(first, Tensor) and first._traced:
        return _dtypes.float32 if is_float_like(first) else first.dtype
    return infer_dtype(data)


METHODS = {
    **{name: _operator(name, op, doc, reflected) for name, op, doc, reflected in _BINARY},
    "__neg__": __neg__, "__pos__": __pos__, "__abs__": __abs__, "__invert__": __invert__,
    "__getitem__": __getitem__, "__array_ufunc__": __array_ufunc__,
    "__array_function__": __array_function__,
    "astype": astype, "reshape": reshape_method, "transpose": transpose_method,
    "T": property(T), "sum": sum_method, "mean": mean_method, "max": max_method,
    "min": min_method, "variance": variance_method, "argmax": argmax_method,
    "argmin": argmin_method, "squeeze": squeeze_method, "expand_dims": expand_dims_method,
    "flatten": flatten, "clip": clip_method, "abs": abs_method,
    "_from_traced": staticmethod(_from_traced),
}


def install() -> None:
    """Set every entry of :data:`METHODS` on :class:`s4tf.Tensor`, named as a method of it.

    Called once, by ``s4tf/ops/__init__.py``.

    Examples
    --------
    >>> import inspect, s4tf
    >>> print(s4tf.Tensor.sum.__qualname__, inspect.signature(s4tf.Tensor.sum))
    Tensor.sum (self, axis=None, keepdims=False) -> 'Tensor'
    """
    for name, method in METHODS.items():
        function = method.fget if isinstance(method, property) else getattr(method, "__func__", method)
        # Installed, it is a method of Tensor: named and placed as one, so help(),
        # tracebacks and the API reference (which documents a class's own members,
        # not names it took from other modules) show it with the class. Its code,
        # source lines and doctests stay here.
        function.__name__ = name
        function.__qualname__ = f"Tensor.{name}"
        function.__module__ = Tensor.__module__
        setattr(Tensor, name, method)
