"""The jax backend object: eager kernels on JAX arrays and on JAX tracers.

Examples
--------
>>> import jax.numpy as jnp
>>> from s4tf.backends.jax.backend import BACKEND
>>> BACKEND.name, BACKEND.kernels.add(jnp.ones(2), jnp.ones(2)).tolist()
('jax', [2.0, 2.0])
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import Backend
from .kernels import JAX_KERNELS

__all__ = ["BACKEND", "JaxBackend", "is_tracer"]


def _numpy_dtype(dtype) -> np.dtype:
    return dtype.numpy if hasattr(dtype, "numpy") else np.dtype(dtype)


def is_tracer(data) -> bool:
    """Whether ``data`` is a JAX tracer (a value inside ``jax.jit``, ``grad``, ``vmap``, ...).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from s4tf.backends.jax.backend import is_tracer
    >>> seen = []
    >>> _ = jax.jit(lambda x: seen.append(is_tracer(x)) or x)(1.0)
    >>> is_tracer(jnp.ones(2)), seen
    (False, [True])
    """
    return isinstance(data, jax.core.Tracer)


class JaxBackend(Backend):
    """Tensors holding ``jax.Array`` values or JAX tracers; every kernel runs at once.

    A tensor of this backend is what an s4tf value becomes inside a JAX
    transformation; outside one it is an ordinary eager backend over JAX
    arrays (``s4tf.set_backend("jax")``). Arrays are immutable, so nothing is
    written in place (``supports_inplace`` is False: optimizers build new
    values, as on the lazy backend). A tracer's values are not known while JAX
    traces (:meth:`readable` is False), so checks that read numbers (index
    ranges) are skipped there and out-of-range indices give NaN rows, as on
    xla; on concrete arrays they raise as on the other eager backends.

    Examples
    --------
    >>> import s4tf
    >>> with s4tf.backend("jax"):
    ...     x = s4tf.Tensor([1.0, 2.0, 3.0])
    >>> y = (x * x).sum()
    >>> y.backend, float(y), type(y._data).__name__
    ('jax', 14.0, 'ArrayImpl')
    """

    name = "jax"
    kernels = JAX_KERNELS
    # The concrete arrays' type (tracers, the values inside transformations, are not
    # of it): nothing is ever written in place here anyway. Made with compile-time
    # evaluation: this module may be imported first inside a JAX trace (s4tf.export
    # tracing a model that names the backend), where jnp.zeros would give a tracer.
    with jax.ensure_compile_time_eval():
        array_type = type(jnp.zeros(()))
    xp = None  # the kernels are jax.numpy's; nothing outside them may compute on the arrays
    supports_inplace = False
    absorbs_others = True

    def asarray(self, value, dtype) -> jax.Array:
        return jnp.array(value, dtype=_numpy_dtype(dtype), copy=True)

    def scalar(self, value, dtype) -> jax.Array:
        return jnp.asarray(value, dtype=_numpy_dtype(dtype))

    def weak_scalar(self, value, numpy_dtype):
        # JAX keeps a floating array's dtype when a Python number meets it (weak type).
        return value

    def copy(self, data):
        # JAX arrays are never written in place, so sharing one is as good as a copy.
        return data

    def readable(self, data) -> bool:
        return not is_tracer(data)

    def to_numpy(self, data) -> np.ndarray:
        if is_tracer(data):
            raise TypeError(
                "This s4tf tensor holds a JAX tracer: it is being traced by a JAX "
                "transformation (jax.jit, jax.grad, jax.vmap, jax.lax.scan, ...), so its "
                "numbers are not known yet and cannot be read (numpy(), float(), item(), "
                "bool(), printing). Compute with s4tf ops instead, use jax.lax.cond / "
                "s4tf.where for data-dependent choices, or read the value after the "
                "transformed function returns."
            )
        return np.asarray(data)

    def to_jax(self, data):
        return data

    def from_jax(self, array):
        return array

    def dlpack_source(self, data):
        if is_tracer(data):
            self.to_numpy(data)  # raises, saying why a traced value has no buffer to share
        return data

    def devices(self, data) -> tuple:
        if is_tracer(data):
            return ()
        return tuple(data.devices())


BACKEND = JaxBackend()
