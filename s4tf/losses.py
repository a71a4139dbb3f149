"""Loss functions with Swift for TensorFlow's definitions and default reductions.

Every loss takes keyword arguments (``predicted=, expected=``, or ``logits=,
labels=`` for the cross-entropies) and ``reduction=``: ``"mean"`` or ``"sum"``
over every element of the per-element (or, for losses defined per sample along
the last axis, per-sample) loss, or ``"none"`` to get that tensor back. As in
S4TF, ``l1_loss``, ``l2_loss``, ``huber_loss`` and
``kullback_leibler_divergence`` sum by default; every other loss takes the mean.
"""

from __future__ import annotations

import math

from .activations import softplus
from .ops import (
    abs,
    log,
    log_softmax,
    maximum,
    mean,
    minimum,
    sqrt,
    sum,
    where,
)
from .ops.elementwise import cast
from .ops.indexing import encode_one_hot
from .ops.shapes import shape_of
from .tensor import Tensor

__all__ = [
    "categorical_hinge_loss", "cosine_similarity", "hinge_loss", "huber_loss",
    "kullback_leibler_divergence", "l1_loss", "l2_loss", "log_cosh_loss",
    "mean_absolute_error", "mean_absolute_percentage_error", "mean_squared_error",
    "mean_squared_logarithmic_error", "poisson_loss", "sigmoid_cross_entropy",
    "softmax_cross_entropy", "squared_hinge_loss",
]

_REDUCTIONS = ("mean", "sum", "none")


def _in_float32(logits):
    """float16 and bfloat16 logits cast to float32 (differentiably), as Keras's losses do:
    under a mixed precision policy (s4tf.precision) the loss and its log-softmax stay accurate."""
    if isinstance(logits, Tensor) and logits.dtype in ("float16", "bfloat16"):
        return cast(logits, dtype="float32")
    return logits


def _reduce(loss, reduction: str, name: str):
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(
        f"{name}: unknown reduction {reduction!r}; expected one of 'mean', 'sum', 'none'."
    )


def _check_shapes(name, first, second, a, b):
    sa, sb = shape_of(a), shape_of(b)
    if sa != sb:
        raise ValueError(
            f"{name}: {first} has shape {sa} but {second} has shape {sb}; they must match "
            "element for element (reshape one, e.g. labels.reshape(-1, 1))."
        )


def l1_loss(*, predicted, expected, reduction: str = "sum"):
    """``sum(|expected - predicted|)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.l1_loss(predicted=s4tf.Tensor([1.0, 2.0]), expected=s4tf.Tensor([0.0, 4.0])).item()
    3.0
    """
    _check_shapes("l1_loss", "predicted", "expected", predicted, expected)
    return _reduce(abs(expected - predicted), reduction, "l1_loss")


def l2_loss(*, predicted, expected, reduction: str = "sum"):
    """``sum((expected - predicted)^2)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.l2_loss(predicted=s4tf.Tensor([1.0, 2.0]), expected=s4tf.Tensor([0.0, 4.0])).item()
    5.0
    """
    _check_shapes("l2_loss", "predicted", "expected", predicted, expected)
    diff = expected - predicted
    return _reduce(diff * diff, reduction, "l2_loss")


def mean_squared_error(*, predicted, expected, reduction: str = "mean"):
    """``mean((expected - predicted)^2)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.mean_squared_error(predicted=s4tf.Tensor([1.0, 2.0]),
    ...                         expected=s4tf.Tensor([0.0, 4.0])).item()
    2.5
    """
    _check_shapes("mean_squared_error", "predicted", "expected", predicted, expected)
    diff = expected - predicted
    return _reduce(diff * diff, reduction, "mean_squared_error")


def mean_absolute_error(*, predicted, expected, reduction: str = "mean"):
    """``mean(|expected - predicted|)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.mean_absolute_error(predicted=s4tf.Tensor([1.0, 2.0]),
    ...                          expected=s4tf.Tensor([0.0, 4.0])).item()
    1.5
    """
    _check_shapes("mean_absolute_error", "predicted", "expected", predicted, expected)
    return _reduce(abs(expected - predicted), reduction, "mean_absolute_error")


def mean_squared_logarithmic_error(*, predicted, expected, reduction: str = "mean"):
    """``mean((log(1 + max(predicted, 0)) - log(1 + max(expected, 0)))^2)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.mean_squared_logarithmic_error(predicted=s4tf.Tensor([0.0]),
    ...                                     expected=s4tf.Tensor([0.0])).item()
    0.0
    """
    _check_shapes("mean_squared_logarithmic_error", "predicted", "expected", predicted, expected)
    diff = log(maximum(predicted, 0.0) + 1.0) - log(maximum(expected, 0.0) + 1.0)
    return _reduce(diff * diff, reduction, "mean_squared_logarithmic_error")


