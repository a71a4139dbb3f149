"""A CuPy stand-in for machines without a GPU: NumPy behind CuPy's host boundary.

The CuPy backend's tests run here over this module (``S4TF_CUPY_STANDIN=numpy``).
It computes with NumPy, but its arrays are a type of their own that keeps
CuPy's rules at the boundary between host and device, so code that would fail
on a GPU fails here too:

* ``np.asarray(a)`` (any implicit conversion to NumPy) raises CuPy's
  ``TypeError``; ``a.get()`` and ``asnumpy(a)`` are the explicit copies;
* functions and ufuncs of this module refuse NumPy arrays (CuPy's "Unsupported
  type"), except ``array``/``asarray``, which copy host data to the "device";
  NumPy and Python scalars are fine, as in CuPy;
* NumPy's own functions and ufuncs called on stand-in arrays dispatch here
  (``__array_ufunc__``/``__array_function__``, as CuPy's arrays do), so
  ``np.sqrt(a, out=a)`` works and ``np.add(a, host_array)`` raises;
* results are stand-in arrays, 0-d ones where NumPy gives a scalar
  (``a.sum()``, ``a[0]``), and a view knows its ``base``; flags are CuPy's
  (``c_contiguous``, ``f_contiguous``, ``owndata``; no ``writeable``).

What it does not model: streams, asynchronous execution, CuPy's wrap-around
of out-of-range integer indices, and NumPy functions CuPy lacks (they work here).

Examples
--------
>>> import numpy as np
>>> from s4tf.backends.cupy import standin as xp
>>> a = xp.asarray(np.arange(3.0))
>>> (a * 2).sum().get()
array(6.)
>>> np.asarray(a)
Traceback (most recent call last):
    ...
TypeError: Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly.
"""

from __future__ import annotations

import functools
import sys
import types

import numpy as np

__all__ = ["Flags", "array", "asarray", "asnumpy", "ndarray", "scatter_add"]

is_standin = True

_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. "
             "Please use `.get()` to construct a NumPy array explicitly.")


def _to_host(value, where: str):
    """``value`` with stand-in arrays replaced by their host arrays; NumPy arrays refused."""
    if type(value) is ndarray:
        return value._host
    if isinstance(value, np.ndarray):
        raise TypeError(
            f"Unsupported type {type(value)} in cupy stand-in {where}: a NumPy array reached "
            "a device function, which CuPy refuses. Move it with xp.asarray(...) first, or "
            "call xp (the backend's array module) instead of np on device arrays."
        )
    if type(value) in (list, tuple):
        return type(value)(_to_host(v, where) for v in value)
    return value


def _to_device(result, inputs):
    """Host results as stand-in arrays; an input returned unchanged stays that same array."""
    if isinstance(result, np.ndarray):
        for given in inputs:
            if given._host is result:
                return given
        return ndarray._of(result)
    if isinstance(result, np.generic):
        return ndarray._of(np.asarray(result))  # CuPy gives 0-d arrays, not scalars
    if type(result) in (list, tuple):
        return type(result)(_to_device(r, inputs) for r in result)
    return result


def _inputs(values, found: list) -> list:
    """The stand-in arrays among ``values`` (nested lists and tuples included), into ``found``."""
    # A plain loop, not a recursive closure: a closure referring to itself is a
    # reference cycle that would keep the arrays alive (and look shared to
    # copy-on-write) until the garbage collector runs.
    for value in values:
        if type(value) is ndarray:
            found.append(value)
        elif type(value) in (list, tuple):
            _inputs(value, found)
    return found


def _device_function(function, name: str):
    """``function`` (NumPy's) taking and returning stand-in arrays, refusing host arrays."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        where = f"{name}()"
        host_args = _to_host(args, where)
        host_kwargs = {k: _to_host(v, where) for k, v in kwargs.items()}
        result = function(*host_args, **host_kwargs)
        return _to_device(result, _inputs((*args, *kwargs.values()), []))

    return call


class _Ufunc:
    """A NumPy ufunc over stand-in arrays, with its methods (``at``, ``reduce``, ...)."""

    def __init__(self, ufunc: np.ufunc) -> None:
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        self.nin, self.nout = ufunc.nin, ufunc.nout
        self._call = _device_function(ufunc, ufunc.__name__)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, method: str):
        if method not in ("at", "reduce", "accumulate", "reduceat", "outer"):
            raise AttributeError(f"cupy stand-in ufunc {self.__name__!r} has no attribute {method!r}")
        return _device_function(getattr(self._ufunc, method), f"{self.__name__}.{method}")

    def __repr__(self) -> str:
        return f"<cupy stand-in ufunc {self.__name__!r}>"


class Flags:
    """CuPy's array flags: contiguity and ownership only (CuPy arrays are always writable)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, c_contiguous: bool, f_contiguous: bool, owndata: bool) -> None:
        self.c_contiguous, self.f_contiguous, self.owndata = c_contiguous, f_contiguous, owndata


