"""``s4tf.from_dlpack``: a tensor sharing the memory of another library's array.

The other direction is :meth:`s4tf.Tensor.__dlpack__` (``tensor.py``).
"""

from __future__ import annotations

import importlib

from ..backends.base import current_backend, get_backend_object
from ..tensor import Tensor

__all__ = ["from_dlpack"]


def from_dlpack(obj, backend: str | None = None) -> Tensor:
    """A tensor sharing the memory of ``obj`` (a PyTorch tensor, NumPy, CuPy or JAX array).

    Zero copy where the devices allow: a CPU buffer becomes a naive tensor, a
    CUDA one a cupy tensor; on the xla and jax backends the buffer becomes a
    JAX array first (``jax.numpy.from_dlpack``, also without a copy on the same
    device). The buffer still belongs to ``obj`` as well: s4tf never writes it
    in place (an optimizer update of a model holding it copies it), but the
    other library may, and the tensor would then show its writes.

    Parameters
    ----------
    obj : object with ``__dlpack__``
        The array to share.
    backend : str, optional
        Where the tensor goes: ``"naive"`` (CPU buffers), ``"cupy"`` (CUDA),
        ``"xla"`` or ``"jax"``; by default the current backend, or ``"naive"``
        for a CPU buffer when the current one is ``"cupy"``.

    Examples
    --------
    >>> import numpy as np
    >>> import s4tf
    >>> host = np.arange(3.0, dtype=np.float32)
    >>> t = s4tf.from_dlpack(host)
    >>> t.tolist(), np.shares_memory(t.numpy(), host)
    ([0.0, 1.0, 2.0], True)
    """
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(
            f"from_dlpack takes an array with __dlpack__ (a PyTorch tensor, a NumPy, CuPy or "
            f"JAX array); received {type(obj).__name__}. Convert it with s4tf.Tensor(...) "
            "instead (a copy)."
        )
    target = get_backend_object(backend) if backend is not None else current_backend()
    if target.name in ("xla", "jax"):
        jnp = importlib.import_module("jax.numpy")
        return Tensor._wrap(target.from_jax(jnp.from_dlpack(obj)), target)
    device_type = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else 1
    if device_type == 1 and target.name == "cupy" and backend is None:
        target = get_backend_object("naive")  # a CPU buffer cannot be a CuPy array
    xp = target.xp
    if not hasattr(xp, "from_dlpack"):
        raise TypeError(
            f"The {target.name} backend's array module cannot import DLPack buffers; pass "
            "backend='naive' or move the array to the host first."
        )
    return Tensor._wrap(xp.from_dlpack(obj), target)
