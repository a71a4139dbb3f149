"""Tensor: an immutable value wrapping one backend array (its "storage").

Every operator and method here is a call into the op library (:mod:`s4tf.ops`),
so tensors of every backend, and the tracers automatic differentiation wraps
around them, share one surface.
"""

from __future__ import annotations

import numbers

import numpy as np

from . import dtypes as _dtypes
from .backends.base import current_backend, get_backend_object
from .non_differentiable import NonDifferentiableError, non_differentiable

__all__ = ["Tensor"]

_DTYPES = _dtypes._BY_NUMPY


def _infer_dtype(data) -> _dtypes.DType:
    """float32 for Python floats, int32 for Python ints, NumPy's own dtype otherwise."""
    if isinstance(data, np.ndarray | np.generic):
        if data.dtype.kind == "U" or data.dtype == object:
            raise TypeError(f"Tensor cannot hold {data.dtype} data; pass numbers.")
        return _dtypes.as_dtype(data.dtype)
    flat = data
    while isinstance(flat, list | tuple):
        if not flat:
            return _dtypes.float32
        flat = flat[0]
    if isinstance(flat, bool | np.bool_):
        return _dtypes.bool_
    if isinstance(flat, numbers.Integral):
        array = np.asarray(data)
        return _dtypes.float32 if array.dtype.kind == "f" else _dtypes.int32
    if isinstance(flat, numbers.Real):
        return _dtypes.float32
    if isinstance(flat, Tensor):
        return flat.dtype
    raise TypeError(
        f"Tensor cannot be made from {type(flat).__name__} values; pass numbers, "
        "nested lists of numbers, a NumPy array or a Tensor."
    )


def _read_only(host: np.ndarray) -> np.ndarray:
    """A view of ``host`` that can never be made writeable, without copying it.

    NumPy lets anyone set ``writeable = True`` on a view whose memory owner is
    writeable. A view through a read-only memoryview has no writeable owner, so
    NumPy refuses. The memoryview sees ``host`` as unsigned ints of its item size
    (raw bytes for other sizes, which NumPy parses ~20x slower), since the buffer
    protocol cannot describe every dtype (bfloat16).
    """
    size = host.dtype.itemsize
    raw = host.view(np.dtype(f"u{size}" if size in (1, 2, 4, 8) else f"V{size}"))
    return np.asarray(memoryview(raw).toreadonly()).view(host.dtype)


def _traced_tensor(data, dtype) -> Tensor:
    """``Tensor(data, dtype)`` for a value being differentiated (or a list holding some).

    The result is the value itself, cast when ``dtype`` asks for another one
    (differentiable between floating dtypes), or the elements stacked.
    """
    if isinstance(data, list | tuple):
        if dtype is None:
            dtype = _first_dtype(data)
        return _ops.stack([Tensor(x, dtype) for x in data])
    from .ops.tracer import is_float_like

    if is_float_like(data):
        # A Python float being differentiated: like Tensor(1.5), a float32 scalar.
        target = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.float32
        data = _ops.mul(data, Tensor(1.0, target if target.is_floating else _dtypes.float32))
    if dtype is not None and _dtypes.as_dtype(dtype) != data.dtype:
        return _ops.cast(data, dtype=_dtypes.as_dtype(dtype))
    return data


def _first_dtype(data) -> _dtypes.DType:
    """The dtype a list gets from its first element (a tracer of a float: float32)."""
    first = data
    while isinstance(first, list | tuple) and first:
        first = first[0]
    if isinstance(first, Tensor) and first._traced:
        from .ops.tracer import is_float_like

        return _dtypes.float32 if is_float_like(first) else first.dtype
    return _infer_dtype(data)


