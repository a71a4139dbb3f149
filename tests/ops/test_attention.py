"""s4tf.nn.scaled_dot_product_attention: a NumPy reference, masks, derivatives, errors."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf.testing import check_gradients

RNG = np.random.default_rng(3)


def reference(q, k, v, allowed=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if allowed is not None:
        scores = np.where(allowed, scores, -1e9)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v


def test_matches_numpy_with_and_without_masks(backend):
    q, k, v = RNG.normal(size=(2, 3, 4, 5)), RNG.normal(size=(2, 3, 6, 5)), RNG.normal(size=(2, 3, 6, 2))
    t = [s4tf.Tensor(a) for a in (q, k, v)]
    attend = s4tf.nn.scaled_dot_product_attention
    np.testing.assert_allclose(attend(*t).numpy(), reference(q, k, v), rtol=1e-10)
    lower = np.tril(np.ones((4, 6), bool))
    np.testing.assert_allclose(attend(*t, causal=True).numpy(), reference(q, k, v, lower),
                               rtol=1e-10)
    padding = np.ones((2, 1, 1, 6), bool)
    padding[1, ..., 4:] = False
    np.testing.assert_allclose(attend(*t, mask=s4tf.Tensor(padding)).numpy(),
                               reference(q, k, v, padding), rtol=1e-10)
    np.testing.assert_allclose(attend(*t, mask=s4tf.Tensor(padding), causal=True).numpy(),
                               reference(q, k, v, padding & lower), rtol=1e-10)


def test_masked_keys_contribute_exactly_nothing(backend):
    q, k, v = RNG.normal(size=(1, 4, 3)), RNG.normal(size=(1, 4, 3)), RNG.normal(size=(1, 4, 2))
    out = s4tf.nn.scaled_dot_product_attention(*(s4tf.Tensor(a) for a in (q, k, v)), causal=True)
    k2, v2 = k.copy(), v.copy()
    k2[:, 2:], v2[:, 2:] = 1e3, -1e3
    changed = s4tf.nn.scaled_dot_product_attention(*(s4tf.Tensor(a) for a in (q, k2, v2)),
                                                   causal=True)
    np.testing.assert_array_equal(out.numpy()[:, :2], changed.numpy()[:, :2])


def test_dropout_is_applied_to_the_probabilities():
    q = s4tf.zeros([1, 2, 3])
    v = s4tf.Tensor([[[1.0], [2.0]]])
    halved = s4tf.nn.scaled_dot_product_attention(q, q, v, dropout=lambda p: p * 0.5)
    assert halved[0, :, 0].tolist() == [0.75, 0.75]


def test_derivatives_match_finite_differences(backend):
    q, k, v = (s4tf.Tensor(RNG.normal(size=shape)) for shape in ((2, 3, 4), (2, 5, 4), (2, 5, 2)))
    padding = np.ones((2, 1, 5), bool)
    padding[0, :, 1] = False
    mask = s4tf.Tensor(padding)
    # The masked positions and the causal triangle both take part; the mask's
    # constants get no gradient.
    check_gradients(lambda q, k, v: s4tf.nn.scaled_dot_product_attention(
        q, k, v, mask=mask, causal=True), q, k, v)


def test_shapes_that_do_not_fit_are_named():
    attend = s4tf.nn.scaled_dot_product_attention
    with pytest.raises(ValueError, match=r"query \(1, 3, 4\) and key \(1, 3, 5\)"):
        attend(s4tf.zeros([1, 3, 4]), s4tf.zeros([1, 3, 5]), s4tf.zeros([1, 3, 2]))
    with pytest.raises(ValueError, match=r"value \(1, 2, 2\) must be"):
        attend(s4tf.zeros([1, 3, 4]), s4tf.zeros([1, 3, 4]), s4tf.zeros([1, 2, 2]))


def test_scores_record_no_transpose_of_the_keys_on_xla():
    # matmul_nt contracts the last axes of query and key: the keys are not
    # transposed forward, nor their cotangent backward (one copy each in XLA).
    pytest.importorskip("jax")
    from s4tf.backends.xla import graph

    with s4tf.backend("xla"):
        q, k, v = (s4tf.Tensor(RNG.normal(size=(2, 3, 4, 5)).astype(np.float32)) for _ in range(3))
    s4tf.barrier()
    grads = s4tf.gradient(q, k, v, of=lambda q, k, v: s4tf.nn.scaled_dot_product_attention(
        q, k, v, causal=True).sum())
    trace = graph.collect()
    ops = [op for _, op, _, _ in trace.program]
    graph.execute(trace)
    assert "transpose" not in ops, ops
    assert len(grads) == 3
