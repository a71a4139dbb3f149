"""``s4tf.export``'s contract in one process: inputs and names, the batch axis, errors.

Running artifacts without s4tf is ``test_export_artifacts.py``.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import s4tf
from s4tf.exporting import ExportError, LeafSpec
from s4tf.exporting.signature import leaf_specs

jax = pytest.importorskip("jax")


class _Scaled(s4tf.Layer):
    dense: s4tf.layers.Dense
    norm: s4tf.layers.BatchNorm
    gain: float

    def __call__(self, x):
        return self.norm(self.dense(x)) * self.gain


def _model():
    s4tf.random.seed(0)
    return _Scaled(dense=s4tf.layers.Dense(3, 4), norm=s4tf.layers.BatchNorm(4), gain=2.0)


def test_inputs_are_the_tensor_leaves_in_order_and_only_the_batch_is_symbolic():
    model = _model()
    x, mask = s4tf.ones([5, 3]), s4tf.ones([7, 4])

    def step(model, x, mask, rate):
        return model(x)

    specs = leaf_specs(step, (model, x, mask, 0.5), batch_polymorphic=True)
    tensors = [leaf for leaf in s4tf.tree_leaves((model, x, mask, 0.5))
               if isinstance(leaf, s4tf.Tensor)]
    assert [s.shape[1:] for s in specs] == [t.shape[1:] for t in tensors]
    assert [s.name for s in specs] == [
        "model.dense.weight", "model.dense.bias", "model.norm.offset", "model.norm.scale",
        "model.norm.running_mean", "model.norm.running_variance", "x", "mask"]
    # The model (State cells included) keeps its sizes; so does a tensor of another
    # leading size than the batch's; floats (the gain, the rate) are no inputs.
    assert [s.shape for s in specs][-2:] == [("batch", 3), (7, 4)]
    assert all("batch" not in s.shape for s in specs[:-2])
    assert [s.shape for s in leaf_specs(step, (model, x, mask, 0.5), False)][-2:] == [(5, 3), (7, 4)]


def test_a_stablehlo_artifact_takes_any_batch_and_names_its_outputs(tmp_path):
    model = _model()
    path = tmp_path / "model.stablehlo"
    artifact = s4tf.export(lambda model, x: (model(x), model.dense.bias), model,
                           s4tf.ones([2, 3]), path=path)
    assert artifact.path == str(path) and artifact.format == "stablehlo"
    assert artifact.outputs == (LeafSpec("output.0", ("batch", 4), "float32"),
                                LeafSpec("output.1", (4,), "float32"))
    exported = jax.export.deserialize(bytearray(path.read_bytes()))
    # The calling convention is plain tuples, so a process without s4tf reads it.
    assert str(exported.in_tree) == "PyTreeDef(((*, *, *, *, *, *, *), {}))"
    x = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    leaves = [t.numpy() for t in s4tf.tree_leaves(model) if isinstance(t, s4tf.Tensor)]
    y, bias = exported.call(*leaves, x)
    np.testing.assert_allclose(np.asarray(y), model(s4tf.Tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(bias), model.dense.bias.numpy())


def test_without_batch_polymorphism_the_batch_size_is_fixed(tmp_path):
    model = _model()
    path = tmp_path / "fixed.stablehlo"
    artifact = s4tf.export(lambda x: model(x), s4tf.ones([2, 3]), path=path,
                           batch_polymorphic=False)
    assert artifact.inputs == (LeafSpec("x", (2, 3), "float32"),)
    exported = jax.export.deserialize(bytearray(path.read_bytes()))
    assert exported.call(np.ones((2, 3), np.float32))[0].shape == (2, 4)
    with pytest.raises(ValueError, match="shape"):
        exported.call(np.ones((3, 3), np.float32))


def test_onnx_inputs_and_outputs_carry_the_leaf_names(tmp_path):
    onnx = pytest.importorskip("onnx")
    model = _model()
    path = tmp_path / "model.onnx"
    artifact = s4tf.export(lambda model, x: model(x), model, s4tf.ones([2, 3]), path=path,
                           format="onnx")
    graph = onnx.load(str(path)).graph
    assert [i.name for i in graph.input] == [s.name for s in artifact.inputs]
    assert [o.name for o in graph.output] == ["output"]
    dims = [d.dim_param or d.dim_value for d in graph.input[-1].type.tensor_type.shape.dim]
    assert dims == ["batch", 3]


def test_an_op_that_needs_the_batch_size_is_named_with_the_users_line(tmp_path):
    def first_half(x):
        return s4tf.split(x, 2, axis=0)[0]

    with pytest.raises(ExportError, match="op 'split'.*test_export_api.py.*batch_polymorphic=False") \
            as caught:
        s4tf.export(first_half, s4tf.ones([4, 3]), path=tmp_path / "half.stablehlo")
    assert caught.value.op == "split"
    assert s4tf.export(first_half, s4tf.ones([4, 3]), path=tmp_path / "half.stablehlo",
                       batch_polymorphic=False).outputs[0].shape == (2, 3)


def test_an_error_of_fns_own_code_is_raised_as_it_is(tmp_path):
    def broken(x):
        raise KeyError("my own bug")

    with pytest.raises(KeyError, match="my own bug"):
        s4tf.export(broken, s4tf.ones([2, 3]), path=tmp_path / "broken.stablehlo")


def test_state_of_a_closed_over_model_is_left_as_it_was(tmp_path):
    model = _model()
    before = model.norm.running_mean.value
    with s4tf.training(), pytest.raises(ExportError, match="model.norm.running_mean"):
        s4tf.export(lambda x: model(x), s4tf.ones([2, 3]), path=tmp_path / "m.stablehlo")
    assert model.norm.running_mean.value is before
    assert not (tmp_path / "m.stablehlo").exists()
    # Taken as an argument, the model's new statistics are the artifact's outputs.
    with s4tf.training():
        artifact = s4tf.export(lambda model, x: (model(x), model), model, s4tf.ones([2, 3]),
                               path=tmp_path / "m.stablehlo")
    assert "output.1.norm.running_mean" in [spec.name for spec in artifact.outputs]
    assert model.norm.running_mean.value is before


def test_an_optimizer_updated_inside_fn_is_left_as_it_was(tmp_path):
    model = s4tf.layers.Dense(3, 4)
    x = s4tf.ones([2, 3])
    loss = lambda m: s4tf.mean_squared_error(predicted=m(x), expected=s4tf.zeros([2, 4]))
    opt = s4tf.optimizers.SGD(model, learning_rate=0.1, momentum=0.9)
    model = opt.update(model, s4tf.gradient(model, of=loss), consume=False)
    velocity = opt.slots(0)["velocity"]

    def step(model):
        return opt.update(model, s4tf.gradient(model, of=loss))

    with pytest.raises(ExportError, match=r"opt \(an optimizer\).*takes the slots as an argument"):
        s4tf.export(step, model, path=tmp_path / "step.stablehlo")
    # Its slots and step count are the ones it had: no tracer was left behind.
    assert opt.step == 1 and opt.slots(0)["velocity"] is velocity
    opt.update(model, s4tf.gradient(model, of=loss), consume=False)
    assert opt.step == 2


def test_missing_packages_raise_an_import_error_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax2onnx", None)  # what an uninstalled package gives
    with pytest.raises(ImportError, match=r"jax2onnx.*s4tf\[export\]"):
        s4tf.export(s4tf.relu, s4tf.ones([2]), path=tmp_path / "relu.onnx", format="onnx")
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ImportError, match=r"'jax'.*s4tf\[export\]"):
        s4tf.export(s4tf.relu, s4tf.ones([2]), path=tmp_path / "relu.stablehlo")


def test_a_wrong_format_or_path_is_refused(tmp_path):
    with pytest.raises(ValueError, match="format must be one of.*'tflite'"):
        s4tf.export(s4tf.relu, s4tf.ones([2]), path=tmp_path / "x", format="tflite")
    with pytest.raises(TypeError, match="path must be a file path"):
        s4tf.export(s4tf.relu, s4tf.ones([2]), path=None)
    with pytest.raises(FileNotFoundError, match="does not exist; create"):
        s4tf.export(s4tf.relu, s4tf.ones([2]), path=tmp_path / "missing" / "relu.stablehlo")


@pytest.mark.parametrize("config", [[(1, 2, 1), (-1, 3, 2)], [(0, -2, 0), (2, 2, 0)],
                                    [(-1, -1, 3), (0, 0, 0)]])
def test_the_onnx_rewrite_of_pad_computes_what_pad_does(config):
    from jax import lax

    from s4tf.exporting.onnx_rewrites import rewritten

    x = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)
    config = [(0, 0, 0), *config]
    pad = lambda x: [lax.pad(x, np.float32(0.5), config)]
    np.testing.assert_array_equal(np.asarray(rewritten(pad)(x)[0]), np.asarray(pad(x)[0]))
