"""The Tensor API of DESIGN 1.1: dtypes, copying, conversion, creation, random, errors."""

import numpy as np
import pytest

import s4tf


def test_python_values_give_the_contract_dtypes():
    assert s4tf.Tensor(1.5).dtype == s4tf.float32
    assert s4tf.Tensor([1, 2]).dtype == s4tf.int32
    assert s4tf.Tensor([True, False]).dtype == s4tf.bool
    assert s4tf.Tensor([[1.0, 2.0]]).dtype == s4tf.float32
    assert s4tf.Tensor(np.zeros(2, np.float64)).dtype == s4tf.float64
    assert s4tf.Tensor([1, 2], dtype=s4tf.float64).dtype == s4tf.float64
    t = s4tf.Tensor([[1.0, 2.0, 3.0]])
    assert (t.shape, t.rank, t.size, t.backend) == ((1, 3), 2, 3, "naive")


def test_creation_copies_and_numpy_is_read_only():
    source = np.array([1.0, 2.0])
    t = s4tf.Tensor(source)
    source[0] = 100.0
    assert t.tolist() == [1.0, 2.0]
    view = t.numpy()
    with pytest.raises(ValueError):
        view[0] = 5.0
    assert t.tolist() == [1.0, 2.0]
    copy = s4tf.Tensor(t)
    assert copy.tolist() == [1.0, 2.0] and copy is not t
    with pytest.raises(TypeError, match="immutable"):
        t[0] = 3.0


def test_scalar_conversions():
    t = s4tf.Tensor([[2.5]])
    assert t.item() == 2.5 and float(t) == 2.5 and int(t) == 2
    assert s4tf.Tensor([[1, 2]]).tolist() == [[1, 2]]
    with pytest.raises(ValueError, match="one element"):
        s4tf.Tensor([1.0, 2.0]).item()
    assert s4tf.Tensor([1.7, -1.2]).astype(s4tf.int32).tolist() == [1, -1]
    assert s4tf.Tensor([1, 0]).astype("float64").dtype == s4tf.float64


def test_creation_functions():
    assert s4tf.zeros([2, 3]).tolist() == [[0.0] * 3] * 2
    assert s4tf.ones((2,), dtype=s4tf.int32).tolist() == [1, 1]
    assert s4tf.full([2], 7.0).tolist() == [7.0, 7.0]
    assert s4tf.arange(4).tolist() == [0, 1, 2, 3]
    assert s4tf.arange(1, 7, 2).tolist() == [1, 3, 5]
    assert s4tf.arange(0.0, 1.0, 0.5).dtype.is_floating
    assert s4tf.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    like = s4tf.Tensor([[1, 2]], dtype=s4tf.float64)
    assert s4tf.zeros_like(like).dtype == s4tf.float64 and s4tf.zeros_like(like).shape == (1, 2)
    assert s4tf.ones_like(like).tolist() == [[1.0, 1.0]]


def test_random_is_reproducible_with_seeds():
    a = s4tf.random.normal([3], seed=5)
    b = s4tf.random.normal([3], seed=5)
    assert a.tolist() == b.tolist() and a.dtype == s4tf.float32
    s4tf.random.seed(11)
    first = s4tf.random.uniform([4], low=2.0, high=3.0).tolist()
    s4tf.random.seed(11)
    assert s4tf.random.uniform([4], low=2.0, high=3.0).tolist() == first
    assert all(2.0 <= v < 3.0 for v in first)
    ints = s4tf.random.randint(0, 5, shape=(100,), seed=1)
    assert ints.dtype == s4tf.int32 and set(ints.tolist()) <= set(range(5))
    samples = s4tf.random.normal([20000], mean=1.0, stddev=2.0, seed=0).numpy()
    assert abs(samples.mean() - 1.0) < 0.05 and abs(samples.std() - 2.0) < 0.05


def test_operators_and_broadcasting():
    x = s4tf.Tensor([[1.0, 2.0], [3.0, 4.0]])
    y = s4tf.Tensor([10.0, 20.0])
    assert (x + y).tolist() == [[11, 22], [13, 24]]
    assert (2 - x).tolist() == [[1, 0], [-1, -2]]
    assert (x * 2).dtype == s4tf.float32  # Python scalars do not widen tensors
    assert np.allclose((x / y).numpy(), [[0.1, 0.1], [0.3, 0.2]])
    assert (x ** 2).tolist() == [[1, 4], [9, 16]]
    assert (x @ x).tolist() == [[7, 10], [15, 22]]
    assert (-x).tolist()[0] == [-1, -2] and abs(-x).tolist() == x.tolist()
    assert (np.ones(2) + x).tolist() == [[2, 3], [4, 5]]  # NumPy on the left gives a Tensor
    assert (s4tf.Tensor([1, 2]) * 1.5).dtype == s4tf.float32


def test_comparisons_give_bool_tensors():
    x = s4tf.Tensor([1.0, 2.0, 3.0])
    for result in (x == 2.0, x != 2.0, x < 2.0, x <= 2.0, x > 2.0, x >= 2.0):
        assert result.dtype == s4tf.bool
    assert (x > 1.5).tolist() == [False, True, True]
    assert (x == s4tf.Tensor([1.0, 0.0, 3.0])).tolist() == [True, False, True]


def test_methods_with_numpy_names():
    x = s4tf.Tensor([[1.0, 5.0], [3.0, 2.0]])
    assert x.sum(axis=0).tolist() == [4.0, 7.0] and x.mean().item() == 2.75
    assert x.max(axis=1, keepdims=True).tolist() == [[5.0], [3.0]]
    assert x.argmax(axis=1).tolist() == [1, 0] and x.argmin().item() == 0
    assert x.reshape(4).tolist() == [1, 5, 3, 2] and x.T.tolist() == [[1, 3], [5, 2]]
    assert x.clip(2.0, 4.0).tolist() == [[2, 4], [3, 2]]
    assert x.sequenced(lambda t: t * 2, s4tf.abs).tolist() == [[2, 10], [6, 4]]
    assert x[1].tolist() == [3.0, 2.0] and x[:, -1].tolist() == [5.0, 2.0]
    assert x[s4tf.Tensor([1, 1])].tolist() == [[3, 2], [3, 2]]


def test_incompatible_shapes_name_the_op_and_both_shapes():
    with pytest.raises(ValueError, match=r"add.*\(2, 3\).*\(4,\)"):
        s4tf.ones([2, 3]) + s4tf.ones([4])
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*\(2, 3\)"):
        s4tf.ones([2, 3]) @ s4tf.ones([2, 3])
    with pytest.raises(ValueError, match=r"reshape.*6"):
        s4tf.ones([2, 3]).reshape(4)
    with pytest.raises(ValueError, match=r"concat"):
        s4tf.concat([s4tf.ones([2, 3]), s4tf.ones([2, 2])], axis=0)
    with pytest.raises(IndexError, match="out of range"):
        s4tf.ones([2])[5]


def test_mixing_backends_names_both():
    from s4tf.backends.base import Backend
    from s4tf.backends.naive import ArrayModuleBackend

    # A second eager backend over NumPy stands in for cupy (no GPU here).
    other = ArrayModuleBackend("cupy", np)
    assert isinstance(other, Backend)
    a = s4tf.Tensor([1.0, 2.0])
    b = s4tf.Tensor._wrap(np.array([1.0, 2.0], np.float32), other)
    with pytest.raises(TypeError, match=r"different backends.*'naive'.*'cupy'"):
        a + b
