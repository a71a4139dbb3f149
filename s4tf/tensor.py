"""Tensor: an immutable value wrapping one backend array (its "storage").

This module says what a Tensor *is*: its storage, attributes and conversions.
What a Tensor *does* is an op: its operators (``+``, ``@``, ``==``, ``t[i]``)
and NumPy-named methods (``sum``, ``reshape``, ``astype``, ...) are written
once, in one table, by the op library (:mod:`s4tf.ops.tensor_methods`), which
sets them on this class when :mod:`s4tf.ops` is imported, as JAX's numpy layer
installs ``Array``'s methods. So this module imports no op and the import
arrows run one way (ops -> tensor); tensors of every backend, and the tracers
differentiation wraps around them, share that one surface.
"""

from __future__ import annotations

import math
import numbers
import sys

import numpy as np

from . import dtypes as _dtypes
from .backends.base import Backend, current_backend, get_backend_object
from .non_differentiable import NonDifferentiableError

__all__ = ["Tensor"]  # from_numpy and infer_dtype are shared within s4tf, not user API

_DTYPES = _dtypes.BY_NUMPY


def infer_dtype(data) -> _dtypes.DType:
    """The dtype ``Tensor(data)`` gets: float32 for Python floats, int32 for Python ints,
    bool for bools, NumPy's own dtype for arrays.

    Shared with the op library (``ops/tensor_methods.py``), which infers the
    dtype of values meeting a tensor the same way; not in ``__all__``.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.tensor import infer_dtype
    >>> infer_dtype([1, 2]), infer_dtype(2.5), infer_dtype(np.zeros(2, np.float16))
    (int32, float32, float16)
    """
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


def from_numpy(array, dtype=None, *, like=None) -> Tensor:
    """A new tensor holding a copy of NumPy ``array``, on the backend of ``like``.

    The one way s4tf's own packages turn host numbers (random draws, masks,
    loaded checkpoints, constants an op needs) into a tensor, so that it lands
    where the tensors it meets live, whatever the current backend is. It is a
    contract between s4tf's packages rather than user API: users write
    ``s4tf.Tensor(array)`` (current backend) or ``t.to(name)``.

    Parameters
    ----------
    array : numpy.ndarray or scalar
        Copied (and cast to ``dtype``); the tensor never shares its memory.
    dtype : DType or str, optional
        The tensor's dtype; ``array``'s own dtype when omitted.
    like : Tensor or Backend, optional
        The new tensor goes on this tensor's backend (or on this
        :class:`~s4tf.backends.base.Backend`); on the current backend when
        omitted.

    Examples
    --------
    >>> import numpy as np
    >>> import s4tf
    >>> from s4tf.tensor import from_numpy
    >>> x = s4tf.ones([2])
    >>> y = from_numpy(np.arange(3), s4tf.float32, like=x)
    >>> y.tolist(), y.dtype, y.backend == x.backend
    ([0.0, 1.0, 2.0], float32, True)
    """
    if like is None:
        backend = current_backend()
    elif isinstance(like, Tensor):
        backend = like._backend
    elif isinstance(like, Backend):
        backend = like
    else:
        raise TypeError(
            f"from_numpy(like=...) takes a Tensor or a backend object; received "
            f"{type(like).__name__}. Pass the tensor whose backend the new one should share."
        )
    dtype = _dtypes.as_dtype(dtype if dtype is not None else np.asarray(array).dtype)
    return Tensor._wrap(backend.asarray(array, dtype), backend)


def _is_jax_array(data) -> bool:
    # Without importing JAX: a program that made a JAX array has imported it.
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(data, jax.Array)


def _is_jax_tracer(data) -> bool:
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(data, jax.core.Tracer)


