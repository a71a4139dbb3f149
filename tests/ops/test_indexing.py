"""Index tensors are range-checked, never wrapped or clamped (issue 10, item 5).

Eager backends raise an error that is both an IndexError and a ValueError, naming
the bad values and the valid range; the lazy backend gives NaN rows instead (it
cannot read indices without running the graph) unless S4TF_CHECKS=1.
"""

import numpy as np
import pytest

import s4tf
from s4tf import layers

pytestmark = pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning")

TABLE = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]

# name -> (function of a table and int indices, the message's valid range)
READS = {
    "gather": (lambda t, i: s4tf.gather(t, i), r"gather: indices must lie in \[0, 3\) \(axis 0 has size 3\)"),
    "getitem": (lambda t, i: t[i], r"gather: indices must lie in \[0, 3\) \(axis 0 has size 3\)"),
    "gather_axis1": (lambda t, i: s4tf.gather(t.T, i, axis=1), r"\[0, 3\) \(axis 1 has size 3\)"),
    "embedding": (lambda t, i: _embedding(t)(i), r"Embedding: indices must lie in \[0, 3\)"),
}


def _embedding(table):
    return s4tf.replace(layers.Embedding(3, 2), embeddings=table)


@pytest.mark.parametrize("bad", [-1, 3, -4])
@pytest.mark.parametrize("read", sorted(READS))
def test_out_of_range_indices_raise_on_eager_backends_and_give_nan_on_lazy(backend, read, bad):
    fn, message = READS[read]
    table = s4tf.Tensor(TABLE)
    indices = s4tf.Tensor([0, bad])
    if backend != "xla":
        with pytest.raises(IndexError, match=rf"{message}, got values from {min(0, bad)} to {max(0, bad)}"):
            fn(table, indices)
        with pytest.raises(ValueError):
            fn(table, indices)
        return
    out = fn(table, indices).numpy()
    first, second = (out[0], out[1]) if read != "gather_axis1" else (out[:, 0], out[:, 1])
    np.testing.assert_array_equal(first, TABLE[0])
    assert np.isnan(second).all()  # never a plausible (wrapped or clamped) row


def test_good_indices_are_unchanged(backend):
    table = s4tf.Tensor(TABLE)
    assert s4tf.gather(table, s4tf.Tensor([2, 0, 2])).tolist() == [TABLE[2], TABLE[0], TABLE[2]]
    assert table[s4tf.Tensor([[1]])].tolist() == [[TABLE[1]]]
    assert s4tf.gather(table, s4tf.Tensor(np.zeros((0,), np.int32))).shape == (0, 2)


def test_one_hot_keeps_minus_one_as_a_zero_row_and_rejects_other_indices(backend):
    assert s4tf.one_hot(s4tf.Tensor([2, -1]), 3).tolist() == [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    for bad in (3, -2):
        indices = s4tf.Tensor([0, bad])
        if backend != "xla":
            with pytest.raises(IndexError, match=r"one_hot: indices must lie in \[-1, 3\).*-1 gives an all-zero row"):
                s4tf.one_hot(indices, 3)
            continue
        out = s4tf.one_hot(indices, 3).numpy()
        assert out[0].tolist() == [1.0, 0.0, 0.0] and np.isnan(out[1]).all()


@pytest.mark.parametrize("indices", [[0.0, 2.0], [0.5, 2.0], [True, False]])
def test_one_hot_of_non_integer_indices_says_to_cast_them(backend, indices):
    # A float index matches no class: the row would silently be zeros (or, for
    # 0.0 and 2.0, a float tensor would pass for indices). Refused on every backend.
    tensor = s4tf.Tensor(indices)
    with pytest.raises(TypeError, match=rf"one_hot: indices must be integers, got a "
                                        rf"{tensor.dtype.name} tensor.*astype\(s4tf.int32\)"):
        s4tf.one_hot(tensor, 3)
    with pytest.raises(TypeError, match=r"one_hot: indices must be integers, got a list"):
        s4tf.one_hot(indices, 3)
    assert s4tf.one_hot(tensor.astype(s4tf.int32), 3).shape == (2, 3)


def test_checked_mode_validates_on_the_lazy_backend(monkeypatch):
    pytest.importorskip("jax")
    monkeypatch.setenv("S4TF_CHECKS", "1")
    with s4tf.backend("xla"):
        table = s4tf.Tensor(TABLE)
        indices = s4tf.Tensor([0, -1]) * 1  # pending: the check runs the graph to read it
        for read in sorted(READS):
            fn, message = READS[read]
            with pytest.raises(IndexError, match=rf"{message}, got values from -1 to 0"):
                fn(table, indices)
        with pytest.raises(IndexError, match=r"one_hot: indices must lie in \[-1, 3\)"):
            s4tf.one_hot(s4tf.Tensor([3]), 3)
        assert s4tf.gather(table, s4tf.Tensor([1])).tolist() == [TABLE[1]]


def test_one_hot_and_int_label_losses_follow_the_indices_backend(backend):
    with s4tf.backend(backend):
        labels = s4tf.Tensor([1, 0])
        logits = s4tf.Tensor([[0.0, 1.0], [2.0, 0.0]])
    with s4tf.backend("naive" if backend != "naive" else "cupy"):  # another current backend
        assert s4tf.one_hot(labels, 2).backend == backend
        loss = s4tf.softmax_cross_entropy(logits=logits, labels=labels)
    assert loss.backend == backend
    expected = (np.log1p(np.exp(-1.0)) + np.log1p(np.exp(-2.0))) / 2
    np.testing.assert_allclose(loss.item(), expected, rtol=1e-5)
