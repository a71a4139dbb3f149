"""MultiHeadAttention against a NumPy reference; masks; gradients."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients

rng = np.random.default_rng(0)


def _reference(mha, q, k, v, allowed=None):
    p = {n: getattr(mha, n).numpy() for n in layers.MultiHeadAttention.TangentVector._s4tf_field_names}
    h = mha.head_count

    def heads(x, w, b):
        y = x @ w + b
        return y.reshape(y.shape[0], y.shape[1], h, -1).transpose(0, 2, 1, 3)

    qh, kh, vh = heads(q, p["query_weight"], p["query_bias"]), heads(k, p["key_weight"], p["key_bias"]), \
        heads(v, p["value_weight"], p["value_bias"])
    scores = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(qh.shape[-1])
    if allowed is not None:
        scores = np.where(allowed, scores, -1e9)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    out = (weights @ vh).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], -1)
    return out @ p["output_weight"] + p["output_bias"]


def test_cross_attention_and_causal_self_attention_match_numpy():
    mha = layers.MultiHeadAttention(query_size=6, head_count=2, key_size=4, value_size=5,
                                    output_size=3, dtype=s4tf.float64)
    mha = s4tf.replace(mha, query_bias=s4tf.Tensor(rng.normal(size=6)))
    q, k, v = rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 5))
    out = mha(s4tf.Tensor(q), s4tf.Tensor(k), s4tf.Tensor(v))
    assert out.shape == (2, 3, 3)
    np.testing.assert_allclose(out.numpy(), _reference(mha, q, k, v), rtol=1e-10)
    self_mha = layers.MultiHeadAttention(query_size=4, head_count=2, dtype=s4tf.float64)
    x = rng.normal(size=(2, 3, 4))
    causal = np.tril(np.ones((3, 3), bool))
    np.testing.assert_allclose(self_mha(s4tf.Tensor(x), causal=True).numpy(),
                               _reference(self_mha, x, x, x, causal), rtol=1e-10)
    padding = np.array([True, True, False])[None, None, None, :]
    np.testing.assert_allclose(self_mha(s4tf.Tensor(x), mask=s4tf.Tensor(padding)).numpy(),
                               _reference(self_mha, x, x, x, padding), rtol=1e-10)


def test_gradients():
    mha = layers.MultiHeadAttention(query_size=4, head_count=2, dtype=s4tf.float64)
    check_gradients(lambda m, x: m(x, causal=True), mha, s4tf.Tensor(rng.normal(size=(1, 3, 4))))


def test_shape_errors():
    mha = layers.MultiHeadAttention(query_size=4, head_count=2)
    with pytest.raises(ValueError, match=r"MultiHeadAttention: expected an input of shape \(\?, \?, 4\), got shape \(2, 3, 5\)"):
        mha(s4tf.ones([2, 3, 5]))
    with pytest.raises(ValueError, match="not divisible by head_count=3"):
        layers.MultiHeadAttention(query_size=4, head_count=3)


def test_causal_attention_runs_on_the_backend_of_its_inputs():
    # The causal mask used to be made on the default backend, so a layer moved
    # to xla failed with "operands are on different backends" under naive.
    pytest.importorskip("jax")
    with s4tf.backend("xla"):
        mha = s4tf.layers.MultiHeadAttention(query_size=4, head_count=2)
        x = s4tf.ones([1, 3, 4])
    with s4tf.backend("naive"):
        assert mha(x, causal=True).backend == "xla"