def _from_jax_array(data, dtype) -> Tensor:
    """``Tensor(jax_array)``: a JAX tracer (inside ``jax.jit``, ``grad``, ...) stays a
    tracer, on the jax backend; a concrete array goes to the current backend, without
    a copy where that backend holds JAX buffers (xla, jax), since neither writes one."""
    backend = get_backend_object("jax") if _is_jax_tracer(data) else current_backend()
    tensor = Tensor._wrap(backend.from_jax(data), backend)
    if dtype is not None and _dtypes.as_dtype(dtype) != tensor.dtype:
        tensor = tensor.astype(dtype)
    return tensor


class Tensor:
    """An n-dimensional array with value semantics, on one backend.

    Parameters
    ----------
    data : scalar, nested list, NumPy array, JAX array or Tensor
        Copied: a Tensor never changes after creation. (A JAX array, which
        nobody can change either, is shared where the current backend holds
        JAX buffers, xla or jax; a JAX tracer gives a tensor of the jax
        backend around it, see ``docs/guides/jax-interop.md``.)
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
    _traced = False  # True on tracers (s4tf.ops.tracer), the values being differentiated

    # Construction is in __new__ so that a value being differentiated can come back
    # as itself (a tracer), as jnp.asarray does: Tensor(x) stays differentiable.
    def __new__(cls, data, dtype=None):
        if isinstance(data, Tensor):
            if data._traced:
                return cls._from_traced(data, dtype)
            source = data.numpy()
            dtype = _dtypes.as_dtype(dtype) if dtype is not None else data.dtype
            backend = data._backend
        elif _is_jax_array(data):
            return _from_jax_array(data, dtype)
        else:
            backend = current_backend()
            try:
                dtype = _dtypes.as_dtype(dtype) if dtype is not None else infer_dtype(data)
                if isinstance(data, list | tuple):
                    source = [x.numpy() if isinstance(x, Tensor) else x for x in data]
                    source = np.asarray(source, dtype=dtype.numpy)
                else:
                    source = data
            except TypeError as error:
                if not isinstance(error, NonDifferentiableError):
                    raise
                # A list holding values being differentiated: stack them, differentiably.
                return cls._from_traced(data, dtype)
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
        return math.prod(self.shape)

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

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The values as a DLPack capsule, without a copy (the array-API protocol).

        ``torch.from_dlpack(t)``, ``np.from_dlpack(t)``, ``jax.numpy.from_dlpack(t)``
        and ``cupy.from_dlpack(t)`` share the tensor's memory: the host buffer on
        naive (exported read-only), the device buffer on cupy, xla and jax (a
        pending lazy value is computed first, and its buffer is never donated
        afterwards). While the other library holds it, s4tf never writes that
        buffer in place: an optimizer update copies it instead.

        Examples
        --------
        >>> import numpy as np
        >>> import s4tf
        >>> t = s4tf.Tensor([1.0, 2.0])
        >>> shared = np.from_dlpack(t)
        >>> shared.tolist(), shared.flags.writeable
        ([1.0, 2.0], False)
        """
        source = self._dlpack_source()
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        return source.__dlpack__(**{k: v for k, v in given.items() if v is not None})

    def __dlpack_device__(self):
        """``(device type, device id)`` of the buffer :meth:`__dlpack__` exports."""
        return self._dlpack_source().__dlpack_device__()

    def _dlpack_source(self):
        source = self._backend.dlpack_source(self._data)
        if isinstance(source, np.ndarray):
            # Read-only, like numpy(): the consumer sees the tensor's own memory.
            source = _read_only(np.ascontiguousarray(source))
        return source

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
        if _is_jax_tracer(self._data):  # inside jax.jit, grad, ...: no numbers yet
            shape = ",".join(map(str, self.shape))
            return f"Tensor(<traced {self.dtype}[{shape}]>, backend={self.backend})"
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

    def to(self, backend: str) -> Tensor:
        """The same values on another backend (``"naive"``, ``"cupy"``, ``"xla"``, ``"jax"``).

        Examples
        --------
        >>> import s4tf
        >>> s4tf.Tensor([1.0]).to("naive").backend
        'naive'
        """
        target = get_backend_object(backend)
        if target is self._backend:
            return self
        return from_numpy(np.asarray(self.numpy()), self.dtype, like=target)

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
