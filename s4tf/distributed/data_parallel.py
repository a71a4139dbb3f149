"""Data parallelism: every device holds the whole model and a slice of each batch."""

from __future__ import annotations

from .strategy import Strategy

__all__ = ["DataParallel"]


class DataParallel(Strategy):
    """Replicate the model on every device and split each batch across them.

    The usual step runs unchanged: ``value_with_gradient``, ``model =
    opt.update(model, grads)`` and ``s4tf.barrier()`` become one compiled SPMD
    program per step, in which XLA sums the gradients across devices (an
    all-reduce) and every device applies the same update, so parameters and
    optimizer slots stay replicated. Results equal one device's up to float
    reassociation. BatchNorm's batch statistics are *global*: the mean and
    variance are taken over the whole batch, across devices (XLA reduces over
    the sharded batch axis), exactly as on one device.

    Parameters
    ----------
    devices : sequence of jax devices, int, or None
        ``None`` (default): every XLA device. An int: the first that many.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import distributed, layers, optimizers
    >>> s4tf.set_backend("xla")
    >>> strategy = distributed.DataParallel()
    >>> model = strategy.replicate(layers.Dense(4, 2))
    >>> opt = optimizers.SGD(model, learning_rate=0.1)
    >>> x = strategy.shard(s4tf.ones([len(strategy.devices) * 2, 4]))
    >>> loss, grads = s4tf.value_with_gradient(model, of=lambda m: (m(x) ** 2).mean())
    >>> model = opt.update(model, grads)
    >>> s4tf.barrier()
    >>> model.weight.devices == strategy.devices
    True
    >>> s4tf.set_backend("naive")
    """
