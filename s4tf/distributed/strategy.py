"""What every distribution strategy shares: its devices, its mesh, and batch sharding.

A strategy is a description of where values live, nothing more: it puts a
model's tensors and each batch onto a JAX ``Mesh`` with ``NamedSharding``s,
and the lazy backend carries those layouts into the step it compiles, where
XLA's SPMD partitioner does the rest (see ``s4tf/backends/xla/sharding.py``).
Subclasses decide only how a *parameter* is laid out
(:meth:`Strategy.parameter_layout`); batches are always split along their
leading axis.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..tensor import Tensor
from ..tree import tree_map

__all__ = ["Strategy"]

AXIS = "data"


def _jax():
    try:
        import jax
    except ImportError:
        raise ImportError(
            "s4tf.distributed runs on the xla backend, which needs JAX: "
            "pip install 's4tf[xla]'.") from None
    return jax


class Strategy:
    """The devices a step runs on and how values are laid out across them.

    Parameters
    ----------
    devices : sequence of jax devices, int, or None
        ``None``: every XLA device (after :func:`s4tf.distributed.initialize`,
        those of every host). An int ``n`` (Python or NumPy): the first ``n``
        of them. A sequence: exactly those devices. Anything else (``2.0``, a
        string) raises ``TypeError`` saying what is accepted.

    Attributes
    ----------
    devices : tuple of jax.Device
    mesh : jax.sharding.Mesh
        A one-axis mesh (axis ``"data"``) over :attr:`devices`.
    """

    def __init__(self, devices: Sequence | int | None = None) -> None:
        jax = _jax()
        available = jax.devices()
        name = type(self).__name__
        if devices is None:
            chosen = list(available)
        elif isinstance(devices, (bool, str, bytes)) or not isinstance(
                devices, (int, np.integer, Iterable)):
            raise TypeError(
                f"{name}(devices=...) takes None (every device), a count (an int, e.g. "
                f"devices=2) or a sequence of jax devices (e.g. jax.devices()[:2]); received "
                f"{devices!r} ({type(devices).__name__}).")
        elif isinstance(devices, (int, np.integer)):
            devices = int(devices)
            if not 1 <= devices <= len(available):
                raise ValueError(
                    f"{name}(devices={devices}): there are {len(available)} XLA devices "
                    f"({available[0].platform}). Ask for 1 to {len(available)}, or simulate "
                    "more CPU devices with XLA_FLAGS=--xla_force_host_platform_device_count=8 "
                    "set before JAX is imported.")
            chosen = list(available[:devices])
        else:
            chosen = list(devices)
            if not chosen:
                raise ValueError(f"{name}(devices=[]): give at least one device.")
            unknown = [d for d in chosen if d not in available]
            if unknown:
                raise ValueError(f"{name}: {unknown} are not among JAX's devices {available}; "
                                 "pass jax.Device objects (from jax.devices()) or a count.")
            if len(set(chosen)) != len(chosen):
                raise ValueError(f"{name}: a device is listed twice in {chosen}.")
        self.devices = tuple(chosen)
        self.mesh = jax.sharding.Mesh(np.array(chosen), (AXIS,))

    # What subclasses choose.
    def parameter_layout(self, tensor: Tensor):
        """The ``PartitionSpec`` of one tensor of the model (replicated here)."""
        return _jax().sharding.PartitionSpec()

    # What users call.
    def replicate(self, value):
        """``value`` (a model, optimizer state, any tree) with every tensor on the strategy's devices.

        Every tensor (parameters, non-differentiable tensors, ``State`` cells
        such as BatchNorm's running statistics) is laid out as
        :meth:`parameter_layout` says. Values must be on the xla backend.
        """
        sharding = _jax().sharding.NamedSharding
        return self._map(value, "replicate",
                         lambda t: sharding(self.mesh, self.parameter_layout(t)))

    def shard(self, batch):
        """``batch`` (a tensor, or a tuple / list / dict / ``LabeledBatch`` of them) split across the devices.

        Each tensor is split along its leading (batch) axis, one equal slice per
        device; the leading size must be a multiple of the device count.
        """
        jax = _jax()
        count = len(self.devices)
        batch_layout = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec(AXIS))

        def layout(tensor: Tensor):
            if tensor.rank == 0:
                raise ValueError(f"{type(self).__name__}.shard: a scalar tensor has no batch "
                                 "axis to split; shard only per-example tensors.")
            size = tensor.shape[0]
            if size % count:
                multiple = -(-size // count) * count
                raise ValueError(
                    f"{type(self).__name__}.shard: a batch of {size} examples does not divide "
                    f"across {count} devices. Use a batch size that is a multiple of {count} "
                    f"(e.g. {multiple}), or drop the last batch (TrainingLoop(strategy=...) drops a "
                    "short last batch for you).")
            return batch_layout

        return self._map(batch, "shard", layout)

    def _map(self, value, verb: str, layout):
        from ..backends.xla.sharding import put

        def place(leaf):
            if not isinstance(leaf, Tensor):
                return leaf
            if leaf.backend != "xla":
                raise ValueError(
                    f"{type(self).__name__}.{verb}: a tensor of shape {leaf.shape} is on the "
                    f"{leaf.backend!r} backend. Distributed training runs on the lazy xla "
                    "backend, whose compiled steps XLA partitions across devices: call "
                    "s4tf.set_backend('xla') before building the model and the data, or move "
                    "them with s4tf.to_backend(value, 'xla').")
            return Tensor._wrap(put(leaf._data, layout(leaf)), leaf._backend)

        return place(value) if isinstance(value, Tensor) else tree_map(place, value)

    def __repr__(self) -> str:
        platform = self.devices[0].platform
        return f"{type(self).__name__}({len(self.devices)} {platform} devices)"
