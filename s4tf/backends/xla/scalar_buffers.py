"""Device buffers for the small host values of a step (Python scalars entering ops).

Each such value is its own parameter of the compiled step (one parameter per
value keeps the fused kernels that read it alike, so XLA compiles each kind of
kernel once), and the trace keys it by dtype and shape only, so a learning
rate that changes every step never recompiles. Passing a host NumPy value
costs JAX a transfer per argument per call; a training step has a thousand of
them but only a few distinct values (an epsilon, a momentum, batch sizes), so
each distinct value is put on the device once and its buffer reused.
"""

from __future__ import annotations

import jax

from . import jax_settings  # noqa: F401  (64-bit types before any JAX array exists)

__all__ = ["cached_count", "device_buffers"]

# The buffers of the last few barriers' values, newest first: a value that changes
# every step (a decayed learning rate) is dropped a few barriers later instead of
# piling up. More than two, because a step may run two programs that each keep
# their own values (TrainingLoop's captured step, then its metric sums): with two
# generations each program would find only the other's and put its own again.
GENERATIONS = 4
_generations: list[dict] = [{} for _ in range(GENERATIONS)]


def device_buffers(values) -> list:
    """One device buffer per host NumPy value in ``values``, shared by equal values.

    Values are equal when their bytes, dtype and shape are (so ``-0.0`` and
    ``0.0`` stay apart). Call once per barrier: buffers of values the last
    ``GENERATIONS`` calls did not use are let go. The buffers are uncommitted:
    JAX moves them to the devices of a sharded step.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.backends.xla.scalar_buffers import device_buffers
    >>> a, b, c = device_buffers([np.float32(0.5), np.float32(0.5), np.float32(-0.5)])
    >>> a is b, a is c, float(c)
    (True, False, -0.5)
    """
    current: dict = {}
    older = _generations[:-1]
    _generations[:] = [current, *older]
    found = []
    for value in values:
        key = (value.tobytes(), value.dtype, value.shape)
        buffer = current.get(key)
        if buffer is None:
            for generation in older:
                buffer = generation.get(key)
                if buffer is not None:
                    break
            else:
                buffer = jax.device_put(value)
            current[key] = buffer
        found.append(buffer)
    return found


def cached_count() -> int:
    """How many value buffers are kept (tests: bounded by a few barriers' values)."""
    return sum(len(generation) for generation in _generations)
