"""``s4tf.load`` without ``like=`` trusts nothing in a file; saves clean up after killed saves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import typing
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import s4tf
from s4tf import layers
from s4tf.checkpoint import callables
from s4tf.checkpoint.files import read_file
from s4tf.checkpoint.structure import MAX_DEPTH


class Typed(s4tf.Differentiable):
    dense: layers.Dense
    maybe: s4tf.Tensor | None
    blocks: list[layers.Dense]
    pair: tuple[int, int] = s4tf.no_derivative(default=(1, 2))
    mode: typing.Literal["a", "b"] = s4tf.no_derivative(default="a")
    scale: float = s4tf.no_derivative(default=1.5)
    activation: typing.Callable = s4tf.no_derivative(default=s4tf.relu)


def typed() -> Typed:
    s4tf.random.seed(0)
    return Typed(layers.Dense(2, 3), s4tf.ones([3]), [layers.Dense(3, 1)])


def saved(tmp_path, value, name="model.safetensors") -> Path:
    path = tmp_path / name
    s4tf.save(value, path)
    return path


def structure_of(path) -> dict:
    return json.loads(read_file(path, "s4tf.model/1")[1]["structure"])


def rewrite(path, structure=None, arrays=None, raw_structure: str | None = None) -> None:
    """Edit a saved file as an attacker (or a damaged disk) could."""
    old_arrays, metadata = read_file(path, "s4tf.model/1")
    if raw_structure is None:
        raw_structure = json.dumps(structure if structure is not None else structure_of(path))
    metadata["structure"] = raw_structure
    save_file(arrays if arrays is not None else old_arrays, path, metadata=metadata)


# --- each field's kind against its class's annotation ---------------------------------

def test_a_file_that_fits_the_annotations_loads(tmp_path):
    model = s4tf.replace(typed(), maybe=None, scale=2)  # None fits Optional; an int fits float
    loaded = s4tf.load(saved(tmp_path, model))
    assert loaded.maybe is None and loaded.scale == 2 and loaded.activation is s4tf.relu
    assert isinstance(loaded.dense, layers.Dense) and loaded.pair == (1, 2)


@pytest.mark.parametrize("field, entry, found", [
    ("maybe", {"kind": "json", "value": 3}, "the int 3"),
    ("dense", {"kind": "tensor", "key": "maybe"}, "a float32 Tensor of shape (3,)"),
    ("pair", {"kind": "list", "items": [{"kind": "json", "value": 1}] * 2}, "the list [1, 1]"),
    ("pair", {"kind": "tuple", "items": [{"kind": "json", "value": "x"}] * 2}, "the tuple"),
    ("pair", {"kind": "tuple", "items": [{"kind": "json", "value": 1}] * 3}, "the tuple"),
    ("mode", {"kind": "json", "value": "c"}, "the str 'c'"),
    ("scale", {"kind": "json", "value": "1.5"}, "the str '1.5'"),
    ("activation", {"kind": "json", "value": None}, "the NoneType None"),
])
def test_a_field_of_the_wrong_kind_is_refused(tmp_path, field, entry, found):
    path = saved(tmp_path, typed())
    structure = structure_of(path)
    structure["fields"][field] = entry
    rewrite(path, structure)
    with pytest.raises(s4tf.CheckpointError) as caught:
        s4tf.load(path)
    message = str(caught.value)
    assert f"field {field!r} holds {found}" in message and f"Typed.{field} is annotated" in message
    assert "like=model" in message


def test_a_layer_of_another_class_is_refused_inside_a_list(tmp_path):
    path = saved(tmp_path, typed())
    structure = structure_of(path)
    bias_only = s4tf.layers.Dropout(0.5)
    foreign = structure_of(saved(tmp_path, bias_only, "dropout.safetensors"))
    structure["fields"]["blocks"]["items"][0] = foreign
    rewrite(path, structure)
    with pytest.raises(s4tf.CheckpointError, match=r"'blocks' holds the list \[Dropout"):
        s4tf.load(path)


def test_like_still_takes_static_fields_from_the_model_given(tmp_path):
    # like= rebuilds from the caller's own model: its fields are not re-checked.
    path = saved(tmp_path, typed())
    like = s4tf.replace(typed(), scale="anything")
    assert s4tf.load(path, like=like).scale == "anything"


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.complex64])
def test_a_tensor_of_a_dtype_s4tf_lacks_is_refused(tmp_path, dtype):
    path = saved(tmp_path, typed())
    arrays, _ = read_file(path, "s4tf.model/1")
    arrays["maybe"] = np.ones(3, dtype)
    rewrite(path, arrays=arrays)
    with pytest.raises(s4tf.CheckpointError,
                       match=rf"tensor 'maybe' \(field 'maybe'\) has dtype {np.dtype(dtype)}"):
        s4tf.load(path)


class Counted(s4tf.Differentiable):
    weight: s4tf.Tensor
    counts: s4tf.Tensor = s4tf.no_derivative()


def test_every_s4tf_dtype_round_trips(tmp_path):
    # Parameters (differentiable fields) are floating point; other fields hold any dtype.
    for dtype in (s4tf.float16, s4tf.bfloat16, s4tf.float64):
        model = s4tf.replace(typed(), maybe=s4tf.zeros([3], dtype=dtype))
        assert s4tf.load(saved(tmp_path, model)).maybe.dtype == dtype
    for dtype in (s4tf.dtypes.int8, s4tf.dtypes.uint8, s4tf.dtypes.int16, s4tf.int32, s4tf.int64,
                  s4tf.bool):
        model = Counted(s4tf.ones([2]), s4tf.zeros([3], dtype=dtype))
        assert s4tf.load(saved(tmp_path, model)).counts.dtype == dtype
        state = layers.BatchNorm(2)  # a State cell is not differentiated either
        state = s4tf.replace(state, running_mean=s4tf.State(s4tf.zeros([2], dtype=dtype)))
        assert s4tf.load(saved(tmp_path, state)).running_mean.value.dtype == dtype


def with_arrays(path, **changes) -> Path:
    """Replace some of a saved file's tensors, keeping its structure."""
    arrays, _ = read_file(path, "s4tf.model/1")
    arrays.update(changes)
    rewrite(path, arrays=arrays)
    return path


