"""s4tf.save / s4tf.load / training states: round trips, mismatch errors, safety."""

from __future__ import annotations

import json
import os
import pickle
import struct

import numpy as np
import pytest

import s4tf
from s4tf.checkpoint import CheckpointError


class Block(s4tf.Differentiable):
    weight: s4tf.Tensor
    bias: s4tf.Tensor
    activation: object = s4tf.no_derivative(default=s4tf.tanh)


class Net(s4tf.Differentiable):
    blocks: list
    gain: float
    table: dict
    stats: s4tf.State
    strides: tuple = s4tf.no_derivative(default=(1, 2))
    momentum: float = s4tf.no_derivative(default=0.9)
    name: str = s4tf.no_derivative(default="net")


def make_net(width: int = 3, seed: int = 0) -> Net:
    rng = np.random.default_rng(seed)
    blocks = [Block(s4tf.Tensor(rng.normal(size=(2, width)).astype(np.float32)),
                    s4tf.Tensor(rng.normal(size=(width,)).astype(np.float32)))
              for _ in range(2)]
    return Net(blocks, 1.5, {"scale": s4tf.Tensor(rng.normal(size=(4,)))},
               s4tf.State(s4tf.Tensor(rng.normal(size=(width,)).astype(np.float32))))


def assert_same(a, b):
    leaves_a, leaves_b = s4tf.tree_leaves(a), s4tf.tree_leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        if isinstance(x, s4tf.Tensor):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x.numpy(), y.numpy())
        else:
            assert x == y


