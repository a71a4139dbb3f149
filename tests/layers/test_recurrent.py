"""Recurrent cells against NumPy references written here, and their gradients."""

import numpy as np

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients

rng = np.random.default_rng(0)
X = rng.normal(size=(2, 3))
H = rng.normal(size=(2, 4))
C = rng.normal(size=(2, 4))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _with_random_biases(cell, **names):
    return s4tf.replace(cell, **{n: s4tf.Tensor(rng.normal(size=s)) for n, s in names.items()})


def test_simple_rnn_cell_matches_numpy():
    cell = _with_random_biases(layers.SimpleRNNCell(3, 4, dtype=s4tf.float64), bias=(4,))
    assert cell.weight.shape == (7, 4)
    out, state = cell(s4tf.Tensor(X), s4tf.Tensor(H))
    w, b = cell.weight.numpy(), cell.bias.numpy()
    expected = np.tanh(X @ w[:3] + H @ w[3:] + b)  # rows: input first, then hidden
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    assert state is out
    check_gradients(lambda c, x, h: c(x, h)[0], cell, s4tf.Tensor(X), s4tf.Tensor(H))


def test_lstm_cell_matches_numpy():
    cell = _with_random_biases(layers.LSTMCell(3, 4, dtype=s4tf.float64), fused_bias=(16,))
    assert cell.fused_weight.shape == (7, 16) and cell.fused_bias.shape == (16,)
    state = layers.LSTMCell.State(cell=s4tf.Tensor(C), hidden=s4tf.Tensor(H))
    out, new_state = cell(s4tf.Tensor(X), state)
    fused = np.concatenate([X, H], 1) @ cell.fused_weight.numpy() + cell.fused_bias.numpy()
    i, u, f, o = np.split(fused, 4, axis=1)  # [input, update, forget, output]
    c = C * _sigmoid(f) + _sigmoid(i) * np.tanh(u)
    np.testing.assert_allclose(out.cell.numpy(), c, rtol=1e-12)
    np.testing.assert_allclose(out.hidden.numpy(), np.tanh(c) * _sigmoid(o), rtol=1e-12)
    assert isinstance(new_state, layers.LSTMCell.State)
    check_gradients(lambda cl, x, s: cl(x, s)[0], cell, s4tf.Tensor(X), state)


def test_gru_cell_matches_keras_reset_after():
    biases = {f"{g}{r}_bias": (4,) for g in ("update", "reset", "output") for r in ("", "_recurrent")}
    cell = _with_random_biases(layers.GRUCell(3, 4, dtype=s4tf.float64), **biases)
    p = {name: getattr(cell, name).numpy() for name in layers.GRUCell.TangentVector._s4tf_field_names}
    assert len(p) == 12 and p["update_kernel"].shape == (3, 4) and p["reset_recurrent_kernel"].shape == (4, 4)
    z = _sigmoid(X @ p["update_kernel"] + p["update_bias"] + H @ p["update_recurrent_kernel"]
                 + p["update_recurrent_bias"])
    r = _sigmoid(X @ p["reset_kernel"] + p["reset_bias"] + H @ p["reset_recurrent_kernel"]
                 + p["reset_recurrent_bias"])
    hh = np.tanh(X @ p["output_kernel"] + p["output_bias"]
                 + r * (H @ p["output_recurrent_kernel"] + p["output_recurrent_bias"]))
    out, _ = cell(s4tf.Tensor(X), s4tf.Tensor(H))
    np.testing.assert_allclose(out.numpy(), z * H + (1 - z) * hh, rtol=1e-12)
    check_gradients(lambda c, x, h: c(x, h)[0], cell, s4tf.Tensor(X), s4tf.Tensor(H))


def test_zero_states():
    assert layers.SimpleRNNCell(3, 4).zero_state(2).tolist() == [[0.0] * 4] * 2
    state = layers.LSTMCell(3, 4, dtype=s4tf.float64).zero_state(5)
    assert state.cell.shape == (5, 4) and state.hidden.dtype == s4tf.float64
    assert layers.GRUCell(3, 4).zero_state(1).shape == (1, 4)
