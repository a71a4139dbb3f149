"""Embedding: layout, lookup, in-place gradient accumulation, index checks."""

import importlib.util

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients


def test_lookup_and_gradient():
    embed = layers.Embedding(vocabulary_size=6, embedding_size=3, dtype=s4tf.float64)
    assert embed.embeddings.shape == (6, 3)
    indices = s4tf.Tensor([[1, 4], [1, 0]])
    out = embed(indices)
    np.testing.assert_array_equal(out.numpy(), embed.embeddings.numpy()[[[1, 4], [1, 0]]])
    grad = s4tf.gradient(embed, of=lambda m: m(indices).sum()).embeddings.numpy()
    np.testing.assert_array_equal(grad[:, 0], [1, 2, 0, 0, 1, 0])
    check_gradients(lambda m: m(indices), embed)


def test_bad_indices_are_explained():
    embed = layers.Embedding(vocabulary_size=3, embedding_size=2)
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 3\), got values from 0 to 5"):
        embed(s4tf.Tensor([0, 5]))
    with pytest.raises(ValueError, match="expected int indices, got a float32"):
        embed(s4tf.Tensor([0.0]))


# The lazy backend does not check indices: see the test below.
@pytest.mark.parametrize("eager", ["naive", "cupy"])
def test_bad_indices_are_explained_on_every_eager_backend(eager):
    with s4tf.backend(eager):
        embed = layers.Embedding(vocabulary_size=3, embedding_size=2)
        with pytest.raises(ValueError, match=r"got values from -1 to 0"):
            embed(s4tf.Tensor([0, -1]))


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs the xla backend")
def test_lazy_lookups_run_no_graph_and_give_nan_rows_for_bad_indices():
    with s4tf.backend("xla"):
        s4tf.random.seed(0)
        embed = layers.Embedding(vocabulary_size=3, embedding_size=2)
        pending = s4tf.Tensor([0, 1, 2]) + s4tf.Tensor([0, 0, 0])  # computed, still pending
        loaded = s4tf.Tensor([0, 5, -1])
        s4tf.barrier()
        table = embed.embeddings.numpy()
        pending = pending * 1  # pending again after the barrier
        s4tf.xla.reset_metrics()
        out_pending, out_loaded = embed(pending), embed(loaded)
        assert s4tf.xla.metrics()["executions"] == 0
        np.testing.assert_array_equal(out_pending.numpy(), table)
        # The documented behaviour (issue 10: -1 used to count from the end): 5 and -1
        # are NaN rows, never a plausible row.
        got = out_loaded.numpy()
        np.testing.assert_array_equal(got[0], table[0])
        assert np.isnan(got[1]).all() and np.isnan(got[2]).all()
        # ... and the out-of-range indices' gradients are dropped, not clamped or wrapped.
        grad = s4tf.gradient(embed, of=lambda m: m(loaded).sum())
        np.testing.assert_array_equal(grad.embeddings.numpy(), [[1, 1], [0, 0], [0, 0]])
