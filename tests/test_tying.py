"""s4tf.tie / layers.Shared: one value in two places, through updates, with summed gradients."""

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers


class LM(s4tf.Layer):
    embedding: layers.Embedding
    head: layers.Dense

    def __call__(self, tokens):
        return self.head(self.embedding(tokens))


TOKENS = np.array([1, 2, 2, 7], np.int32)


def make_lm():
    s4tf.random.seed(0)
    return LM(layers.Embedding(10, 4), layers.Dense(4, 10))


def loss(model):
    return (model(s4tf.Tensor(TOKENS, dtype=s4tf.int32)) ** 2).mean()


def hand_gradient(embeddings, bias):
    """d loss / d E for logits = E[t] @ E.T + b, by hand (NumPy)."""
    e = embeddings.astype(np.float64)
    rows = e[TOKENS]
    logits = rows @ e.T + bias
    d_logits = 2 * logits / logits.size
    grad = d_logits.T @ rows  # through the head's weight E.T
    np.add.at(grad, TOKENS, d_logits @ e)  # through the embedding lookup
    return grad


@pytest.mark.usefixtures("backend")
def test_the_source_receives_both_uses_gradients_and_stays_one_value_through_updates():
    lm = s4tf.tie(make_lm(), "head.weight", "embedding.embeddings", transform=s4tf.transpose)
    assert isinstance(lm, LM) and isinstance(lm.head.weight, layers.Shared)
    assert s4tf.parameter_count(lm) == 40 + 10
    e, b = lm.embedding.embeddings.numpy(), lm.head.bias.numpy()
    _, grads = s4tf.value_with_gradient(lm, of=loss)
    np.testing.assert_allclose(grads.embedding.embeddings.numpy(), hand_gradient(e, b),
                               rtol=1e-4, atol=1e-6)
    opt = optimizers.SGD(lm, learning_rate=0.5)
    lm = opt.update(lm, grads)
    expected = e - 0.5 * hand_gradient(e, b)
    np.testing.assert_allclose(lm.embedding.embeddings.numpy(), expected, rtol=1e-4, atol=1e-6)
    # The head uses the updated source: the logits are E[t] @ E.T + b with the new E.
    logits = lm(s4tf.Tensor(TOKENS, dtype=s4tf.int32)).numpy()
    np.testing.assert_allclose(logits, expected[TOKENS] @ expected.T + lm.head.bias.numpy(),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lm.head.weight.resolve(lm).numpy(), expected.T, rtol=1e-6)


def test_a_tied_model_trains_in_a_loop_and_saves_the_source_once(tmp_path):
    lm = s4tf.tie(make_lm(), "head.weight", "embedding.embeddings", transform=s4tf.transpose)
    data = s4tf.datasets.Batches.from_arrays(TOKENS, TOKENS, batch_size=4)
    loop = s4tf.TrainingLoop(training=data, optimizer=optimizers.Adam(lm, learning_rate=0.01),
                             loss=s4tf.softmax_cross_entropy, metrics=("loss",))
    before = lm.embedding.embeddings.numpy().copy()
    lm = loop.fit(lm, epochs=2)
    assert not np.allclose(lm.embedding.embeddings.numpy(), before)
    path = tmp_path / "lm.safetensors"
    s4tf.save(lm, path)
    loaded = s4tf.load(path, like=s4tf.tie(make_lm(), "head.weight", "embedding.embeddings",
                                           transform=s4tf.transpose))
    assert type(loaded) is type(lm)
    np.testing.assert_allclose(loaded(s4tf.Tensor(TOKENS, dtype=s4tf.int32)).numpy(),
                               lm(s4tf.Tensor(TOKENS, dtype=s4tf.int32)).numpy(), rtol=1e-6)


def test_ties_that_cannot_hold_are_refused():
    lm = make_lm()
    with pytest.raises(ValueError, match=r"'head.weight' has shape \(4, 10\).*gives shape \(10, 4\)"):
        s4tf.tie(lm, "head.weight", "embedding.embeddings")
    with pytest.raises(ValueError, match="neither inside the other"):
        s4tf.tie(lm, "head", "head.weight")
    with pytest.raises(KeyError, match="has no 'embeddings'"):
        s4tf.tie(lm, "head.weight", "embeddings")
