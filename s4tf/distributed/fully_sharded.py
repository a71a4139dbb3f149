"""Fully sharded data parallelism (ZeRO-3 / FSDP) through sharding annotations alone."""

from __future__ import annotations

from collections.abc import Sequence

from ..tensor import Tensor
from .strategy import AXIS, Strategy, _jax

__all__ = ["FullySharded"]


class FullySharded(Strategy):
    """Split every large parameter, and so its optimizer slots, across the devices.

    Each device keeps ``1/devices`` of every large parameter and of its
    optimizer slots (Adam's moments follow their parameter: XLA lays out the
    update's outputs like its inputs), so a model whose parameters and
    optimizer state do not fit on one device trains across several. Batches
    are split as in :class:`DataParallel`. Inside the compiled step XLA
    gathers a parameter where the computation needs it whole and
    reduce-scatters its gradient; no collective is written by hand.

    A tensor is *large* when it holds at least ``min_size`` values; it is
    split along its largest axis whose length divides by the device count
    (a tensor with no such axis stays replicated, as small ones do).

    Parameters
    ----------
    devices : sequence of jax devices, int, or None
        As for :class:`DataParallel`.
    min_size : int
        The smallest tensor (in values) worth splitting; default 2**14.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import distributed, layers
    >>> s4tf.set_backend("xla")
    >>> strategy = distributed.FullySharded(min_size=16)
    >>> dense = strategy.replicate(layers.Dense(64, 8))
    >>> shards = dense.weight._data.buffer.addressable_shards
    >>> shards[0].data.shape == (64 // len(strategy.devices), 8)
    True
    >>> s4tf.set_backend("naive")
    """

    def __init__(self, devices: Sequence | int | None = None, *, min_size: int = 2**14) -> None:
        if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 1:
            raise ValueError(f"FullySharded(min_size=...) must be a positive int; "
                             f"received {min_size!r}.")
        super().__init__(devices)
        self.min_size = min_size

    def parameter_layout(self, tensor: Tensor):
        spec = _jax().sharding.PartitionSpec
        count = len(self.devices)
        if tensor.size < self.min_size or count == 1:
            return spec()
        axes = [a for a in range(tensor.rank) if tensor.shape[a] % count == 0]
        if not axes:
            return spec()
        axis = max(axes, key=lambda a: tensor.shape[a])
        return spec(*[AXIS if a == axis else None for a in range(tensor.rank)])