@pytest.mark.parametrize("key, dtype", [("weight", np.uint8), ("bias", np.int32),
                                        ("bias", np.bool_), ("weight", np.int64)])
def test_a_parameter_that_is_not_floating_point_is_refused(tmp_path, key, dtype):
    dense = layers.Dense(2, 3)
    path = saved(tmp_path, dense)
    with_arrays(path, **{key: np.ones(dense.weight.shape if key == "weight" else (3,), dtype)})
    with pytest.raises(s4tf.CheckpointError) as caught:
        s4tf.load(path)
    message = str(caught.value)
    assert str(path) in message
    assert f"tensor {key!r} (field {key!r}) has dtype {np.dtype(dtype)}" in message
    assert "differentiable field" in message and "no_derivative" in message
    assert "like=model" in message


def dense_shapes(tmp_path, weight_shape, bias_shape) -> Path:
    path = saved(tmp_path, layers.Dense(2, 3))
    return with_arrays(path, weight=np.ones(weight_shape, np.float32),
                       bias=np.ones(bias_shape, np.float32))


@pytest.mark.parametrize("weight, bias, complaint", [
    ((2, 3), (1,), "bias has shape (1,), but weight (2, 3) makes it (3,)"),
    ((2, 3), (), "bias has shape (), not 1 axis (out)"),
    ((2, 3), (1, 3), "bias has shape (1, 3), not 1 axis (out)"),
    ((3, 2), (3,), "bias has shape (3,), but weight (3, 2) makes it (2,)"),  # transposed
    ((6,), (3,), "weight has shape (6,), not 2 axes (in, out)"),
])
def test_a_dense_whose_shapes_do_not_fit_each_other_is_refused(tmp_path, weight, bias,
                                                               complaint):
    path = dense_shapes(tmp_path, weight, bias)
    with pytest.raises(s4tf.CheckpointError) as caught:
        s4tf.load(path)
    message = str(caught.value)
    assert str(path) in message and complaint in message
    assert "Dense: weight (in, out), bias (out,)" in message and "like=model" in message


