"""The Tensor API (docs/api/tensor.md): dtypes, copying, conversion, creation, random, errors."""

import numpy as np
import pytest

import s4tf
from s4tf.testing import check_gradients


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
    from s4tf.backends.array_module_backend import ArrayModuleBackend
    from s4tf.backends.base import Backend

    # A second eager backend over NumPy stands in for cupy (no GPU here).
    other = ArrayModuleBackend("cupy", np)
    assert isinstance(other, Backend)
    a = s4tf.Tensor([1.0, 2.0])
    b = s4tf.Tensor._wrap(np.array([1.0, 2.0], np.float32), other)
    with pytest.raises(TypeError, match=r"different backends.*'naive'.*'cupy'"):
        a + b


# Issue 19, item 4: one constructor turns host numbers into a tensor beside another.
@pytest.mark.parametrize("other", ["cupy", "xla"])
def test_from_numpy_lands_on_the_backend_of_like(other):
    from s4tf.backends.base import get_backend_object
    from s4tf.tensor import from_numpy

    if other == "xla":
        pytest.importorskip("jax")
    with s4tf.backend(other):
        x = s4tf.ones([2], dtype=s4tf.float64)
    source = np.array([1, 2, 3])
    y = from_numpy(source, s4tf.float32, like=x)      # the current backend is naive
    source[0] = 9
    assert (y.backend, y.dtype, y.tolist()) == (other, s4tf.float32, [1.0, 2.0, 3.0])
    z = from_numpy(np.zeros(2, np.int32), like=get_backend_object(other))
    assert (z.backend, z.dtype) == (other, s4tf.int32)
    assert from_numpy(np.ones(1)).backend == "naive"
    with pytest.raises(TypeError, match=r"like=.*received str.*Pass the tensor"):
        from_numpy(np.ones(1), like=other)


# Issue 10, item 2: no public route to a tensor's storage can be made writeable.
def _storage_routes(t):
    return {
        "numpy()": t.numpy(),
        "np.asarray": np.asarray(t),
        "__array__": t.__array__(),
        "np.asarray(copy=False)": np.asarray(t, copy=False),
        "view of numpy()": t.numpy().view(),
        "index view of numpy()": t.numpy()[...],
    }


@pytest.mark.parametrize("make", [
    lambda: s4tf.Tensor([1.0, 2.0, 3.0]),
    lambda: s4tf.Tensor([[1.0, 2.0], [3.0, 4.0]]).T,  # a strided view as storage
    lambda: s4tf.Tensor(7.0),  # one element: the xla backend keeps it on the host
    lambda: s4tf.Tensor([1, 2, 3]),
    lambda: s4tf.Tensor([1.0, 2.0]).astype(s4tf.bfloat16),
    lambda: s4tf.Tensor([True, False]),
], ids=["float", "transposed", "scalar", "int", "bfloat16", "bool"])
def test_numpy_can_never_be_made_writeable(backend, make):
    t = make()
    alias = t
    before = t.tolist()
    for route, array in _storage_routes(t).items():
        chain = [array]
        while isinstance(chain[-1].base, np.ndarray):
            chain.append(chain[-1].base)
        for level in chain:
            with pytest.raises(ValueError, match="WRITEABLE"):
                level.flags.writeable = True
            with pytest.raises(ValueError, match="read-only"):
                level[...] = 0
        assert t.tolist() == before == alias.tolist(), route
    with pytest.raises(TypeError):
        memoryview(t)  # no buffer protocol: it would hand out the storage
    # A copy, and only a copy, is the user's own.
    mine = np.array(t)
    mine[...] = 0
    assert t.tolist() == before


# Issue 10, item 6: NumPy's reductions work on tensors, or say what to call instead.
def test_numpy_reductions_of_tensors_work(backend):
    t = s4tf.Tensor([[1.0, 2.0], [3.0, 5.0]])
    assert np.sum(t).tolist() == 11.0 and isinstance(np.sum(t), s4tf.Tensor)
    assert np.mean(t, axis=0).tolist() == [2.0, 3.5]
    assert np.max(t, axis=1, keepdims=True).tolist() == [[2.0], [5.0]]
    assert np.min(t).tolist() == 1.0
    assert np.sum(t).backend == backend
    assert np.shape(t) == (2, 2) and np.ndim(t) == 2 and np.size(t) == 4
    np.testing.assert_array_equal(np.concatenate([t, t]), np.concatenate([t.numpy()] * 2))
    with pytest.raises(TypeError, match=r"numpy.sum\(tensor, out=...\).*t.sum\(axis=..., keepdims=...\)"):
        np.sum(t, out=np.zeros(()))
    with pytest.raises(TypeError, match=r"numpy.mean\(tensor, dtype=...\).*t.astype"):
        np.mean(t, dtype=np.float64)


@pytest.mark.parametrize("function", [np.sum, np.mean, np.max, np.concatenate, np.dot])
def test_numpy_functions_under_differentiation_are_non_differentiable(function):
    x = s4tf.Tensor([1.0, 2.0])

    def f(x):
        return function([x, x]) if function is np.concatenate else (
            function(x, x) if function is np.dot else function(x))

    with pytest.raises(s4tf.NonDifferentiableError, match=f"numpy.{function.__name__} is not"):
        s4tf.gradient(x, of=f)
    # Shape queries are not numeric: they stay allowed.
    assert s4tf.gradient(x, of=lambda x: x.sum() * np.shape(x)[0]).tolist() == [2.0, 2.0]


