"""A variational autoencoder (Kingma and Welling 2014) with the reparameterisation trick."""

from __future__ import annotations

import typing

from .. import layers
from .. import random as _random
from ..activations import relu
from ..layers import Layer
from ..losses import sigmoid_cross_entropy
from ..ops import exp
from ..ops.shapes import shape_of
from ..tensor import Tensor, from_numpy

__all__ = ["VAE", "VAEOutput", "vae_loss"]


class VAEOutput(typing.NamedTuple):
    """What :class:`VAE` returns: everything the ELBO needs.

    ``logits``: reconstruction logits ``(batch, input_size)`` (``sigmoid(logits)``
    is the reconstruction); ``mean`` and ``log_variance``: the approximate
    posterior ``q(z | x) = N(mean, exp(log_variance))``, each ``(batch,
    latent_size)``; ``code``: the sample ``z`` that was decoded.
    """

    logits: Tensor
    mean: Tensor
    log_variance: Tensor
    code: Tensor


class VAE(Layer):
    """A dense variational autoencoder, swift-models' ``VAE1D``.

    Encoder: ``input_size -> hidden_size`` (relu), then two heads to
    ``latent_size``: the mean and the log-variance of ``q(z | x)``. A code is
    drawn with the reparameterisation trick, ``z = mean + exp(log_variance /
    2) * eps`` with ``eps ~ N(0, 1)`` drawn from ``s4tf.random`` (so gradients
    reach the encoder through ``mean`` and ``log_variance``). Decoder:
    ``latent_size -> hidden_size`` (relu) ``-> input_size`` logits. The default
    784-400-20 network has 652,824 parameters.

    Calling it returns a :class:`VAEOutput` ``(logits, mean, log_variance,
    code)``; train by minimising :func:`vae_loss` (the negative ELBO) on
    inputs in ``[0, 1]``::

        loss = s4tf.models.vae_loss(model(x), x)

    ``model(x, seed=n)`` makes the draw reproducible; without a seed it
    comes from the global ``s4tf.random`` stream (``s4tf.random.seed``).
    ``encode(x)`` returns ``(mean, log_variance)`` and ``decode(z)`` the
    logits, for generating: ``s4tf.sigmoid(model.decode(s4tf.random.normal(
    [16, 20])))``.

    Parameters
    ----------
    input_size : int, default 784
    hidden_size : int, default 400
    latent_size : int, default 20

    References
    ----------
    Kingma and Welling, "Auto-Encoding Variational Bayes" (2014);
    swift-models ``Autoencoder/VAE1D/main.swift``.

    Examples
    --------
    >>> import s4tf
    >>> vae = s4tf.models.VAE()
    >>> out = vae(s4tf.zeros([2, 784]), seed=0)
    >>> out.logits.shape, out.mean.shape, out.log_variance.shape
    ((2, 784), (2, 20), (2, 20))
    >>> s4tf.parameter_count(vae)
    652824
    >>> round(s4tf.models.vae_loss(out, s4tf.zeros([2, 784])).item()) > 0
    True
    """

    encoder: layers.Dense
    mean_head: layers.Dense
    log_variance_head: layers.Dense
    decoder_hidden: layers.Dense
    decoder_output: layers.Dense

    def __init__(self, input_size: int = 784, hidden_size: int = 400, latent_size: int = 20):
        self.encoder = layers.Dense(input_size, hidden_size, activation=relu)
        self.mean_head = layers.Dense(hidden_size, latent_size)
        self.log_variance_head = layers.Dense(hidden_size, latent_size)
        self.decoder_hidden = layers.Dense(latent_size, hidden_size, activation=relu)
        self.decoder_output = layers.Dense(hidden_size, input_size)

    def encode(self, x) -> tuple[Tensor, Tensor]:
        """``(mean, log_variance)`` of ``q(z | x)``, each ``(batch, latent_size)``."""
        hidden = self.encoder(x)
        return self.mean_head(hidden), self.log_variance_head(hidden)

    def decode(self, code):
        """Reconstruction logits ``(batch, input_size)`` of codes ``(batch, latent_size)``."""
        return self.decoder_output(self.decoder_hidden(code))

    def __call__(self, x, seed: int | None = None) -> VAEOutput:
        mean, log_variance = self.encode(x)
        # The noise is a constant of the computation; mean and log_variance
        # carry the gradient (the reparameterisation trick).
        draws = _random.generator(seed).standard_normal(shape_of(mean))
        # On the backend of the model, whatever the current default backend is.
        noise = from_numpy(draws, mean.dtype, like=mean)
        code = mean + exp(log_variance * 0.5) * noise
        return VAEOutput(self.decode(code), mean, log_variance, code)


def vae_loss(output: VAEOutput, x, reduction: str = "mean"):
    """The negative ELBO: Bernoulli reconstruction cross-entropy plus KL(q(z|x) || N(0, I)).

    Per sample: ``sum_i sigmoid_cross_entropy(logits_i, x_i) - 0.5 * sum_j
    (1 + log_variance_j - mean_j^2 - exp(log_variance_j))``, as swift-models'
    ``vaeLossFunction``; ``reduction="mean"`` averages over the batch (the
    scale does not depend on the batch size), ``"sum"`` adds (swift-models),
    ``"none"`` returns one value per sample.

    Parameters
    ----------
    output : VAEOutput
        What :class:`VAE` returned for ``x``.
    x : Tensor
        The inputs ``(batch, input_size)``, values in ``[0, 1]``.
    reduction : {"mean", "sum", "none"}

    Examples
    --------
    >>> import s4tf
    >>> vae = s4tf.models.VAE(input_size=4, hidden_size=3, latent_size=2)
    >>> x = s4tf.Tensor([[0.0, 1.0, 1.0, 0.0]])
    >>> loss = s4tf.models.vae_loss(vae(x, seed=0), x)
    >>> loss.shape
    ()
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"vae_loss: reduction must be 'mean', 'sum' or 'none'; received "
                         f"reduction={reduction!r}.")
    reconstruction = sigmoid_cross_entropy(logits=output.logits, labels=x,
                                           reduction="none").sum(axis=-1)
    log_variance, mean = output.log_variance, output.mean
    kl = ((log_variance + 1.0) - mean * mean - exp(log_variance)).sum(axis=-1) * -0.5
    per_sample = reconstruction + kl
    if reduction == "none":
        return per_sample
    return per_sample.mean() if reduction == "mean" else per_sample.sum()