@pytest.mark.parametrize("layer, key, shape, complaint", [
    (layers.Conv2D((3, 3, 2, 4)), "bias", (1,), "bias has shape (1,), but filter (3, 3, 2, 4) "
                                                "makes it (4,)"),
    (layers.TransposedConv2D((3, 3, 4, 2)), "bias", (2,), "bias has shape (2,), but filter "
                                                          "(3, 3, 4, 2) makes it (4,)"),
    (layers.DepthwiseConv2D((3, 3, 2, 3)), "bias", (3,), "bias has shape (3,), but filter "
                                                         "(3, 3, 2, 3) makes it (6,)"),
    (layers.BatchNorm(4), "running_variance", (1,), "running_variance has shape (1,), but "
                                                    "offset (4,) makes it (4,)"),
    (layers.LayerNorm(4), "scale", (4, 1), "scale has shape (4, 1), not 1 axis (features)"),
    (layers.LSTMCell(2, 3), "fused_bias", (3,), "fused_bias has shape (3,), but fused_weight "
                                                "(5, 12) makes it (12,)"),
    (layers.GRUCell(2, 3), "reset_recurrent_kernel", (2, 3), "reset_recurrent_kernel has shape "
                                                             "(2, 3), but update_kernel (2, 3)"),
    (layers.MultiHeadAttention(4, 2), "output_bias", (8,), "output_bias has shape (8,), but "
                                                           "output_weight (4, 4) makes it (4,)"),
])
def test_library_layers_whose_shapes_do_not_fit_each_other_are_refused(tmp_path, layer, key,
                                                                       shape, complaint):
    path = with_arrays(saved(tmp_path, layer), **{key: np.ones(shape, np.float32)})
    with pytest.raises(s4tf.CheckpointError) as caught:
        s4tf.load(path)
    assert str(path) in str(caught.value) and complaint in str(caught.value)


def test_every_library_layer_built_by_its_constructor_fits_its_declared_shapes(tmp_path):
    s4tf.random.seed(2)
    built = [
        layers.Conv1D((3, 2, 4)), layers.Conv3D((2, 2, 2, 1, 3)), layers.TransposedConv1D((3, 4, 2)),
        layers.TransposedConv3D((2, 2, 2, 3, 1)), layers.DepthwiseConv2D((3, 3, 2, 3)),
        layers.SeparableConv1D((3, 2, 2), (1, 4, 5)), layers.SeparableConv2D((3, 3, 2, 2), (1, 1, 4, 5)),
        layers.GroupNorm(4, 2), layers.InstanceNorm(3), layers.SimpleRNNCell(2, 3),
        layers.GRUCell(2, 3), layers.MultiHeadAttention(4, 2, key_size=3, value_size=5, output_size=6),
        layers.Dense(2, 3, use_bias=False), layers.Embedding(5, 2),
    ]
    for layer in built:
        loaded = s4tf.load(saved(tmp_path, layer))
        assert [t.shape for t in s4tf.tree_leaves(loaded) if isinstance(t, s4tf.Tensor)] == [
            t.shape for t in s4tf.tree_leaves(layer) if isinstance(t, s4tf.Tensor)]


def test_every_declared_shape_names_a_library_layer_and_its_tensor_fields():
    from s4tf.checkpoint.layer_shapes import SHAPES

    classes = {f"{c.__module__}.{c.__qualname__}": c for c in vars(layers).values()
               if isinstance(c, type)}
    for name, fields in SHAPES.items():
        assert name in classes, f"{name} is not a class of s4tf.layers"
        assert set(fields) <= set(classes[name]._s4tf_all_fields), name


def test_a_tensor_the_structure_does_not_use_is_reported(tmp_path):
    path = with_arrays(saved(tmp_path, typed()), **{"dense.kernel": np.ones(2, np.float32),
                                                    "extra": np.ones(1, np.float32)})
    with pytest.raises(s4tf.CheckpointError) as caught:
        s4tf.load(path)
    message = str(caught.value)
    assert str(path) in message
    assert "unexpected keys (in the file, not in the model it describes): dense.kernel, extra" \
        in message
    assert "Save the model again with s4tf.save" in message


def test_a_training_state_reports_tensors_no_section_uses(tmp_path):
    path = tmp_path / "run.safetensors"
    opt = s4tf.optimizers.SGD(typed(), learning_rate=0.1, momentum=0.9)
    s4tf.save_training_state(path, typed(), opt, epoch=1)
    arrays, metadata = read_file(path, "s4tf.training_state/1")
    arrays_written = {**arrays, "model.dense.kernel": np.ones(2, np.float32),
                      "optimizer.velocity.dense.kernel": np.ones(2, np.float32),
                      "loose": np.ones(1, np.float32)}
    save_file(arrays_written, path, metadata=metadata)
    # Each section in turn: tensors outside both, then the model's, then the optimizer's.
    for key, arguments in [("loose", {}), ("model.dense.kernel", {}),
                           ("optimizer.velocity.dense.kernel", {"like": typed(), "optimizer": opt})]:
        with pytest.raises(s4tf.CheckpointError) as caught:
            s4tf.load_training_state(path, **arguments)
        assert str(path) in str(caught.value)
        assert f"(in the file, not in the model it describes): {key}\n" in str(caught.value)
        del arrays_written[key]
        save_file(arrays_written, path, metadata=metadata)
    assert s4tf.load_training_state(path, optimizer=opt).epoch == 1


