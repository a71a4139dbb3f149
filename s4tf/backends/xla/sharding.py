"""Where lazy values live: JAX shardings of materialised buffers, for SPMD steps.

A materialised :class:`LazyArray` holds a ``jax.Array``, and a ``jax.Array``
knows its sharding: one device, or a ``NamedSharding`` over a ``Mesh``
(replicated, or split along some axes). The lazy graph carries those buffers
into ``jax.jit`` unchanged, so XLA's SPMD partitioner sees the shardings of a
step's inputs, propagates them through the step, and inserts the collectives
(the gradient all-reduce of data parallelism, the all-gathers of fully sharded
parameters). Nothing here runs a collective by hand.

This module places buffers (:func:`put`), reports where a value lives
(:func:`devices`) and keeps an updated value's layout (:func:`follow_layout`);
:mod:`.layouts` holds what the trace and the compiler read of layouts.
"""

from __future__ import annotations

import jax
from jax.sharding import NamedSharding

from . import graph
from .lazy import LazyArray
from .recording import LazyKernels

__all__ = ["devices", "follow_layout", "put"]

_KERNELS = LazyKernels()


def put(data: LazyArray, sharding) -> LazyArray:
    """``data``'s value as a new materialised array laid out by ``sharding``.

    A pending ``data`` is computed first (this is an observation, as
    ``numpy()`` is). Small host values move to the devices too: a replicated
    model must not keep one-element parameters behind on the host.
    """
    if data.op is not None:
        graph.barrier()
    if data.buffer is None:
        raise RuntimeError("This xla tensor's buffer was donated to XLA; it can no longer be "
                           "placed on devices. Please report how it was reached.")
    buffer = jax.device_put(data.buffer, sharding)
    return LazyArray(data.shape, data.dtype, buffer=buffer)


def follow_layout(data: LazyArray, like: LazyArray) -> LazyArray:
    """``data`` constrained to ``like``'s mesh layout inside the step (unchanged otherwise).

    The optimizer calls this for each updated parameter and its slots, so a
    replicated parameter stays replicated and a fully sharded one stays split
    the same way, step after step, whatever XLA's propagation would prefer.
    """
    buffer = like.buffer if like.op is None else None
    sharding = getattr(buffer, "sharding", None)
    if not isinstance(sharding, NamedSharding) or sharding.mesh.size == 1:
        return data
    return _KERNELS.with_sharding(data, sharding=sharding)


def devices(data: LazyArray) -> tuple:
    """The JAX devices holding ``data``'s value, in device-id order.

    A pending value is computed first. Host-packed scalars report the default
    device, where the step that uses them runs.
    """
    if data.op is not None:
        graph.barrier()
    if data.host or data.buffer is None:
        return (jax.devices()[0],)
    return tuple(sorted(data.buffer.sharding.device_set, key=lambda d: d.id))