def read_header(path):
    with open(path, "rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        return json.loads(file.read(length))


def test_keys_are_dotted_field_paths(tmp_path):
    path = tmp_path / "net.safetensors"
    s4tf.save(make_net(), path)
    header = read_header(path)
    keys = sorted(k for k in header if k != "__metadata__")
    assert keys == ["blocks.0.bias", "blocks.0.weight", "blocks.1.bias", "blocks.1.weight",
                    "gain", "stats", "table.scale"]
    assert header["table.scale"]["dtype"] == "F64"
    assert header["__metadata__"]["format"] == "s4tf.model/1"
    structure = json.loads(header["__metadata__"]["structure"])
    assert structure["class"].endswith("Net")
    assert structure["fields"]["blocks"]["items"][0]["fields"]["activation"] == {
        "kind": "callable", "name": "s4tf.tanh"}


def test_round_trip_without_like_rebuilds_the_model(tmp_path):
    net = make_net()
    s4tf.save(net, tmp_path / "net.safetensors")
    loaded = s4tf.load(tmp_path / "net.safetensors")
    assert type(loaded) is Net and loaded is not net
    assert_same(loaded, net)
    assert loaded.blocks[0].activation is s4tf.tanh
    assert loaded.strides == (1, 2) and loaded.momentum == 0.9 and loaded.name == "net"
    assert isinstance(loaded.stats, s4tf.State) and loaded.stats is not net.stats
    np.testing.assert_array_equal(loaded.stats.value.numpy(), net.stats.value.numpy())
    assert isinstance(loaded.gain, float) and loaded.gain == 1.5


def test_round_trip_with_like_keeps_like_static_fields(tmp_path):
    net = make_net(seed=1)
    s4tf.save(net, tmp_path / "net.safetensors")
    custom = lambda x: x * 2.0  # not savable by name: like= supplies it
    template = s4tf.replace(make_net(seed=2), name="template")
    template = s4tf.replace(template, blocks=[s4tf.replace(b, activation=custom)
                                              for b in template.blocks])
    loaded = s4tf.load(tmp_path / "net.safetensors", like=template)
    assert_same(loaded, net)
    assert loaded.name == "template" and loaded.blocks[1].activation is custom


def test_the_write_is_atomic_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "net.safetensors"
    s4tf.save(make_net(seed=0), path)
    before = path.read_bytes()

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        s4tf.save(make_net(seed=5), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["net.safetensors"]


def test_mismatch_lists_missing_unexpected_and_misshaped_keys(tmp_path):
    s4tf.save(make_net(width=3), tmp_path / "net.safetensors")
    other = make_net(width=4)
    other = s4tf.replace(other, table={"offset": s4tf.zeros([4], dtype=s4tf.float64)})
    with pytest.raises(ValueError) as info:
        s4tf.load(tmp_path / "net.safetensors", like=other)
    message = str(info.value)
    assert "missing keys (in the model, not in the file): table.offset" in message
    assert "unexpected keys (in the file, not in the model): table.scale" in message
    assert "blocks.0.weight: file has float32 (2, 3), model expects float32 (2, 4)" in message
    assert "stats: file has float32 (3,), model expects float32 (4,)" in message


def test_dtype_mismatch_is_reported(tmp_path):
    net = make_net()
    s4tf.save(net, tmp_path / "net.safetensors")
    like = s4tf.replace(net, table={"scale": s4tf.zeros([4], dtype=s4tf.float32)})
    with pytest.raises(CheckpointError, match=r"table.scale: file has float64 \(4,\), model "
                                              r"expects float32 \(4,\)"):
        s4tf.load(tmp_path / "net.safetensors", like=like)


def test_missing_file_and_wrong_format(tmp_path):
    with pytest.raises(FileNotFoundError, match="No checkpoint"):
        s4tf.load(tmp_path / "absent.safetensors")
    s4tf.save_training_state(tmp_path / "state.safetensors", make_net(), epoch=1)
    with pytest.raises(CheckpointError, match="load_training_state"):
        s4tf.load(tmp_path / "state.safetensors")


class _Exploit:
    def __reduce__(self):
        return (os.system, ("echo pwned > pwned.txt",))


def test_a_pickle_payload_is_refused_without_running_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "model.safetensors"
    path.write_bytes(pickle.dumps(_Exploit()))
    with pytest.raises(CheckpointError, match="not a safetensors file"):
        s4tf.load(path)
    assert not (tmp_path / "pwned.txt").exists()


def _rewrite_structure(path, structure):
    from safetensors.numpy import save_file

    from s4tf.checkpoint.files import read_file

    arrays, metadata = read_file(path, "s4tf.model/1")
    metadata["structure"] = json.dumps(structure)
    save_file(arrays, path, metadata=metadata)


def test_a_class_path_naming_os_system_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "model.safetensors"
    s4tf.save(make_net(), path)
    _rewrite_structure(path, {"kind": "node", "class": "os.system", "fields": {}})
    with pytest.raises(CheckpointError, match="'os.system', which is not a subclass"):
        s4tf.load(path)
    s4tf.save(make_net(), path)
    structure = json.loads(read_header(path)["__metadata__"]["structure"])
    structure["fields"]["blocks"]["items"][0]["fields"]["activation"] = {
        "kind": "callable", "name": "os.system"}
    _rewrite_structure(path, structure)
    with pytest.raises(CheckpointError, match="names the function 'os.system'"):
        s4tf.load(path)
    assert os.listdir(tmp_path) == ["model.safetensors"]


def test_an_unknown_class_asks_for_like(tmp_path):
    class Local(s4tf.Differentiable):
        w: s4tf.Tensor

    path = tmp_path / "local.safetensors"
    s4tf.save(Local(s4tf.ones([2])), path)
    structure = json.loads(read_header(path)["__metadata__"]["structure"])
    structure["class"] = "somewhere.NotDefinedAnywhere"
    _rewrite_structure(path, structure)
    with pytest.raises(CheckpointError, match="pass like=model"):
        s4tf.load(path)
    assert s4tf.load(path, like=Local(s4tf.zeros([2]))).w.tolist() == [1.0, 1.0]


class _FakeOptimizer:
    """Holds state like an s4tf optimizer: a step count and per-parameter moments."""

    def __init__(self, model):
        self.step = 0
        self.learning_rate = 0.1
        self.velocity = s4tf.tree_map(lambda t: t * 0.0, model, differentiable=True)

    def state_dict(self):
        return {"step": self.step, "learning_rate": self.learning_rate,
                "velocity": self.velocity}

    def load_state_dict(self, state):
        self.step = state["step"]
        self.learning_rate = state["learning_rate"]
        self.velocity = state["velocity"]


def test_training_state_restores_model_optimizer_epoch_rng_and_extra(tmp_path):
    net = make_net()
    opt = _FakeOptimizer(net)
    opt.step = 7
    opt.velocity = s4tf.tree_map(lambda t: t + 1.0, opt.velocity)
    s4tf.random.seed(3)
    s4tf.random.normal([5])
    path = tmp_path / "run.safetensors"
    s4tf.save_training_state(path, net, opt, epoch=4, extra={"best": 0.5})
    expected_draw = s4tf.random.normal([3]).numpy()

    s4tf.random.seed(99)
    fresh = _FakeOptimizer(net)
    model, epoch, extra = s4tf.load_training_state(path, like=make_net(seed=9), optimizer=fresh)
    assert_same(model, net)
    assert (epoch, extra) == (4, {"best": 0.5})
    assert fresh.step == 7 and fresh.learning_rate == 0.1
    assert_same(fresh.velocity, opt.velocity)
    np.testing.assert_array_equal(s4tf.random.normal([3]).numpy(), expected_draw)


def test_training_state_rejects_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="extra must be JSON"):
        s4tf.save_training_state(tmp_path / "s", make_net(), extra={"t": s4tf.ones([1])})
    with pytest.raises(ValueError, match="epoch must be a non-negative int"):
        s4tf.save_training_state(tmp_path / "s", make_net(), epoch=-1)
    s4tf.save_training_state(tmp_path / "s", make_net())
    with pytest.raises(CheckpointError, match="holds no optimizer state"):
        s4tf.load_training_state(tmp_path / "s", optimizer=_FakeOptimizer(make_net()))