# Issue 10, item 11: Tensor(x) of a value being differentiated stays differentiable.
def test_tensor_of_a_traced_value_is_differentiable(backend):
    x = s4tf.Tensor([1.0, 2.0])
    assert s4tf.gradient(x, of=lambda x: (s4tf.Tensor(x) * 3.0).sum()).tolist() == [3.0, 3.0]
    # A list holding traced values is stacked, differentiably.
    grad = s4tf.gradient(x, of=lambda x: (s4tf.Tensor([x, x * 2.0, [5.0, 6.0]]) ** 2).sum())
    np.testing.assert_allclose(grad.numpy(), [10.0, 20.0])
    # A traced Python float becomes a float32 scalar, as Tensor(1.5) does.
    assert s4tf.gradient(2.0, of=lambda v: (s4tf.Tensor(v) * 4.0).sum()) == 4.0
    assert s4tf.derivative(2.0, of=lambda v: s4tf.Tensor(v) ** 2).tolist() == 4.0
    # Forward mode too.
    assert s4tf.derivative(1.5, of=lambda v: s4tf.Tensor([v, v * 3.0]).sum()).tolist() == 4.0


def test_tensor_of_a_traced_value_with_a_floating_dtype_is_a_differentiable_cast(backend):
    x = s4tf.Tensor([1.0, -2.0], dtype=s4tf.float32)

    def f(x):
        y = s4tf.Tensor(x, dtype=s4tf.float64)
        assert y.dtype == s4tf.float64
        return (y * y).sum()

    grad = s4tf.gradient(x, of=f)
    assert grad.dtype == s4tf.float32  # the cotangent comes back in the input's dtype
    assert grad.tolist() == [2.0, -4.0]
    check_gradients(lambda x: s4tf.Tensor([x * x, x], dtype=s4tf.float64) * x,
                    s4tf.Tensor([0.5, 1.5], dtype=s4tf.float64))


# Issue 10, item 6: one size validator for creation, random draws and initializers.
BAD_SIZES = {
    "negative": ([-1, 2], r"shape\[0\] must be a non-negative int, got -1"),
    "fractional": ([2.5, 2], r"shape\[0\] must be a non-negative int, got 2.5 \(a float"),
    "bool": ([2, True], r"shape\[1\] must be a non-negative int, got True \(a bool"),
    "string": (["3"], r"shape\[0\] must be a non-negative int, got '3'"),
    "negative int": (-3, r"shape must be a non-negative int, got -3"),
}
SHAPED = {
    "zeros": lambda shape: s4tf.zeros(shape),
    "ones": lambda shape: s4tf.ones(shape),
    "full": lambda shape: s4tf.full(shape, 1.0),
    "normal": lambda shape: s4tf.random.normal(shape),
    "uniform": lambda shape: s4tf.random.uniform(shape),
    "randint": lambda shape: s4tf.random.randint(0, 5, shape=shape),
    **{f"initializers.{name}": getattr(s4tf.initializers, name)
       for name in ("glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "lecun_uniform",
                    "lecun_normal", "truncated_normal", "orthogonal", "zeros", "ones")},
    "initializers.constant": lambda shape: s4tf.initializers.constant(0.5)(shape),
}


@pytest.mark.parametrize("bad", sorted(BAD_SIZES))
@pytest.mark.parametrize("function", sorted(SHAPED))
def test_creation_rejects_bad_sizes_naming_the_argument(function, bad):
    shape, message = BAD_SIZES[bad]
    owner = function.removeprefix("initializers.")
    with pytest.raises(ValueError, match=f"{owner}: {message}"):
        SHAPED[function](shape)


def test_zero_sizes_and_int_like_sizes_are_fine():
    assert s4tf.zeros([0, 3]).shape == (0, 3)
    assert s4tf.ones(np.int64(2)).shape == (2,)
    assert s4tf.random.normal((s4tf.Tensor(2), 1)).shape == (2, 1)
    assert s4tf.eye(2, 3).shape == (2, 3)
    with pytest.raises(ValueError, match="eye: n must be a non-negative int, got 1.5"):
        s4tf.eye(1.5)


def test_installed_methods_read_as_methods_of_tensor():
    # Operators and NumPy-named methods come from one table in the op library
    # (s4tf.ops.tensor_methods); help(), signatures and the API page see them on Tensor.
    import inspect

    from s4tf.ops.tensor_methods import METHODS

    for name in METHODS:
        attribute = inspect.getattr_static(s4tf.Tensor, name)
        function = attribute.fget if isinstance(attribute, property) else getattr(
            attribute, "__func__", attribute)
        assert function.__qualname__ == f"Tensor.{name}", name
        assert function.__module__ == "s4tf.tensor", name
        assert function.__doc__, f"Tensor.{name} has no docstring"
    assert str(inspect.signature(s4tf.Tensor.sum)).startswith("(self, axis=None, keepdims=False)")
    assert "Sum over" in s4tf.Tensor.sum.__doc__
    assert ">>>" in s4tf.Tensor.reshape.__doc__   # public methods carry a runnable example


def test_numpy_ufuncs_answer_from_the_one_table():
    t = s4tf.Tensor([-2.0, 3.0])
    assert np.square(t).tolist() == [4.0, 9.0]
    assert np.sign(t).tolist() == [-1.0, 1.0]
    assert (np.ones(2, np.float32) + t).tolist() == [-1.0, 4.0]
    assert s4tf.gradient(t, of=lambda x: (np.ones(2, np.float32) * x).sum()).tolist() == [1.0, 1.0]
    with pytest.raises(s4tf.NonDifferentiableError, match="numpy.square"):
        s4tf.gradient(t, of=lambda x: np.square(x).sum())