def test_a_float_parameter_stored_as_an_array_is_refused(tmp_path):
    class Scalar(s4tf.Differentiable):
        x: float

    path = saved(tmp_path, Scalar(1.0))
    rewrite(path, arrays={"x": np.ones(4)})
    with pytest.raises(s4tf.CheckpointError, match="float at 'x' is stored as a float64 array"):
        s4tf.load(path)


# --- callables: activations and registered functions only -----------------------------

@pytest.mark.parametrize("name", ["s4tf.save", "s4tf.nn.max_pool2d",
                                  "s4tf.initializers.glorot_uniform", "s4tf.zeros",
                                  "s4tf.datasets.MNIST"])
def test_library_functions_other_than_activations_are_not_restored(tmp_path, name):
    path = saved(tmp_path, typed())
    structure = structure_of(path)
    structure["fields"]["activation"] = {"kind": "callable", "name": name}
    rewrite(path, structure)
    with pytest.raises(s4tf.CheckpointError, match=f"names the function {name!r}, which is "
                                                   "neither an s4tf activation nor registered"):
        s4tf.load(path)


def test_activations_and_registered_functions_are_restored(tmp_path, monkeypatch):
    monkeypatch.setattr(callables, "_registered", {})  # registrations end with the test
    model = s4tf.replace(typed(), activation=s4tf.gelu)
    assert s4tf.load(saved(tmp_path, model)).activation is s4tf.gelu

    def halve(x):
        return x * 0.5

    flattening = layers.Sequential(layers.Function(halve), layers.Function(s4tf.nn.max_pool2d))
    with pytest.raises(s4tf.CheckpointError, match="cannot rebuild the field 'layers.0.fn'"):
        s4tf.load(saved(tmp_path, flattening, "seq.safetensors"))
    s4tf.checkpoint.register_callable("tests.halve", halve)
    s4tf.checkpoint.register_callable("tests.max_pool2d", s4tf.nn.max_pool2d)
    loaded = s4tf.load(saved(tmp_path, flattening, "seq.safetensors"))
    assert loaded.layers[0].fn is halve and loaded.layers[1].fn is s4tf.nn.max_pool2d


def test_register_callable_refuses_a_bad_name_or_value():
    with pytest.raises(TypeError, match="non-empty string name"):
        s4tf.checkpoint.register_callable("", s4tf.relu)
    with pytest.raises(TypeError, match="needs a function; received 3"):
        s4tf.checkpoint.register_callable("three", 3)


def test_library_layers_and_models_round_trip_without_like(tmp_path):
    s4tf.random.seed(1)
    model = layers.Sequential(
        layers.Conv2D(filter_shape=(3, 3, 1, 2), activation=s4tf.relu), layers.BatchNorm(2),
        layers.Dropout(0.25), layers.Flatten(), layers.Dense(8, 3, activation=s4tf.softmax),
    )
    for value in (model, s4tf.models.LeNet(), layers.LSTM(layers.LSTMCell(2, 3)),
                  layers.Embedding(5, 2)):
        loaded = s4tf.load(saved(tmp_path, value))
        assert type(loaded) is type(value)
        for a, b in zip(s4tf.tree_leaves(value), s4tf.tree_leaves(loaded), strict=True):
            np.testing.assert_array_equal(np.asarray(a.numpy() if hasattr(a, "numpy") else a),
                                          np.asarray(b.numpy() if hasattr(b, "numpy") else b))


# --- what load opens ------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    # Opening the FIFO would wait for a writer forever; this writer turns such a
    # hang into a slow failure instead of a stuck suite.
    rescue = subprocess.Popen(["sh", "-c", f"sleep 3; exec 3> '{fifo}'"], start_new_session=True)
    try:
        start = time.monotonic()
        with pytest.raises(s4tf.CheckpointError, match=r"is a FIFO \(named pipe\), not a checkpoint"):
            s4tf.load(fifo)
        assert time.monotonic() - start < 1.0
        with pytest.raises(s4tf.CheckpointError, match="FIFO"):
            s4tf.load_training_state(fifo)
    finally:
        os.killpg(rescue.pid, signal.SIGKILL)
        rescue.wait()


def test_a_directory_or_a_device_is_refused(tmp_path):
    with pytest.raises(s4tf.CheckpointError, match="is a directory, not a checkpoint file"):
        s4tf.load(tmp_path)
    if os.path.exists("/dev/zero"):
        with pytest.raises(s4tf.CheckpointError, match="is a device, not a checkpoint file"):
            s4tf.load("/dev/zero")