class Tensor:
    """An n-dimensional array with value semantics, on one backend.

    Parameters
    ----------
    data : scalar, nested list, NumPy array or Tensor
        Copied: a Tensor never changes after creation.
    dtype : DType or str, optional
        Python floats give ``float32``, ints ``int32``, bools ``bool``.

    Examples
    --------
    >>> import s4tf
    >>> x = s4tf.Tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> (x @ x.T + 1).sum().item()
    56.0
    >>> x.shape, x.dtype, x.backend
    ((2, 2), float32, 'naive')
    """

    __slots__ = ("_data", "_backend", "__weakref__")
    __array_priority__ = 1000
    _traced = False  # True on autodiff's Tracer subclasses

    # Construction is in __new__ so that a value being differentiated can come back
    # as itself (a tracer), as jnp.asarray does: Tensor(x) stays differentiable.
    def __new__(cls, data, dtype=None):
        if isinstance(data, Tensor):
            if data._traced:
                return _traced_tensor(data, dtype)
            source = data.numpy()
            dtype = _dtypes.as_dtype(dtype) if dtype is not None else data.dtype
            backend = data._backend
        else:
            backend = current_backend()
            try:
                dtype = _dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
                if isinstance(data, list | tuple):
                    source = [x.numpy() if isinstance(x, Tensor) else x for x in data]
                    source = np.asarray(source, dtype=dtype.numpy)
                else:
                    source = data
            except TypeError as error:
                if not isinstance(error, NonDifferentiableError):
                    raise
                # A list holding values being differentiated: stack them, differentiably.
                return _traced_tensor(data, dtype)
        self = object.__new__(cls)
        self._data = backend.asarray(np.asarray(source, dtype=dtype.numpy), dtype)
        self._backend = backend
        return self

    @classmethod
    def _wrap(cls, data, backend) -> Tensor:
        """A Tensor around ``data`` without copying; for kernels' fresh outputs."""
        tensor = object.__new__(Tensor)
        tensor._data = data
        tensor._backend = backend
        return tensor

    # Attributes.
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def dtype(self) -> _dtypes.DType:
        found = _DTYPES.get(self._data.dtype)
        return found if found is not None else _dtypes.as_dtype(self._data.dtype)

    @property
    def rank(self) -> int:
        return len(self.shape)

    ndim = rank

    @property
    def size(self) -> int:
        size = 1
        for n in self.shape:
            size *= n
        return size

    @property
    def backend(self) -> str:
        return self._backend.name

    @property
    def devices(self) -> tuple:
        """The devices that hold this tensor's values.

        On the xla backend these are JAX devices: one for an ordinary tensor, all
        of a strategy's devices for a replicated or sharded one (a pending value
        is computed first). The eager backends report ``("cpu",)`` (naive) or
        the CUDA device (cupy).

        Examples
        --------
        >>> import s4tf
        >>> s4tf.Tensor([1.0, 2.0]).devices
        ('cpu',)
        """
        return self._backend.devices(self._data)

    # Conversion.
    def numpy(self) -> np.ndarray:
        """A read-only NumPy array of the values (waits for pending lazy work).

        It may share memory with the tensor, so it can never be made writeable:
        ``a.flags.writeable = True`` raises, as for any view of read-only memory.

        Examples
        --------
        >>> import s4tf
        >>> s4tf.Tensor([1, 2]).numpy()
        array([1, 2], dtype=int32)
        """
        return _read_only(self._host())

    def _host(self) -> np.ndarray:
        """The host array, possibly the storage itself: for reads that never hand it out."""
        return np.asarray(self._backend.to_numpy(self._data))

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        if dtype is not None:
            array = array.astype(dtype)
        return array.copy() if copy else array

    def __array_function__(self, func, types, args, kwargs):
        # NumPy functions meeting a tensor: reductions with s4tf equivalents answer
        # with a Tensor; every other function sees read-only NumPy arrays, as before.
        return _numpy_functions.call(func, args, kwargs)

    def item(self):
        """The single value of a one-element tensor, as a Python number."""
        if self.size != 1:
            raise ValueError(
                f"item() needs a tensor with one element; this one has shape {self.shape}. "
                "Index it first, e.g. t[0].item(), or use tolist()."
            )
        return self._host().reshape(()).item()

    def tolist(self):
        """The values as nested Python lists."""
        return self._host().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if not self.dtype.is_integer:
            raise TypeError(f"only integer tensors can be used as an index; this one is {self.dtype}")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"The truth value of a tensor of shape {self.shape} is ambiguous; "
                "use (t).all() / .any() style reductions, e.g. bool((t > 0).min())."
            )
        return bool(self.item())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a scalar (rank 0) tensor")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(self.numpy()), separator=", ", prefix="Tensor(")
        return f"Tensor({body}, dtype={self.dtype}, backend={self.backend})"

    __hash__ = None  # type: ignore[assignment]  # elementwise == makes tensors unhashable

    def __setitem__(self, key, value):
        raise TypeError(
            "Tensors are immutable values; build a new one instead, e.g. "
            "s4tf.where(mask, new, t) or t + s4tf.one_hot(...) * delta."
        )

    def __reduce__(self):
        return Tensor, (np.array(self.numpy()),)

    def astype(self, dtype) -> Tensor:
        """This tensor's values converted to ``dtype`` (differentiable between floats)."""
        return _ops.cast(self, dtype=_dtypes.as_dtype(dtype))

    def to(self, backend: str) -> Tensor:
        """The same values on another backend (``"naive"``, ``"cupy"``, ``"xla"``).

        Examples
        --------
        >>> import s4tf
        >>> s4tf.Tensor([1.0]).to("naive").backend
        'naive'
        """
        target = get_backend_object(backend)
        if target is self._backend:
            return self
        host = np.asarray(self.numpy())
        return Tensor._wrap(target.asarray(host, self.dtype), target)

    # Operators.
    def __add__(self, other):
        return _add(self, other)

    def __radd__(self, other):
        return _add(other, self)

    def __sub__(self, other):
        return _sub(self, other)

    def __rsub__(self, other):
        return _sub(other, self)

    def __mul__(self, other):
        return _mul(self, other)

    def __rmul__(self, other):
        return _mul(other, self)

    def __truediv__(self, other):
        return _div(self, other)

    def __rtruediv__(self, other):
        return _div(other, self)

    def __floordiv__(self, other):
        return _ops.floor_div(self, other)

    def __rfloordiv__(self, other):
        return _ops.floor_div(other, self)

    def __mod__(self, other):
        return _ops.mod(self, other)

    def __pow__(self, other):
        return _ops.power(self, other)

    def __rpow__(self, other):
        return _ops.power(other, self)

    def __matmul__(self, other):
        return _ops.matmul(self, other)

    def __rmatmul__(self, other):
        return _ops.matmul(other, self)

    def __neg__(self):
        return _ops.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ops.abs(self)

    def __invert__(self):
        return _ops.logical_not(self)

    def __and__(self, other):
        return _ops.logical_and(self, other)

    def __or__(self, other):
        return _ops.logical_or(self, other)

    def __eq__(self, other):  # type: ignore[override]
        return _ops.equal(self, other)

    def __ne__(self, other):  # type: ignore[override]
        return _ops.not_equal(self, other)

    def __lt__(self, other):
        return _ops.less(self, other)

    def __le__(self, other):
        return _ops.less_equal(self, other)

    def __gt__(self, other):
        return _ops.greater(self, other)

    def __ge__(self, other):
        return _ops.greater_equal(self, other)

    def __getitem__(self, key):
        return _ops.getitem(self, key)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # `ndarray + tensor` lands here; answer with a Tensor. Other NumPy calls on a
        # tensor are not part of the op library (inside AD they are an error).
        name = ufunc.__name__
        op = _ops.UFUNCS.get(name)
        if method == "__call__" and op is not None and not kwargs:
            if not self._traced or name in _ops.ARITHMETIC_UFUNCS:
                return op(*inputs)
        if self._traced:
            raise non_differentiable(f"The NumPy function numpy.{name}")
        return NotImplemented

    # Methods with NumPy names.
    def reshape(self, *shape) -> Tensor:
        """This tensor with a new shape (one axis may be -1)."""
        if len(shape) == 1 and isinstance(shape[0], list | tuple):
            shape = tuple(shape[0])
        return _ops.reshape(self, shape)

    def transpose(self, *perm) -> Tensor:
        """Axes permuted by ``perm`` (reversed when omitted)."""
        if len(perm) == 1 and isinstance(perm[0], list | tuple):
            perm = tuple(perm[0])
        return _ops.transpose(self, perm or None)

    @property
    def T(self) -> Tensor:
        return _ops.transpose(self, None)

    def sum(self, axis=None, keepdims=False) -> Tensor:
        return _ops.sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False) -> Tensor:
        return _ops.mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False) -> Tensor:
        return _ops.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False) -> Tensor:
        return _ops.min(self, axis=axis, keepdims=keepdims)

    def variance(self, axis=None, keepdims=False) -> Tensor:
        return _ops.variance(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis=None) -> Tensor:
        return _ops.argmax(self, axis=axis)

    def argmin(self, axis=None) -> Tensor:
        return _ops.argmin(self, axis=axis)

    def squeeze(self, axis=None) -> Tensor:
        return _ops.squeeze(self, axis=axis)

    def expand_dims(self, axis) -> Tensor:
        return _ops.expand_dims(self, axis)

    def flatten(self) -> Tensor:
        return _ops.reshape(self, (-1,))

    def clip(self, lo, hi) -> Tensor:
        return _ops.clip(self, lo, hi)

    def abs(self) -> Tensor:
        return _ops.abs(self)

    def sequenced(self, *layers):
        """Feed this tensor through each layer in turn (S4TF's ``sequenced(through:)``).

        Examples
        --------
        >>> import s4tf
        >>> s4tf.Tensor([-1.0, 2.0]).sequenced(s4tf.abs, lambda t: t * 2).tolist()
        [2.0, 4.0]
        """
        value = self
        for layer in layers:
            value = layer(value)
        return value


from . import ops as _ops  # noqa: E402  (the op library is built on this class)
from .ops import numpy_functions as _numpy_functions  # noqa: E402

# The arithmetic operators' hot path skips the generic argument handling.
_add, _sub, _mul, _div = _ops.add.binary, _ops.sub.binary, _ops.mul.binary, _ops.div.binary
