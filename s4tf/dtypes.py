"""Element types of s4tf tensors.

A :class:`DType` wraps the NumPy dtype that every backend understands (CuPy and
JAX take NumPy dtypes), so comparisons work against strings and NumPy types:
``s4tf.float32 == "float32" == np.float32``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "DType",
    "bfloat16",
    "bool_",
    "as_dtype",
    "float16",
    "float32",
    "float64",
    "int32",
    "int64",
    "promote",
]


class DType:
    """An element type, such as ``s4tf.float32``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([1.0, 2.0]).dtype
    float32
    >>> s4tf.float32 == "float32"
    True
    """

    __slots__ = ("name", "numpy", "is_floating", "is_integer")

    def __init__(self, name: str, numpy_dtype) -> None:
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.is_floating = name in ("float16", "bfloat16", "float32", "float64")
        self.is_integer = name.startswith("int") or name.startswith("uint")

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self.name == other.name
        try:
            return self.name == as_dtype(other).name
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):
        return as_dtype, (self.name,)


def _bfloat16_numpy():
    try:
        import ml_dtypes
    except ImportError:
        # Without ml_dtypes bfloat16 cannot exist as a NumPy type; the DType is still
        # defined so that names resolve, and creating data of it raises clearly.
        return np.dtype("V2")
    return np.dtype(ml_dtypes.bfloat16)


float16 = DType("float16", np.float16)
bfloat16 = DType("bfloat16", _bfloat16_numpy())
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int8 = DType("int8", np.int8)
uint8 = DType("uint8", np.uint8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
bool_ = DType("bool", np.bool_)

_BY_NAME = {
    d.name: d for d in (float16, bfloat16, float32, float64, int8, uint8, int16, int32, int64, bool_)
}
_BY_NAME["bool_"] = bool_
# The DType of each NumPy dtype (bfloat16 aside), for the hot paths that map a
# backend array's dtype to its DType on every call (Tensor.dtype, the tracer's
# dtype, reverse mode's "is it differentiable"): a dict lookup, no call.
# Shared within s4tf, not part of the public API (not in __all__).
BY_NUMPY = {d.numpy: d for d in _BY_NAME.values() if d.numpy.kind != "V"}
# Those of them that are floating: "is this array differentiable" as one set lookup
# (flattening a model's fields, reverse mode's recording). bfloat16 is not among them.
FLOATING_NUMPY = frozenset(n for n, d in BY_NUMPY.items() if d.is_floating)
_PY_TYPES = {float: float32, int: int32, bool: bool_}


def as_dtype(value) -> DType:
    """Return the :class:`DType` for a name, NumPy dtype, Python type or DType.

    Examples
    --------
    >>> as_dtype("float64"), as_dtype(float), as_dtype(np.int32)
    (float64, float32, int32)
    """
    if isinstance(value, DType):
        return value
    found = BY_NUMPY.get(value) if isinstance(value, np.dtype) else None
    if found is not None:
        return found
    if value in _PY_TYPES and isinstance(value, type):
        return _PY_TYPES[value]
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    try:
        name = np.dtype(value).name
    except TypeError:
        name = None
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise TypeError(
        f"s4tf has no dtype {value!r}; use one of "
        "float16, bfloat16, float32, float64, int32, int64, bool (e.g. s4tf.float32)."
    )


_FLOAT_ORDER = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}
_INT_ORDER = {"bool": 0, "uint8": 1, "int8": 1, "int16": 2, "int32": 3, "int64": 4}


def promote(a: DType, b: DType) -> DType:
    """The dtype of a binary op's result, as in JAX: a float wins over an int.

    Unlike NumPy, ``int32`` with ``float32`` stays ``float32`` (no silent float64).

    Examples
    --------
    >>> promote(int32, float32), promote(float16, float32)
    (float32, float32)
    """
    if a is b or a == b:
        return a
    if a.is_floating and b.is_floating:
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return float32
        return a if _FLOAT_ORDER[a.name] >= _FLOAT_ORDER[b.name] else b
    if a.is_floating:
        return a
    if b.is_floating:
        return b
    return a if _INT_ORDER.get(a.name, 0) >= _INT_ORDER.get(b.name, 0) else b