def mean_absolute_percentage_error(*, predicted, expected, reduction: str = "mean"):
    """``100 * mean(|(expected - predicted) / expected|)``.

    ``|expected|`` is floored at 1e-7 (as Keras does) so a zero target gives a
    large finite loss rather than ``inf``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.mean_absolute_percentage_error(predicted=s4tf.Tensor([1.5]),
    ...                                     expected=s4tf.Tensor([2.0])).item()
    25.0
    """
    _check_shapes("mean_absolute_percentage_error", "predicted", "expected", predicted, expected)
    diff = abs((expected - predicted) / maximum(abs(expected), 1e-7))
    return _reduce(diff, reduction, "mean_absolute_percentage_error") * 100.0


def huber_loss(*, predicted, expected, delta: float = 1.0, reduction: str = "sum"):
    """Quadratic for errors up to ``delta``, linear beyond: ``0.5 q^2 + delta (|e| - q)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.huber_loss(predicted=s4tf.Tensor([0.0, 0.0]), expected=s4tf.Tensor([0.5, 3.0])).item()
    2.625
    """
    _check_shapes("huber_loss", "predicted", "expected", predicted, expected)
    error = abs(expected - predicted)
    quadratic = minimum(error, delta)
    return _reduce(quadratic * quadratic * 0.5 + (error - quadratic) * delta, reduction, "huber_loss")


def hinge_loss(*, predicted, expected, reduction: str = "mean"):
    """``mean(max(0, 1 - expected * predicted))`` for labels in {-1, 1}.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.hinge_loss(predicted=s4tf.Tensor([0.5, 2.0]), expected=s4tf.Tensor([1.0, 1.0])).item()
    0.25
    """
    _check_shapes("hinge_loss", "predicted", "expected", predicted, expected)
    return _reduce(maximum(1.0 - expected * predicted, 0.0), reduction, "hinge_loss")


def squared_hinge_loss(*, predicted, expected, reduction: str = "mean"):
    """``mean(max(0, 1 - expected * predicted)^2)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.squared_hinge_loss(predicted=s4tf.Tensor([0.5]), expected=s4tf.Tensor([1.0])).item()
    0.25
    """
    _check_shapes("squared_hinge_loss", "predicted", "expected", predicted, expected)
    hinge = maximum(1.0 - expected * predicted, 0.0)
    return _reduce(hinge * hinge, reduction, "squared_hinge_loss")


def categorical_hinge_loss(*, predicted, expected, reduction: str = "mean"):
    """Per sample ``max(0, 1 + max((1 - expected) * predicted) - sum(expected * predicted))``.

    ``expected`` is one-hot along the last axis.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.categorical_hinge_loss(predicted=s4tf.Tensor([[2.0, 0.5]]),
    ...                             expected=s4tf.Tensor([[1.0, 0.0]])).item()
    0.0
    """
    _check_shapes("categorical_hinge_loss", "predicted", "expected", predicted, expected)
    positive = sum(expected * predicted, axis=-1)
    negative = ((1.0 - expected) * predicted).max(axis=-1)
    return _reduce(maximum(negative - positive + 1.0, 0.0), reduction, "categorical_hinge_loss")


def log_cosh_loss(*, predicted, expected, reduction: str = "mean"):
    """``mean(log(cosh(predicted - expected)))``, computed without overflow.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.log_cosh_loss(predicted=s4tf.Tensor([0.0]), expected=s4tf.Tensor([0.0])).item()
    0.0
    """
    _check_shapes("log_cosh_loss", "predicted", "expected", predicted, expected)
    x = predicted - expected
    # log(cosh(x)) = x + softplus(-2x) - log(2): no exp of a large argument.
    return _reduce(x + softplus(x * -2.0) - math.log(2.0), reduction, "log_cosh_loss")


def poisson_loss(*, predicted, expected, reduction: str = "mean"):
    """``mean(predicted - expected * log(predicted))`` for positive rates ``predicted``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.poisson_loss(predicted=s4tf.Tensor([1.0]), expected=s4tf.Tensor([2.0])).item()
    1.0
    """
    _check_shapes("poisson_loss", "predicted", "expected", predicted, expected)
    return _reduce(predicted - expected * log(predicted), reduction, "poisson_loss")


