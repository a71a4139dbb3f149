"""NumPy-style mutable arrays over immutable tensors, for optimizer rules on any backend.

Optimizer rules (:meth:`s4tf.optimizers.Optimizer.update_parameter`) are
written once with in-place NumPy: ``param -= step``, ``np.sqrt(v, out=tmp)``,
``np.empty_like(param)``. Eager backends run them on their arrays directly.
The lazy xla backend cannot write into a buffer, so the optimizer hands the rule
:class:`TensorBuffer` objects instead: each "in-place" operation rebinds the
buffer to a new :class:`~s4tf.Tensor` computed with s4tf ops (recorded lazily on
xla), and the optimizer reads the final tensors back. The whole update then
joins the training step's graph, and the old buffers can be donated.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from .. import ops
from ..tensor import Tensor

__all__ = ["TensorBuffer", "full_on"]


def full_on(backend, shape, dtype, value) -> Tensor:
    """A tensor of ``shape`` and ``dtype`` filled with ``value``, made on ``backend``.

    Built from one scalar broadcast to ``shape``, so on the lazy backend it is a
    graph node fed by a packed host scalar: no host array of ``shape`` is made
    or transferred.

    Examples
    --------
    >>> import numpy as np, s4tf
    >>> from s4tf.backends.base import get_backend_object
    >>> full_on(get_backend_object("naive"), (2,), np.float32, 3.0).tolist()
    [3.0, 3.0]
    """
    dtype = _dtypes.as_dtype(np.dtype(dtype))
    scalar = Tensor._wrap(backend.scalar(value, dtype), backend)
    return ops.broadcast_to(scalar, tuple(shape))


def _names(names) -> str:
    return ", ".join(f"np.{name}" for name in names)


def _in_place(op):
    """The in-place operator method: rebind ``self`` to ``self <op> other``."""
    def method(self, other):
        self._assign(op(self.tensor, self._operand(other)))
        return self
    return method


def _binary(op, reflected: bool = False):
    """The operator method ``self <op> other`` (``other <op> self`` if ``reflected``)."""
    if reflected:
        return lambda self, other: self._new(op(self._operand(other), self.tensor))
    return lambda self, other: self._new(op(self.tensor, self._operand(other)))


class TensorBuffer:
    """A mutable, NumPy-style array whose value is an immutable s4tf Tensor.

    In-place operations (``+=``, ``-=``, ``*=``, ``/=``, a ufunc with ``out=``,
    ``np.copyto``, ``buffer[...] = x``) compute a new Tensor with s4tf ops and
    rebind the buffer to it; nothing is written into the old Tensor, so anyone
    holding it keeps its value. Python numbers stay weak scalars (a float32
    buffer stays float32; on xla a changing learning rate is packed with the
    graph's inputs and never recompiles). A result written to ``out=`` takes
    ``out``'s dtype and shape. ``np.empty_like`` makes an unset buffer, which
    raises if read before it is written.

    Parameters
    ----------
    tensor : Tensor
        The initial value.

    Attributes
    ----------
    tensor : Tensor
        The current value.
    shape : tuple of int
    dtype : numpy.dtype

    Examples
    --------
    >>> import numpy as np, s4tf
    >>> p = TensorBuffer(s4tf.Tensor([1.0, 4.0]))
    >>> tmp = np.sqrt(p, out=np.empty_like(p))
    >>> tmp *= 0.5
    >>> p -= tmp
    >>> p.tensor.tolist(), p.dtype
    ([0.5, 3.0], dtype('float32'))
    """

    __slots__ = ("_tensor", "_backend", "dtype", "shape")

    def __init__(self, tensor: Tensor) -> None:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"TensorBuffer wraps an s4tf.Tensor; got a {type(tensor).__name__}.")
        self._tensor = tensor
        self._backend = tensor._backend
        self.shape = tensor.shape
        self.dtype = np.dtype(tensor._data.dtype)

    @classmethod
    def _unset(cls, shape, dtype, backend) -> TensorBuffer:
        buffer = object.__new__(cls)
        buffer._tensor = None
        buffer._backend = backend
        buffer.shape = tuple(shape)
        buffer.dtype = np.dtype(dtype)
        return buffer

    @property
    def tensor(self) -> Tensor:
        if self._tensor is None:
            raise ValueError(
                f"This TensorBuffer (shape {self.shape}, {self.dtype.name}) came from "
                "np.empty_like and was read before anything was written to it; NumPy would "
                "return garbage here. Write it first (e.g. np.multiply(a, b, out=buffer)) or "
                "use np.zeros_like."
            )
        return self._tensor

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def numpy(self) -> np.ndarray:
        """A host copy of the current value (runs pending work on xla)."""
        return np.array(self.tensor.numpy(), copy=True)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "A TensorBuffer cannot be turned into a NumPy array: a rule that converts it "
            "would compute on a detached host copy and lose its in-place writes. Use NumPy "
            "ufuncs with out=, in-place operators or np.copyto on it; read a copy with "
            "buffer.numpy()."
        )

    def __repr__(self) -> str:
        state = "unset" if self._tensor is None else self._backend.name
        return f"TensorBuffer(shape={self.shape}, dtype={self.dtype.name}, {state})"

    # Conversions.
    def _operand(self, value):
        """``value`` as something s4tf ops accept: a Tensor or a weak Python number."""
        if isinstance(value, TensorBuffer):
            return value.tensor
        if isinstance(value, Tensor):
            return value
        if isinstance(value, bool | np.bool_):
            return bool(value)
        if isinstance(value, int | np.integer):
            return int(value)
        if isinstance(value, np.floating):
            return float(value)  # np.float64 would otherwise promote float32 to float64
        if isinstance(value, float):
            return value  # as it is: a number s4tf.xla.compile follows stays followed
        if isinstance(value, np.ndarray):
            if value.ndim == 0:
                return value.item()
            dtype = _dtypes.as_dtype(value.dtype)
            return Tensor._wrap(self._backend.asarray(value, dtype), self._backend)
        raise TypeError(
            f"TensorBuffer: cannot use a {type(value).__name__} as an operand; expected a "
            "TensorBuffer, an s4tf.Tensor, a NumPy array or a Python number."
        )

    def _assign(self, value) -> None:
        """Rebind to ``value`` converted to this buffer's shape and dtype (NumPy's ``out=``)."""
        if not isinstance(value, Tensor):
            value = full_on(self._backend, self.shape, self.dtype, value)
        if value._backend is not self._backend:
            value = value.to(self._backend.name)
        if np.dtype(value._data.dtype) != self.dtype:
            value = ops.cast(value, dtype=_dtypes.as_dtype(self.dtype))
        if value.shape != self.shape:
            if np.broadcast_shapes(value.shape, self.shape) != self.shape:
                raise ValueError(
                    f"TensorBuffer: cannot write a result of shape {value.shape} into a buffer "
                    f"of shape {self.shape}; the result must broadcast to the buffer's shape."
                )
            value = ops.broadcast_to(value, self.shape)
        self._tensor = value

    def _new(self, value) -> TensorBuffer:
        if isinstance(value, Tensor):
            return TensorBuffer(value)
        return TensorBuffer(full_on(self._backend, (), self.dtype, value))

    # NumPy protocols.
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # The ufuncs a Tensor answers, as s4tf ops: one table for both.
        op = ops.UFUNCS.get(ufunc.__name__)
        if op is None or method != "__call__":
            what = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
            raise TypeError(
                f"TensorBuffer does not support {what}; optimizer rules on the lazy backend may "
                f"use these ufuncs (called directly): {_names(ops.UFUNCS)}. Write the rule with "
                "them, or add the ufunc to s4tf.ops.UFUNCS (s4tf/ops/__init__.py)."
            )
        out = kwargs.pop("out", None)
        if kwargs:
            raise TypeError(
                f"TensorBuffer: np.{ufunc.__name__} got unsupported keyword arguments "
                f"{sorted(kwargs)}; only out= is supported."
            )
        result = op(*[self._operand(x) for x in inputs])
        if out is None:
            return self._new(result)
        target = out[0] if isinstance(out, tuple) else out
        if not isinstance(target, TensorBuffer):
            raise TypeError(
                f"TensorBuffer: np.{ufunc.__name__} was asked to write into a "
                f"{type(target).__name__}; results of TensorBuffer operands can only be written "
                "into a TensorBuffer (make one with np.empty_like(buffer))."
            )
        target._assign(result)
        return target

    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func)
        if handler is None:
            raise TypeError(
                f"TensorBuffer does not support np.{func.__name__}; optimizer rules on the lazy "
                f"backend may use the functions {_names(f.__name__ for f in _FUNCTIONS)} and "
                f"the ufuncs {_names(ops.UFUNCS)}."
            )
        return handler(*args, **kwargs)

    def __setitem__(self, key, value) -> None:
        if key is not Ellipsis and key != slice(None):
            raise TypeError(
                f"TensorBuffer supports only whole-buffer assignment (buffer[...] = x), not "
                f"buffer[{key!r}] = x; build the new value with s4tf ops and np.copyto it."
            )
        self._assign(self._operand(value))

    # In-place operators rebind; the others make new buffers.
    __iadd__, __isub__ = _in_place(ops.add), _in_place(ops.sub)
    __imul__, __itruediv__ = _in_place(ops.mul), _in_place(ops.div)
    __add__, __radd__ = _binary(ops.add), _binary(ops.add, reflected=True)
    __sub__, __rsub__ = _binary(ops.sub), _binary(ops.sub, reflected=True)
    __mul__, __rmul__ = _binary(ops.mul), _binary(ops.mul, reflected=True)
    __truediv__, __rtruediv__ = _binary(ops.div), _binary(ops.div, reflected=True)

    def __neg__(self):
        return self._new(ops.neg(self.tensor))


def _like_shape(prototype: TensorBuffer, dtype, shape):
    dtype = prototype.dtype if dtype is None else np.dtype(dtype)
    return (prototype.shape if shape is None else tuple(shape)), dtype


def _empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    shape, dtype = _like_shape(prototype, dtype, shape)
    return TensorBuffer._unset(shape, dtype, prototype._backend)


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    shape, dtype = _like_shape(a, dtype, shape)
    return TensorBuffer(full_on(a._backend, shape, dtype, fill_value))


def _filled_like(fill_value):
    """NumPy's ``zeros_like`` (``fill_value=0``) or ``ones_like`` (``1``) for buffers."""
    def like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
        return _full_like(a, fill_value, dtype, shape=shape)
    return like


def _copyto(dst, src, casting="same_kind", where=True):
    if not isinstance(dst, TensorBuffer):
        raise TypeError(
            f"TensorBuffer: np.copyto into a {type(dst).__name__} from a TensorBuffer is not "
            "supported; copy into a TensorBuffer (make one with np.empty_like(buffer))."
        )
    if where is not True:
        raise TypeError("TensorBuffer: np.copyto(..., where=...) is not supported; use s4tf.where.")
    dst._assign(dst._operand(src))


_FUNCTIONS = {
    np.empty_like: _empty_like,
    np.zeros_like: _filled_like(0),
    np.ones_like: _filled_like(1),
    np.full_like: _full_like,
    np.copyto: _copyto,
}
