"""Losses: values against NumPy, default reductions, stability, gradient checks."""

import numpy as np
import pytest

import s4tf
from s4tf.testing import check_gradients

rng = np.random.default_rng(0)
P = rng.uniform(0.1, 0.9, size=(4, 3))
E = rng.uniform(0.1, 0.9, size=(4, 3))
SIGNS = np.sign(rng.normal(size=(4, 3)))


def _t(a):
    return s4tf.Tensor(a, dtype=s4tf.float64)


def _huber(p, e, delta=1.0):
    err = np.abs(e - p)
    q = np.minimum(err, delta)
    return 0.5 * q ** 2 + delta * (err - q)


# name -> (elementwise or per-sample numpy loss, default reduction, expected array)
CASES = {
    "l1_loss": (lambda p, e: np.abs(e - p), "sum", E),
    "l2_loss": (lambda p, e: (e - p) ** 2, "sum", E),
    "huber_loss": (lambda p, e: _huber(p * 4, e), "sum", E),
    "kullback_leibler_divergence": (lambda p, e: e * np.log(e / p), "sum", E),
    "mean_squared_error": (lambda p, e: (e - p) ** 2, "mean", E),
    "mean_absolute_error": (lambda p, e: np.abs(e - p), "mean", E),
    "mean_squared_logarithmic_error": (lambda p, e: (np.log1p(p) - np.log1p(e)) ** 2, "mean", E),
    "mean_absolute_percentage_error": (lambda p, e: 100 * np.abs((e - p) / e), "mean", E),
    "hinge_loss": (lambda p, e: np.maximum(0, 1 - e * p), "mean", SIGNS),
    "squared_hinge_loss": (lambda p, e: np.maximum(0, 1 - e * p) ** 2, "mean", SIGNS),
    "log_cosh_loss": (lambda p, e: np.log(np.cosh(p - e)), "mean", E),
    "poisson_loss": (lambda p, e: p - e * np.log(p), "mean", E),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_default_reduction(name):
    reference, default, expected = CASES[name]
    fn = getattr(s4tf, name)
    predicted = P * 4 if name == "huber_loss" else P
    per_element = reference(P, expected)
    default_value = per_element.sum() if default == "sum" else per_element.mean()
    np.testing.assert_allclose(fn(predicted=_t(predicted), expected=_t(expected)).item(),
                               default_value, rtol=1e-12)
    np.testing.assert_allclose(fn(predicted=_t(predicted), expected=_t(expected), reduction="sum").item(),
                               per_element.sum(), rtol=1e-12)
    none = fn(predicted=_t(predicted), expected=_t(expected), reduction="none").numpy()
    np.testing.assert_allclose(none, per_element, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients(name):
    _, _, expected = CASES[name]
    fn = getattr(s4tf, name)
    check_gradients(lambda p: fn(predicted=p, expected=_t(expected)), _t(P * 1.3))


def test_categorical_hinge_and_cosine_similarity():
    onehot = np.eye(3)[[0, 2, 1, 1]]
    pos = (onehot * P).sum(-1)
    neg = ((1 - onehot) * P).max(-1)
    np.testing.assert_allclose(
        s4tf.categorical_hinge_loss(predicted=_t(P), expected=_t(onehot)).item(),
        np.maximum(0, neg - pos + 1).mean(), rtol=1e-12)
    cos = (P * E).sum(-1) / (np.linalg.norm(P, axis=-1) * np.linalg.norm(E, axis=-1))
    np.testing.assert_allclose(s4tf.cosine_similarity(predicted=_t(P), expected=_t(E)).item(),
                               -cos.mean(), rtol=1e-12)
    check_gradients(lambda p: s4tf.cosine_similarity(predicted=p, expected=_t(E)), _t(P))


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def test_softmax_cross_entropy_int_labels_and_probabilities_agree():
    logits = rng.normal(size=(5, 4))
    labels = np.array([0, 3, 1, 1, 2])
    expected = -_log_softmax(logits)[np.arange(5), labels]
    by_index = s4tf.softmax_cross_entropy(logits=_t(logits), labels=s4tf.Tensor(labels))
    by_probability = s4tf.softmax_cross_entropy(logits=_t(logits), labels=_t(np.eye(4)[labels]))
    np.testing.assert_allclose(by_index.item(), expected.mean(), rtol=1e-12)
    np.testing.assert_allclose(by_probability.item(), expected.mean(), rtol=1e-12)
    none = s4tf.softmax_cross_entropy(logits=_t(logits), labels=s4tf.Tensor(labels), reduction="none")
    np.testing.assert_allclose(none.numpy(), expected, rtol=1e-12)
    check_gradients(lambda z: s4tf.softmax_cross_entropy(logits=z, labels=s4tf.Tensor(labels)), _t(logits))
    soft = rng.dirichlet(np.ones(4), size=5)
    check_gradients(lambda z: s4tf.softmax_cross_entropy(logits=z, labels=_t(soft)), _t(logits))


def test_softmax_cross_entropy_is_stable_for_large_logits():
    logits = s4tf.Tensor([[1e4, 0.0, -1e4], [0.0, 1e4, 1e4]])
    labels = s4tf.Tensor([1, 2])
    value, grad = s4tf.value_with_gradient(
        logits, of=lambda z: s4tf.softmax_cross_entropy(logits=z, labels=labels, reduction="sum"))
    assert value.item() == pytest.approx(1e4 + np.log(2))
    np.testing.assert_allclose(grad.numpy(), [[1, -1, 0], [0, 0.5, -0.5]], atol=1e-6)


def test_sigmoid_cross_entropy_values_stability_and_gradient():
    logits = rng.normal(size=(3, 2)) * 3
    labels = rng.uniform(size=(3, 2))
    sig = 1 / (1 + np.exp(-logits))
    expected = -(labels * np.log(sig) + (1 - labels) * np.log(1 - sig))
    np.testing.assert_allclose(
        s4tf.sigmoid_cross_entropy(logits=_t(logits), labels=_t(labels)).item(), expected.mean(), rtol=1e-12)
    check_gradients(lambda z: s4tf.sigmoid_cross_entropy(logits=z, labels=_t(labels)), _t(logits))
    big = s4tf.sigmoid_cross_entropy(logits=s4tf.Tensor([1e4, -1e4]), labels=s4tf.Tensor([0.0, 1.0]),
                                     reduction="none")
    assert big.tolist() == [1e4, 1e4]
    # At logit 0 the derivative is sigmoid(0) - label, not the kink of a max/abs form.
    assert s4tf.gradient(s4tf.Tensor([0.0]), of=lambda z: s4tf.sigmoid_cross_entropy(
        logits=z, labels=s4tf.Tensor([1.0]))).tolist() == [-0.5]


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="reduction 'avg'"):
        s4tf.mean_squared_error(predicted=_t(P), expected=_t(E), reduction="avg")
    with pytest.raises(ValueError, match=r"predicted has shape \(4, 3\) but expected has shape \(3,\)"):
        s4tf.mean_squared_error(predicted=_t(P), expected=_t(E[0]))
    with pytest.raises(ValueError, match=r"int labels must have shape .*\(4,\), got \(4, 1\)"):
        s4tf.softmax_cross_entropy(logits=_t(P), labels=s4tf.Tensor([[0], [1], [2], [0]]))


# Issue 10, item 5: an int label outside [0, classes) is never a finite, plausible loss.
@pytest.mark.parametrize("bad", [-1, 3])
def test_softmax_cross_entropy_rejects_labels_out_of_range(backend, bad):
    logits = s4tf.Tensor([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]])
    labels = s4tf.Tensor([2, bad])
    if backend != "xla":
        message = (rf"softmax_cross_entropy: int labels must lie in \[0, 3\), got values from "
                   rf"{min(2, bad)} to {max(2, bad)}\. Pass one class index in 0..2 per sample")
        for error in (IndexError, ValueError):
            with pytest.raises(error, match=message):
                s4tf.softmax_cross_entropy(logits=logits, labels=labels)
        return
    # The lazy backend cannot read the labels without running the graph: NaN, documented.
    per_sample = s4tf.softmax_cross_entropy(logits=logits, labels=labels, reduction="none").numpy()
    assert np.isfinite(per_sample[0]) and np.isnan(per_sample[1])
    assert np.isnan(s4tf.softmax_cross_entropy(logits=logits, labels=labels).item())
    grad = s4tf.gradient(logits, of=lambda l: s4tf.softmax_cross_entropy(logits=l, labels=labels))
    assert np.isnan(grad.numpy()[1]).all()


def test_softmax_cross_entropy_checks_labels_on_the_lazy_backend_in_checked_mode(monkeypatch):
    pytest.importorskip("jax")
    monkeypatch.setenv("S4TF_CHECKS", "1")
    with s4tf.backend("xla"):
        with pytest.raises(IndexError, match=r"int labels must lie in \[0, 2\), got values from -1"):
            s4tf.softmax_cross_entropy(logits=s4tf.ones([2, 2]), labels=s4tf.Tensor([-1, 1]))
