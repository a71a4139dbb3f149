"""s4tf.models.NeuMF: layout, count, probabilities, one step."""

from __future__ import annotations

import numpy as np
import pytest
from generative_steps import assert_step_agrees

import s4tf
from s4tf.models import NeuMF


def test_neumf_layout_and_count():
    model = NeuMF(user_count=100, item_count=50)
    assert model.mf_user_embedding.embeddings.shape == (100, 8)
    assert model.mf_item_embedding.embeddings.shape == (50, 8)
    assert model.mlp_user_embedding.embeddings.shape == (100, 32)
    assert model.mlp_item_embedding.embeddings.shape == (50, 32)
    assert [d.weight.shape for d in model.mlp_layers] == [(64, 32), (32, 16), (16, 8)]
    assert model.neumf_layer.weight.shape == (16, 1)
    # Embeddings 150 * (8 + 32), MLP 2,080 + 528 + 136, output 17.
    assert s4tf.parameter_count(model) == 8_761


def test_neumf_swift_models_example_sizes():
    # swift-models' MovieLens example: 8 factors, MLP [16, 32, 16, 8].
    model = NeuMF(user_count=10, item_count=20, mf_size=8, mlp_sizes=[16, 32, 16, 8])
    assert [d.weight.shape for d in model.mlp_layers] == [(16, 32), (32, 16), (16, 8)]
    assert s4tf.parameter_count(model) == 30 * (8 + 8) + (16 * 32 + 32) + (32 * 16 + 16) + (
        16 * 8 + 8) + 17


def test_neumf_outputs_probabilities():
    s4tf.random.seed(0)
    model = NeuMF(user_count=6, item_count=4, mf_size=3, mlp_sizes=(4, 2))
    # Large weights push the scores far from 0; the output stays in [0, 1].
    model = s4tf.tree_map(lambda t: t * 300.0, model, differentiable=True)
    pairs = s4tf.Tensor([[u, i] for u in range(6) for i in range(4)])
    p = model(pairs).numpy()
    assert p.shape == (24, 1)
    assert (p >= 0).all() and (p <= 1).all() and p.min() < 0.01 and p.max() > 0.99
    logits = model.logits(pairs).numpy().astype(np.float64)
    np.testing.assert_allclose(p, np.exp(-np.logaddexp(0.0, -logits)), rtol=1e-5, atol=1e-30)


def test_neumf_rejects_bad_input():
    with pytest.raises(ValueError, match="must be even"):
        NeuMF(user_count=2, item_count=2, mlp_sizes=(5, 2))
    model = NeuMF(user_count=2, item_count=2)
    with pytest.raises(ValueError, match=r"expected an input of shape \(\?, 2\)"):
        model(s4tf.Tensor([[0, 1, 1]]))
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 2\)"):
        model(s4tf.Tensor([[0, 5]]))


def test_neumf_one_step_agrees_on_naive_and_xla():
    s4tf.random.seed(1)
    model = NeuMF(user_count=7, item_count=5, mf_size=4, mlp_sizes=(8, 4))
    rng = np.random.default_rng(0)
    pairs = np.stack([rng.integers(0, 7, 6), rng.integers(0, 5, 6)], axis=1).astype(np.int32)
    labels = rng.integers(0, 2, (6, 1)).astype(np.float32)
    assert_step_agrees(model, lambda m, x, y: s4tf.sigmoid_cross_entropy(
        logits=m.logits(x), labels=y), pairs, labels)


def test_summary_runs(capsys):
    s4tf.summary(NeuMF(user_count=100, item_count=50), (3, 2), dtype=s4tf.int32)
    assert "8,761" in capsys.readouterr().out