# Methods of cupy.ndarray this stand-in provides (computed by NumPy's methods).
_METHODS = (
    "all", "any", "argmax", "argmin", "astype", "clip", "copy", "cumsum", "dot", "fill",
    "flatten", "max", "mean", "min", "nonzero", "prod", "ravel", "repeat", "reshape", "round",
    "squeeze", "std", "sum", "swapaxes", "take", "transpose", "var", "view",
)
_ATTRIBUTES = ("shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides")


class ndarray:  # noqa: N801  (CuPy's name)
    """A stand-in device array: NumPy memory that refuses to be used as host memory.

    Parameters
    ----------
    shape : tuple of int
    dtype : dtype, optional
        Allocates uninitialised memory, as ``cupy.ndarray(shape, dtype)``.

    Examples
    --------
    >>> from s4tf.backends.cupy import standin as xp
    >>> a = xp.ndarray((2,), "float32")
    >>> a.fill(1.5)
    >>> a.get().tolist(), a.flags.owndata, a[:1].base is a
    ([1.5, 1.5], True, False)
    """

    __slots__ = ("_host", "__weakref__")
    __hash__ = None  # arrays are unhashable, as in NumPy and CuPy

    def __init__(self, shape, dtype=float) -> None:
        self._host = np.empty(shape, dtype)

    @classmethod
    def _of(cls, host: np.ndarray) -> ndarray:
        out = object.__new__(cls)
        out._host = host
        return out

    # The host boundary.
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def get(self) -> np.ndarray:
        """A host copy of the values (CuPy's explicit device-to-host transfer)."""
        return np.array(self._host, copy=True)

    def item(self):
        return self._host.item()

    def tolist(self):
        return self._host.tolist()

    def __float__(self) -> float:
        return float(self._host)

    def __int__(self) -> int:
        return int(self._host)

    def __bool__(self) -> bool:
        return bool(self._host)

    def __repr__(self) -> str:
        return repr(self._host)

    def __str__(self) -> str:
        return str(self._host)

    def __format__(self, spec: str) -> str:
        return format(self._host, spec)

    def __reduce__(self):
        return array, (self.get(),)

    # NumPy's functions on stand-in arrays come here, as they go to CuPy for its arrays.
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        if isinstance(out, tuple):
            if len(out) != 1:
                return NotImplemented
            kwargs["out"] = out[0]
        target = _module_ufunc(ufunc.__name__)
        if target is None:
            return NotImplemented
        return (target if method == "__call__" else getattr(target, method))(*inputs, **kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        if func.__module__ != "numpy" or not hasattr(np, func.__name__):
            return NotImplemented
        return getattr(_MODULE, func.__name__)(*args, **kwargs)

    # Shape, dtype and views.
    def __dlpack__(self, **kwargs):
        # CuPy exports its device buffer without a copy; the stand-in's buffer is host memory.
        return self._host.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._host.__dlpack_device__()

    def __getattr__(self, name: str):
        if name in _ATTRIBUTES:
            return getattr(self._host, name)
        if name in _METHODS:
            return _device_function(getattr(self._host, name), f"ndarray.{name}")
        raise AttributeError(f"cupy stand-in ndarray has no attribute {name!r}")

    @property
    def T(self) -> ndarray:  # noqa: N802  (NumPy's name)
        return ndarray._of(self._host.T)

    @property
    def base(self):
        """``None`` for an array owning its memory, else the array it views (as CuPy)."""
        base = self._host.base
        return None if base is None else ndarray._of(base)

    @property
    def flags(self) -> Flags:
        f = self._host.flags
        return Flags(f.c_contiguous, f.f_contiguous, f.owndata and self._host.base is None)

    def __len__(self) -> int:
        return len(self._host)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    # Indexing: CuPy copies host index arrays and values to the device itself.
    def __getitem__(self, key):
        return _to_device(self._host[_index_to_host(key)], [self])

    def __setitem__(self, key, value) -> None:
        self._host[_index_to_host(key)] = value._host if type(value) is ndarray else value


def _index_to_host(key):
    if type(key) is ndarray:
        return key._host
    if type(key) is tuple:
        return tuple(k._host if type(k) is ndarray else k for k in key)
    return key


def _binary(name: str, reflected: bool = False, inplace: bool = False):
    def operator(self, other):
        ufunc = _module_ufunc(name)
        if inplace:
            return ufunc(self, other, out=self)
        return ufunc(other, self) if reflected else ufunc(self, other)

    return operator


def _unary(name: str):
    return lambda self: _module_ufunc(name)(self)


_OPERATORS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}
for _op, _name in _OPERATORS.items():
    setattr(ndarray, f"__{_op}__", _binary(_name))
    setattr(ndarray, f"__r{_op}__", _binary(_name, reflected=True))
    setattr(ndarray, f"__i{_op}__", _binary(_name, inplace=True))