def kullback_leibler_divergence(*, predicted, expected, reduction: str = "sum"):
    """``sum(expected * log(expected / predicted))`` for probability tensors.

    Terms with ``expected == 0`` contribute 0 (the limit), not ``nan``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.kullback_leibler_divergence(predicted=s4tf.Tensor([0.5, 0.5]),
    ...                                  expected=s4tf.Tensor([0.5, 0.5])).item()
    0.0
    """
    _check_shapes("kullback_leibler_divergence", "predicted", "expected", predicted, expected)
    positive = expected > 0
    safe_expected = where(positive, expected, 1.0)
    terms = where(positive, expected * log(safe_expected / predicted), 0.0)
    return _reduce(terms, reduction, "kullback_leibler_divergence")


def cosine_similarity(*, predicted, expected, reduction: str = "mean", epsilon: float = 1e-12):
    """Negative cosine similarity along the last axis, per sample (1 - aligned = -1).

    The loss is ``-sum(p * e) / (max(|p|, eps) * max(|e|, eps))``; minimising it
    aligns ``predicted`` with ``expected``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.cosine_similarity(predicted=s4tf.Tensor([[1.0, 0.0]]),
    ...                        expected=s4tf.Tensor([[2.0, 0.0]])).item()
    -1.0
    """
    _check_shapes("cosine_similarity", "predicted", "expected", predicted, expected)
    p_norm = maximum(sqrt(sum(predicted * predicted, axis=-1)), epsilon)
    e_norm = maximum(sqrt(sum(expected * expected, axis=-1)), epsilon)
    similarity = sum(predicted * expected, axis=-1) / (p_norm * e_norm)
    return _reduce(-similarity, reduction, "cosine_similarity")


def sigmoid_cross_entropy(*, logits, labels, reduction: str = "mean"):
    """Binary cross-entropy of ``sigmoid(logits)`` against ``labels`` in [0, 1].

    Computed as ``softplus(logits) - logits * labels``: stable for logits of any size.

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.sigmoid_cross_entropy(logits=s4tf.Tensor([0.0]),
    ...                                  labels=s4tf.Tensor([1.0])).item(), 4)
    0.6931
    """
    _check_shapes("sigmoid_cross_entropy", "logits", "labels", logits, labels)
    logits = _in_float32(logits)
    return _reduce(softplus(logits) - logits * labels, reduction, "sigmoid_cross_entropy")


def softmax_cross_entropy(*, logits, labels, reduction: str = "mean"):
    """Cross-entropy of ``softmax(logits)`` (last axis) against ``labels``.

    Parameters
    ----------
    logits : Tensor
        Unnormalised scores of shape ``(..., classes)``.
    labels : Tensor
        Either int class indices of shape ``logits.shape[:-1]`` or
        probabilities of the same shape as ``logits``.
    reduction : {"mean", "sum", "none"}
        Over the per-sample losses (shape ``logits.shape[:-1]``).

    Notes
    -----
    Uses ``log_softmax`` (shifted by the row maximum), so logits around 1e4
    give exact, finite losses and gradients. float16 and bfloat16 logits (a
    mixed precision policy's) are cast to float32 first: the loss is float32.

    An int label outside ``[0, classes)`` (-1 included) is an error, never a
    sample that silently counts zero: eager backends raise an ``IndexError``
    (also a ``ValueError``) naming it; on the lazy xla backend, which cannot
    read labels without running the graph, the loss of that sample is NaN (and
    so is a mean over it). ``S4TF_CHECKS=1`` makes the lazy backend check on
    the host and raise too.

    Examples
    --------
    >>> import s4tf
    >>> logits = s4tf.Tensor([[1e4, 0.0], [0.0, 0.0]])
    >>> [round(v, 4) + 0.0 for v in s4tf.softmax_cross_entropy(
    ...     logits=logits, labels=s4tf.Tensor([0, 1]), reduction="none").tolist()]
    [0.0, 0.6931]
    """
    logits_shape = shape_of(logits)
    if not isinstance(labels, Tensor):
        labels = Tensor(labels)
    log_probabilities = log_softmax(_in_float32(logits), axis=-1)
    if labels.dtype.is_integer:
        if labels.shape != logits_shape[:-1]:
            raise ValueError(
                f"softmax_cross_entropy: int labels must have shape logits.shape[:-1] = "
                f"{logits_shape[:-1]}, got {labels.shape}. Pass one class index per sample "
                "(or probabilities of the logits' shape)."
            )
        classes = logits_shape[-1]
        targets = encode_one_hot(
            labels, classes, log_probabilities.dtype, low=0, owner="softmax_cross_entropy",
            what="int labels", hint=f"Pass one class index in 0..{classes - 1} per sample.")
    else:
        _check_shapes("softmax_cross_entropy", "logits", "labels (probabilities)", logits, labels)
        targets = labels
    return _reduce(-sum(targets * log_probabilities, axis=-1), reduction, "softmax_cross_entropy")
