"""DLPack (Tensor.__dlpack__, s4tf.from_dlpack): zero copy with NumPy, PyTorch and JAX, and
copy-on-write treating a shared buffer as seen by someone else."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf

torch = pytest.importorskip("torch")


class Line(s4tf.Differentiable):
    w: s4tf.Tensor


def _pointer(array) -> int:
    return array.__array_interface__["data"][0] if isinstance(array, np.ndarray) else array.data_ptr()


def test_round_trip_through_torch_shares_one_buffer():
    t = s4tf.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    shared = torch.from_dlpack(t)
    assert shared.data_ptr() == _pointer(t._data) and shared.shape == (2, 3)
    back = s4tf.from_dlpack(shared)
    assert _pointer(back._data) == _pointer(t._data) and back.tolist() == t.tolist()
    assert s4tf.from_dlpack(np.ones(2, np.float32)).__dlpack_device__() == (1, 0)


def test_numpy_sees_a_read_only_view():
    t = s4tf.Tensor([1.0, 2.0])
    view = np.from_dlpack(t)
    assert np.shares_memory(view, t._data) and not view.flags.writeable


def test_an_imported_buffer_is_never_written_by_an_optimizer():
    source = torch.tensor([1.0, 2.0])
    model = Line(s4tf.from_dlpack(source))
    opt = s4tf.optimizers.SGD(model, learning_rate=0.5)
    model = opt.update(model, Line.TangentVector(w=s4tf.Tensor([1.0, 1.0])))
    assert model.w.tolist() == [0.5, 1.5]
    assert source.tolist() == [1.0, 2.0]  # torch's tensor kept its numbers


def test_an_exported_buffer_is_never_written_by_an_optimizer():
    model = Line(s4tf.Tensor([1.0, 2.0]))
    exported = torch.from_dlpack(model.w)
    opt = s4tf.optimizers.SGD(model, learning_rate=0.5)
    model = opt.update(model, Line.TangentVector(w=s4tf.Tensor([1.0, 1.0])))
    assert model.w.tolist() == [0.5, 1.5] and exported.tolist() == [1.0, 2.0]
    # Without an outside holder the same update is in place (the control).
    alone = Line(s4tf.Tensor([1.0, 2.0]))
    before = _pointer(alone.w._data)
    alone = opt.update(alone, Line.TangentVector(w=s4tf.Tensor([1.0, 1.0])))
    assert _pointer(alone.w._data) == before


def test_xla_tensors_share_their_device_buffer_with_jax_and_torch():
    jax = pytest.importorskip("jax")
    with s4tf.backend("xla"):
        x = s4tf.Tensor([1.0, 2.0]) * 3  # pending: computed by the export
        shared = torch.from_dlpack(x)
        assert shared.tolist() == [3.0, 6.0]
        assert shared.data_ptr() == x._data.buffer.unsafe_buffer_pointer()
        back = s4tf.from_dlpack(shared)
        assert back.backend == "xla" and back.tolist() == [3.0, 6.0]
    j = jax.numpy.arange(3.0)
    assert s4tf.from_dlpack(j).tolist() == [0.0, 1.0, 2.0]


def test_from_dlpack_refuses_what_has_no_buffer():
    with pytest.raises(TypeError, match="__dlpack__.*s4tf.Tensor"):
        s4tf.from_dlpack([1.0, 2.0])


def test_cupy_tensors_share_their_buffer():
    # Without a GPU this is CuPy's stand-in (tests/conftest.py), whose buffers are on the
    # host: a CPU buffer goes to naive unless cupy is asked for.
    with s4tf.backend("cupy"):
        t = s4tf.Tensor([1.0, 2.0, 3.0])
        shared = torch.from_dlpack(t)
        assert s4tf.from_dlpack(shared).backend == "naive"
        back = s4tf.from_dlpack(shared, backend="cupy")
    assert back.backend == "cupy" and back.tolist() == [1.0, 2.0, 3.0]
    assert np.shares_memory(np.from_dlpack(back._data), np.from_dlpack(t._data))
    model = Line(back)
    opt = s4tf.optimizers.SGD(model, learning_rate=1.0)
    model = opt.update(model, Line.TangentVector(w=s4tf.ones([3]).to("cupy")))
    assert model.w.tolist() == [0.0, 1.0, 2.0] and shared.tolist() == [1.0, 2.0, 3.0]