for _op, _name in {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                   "gt": "greater", "ge": "greater_equal"}.items():
    setattr(ndarray, f"__{_op}__", _binary(_name))
for _op, _name in {"neg": "negative", "pos": "positive", "abs": "absolute",
                   "invert": "invert"}.items():
    setattr(ndarray, f"__{_op}__", _unary(_name))


# The module's own functions -------------------------------------------------

def array(obj, dtype=None, copy=True, order="K", ndmin=0) -> ndarray:
    """A stand-in array from host data (always a host-to-device copy) or a stand-in array.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.backends.cupy import standin as xp
    >>> host = np.zeros(2)
    >>> device = xp.array(host)
    >>> host[0] = 5.0
    >>> device.get().tolist()
    [0.0, 0.0]
    """
    if type(obj) is ndarray:
        if not copy and ndmin == 0:
            return asarray(obj, dtype)
        obj = obj._host
    return ndarray._of(np.array(obj, dtype=dtype, copy=True, order=order, ndmin=ndmin))


def asarray(obj, dtype=None, order=None) -> ndarray:
    """``obj`` itself when it is a stand-in array of ``dtype``, else a new one.

    Examples
    --------
    >>> from s4tf.backends.cupy import standin as xp
    >>> a = xp.asarray([1.0, 2.0])
    >>> xp.asarray(a) is a, xp.asarray(a, "float32").dtype.name
    (True, 'float32')
    """
    if type(obj) is ndarray and (dtype is None or obj.dtype == np.dtype(dtype)):
        return obj
    if type(obj) is ndarray:
        return ndarray._of(obj._host.astype(dtype))
    return ndarray._of(np.array(obj, dtype=dtype, order=order or "K"))


asanyarray = asarray


def asnumpy(a) -> np.ndarray:
    """A host array of ``a`` (CuPy's explicit transfer); host data passes through.

    Examples
    --------
    >>> from s4tf.backends.cupy import standin as xp
    >>> type(xp.asnumpy(xp.ones(2))).__name__
    'ndarray'
    """
    return a.get() if type(a) is ndarray else np.asarray(a)


def scatter_add(a: ndarray, slices, value) -> None:
    """``a[slices] += value`` with repeated indices adding up, as ``cupyx.scatter_add``.

    Examples
    --------
    >>> from s4tf.backends.cupy import standin as xp
    >>> a = xp.zeros(3)
    >>> xp.scatter_add(a, xp.asarray([1, 1]), xp.ones(2))
    >>> a.get().tolist()
    [0.0, 2.0, 0.0]
    """
    np.add.at(a._host, _index_to_host(slices), value._host if type(value) is ndarray else value)


lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
    as_strided=_device_function(np.lib.stride_tricks.as_strided, "lib.stride_tricks.as_strided")))

_ufuncs: dict[str, _Ufunc] = {}


def _module_ufunc(name: str) -> _Ufunc | None:
    found = _ufuncs.get(name)
    if found is None:
        ufunc = getattr(np, name, None)
        if not isinstance(ufunc, np.ufunc):
            return None
        found = _ufuncs[name] = _Ufunc(ufunc)
    return found


def __getattr__(name: str):
    """The rest of NumPy's namespace: ufuncs and functions over stand-in arrays; types as is."""
    if name.startswith("__"):
        raise AttributeError(name)
    value = getattr(np, name)  # AttributeError for names NumPy lacks, as CuPy lacks them
    if isinstance(value, types.ModuleType):
        # np.random, np.linalg, ...: their results would be host arrays in disguise.
        raise AttributeError(f"the cupy stand-in has no submodule {name!r}; add what is needed")
    if isinstance(value, np.ufunc):
        found = _module_ufunc(name)
    elif callable(value) and not isinstance(value, type):
        found = _device_function(value, name)
    else:
        found = value  # dtypes, iinfo/finfo, constants: shared with NumPy, as in CuPy
    globals()[name] = found
    return found


_MODULE = sys.modules[__name__]
