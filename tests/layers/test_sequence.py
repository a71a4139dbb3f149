"""RNN, LSTM, GRU, Bidirectional over lists of steps."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients

STEPS = [s4tf.random.normal([2, 3], dtype=s4tf.float64, seed=i) for i in range(4)]


def test_rnn_unrolls_the_cell():
    cell = layers.SimpleRNNCell(3, 4, dtype=s4tf.float64)
    rnn = layers.RNN(cell)
    outputs = rnn(STEPS)
    state = cell.zero_state(2)
    for step, output in zip(STEPS, outputs, strict=True):
        expected, state = cell(step, state)
        np.testing.assert_allclose(output.numpy(), expected.numpy(), rtol=1e-12)
    assert rnn.last_output(STEPS).tolist() == outputs[-1].tolist()
    h0 = s4tf.ones([2, 4], dtype=s4tf.float64)
    assert rnn(STEPS, initial_state=h0)[0].tolist() == cell(STEPS[0], h0)[0].tolist()
    check_gradients(lambda m, xs: m.last_output(xs), rnn, STEPS[:2])


def test_lstm_and_gru_layers():
    lstm = layers.LSTM(input_size=3, hidden_size=2)
    assert isinstance(lstm.cell, layers.LSTMCell) and isinstance(lstm, layers.RNN)
    last = lstm.last_output([s.astype(s4tf.float32) for s in STEPS])
    assert isinstance(last, layers.LSTMCell.State) and last.hidden.shape == (2, 2)
    gru = layers.GRU(layers.GRUCell(input_size=3, hidden_size=2, dtype=s4tf.float64))
    check_gradients(lambda m, xs: m.last_output(xs), gru, STEPS[:2])
    lstm64 = layers.LSTM(layers.LSTMCell(3, 2, dtype=s4tf.float64))
    check_gradients(lambda m, xs: m.last_output(xs).hidden, lstm64, STEPS[:2])
    with pytest.raises(TypeError, match="pass a cell"):
        layers.LSTM(input_size=3)


def test_bidirectional_aligns_and_merges():
    forward = layers.SimpleRNNCell(3, 4, dtype=s4tf.float64)
    backward = layers.SimpleRNNCell(3, 4, dtype=s4tf.float64)
    bi = layers.Bidirectional(forward, backward_cell=backward)
    outputs = bi(STEPS)
    f = layers.RNN(forward)(STEPS)
    b = layers.RNN(backward)(STEPS[::-1])[::-1]
    for out, fo, bo in zip(outputs, f, b, strict=True):
        np.testing.assert_allclose(out.numpy(), np.concatenate([fo.numpy(), bo.numpy()], -1), rtol=1e-12)
    last = bi.last_output(STEPS).numpy()
    np.testing.assert_allclose(last, np.concatenate([f[-1].numpy(), b[0].numpy()], -1), rtol=1e-12)
    summed = layers.Bidirectional(forward, backward_cell=backward, merge="sum")(STEPS)
    np.testing.assert_allclose(summed[1].numpy(), f[1].numpy() + b[1].numpy(), rtol=1e-12)
    check_gradients(lambda m, xs: m.last_output(xs), bi, STEPS[:2])


def test_bidirectional_lstm_merges_state_fields_and_makes_a_fresh_backward_cell():
    bi = layers.Bidirectional(layers.LSTMCell(3, 2))
    assert bi.backward.cell is not bi.forward.cell
    assert bi.backward.cell.fused_weight.tolist() != bi.forward.cell.fused_weight.tolist()
    out = bi([s.astype(s4tf.float32) for s in STEPS])
    assert out[0].hidden.shape == (2, 4) and out[0].cell.shape == (2, 4)


def test_inputs_must_be_a_list():
    with pytest.raises(TypeError, match=r"expected a list of per-step tensors.*shape \(4, 2, 3\)"):
        layers.RNN(layers.SimpleRNNCell(3, 4))(s4tf.ones([4, 2, 3]))
