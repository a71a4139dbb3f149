"""One SGD step of a zoo model on naive and on xla, for the generative-model tests.

Not a test module: ``assert_step_agrees`` is shared by the tests of the
autoencoders, VAE, GANs, TransformerLM and NeuMF.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import s4tf
from s4tf import optimizers


def _step(model, loss_of, arrays, training: bool, seed: int):
    inputs = [s4tf.Tensor(a) for a in arrays]
    # Dropout masks and VAE noise are drawn on the host, so one seed gives
    # both backends the same draws.
    s4tf.random.seed(seed)
    phase = s4tf.training() if training else contextlib.nullcontext()
    with phase:
        loss, grads = s4tf.value_with_gradient(model, of=lambda m: loss_of(m, *inputs))
    model = optimizers.SGD(model, learning_rate=0.1).update(model, grads)
    s4tf.barrier()
    return float(loss.numpy()), [leaf.numpy() for leaf in s4tf.tree_leaves(model, differentiable=True)]


def assert_step_agrees(model, loss_of, *arrays, training: bool = False, rtol: float = 2e-4,
                       atol: float = 2e-5, seed: int = 0):
    """One SGD step (learning rate 0.1) of ``model`` on naive and on xla gives the same result.

    ``model`` is built on naive; ``loss_of(model, *inputs)`` returns a scalar;
    ``arrays`` are NumPy inputs. The loss and every updated weight are compared.
    """
    pytest.importorskip("jax")
    lazy = s4tf.to_backend(model, "xla")
    with s4tf.backend("naive"):
        naive_loss, naive_weights = _step(model, loss_of, arrays, training, seed)
    with s4tf.backend("xla"):
        xla_loss, xla_weights = _step(lazy, loss_of, arrays, training, seed)
    np.testing.assert_allclose(xla_loss, naive_loss, rtol=rtol, atol=atol)
    assert len(xla_weights) == len(naive_weights)
    for i, (got, want) in enumerate(zip(xla_weights, naive_weights, strict=True)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"weight {i}")
    # The step moved the weights (a zero gradient would make the comparison vacuous).
    before = [leaf.numpy() for leaf in s4tf.tree_leaves(model, differentiable=True)]
    assert any(not np.array_equal(b, a) for b, a in zip(before, naive_weights, strict=True))
