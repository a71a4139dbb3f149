"""StochasticDepth: drop whole residual branches in training (Huang et al. 2016)."""

from __future__ import annotations

from ..differentiable import no_derivative
from ..learning_phase import layer_is_training
from ..ops.shapes import shape_of
from .dropout import _keep_mask
from .layer import Layer

__all__ = ["StochasticDepth"]

_MODES = ("row", "batch")


class StochasticDepth(Layer):
    """Zeroes a residual branch with ``probability`` in training, scaling survivors by ``1/(1-p)``.

    ``torchvision.ops.StochasticDepth`` for s4tf: in inference (the default
    learning phase) it is the identity. In training, ``mode="row"`` keeps or
    drops each example of the batch as a whole (one draw per leading index),
    ``mode="batch"`` the whole batch at once (one draw); kept values are
    divided by ``1 - probability`` so the expectation is the input. Apply it
    to the residual branch before the addition (``x + depth(branch(x))``).
    It reads the learning phase as ``Dropout`` does (differentiating it in the
    default phase warns, :class:`s4tf.InferencePhaseWarning`); draws come from
    :mod:`s4tf.random`'s global stream, as ``Dropout``'s, and are constants
    for differentiation.

    Parameters
    ----------
    probability : float
        Probability of dropping, in ``[0, 1]`` (1 always drops).
    mode : str, default "row"
        ``"row"`` (per example) or ``"batch"``.

    Examples
    --------
    >>> import s4tf
    >>> depth = s4tf.layers.StochasticDepth(probability=0.5)
    >>> depth(s4tf.ones([3, 2])).tolist()            # inference: identity
    [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    >>> with s4tf.training():
    ...     rows = depth(s4tf.ones([200, 3])).numpy()
    >>> sorted(set(rows[:, 0].tolist())), bool((rows == rows[:, :1]).all())
    ([0.0, 2.0], True)
    """

    probability: float = no_derivative()
    mode: str = no_derivative()

    def __init__(self, probability: float, mode: str = "row"):
        if not 0.0 <= probability <= 1.0:
            raise ValueError(
                f"StochasticDepth: probability must be in [0, 1], got {probability}. It is the "
                "probability of dropping the branch."
            )
        if mode not in _MODES:
            raise ValueError(f"StochasticDepth: mode must be 'row' or 'batch', got {mode!r}.")
        self.probability = probability
        self.mode = mode

    def __call__(self, input):
        if not layer_is_training(self, input) or self.probability == 0.0:
            return input
        shape = shape_of(input)
        if not shape:
            raise ValueError("StochasticDepth: expected an input with a batch axis, got a "
                             "scalar (shape ()).")
        kept_shape = (shape[0] if self.mode == "row" else 1,) + (1,) * (len(shape) - 1)
        keep = _keep_mask(input, self.probability, kept_shape)
        if self.probability == 1.0:
            return input * keep
        return input * keep * (1.0 / (1.0 - self.probability))
