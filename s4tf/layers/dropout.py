"""Dropout and noise layers: identity in inference, random in training.

Random draws come from :mod:`s4tf.random`'s global stream (seed it with
``s4tf.random.seed``) and are constants for differentiation: the derivative
flows through the kept (scaled) elements only.
"""

from __future__ import annotations

import math

from .. import random as _random
from ..backends.base import backend
from ..differentiable import no_derivative
from ..learning_phase import layer_is_training
from ..ops import cast, greater_equal
from ..ops.shapes import shape_of
from .layer import Layer

__all__ = ["AlphaDropout", "Dropout", "GaussianDropout", "GaussianNoise"]

# SELU's negative saturation value, -scale * alpha (Klambauer et al. 2017).
_ALPHA_PRIME = -1.7580993408473766



def _draw(kind, input, shape=None, **kwargs):
    """A random tensor typed like ``input`` on its backend, shaped like it unless ``shape``."""
    # Drawn on that backend, not moved there: a captured step (s4tf.xla.compile) knows
    # the drawn tensor as a draw to make again on each replay; a copy would be a constant.
    with backend(input.backend):
        return kind(shape_of(input) if shape is None else shape, dtype=input.dtype, **kwargs)


def _keep_mask(input, probability, shape=None):
    """Ones kept with probability ``1 - probability``, zeros elsewhere (``shape`` as ``_draw``)."""
    uniform = _draw(_random.uniform, input, shape)
    return cast(greater_equal(uniform, probability), dtype=input.dtype)


class _Dropping(Layer):
    """A layer that drops (or perturbs) each element with ``probability`` in training."""

    probability: float = no_derivative()

    def __init__(self, probability: float):
        if not 0.0 <= probability < 1.0:
            raise ValueError(
                f"{type(self).__name__}: probability must be in [0, 1), got {probability}. It "
                "is the fraction of elements dropped; 1 would drop everything."
            )
        self.probability = probability


class Dropout(_Dropping):
    """Zeroes each element with ``probability`` in training and scales the rest by ``1/(1-p)``.

    Examples
    --------
    >>> import s4tf
    >>> drop = s4tf.layers.Dropout(probability=0.5)
    >>> drop(s4tf.ones([4])).tolist()          # inference: identity
    [1.0, 1.0, 1.0, 1.0]
    >>> with s4tf.training():
    ...     sorted(set(drop(s4tf.ones([100])).tolist()))
    [0.0, 2.0]
    """

    def __call__(self, input):
        if self.probability == 0.0 or not layer_is_training(self, input):
            return input
        return input * _keep_mask(input, self.probability) * (1.0 / (1.0 - self.probability))


class GaussianNoise(Layer):
    """Adds zero-mean normal noise of ``standard_deviation`` in training.

    Examples
    --------
    >>> import s4tf
    >>> noise = s4tf.layers.GaussianNoise(standard_deviation=0.1)
    >>> noise(s4tf.ones([2])).tolist()
    [1.0, 1.0]
    """

    standard_deviation: float = no_derivative()

    def __init__(self, standard_deviation: float):
        if standard_deviation < 0:
            raise ValueError(
                f"GaussianNoise: standard_deviation must be >= 0, got {standard_deviation}."
            )
        self.standard_deviation = standard_deviation

    def __call__(self, input):
        if not layer_is_training(self, input):
            return input
        return input + _draw(_random.normal, input, stddev=self.standard_deviation)


class GaussianDropout(_Dropping):
    """Multiplies by normal noise of mean 1 and variance ``p / (1 - p)`` in training.

    Examples
    --------
    >>> import s4tf
    >>> layer = s4tf.layers.GaussianDropout(probability=0.2)
    >>> layer(s4tf.ones([2])).tolist()
    [1.0, 1.0]
    """

    def __call__(self, input):
        if not layer_is_training(self, input):
            return input
        stddev = math.sqrt(self.probability / (1.0 - self.probability))
        return input * _draw(_random.normal, input, mean=1.0, stddev=stddev)


class AlphaDropout(_Dropping):
    """Dropout for SELU networks: keeps the mean and variance of its input in training.

    Dropped elements are set to SELU's saturation value ``alpha'``, and an affine
    map ``a * x + b`` restores zero mean and unit variance (Klambauer et al. 2017).

    Examples
    --------
    >>> import s4tf
    >>> layer = s4tf.layers.AlphaDropout(probability=0.1)
    >>> layer(s4tf.ones([2])).tolist()
    [1.0, 1.0]
    """

    def __call__(self, input):
        p = self.probability
        if p == 0.0 or not layer_is_training(self, input):
            return input
        keep = _keep_mask(input, p)
        a = ((1.0 - p) * (1.0 + p * _ALPHA_PRIME ** 2)) ** -0.5
        b = -a * _ALPHA_PRIME * p
        dropped = input * keep + (1.0 - keep) * _ALPHA_PRIME
        return dropped * a + b
