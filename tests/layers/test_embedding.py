"""Embedding: layout, lookup, in-place gradient accumulation, index checks."""

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
