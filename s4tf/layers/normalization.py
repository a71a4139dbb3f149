"""Normalization layers: BatchNorm, LayerNorm, GroupNorm, InstanceNorm.

Statistics are biased (divide by N) and epsilon sits inside the square root:
``(x - mean) / sqrt(variance + epsilon) * scale + offset``, as in S4TF.
BatchNorm's running statistics live in :class:`s4tf.State` cells, the only
state a forward pass changes; the update uses values with every level of
differentiation stripped, so no tracer ever leaks into a cell.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from .._sizes import size, sizes
from ..differentiable import State, no_derivative
from ..initializers import ones, zeros
from ..learning_phase import layer_is_training
from ..ops import mean, reshape, rsqrt
from ..ops.layer_norm import layer_norm
from ..ops.normalization import batch_norm
from ..ops.shapes import shape_of
from ..ops.tracer import Tracer, strip
from ..tensor import Tensor
from .layer import Layer

__all__ = ["BatchNorm", "GroupNorm", "InstanceNorm", "LayerNorm"]


def _feature_axis(layer, input, axis: int, feature_count: int) -> tuple[int, tuple]:
    """The non-negative feature axis and the shape that broadcasts ``(features,)`` along it."""
    shape = shape_of(input)
    rank = len(shape)
    if not -rank <= axis < rank or shape[axis] != feature_count:
        expected = ["?"] * max(rank, 1)
        if -max(rank, 1) <= axis < max(rank, 1):
            expected[axis] = str(feature_count)
        raise ValueError(
            f"{type(layer).__name__}: expected an input with {feature_count} features on axis "
            f"{axis}, i.e. shape ({', '.join(expected)}), got shape {shape}. Pass axis= for "
            f"another layout or build the layer with feature_count={shape[axis] if -rank <= axis < rank else '...'}."
        )
    axis %= rank
    return axis, tuple(feature_count if i == axis else 1 for i in range(rank))


class BatchNorm(Layer):
    """Batch normalization (Ioffe and Szegedy 2015), S4TF's ``BatchNorm``.

    In the training phase the layer normalizes with the batch's statistics
    (over every axis but ``axis``; :func:`s4tf.nn.batch_norm`, one fused op)
    and updates, in place in their :class:`s4tf.State` cells, ``running =
    momentum * running + (1 - momentum) * batch`` (the batch variance is
    biased), inside or outside differentiation.
    In the inference phase (the default) it uses the running statistics.

    Parameters
    ----------
    feature_count : int
    axis : int, default -1
        The feature axis (-1: channels last, NHWC).
    momentum : float, default 0.99
    epsilon : float, default 0.001
    dtype : DType, default float32

    Notes
    -----
    Fields: ``offset`` (zeros) and ``scale`` (ones) of shape ``(feature_count,)``;
    ``running_mean`` (zeros) and ``running_variance`` (ones), State cells.

    Examples
    --------
    >>> import s4tf
    >>> bn = s4tf.layers.BatchNorm(feature_count=2)
    >>> x = s4tf.Tensor([[0.0, 10.0], [2.0, 30.0]])
    >>> with s4tf.training():
    ...     y = bn(x)
    >>> [round(v, 4) for v in y[:, 0].tolist()]
    [-0.9995, 0.9995]
    >>> [round(v, 3) for v in bn.running_mean.value.tolist()]
    [0.01, 0.2]
    """

    offset: Tensor
    scale: Tensor
    running_mean: State = no_derivative()
    running_variance: State = no_derivative()
    axis: int = no_derivative()
    momentum: float = no_derivative()
    epsilon: float = no_derivative()
    # Statistics need float32: under a mixed precision policy this layer computes in
    # float32 on the low-precision input (as Keras's normalization layers do).
    _float32_under_mixed_precision = True

    def __init__(self, feature_count: int, axis: int = -1, momentum: float = 0.99,
                 epsilon: float = 0.001, dtype=_dtypes.float32):
        feature_count = size(feature_count, "feature_count", "BatchNorm")
        self.offset = zeros((feature_count,), dtype=dtype)
        self.scale = ones((feature_count,), dtype=dtype)
        self.running_mean = State(zeros((feature_count,), dtype=dtype))
        self.running_variance = State(ones((feature_count,), dtype=dtype))
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon

    def __call__(self, input):
        axis, kept = _feature_axis(self, input, self.axis, shape_of(self.offset)[0])
        if not layer_is_training(self, input, self.offset, self.scale):
            # One factor per feature: three passes over the input, not four.
            factor = rsqrt(self.running_variance.value + self.epsilon) * self.scale
            return ((input - reshape(self.running_mean.value, kept)) * reshape(factor, kept)
                    + reshape(self.offset, kept))
        output, batch_mean, batch_variance = batch_norm(input, self.scale, self.offset, axis=axis,
                                                        epsilon=self.epsilon)
        self._update_running(strip(batch_mean), strip(batch_variance))
        return output

    def _update_running(self, batch_mean, batch_variance):
        # Plain (untraced) tensors only: the cells outlive any differentiation.
        if isinstance(batch_mean, Tracer):  # strip left a batch level: inside s4tf.vmap
            raise TypeError(
                "BatchNorm: the training phase inside s4tf.vmap would give every example its "
                "own running statistics, and the running_mean and running_variance cells "
                "outlive the vmap. Call the layer in the inference phase inside vmap (with "
                "s4tf.inference():), or make the training-phase call outside vmap."
            )
        m = self.momentum
        for cell, batch in ((self.running_mean, batch_mean), (self.running_variance, batch_variance)):
            old = cell.value
            cell.value = old * m + batch.astype(old.dtype) * (1.0 - m)


class LayerNorm(Layer):
    """Layer normalization (Ba et al. 2016): statistics over ``axis`` of each sample.

    Parameters
    ----------
    feature_count : int
    axis : int, default -1
    epsilon : float, default 0.001
    dtype : DType, default float32

    Notes
    -----
    Fields: ``offset`` (zeros), ``scale`` (ones), shape ``(feature_count,)``.

    Examples
    --------
    >>> import s4tf
    >>> ln = s4tf.layers.LayerNorm(feature_count=2)
    >>> [round(v, 3) for v in ln(s4tf.Tensor([[1.0, 3.0]]))[0].tolist()]
    [-1.0, 1.0]
    """

    offset: Tensor
    scale: Tensor
    axis: int = no_derivative()
    epsilon: float = no_derivative()
    # Statistics need float32: under a mixed precision policy this layer computes in
    # float32 on the low-precision input (as Keras's normalization layers do).
    _float32_under_mixed_precision = True

    def __init__(self, feature_count: int, axis: int = -1, epsilon: float = 0.001,
                 dtype=_dtypes.float32):
        feature_count = size(feature_count, "feature_count", type(self).__name__)
        self.offset = zeros((feature_count,), dtype=dtype)
        self.scale = ones((feature_count,), dtype=dtype)
        self.axis = axis
        self.epsilon = epsilon

    def __call__(self, input):
        axis, kept = _feature_axis(self, input, self.axis, shape_of(self.offset)[0])
        if axis == len(kept) - 1 and input.dtype.is_floating:
            # One fused op (forward and backward one kernel each), the same values.
            return layer_norm(input, self.scale, self.offset, epsilon=self.epsilon)
        mean_ = mean(input, axis=axis, keepdims=True)
        centered = input - mean_
        variance = mean(centered * centered, axis=axis, keepdims=True)
        return centered * rsqrt(variance + self.epsilon) * reshape(self.scale, kept) + reshape(self.offset, kept)


def _group_normalize(layer, input, group_count, axis, epsilon):
    """Normalize over each sample's group of channels (all non-batch axes of the group)."""
    feature_count = shape_of(layer.offset)[0]
    axis, kept = _feature_axis(layer, input, axis, feature_count)
    if axis == 0:
        raise ValueError(
            f"{type(layer).__name__}: axis 0 is the batch axis; pass the channel axis (e.g. -1)."
        )
    shape = shape_of(input)
    # Split the channel axis into (groups, channels per group) and reduce over
    # every axis except the batch axis and the group axis.
    grouped_shape = shape[:axis] + (group_count, feature_count // group_count) + shape[axis + 1:]
    grouped = reshape(input, grouped_shape)
    axes = tuple(i for i in range(1, len(grouped_shape)) if i != axis)
    mean_ = mean(grouped, axis=axes, keepdims=True)
    centered = grouped - mean_
    variance = mean(centered * centered, axis=axes, keepdims=True)
    normalized = reshape(centered * rsqrt(variance + epsilon), shape)
    return normalized * reshape(layer.scale, kept) + reshape(layer.offset, kept)


class GroupNorm(Layer):
    """Group normalization (Wu and He 2018): statistics per sample over groups of channels.

    Parameters
    ----------
    feature_count : int
    group_count : int
        Must divide ``feature_count``.
    axis : int, default -1
        The channel axis; axis 0 is the batch.
    epsilon : float, default 0.001
    dtype : DType, default float32

    Notes
    -----
    Fields: ``offset`` (zeros), ``scale`` (ones), shape ``(feature_count,)``.

    Examples
    --------
    >>> import s4tf
    >>> gn = s4tf.layers.GroupNorm(feature_count=4, group_count=2)
    >>> gn(s4tf.random.normal([2, 5, 4], seed=0)).shape
    (2, 5, 4)
    """

    offset: Tensor
    scale: Tensor
    group_count: int = no_derivative()
    axis: int = no_derivative()
    epsilon: float = no_derivative()
    # Statistics need float32: under a mixed precision policy this layer computes in
    # float32 on the low-precision input (as Keras's normalization layers do).
    _float32_under_mixed_precision = True

    def __init__(self, feature_count: int, group_count: int, axis: int = -1,
                 epsilon: float = 0.001, dtype=_dtypes.float32):
        feature_count, group_count = sizes("GroupNorm", feature_count=feature_count,
                                           group_count=group_count)
        if group_count <= 0 or feature_count % group_count:
            raise ValueError(
                f"GroupNorm: group_count={group_count} must be positive and divide "
                f"feature_count={feature_count}; choose a divisor such as "
                f"{[g for g in range(1, feature_count + 1) if feature_count % g == 0]}."
            )
        self.offset = zeros((feature_count,), dtype=dtype)
        self.scale = ones((feature_count,), dtype=dtype)
        self.group_count = group_count
        self.axis = axis
        self.epsilon = epsilon

    def __call__(self, input):
        return _group_normalize(self, input, self.group_count, self.axis, self.epsilon)


class InstanceNorm(Layer):
    """Instance normalization (Ulyanov et al. 2016): GroupNorm with one channel per group.

    Parameters
    ----------
    feature_count : int
    axis : int, default -1
    epsilon : float, default 0.001
    dtype : DType, default float32

    Notes
    -----
    Fields: ``offset`` (zeros), ``scale`` (ones), shape ``(feature_count,)``.

    Examples
    --------
    >>> import s4tf
    >>> norm = s4tf.layers.InstanceNorm(feature_count=3)
    >>> norm(s4tf.random.normal([2, 4, 4, 3], seed=0)).shape
    (2, 4, 4, 3)
    """

    offset: Tensor
    scale: Tensor
    axis: int = no_derivative()
    epsilon: float = no_derivative()
    # Statistics need float32: under a mixed precision policy this layer computes in
    # float32 on the low-precision input (as Keras's normalization layers do).
    _float32_under_mixed_precision = True

    def __init__(self, feature_count: int, axis: int = -1, epsilon: float = 0.001,
                 dtype=_dtypes.float32):
        feature_count = size(feature_count, "feature_count", type(self).__name__)
        self.offset = zeros((feature_count,), dtype=dtype)
        self.scale = ones((feature_count,), dtype=dtype)
        self.axis = axis
        self.epsilon = epsilon

    def __call__(self, input):
        return _group_normalize(self, input, shape_of(self.offset)[0], self.axis, self.epsilon)