# --- deep nesting ---------------------------------------------------------------------

def nested(levels: int) -> dict:
    value = {"kind": "json", "value": 1}
    for _ in range(levels):
        value = {"kind": "list", "items": [value]}
    return value


def test_deep_nesting_is_a_checkpoint_error_not_a_recursion_error(tmp_path):
    path = saved(tmp_path, typed())
    structure = structure_of(path)
    structure["fields"]["blocks"] = nested(MAX_DEPTH + 10)
    rewrite(path, structure)
    with pytest.raises(s4tf.CheckpointError, match=f"nests deeper than {MAX_DEPTH} levels"):
        s4tf.load(path)
    # Too deep even for the JSON parser: written by hand, as json.dumps would refuse.
    levels = 100_000
    rewrite(path, raw_structure='{"kind": "list", "items": [' * levels + "1" + "]}" * levels)
    with pytest.raises(s4tf.CheckpointError, match="nested too deeply to read"):
        s4tf.load(path)


def test_saving_a_value_that_contains_itself_is_a_checkpoint_error(tmp_path):
    loop: list = []
    loop.append(loop)

    class Holder(s4tf.Differentiable):
        items: list

    with pytest.raises(s4tf.CheckpointError, match="contains itself"):
        s4tf.save(Holder(loop), tmp_path / "loop.safetensors")
    assert os.listdir(tmp_path) == []


# --- temporary files of killed saves --------------------------------------------------

KILLED_SAVE = """
import os, signal, sys
import s4tf

class Model(s4tf.Differentiable):
    w: s4tf.Tensor

def killed(*args):
    os.kill(os.getpid(), signal.SIGKILL)  # dies after writing, before the rename

os.replace = killed
model = Model(s4tf.ones([3]))
if sys.argv[2] == "save":
    s4tf.save(model, sys.argv[1])
else:
    s4tf.save_training_state(sys.argv[1], model, epoch=1)
"""


@pytest.mark.parametrize("save", ["save", "save_training_state"])
def test_the_next_save_removes_what_a_killed_save_left(tmp_path, save):
    target = tmp_path / "model.safetensors"
    root = str(Path(s4tf.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    killed = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(target), save], env=env,
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (left,) = os.listdir(tmp_path)
    assert left.startswith(".model.safetensors.s4tf-") and left.endswith(".tmp")
    host = left.split(".s4tf-")[1].split("-")[0]
    other_host = f"{(int(host, 16) + 1) % 2**32:08x}"
    kept = [
        f".model.safetensors.s4tf-{host}-{os.getpid()}-concurrent.tmp",  # a live writer
        f".model.safetensors.s4tf-{other_host}-{killed_pid(left)}-elsewhere.tmp",  # another host
        ".notes.tmp", "model.safetensors.tmp", "other.safetensors",  # not ours
    ]
    for name in kept:
        (tmp_path / name).write_bytes(b"keep")

    model = typed()
    if save == "save":
        s4tf.save(model, target)
        assert isinstance(s4tf.load(target), Typed)
    else:
        s4tf.save_training_state(target, model, epoch=2)
        assert s4tf.load_training_state(target).epoch == 2
    assert sorted(os.listdir(tmp_path)) == sorted([*kept, "model.safetensors"])


def killed_pid(name: str) -> int:
    return int(name.split(".s4tf-")[1].split("-")[1])


def test_a_damaged_random_state_in_a_training_state_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "run.safetensors"
    s4tf.save_training_state(path, typed(), epoch=1)
    arrays, metadata = read_file(path, "s4tf.training_state/1")
    metadata["rng"] = json.dumps({"bit_generator": "MT19937", "state": 3})
    save_file(arrays, path, metadata=metadata)
    with pytest.raises(s4tf.CheckpointError, match="damaged 'rng' entry"):
        s4tf.load_training_state(path)


@pytest.mark.parametrize("epoch", ["-1", "-40", "2.5", "", "true"])
def test_an_epoch_that_is_not_a_count_of_finished_epochs_is_refused(tmp_path, epoch):
    path = tmp_path / "run.safetensors"
    s4tf.save_training_state(path, typed(), epoch=1)
    arrays, metadata = read_file(path, "s4tf.training_state/1")
    metadata["epoch"] = epoch
    save_file(arrays, path, metadata=metadata)
    with pytest.raises(s4tf.CheckpointError) as caught:
        s4tf.load_training_state(path)
    message = str(caught.value)
    assert str(path) in message and f"'epoch' entry {epoch!r}" in message
    assert "non-negative int" in message and "save_training_state" in message
