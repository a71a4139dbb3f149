"""Training on many devices through XLA's SPMD partitioner (JAX sharding).

A strategy lays the model's tensors and each batch out over a mesh of devices;
the lazy xla backend carries those layouts into the one program it compiles per
step, and XLA partitions it and inserts the collectives. The training step
itself does not change.

Examples
--------
>>> import s4tf
>>> from s4tf import distributed
>>> s4tf.set_backend("xla")
>>> strategy = distributed.DataParallel()
>>> x = strategy.shard(s4tf.ones([2 * len(strategy.devices), 3]))
>>> x.devices == strategy.devices
True
>>> s4tf.set_backend("naive")
"""

from .data_parallel import DataParallel
from .fully_sharded import FullySharded
from .runtime import initialize
from .strategy import Strategy

__all__ = ["DataParallel", "FullySharded", "Strategy", "initialize"]
