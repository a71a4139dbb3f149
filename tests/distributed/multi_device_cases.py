"""Data-parallel and fully sharded training on 8 simulated CPU devices.

Not collected on its own (the file name does not start with ``test_``):
``test_distributed.py`` runs it in a subprocess that sets
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` before JAX starts, since
the device count is fixed when JAX initialises.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import s4tf
from s4tf import distributed, layers, models, optimizers

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.skipif(
    len(jax.devices()) < 8,
    reason="needs 8 XLA devices: run through tests/distributed/test_distributed.py")


@pytest.fixture(autouse=True)
def xla_backend():
    with s4tf.backend("xla"):
        yield


class MLP(s4tf.Layer):
    hidden: layers.Dense
    out: layers.Dense

    def __init__(self):
        self.hidden = layers.Dense(12, 32, activation=s4tf.relu)
        self.out = layers.Dense(32, 5)

    def __call__(self, x):
        return self.out(self.hidden(x.reshape(x.shape[0], -1)))


class NormalizedMLP(s4tf.Layer):
    hidden: layers.Dense
    norm: layers.BatchNorm
    out: layers.Dense

    def __init__(self):
        self.hidden = layers.Dense(12, 16)
        self.norm = layers.BatchNorm(16)
        self.out = layers.Dense(16, 5)

    def __call__(self, x):
        return self.out(s4tf.relu(self.norm(self.hidden(x))))


def batches(shape, classes, steps, batch=32, seed=0):
    rng = np.random.default_rng(seed)
    return [(s4tf.Tensor(rng.normal(size=(batch, *shape)).astype(np.float32)),
             s4tf.Tensor(rng.integers(0, classes, size=batch).astype(np.int32)))
            for _ in range(steps)]


def train(make_model, optimizer, data, strategy=None):
    """Train from seed 0; return the final model, the optimizer and the last step's metrics."""
    s4tf.random.seed(0)
    model = make_model()
    if strategy is not None:
        model = strategy.replicate(model)
    opt = optimizer(model)
    metrics = []
    with s4tf.training():
        for x, y in data:
            if strategy is not None:
                x, y = strategy.shard((x, y))
            s4tf.xla.reset_metrics()
            loss, grads = s4tf.value_with_gradient(
                model, of=lambda m, x=x, y=y: s4tf.softmax_cross_entropy(logits=m(x), labels=y))
            model = opt.update(model, grads)
            del grads
            s4tf.barrier()
            metrics.append(s4tf.xla.metrics())
    return model, opt, metrics


def host_leaves(model):
    leaves, _ = s4tf.tree_flatten(model)
    return [leaf.numpy() for leaf in leaves if isinstance(leaf, s4tf.Tensor)]


def assert_same_parameters(a, b, tolerance=1e-5):
    for x, y in zip(host_leaves(a), host_leaves(b), strict=True):
        np.testing.assert_allclose(x, y, rtol=tolerance, atol=tolerance)


OPTIMIZERS = {
    "sgd_momentum": lambda m: optimizers.SGD(m, learning_rate=0.05, momentum=0.9),
    "adam": lambda m: optimizers.Adam(m, learning_rate=0.01),
}
MODELS = {
    "mlp": (MLP, (12,), 5),
    "lenet": (lambda: models.LeNet(image_size=16, channels=1, classes=10), (16, 16, 1), 10),
}


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("model_name", sorted(MODELS))
def test_data_parallel_training_equals_one_device(model_name, optimizer):
    make, shape, classes = MODELS[model_name]
    data = batches(shape, classes, steps=4)
    single, _, _ = train(make, OPTIMIZERS[optimizer], data)
    strategy = distributed.DataParallel()
    parallel, opt, metrics = train(make, OPTIMIZERS[optimizer], data, strategy)
    assert_same_parameters(single, parallel)
    for leaf in s4tf.tree_flatten(parallel)[0]:
        assert leaf.devices == strategy.devices            # still replicated after updates
    # After the warm-up (the first step makes the optimizer's slots, the second sees them
    # for the first time, as on one device) every step is one cached program over 8
    # devices with an all-reduce: the update joined the step's graph, nothing went back
    # to the host.
    for step in metrics[2:]:
        assert step["executions"] == 1 and step["cache_hits"] == 1 and step["compiles"] == 0
        assert step["devices"] == 8 and "all-reduce" in step["collectives"]
        assert step["donated_buffers"] > 0


def test_a_sharded_batch_is_split_across_all_eight_devices():
    strategy = distributed.DataParallel()
    x = strategy.shard(s4tf.ones([16, 3]))
    assert len(strategy.devices) == 8 and x.devices == strategy.devices
    shards = x._data.buffer.addressable_shards
    assert sorted(s.device.id for s in shards) == list(range(8))
    assert {s.data.shape for s in shards} == {(2, 3)}
    np.testing.assert_array_equal(x.numpy(), np.ones((16, 3)))


def test_batch_norm_statistics_are_global_across_devices():
    data = batches((12,), 5, steps=3)
    optimizer = OPTIMIZERS["sgd_momentum"]
    single, _, _ = train(NormalizedMLP, optimizer, data)
    parallel, _, _ = train(NormalizedMLP, optimizer, data, distributed.DataParallel())
    # Per-device statistics (4 examples each) would differ from the whole batch's: the
    # running mean and variance match one device only when the reduction spans devices.
    np.testing.assert_allclose(parallel.norm.running_mean.value.numpy(),
                               single.norm.running_mean.value.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(parallel.norm.running_variance.value.numpy(),
                               single.norm.running_variance.value.numpy(), rtol=1e-5, atol=1e-6)
    assert_same_parameters(single, parallel)


class Wide(s4tf.Layer):
    first: layers.Dense
    second: layers.Dense

    def __init__(self):
        self.first = layers.Dense(64, 256, activation=s4tf.relu)
        self.second = layers.Dense(256, 64)

    def __call__(self, x):
        return self.second(self.first(x))


def per_device_bytes(model, opt, device):
    arrays = [leaf._data.buffer for leaf in s4tf.tree_flatten(model)[0]]
    arrays += [slot._data.buffer for slots in opt._state for slot in slots.values()]
    return sum(shard.data.nbytes for array in arrays for shard in array.addressable_shards
               if shard.device == device)


def test_fully_sharded_parameters_and_adam_slots_shrink_as_one_over_devices():
    data = batches((64,), 64, steps=3, batch=16)
    adam = OPTIMIZERS["adam"]
    reference, _, _ = train(Wide, adam, data)
    large = 2 * 64 * 256 * 4     # the two weight matrices, float32
    small = (256 + 64) * 4       # biases stay replicated (below min_size)
    for count in (1, 2, 4, 8):
        strategy = distributed.FullySharded(devices=count, min_size=1024)
        model, opt, metrics = train(Wide, adam, data, strategy)
        assert_same_parameters(reference, model)
        # Parameters, first and second moments: three copies of each tensor's layout, the
        # large ones split in `count` and the small ones whole on every device.
        for device in strategy.devices:
            assert per_device_bytes(model, opt, device) == 3 * (large // count + small)
        if count > 1:
            assert metrics[-1]["collectives"] and metrics[-1]["devices"] == count


def shard_shape(strategy, shape):
    """The shape of device 0's piece of a tensor of ``shape`` laid out by ``strategy``."""
    placed = strategy.replicate(s4tf.zeros(list(shape)))
    return placed._data.buffer.addressable_shards[0].data.shape


def test_fully_sharded_splits_the_largest_axis_that_divides_by_the_device_count():
    strategy = distributed.FullySharded(min_size=1)
    split = lambda shape, axis: tuple(n // 8 if a == axis else n for a, n in enumerate(shape))
    assert shard_shape(strategy, (24, 16)) == split((24, 16), 0)
    assert shard_shape(strategy, (16, 24)) == split((16, 24), 1)
    assert shard_shape(strategy, (12, 16, 40)) == split((12, 16, 40), 2)
    assert shard_shape(strategy, (12, 8, 6)) == split((12, 8, 6), 1)  # 12 is larger, 8 divides
    assert shard_shape(strategy, (12, 6)) == (12, 6)  # no axis divides: whole on every device


def test_fully_sharded_min_size_is_the_smallest_size_that_is_split():
    # 32 values: split when min_size is 32, whole on every device when it is 33.
    assert shard_shape(distributed.FullySharded(min_size=32), (8, 4)) == (1, 4)
    assert shard_shape(distributed.FullySharded(min_size=33), (8, 4)) == (8, 4)
    assert shard_shape(distributed.FullySharded(min_size=31), (8, 4)) == (1, 4)


def test_a_batch_that_does_not_divide_names_both_numbers():
    strategy = distributed.DataParallel()
    with pytest.raises(ValueError, match=r"batch of 10 examples does not divide across 8 devices"):
        strategy.shard(s4tf.ones([10, 2]))


def test_tensors_on_different_meshes_are_refused_with_a_clear_error():
    four, eight = distributed.DataParallel(devices=4), distributed.DataParallel()
    weight = four.replicate(s4tf.ones([3, 2]))
    x = eight.shard(s4tf.ones([8, 3]))
    y = x @ weight
    with pytest.raises(ValueError, match="different device meshes"):
        s4tf.barrier()
    del y


def test_saving_a_replicated_model_writes_one_copy_and_loading_can_replicate(tmp_path):
    strategy = distributed.DataParallel()
    s4tf.random.seed(0)
    plain = MLP()
    replicated = strategy.replicate(plain)
    s4tf.save(plain, str(tmp_path / "plain.safetensors"))
    s4tf.save(replicated, str(tmp_path / "replicated.safetensors"))
    assert (os.path.getsize(tmp_path / "replicated.safetensors")
            == os.path.getsize(tmp_path / "plain.safetensors"))
    loaded = s4tf.load(str(tmp_path / "replicated.safetensors"), strategy=strategy)
    assert loaded.hidden.weight.devices == strategy.devices
    assert_same_parameters(plain, loaded, tolerance=0)


def test_training_loop_with_a_strategy_equals_one_device_and_drops_the_short_batch(capsys):
    from s4tf.datasets import Batches

    rng = np.random.default_rng(1)
    images = rng.normal(size=(70, 12)).astype(np.float32)   # 4 batches of 16 and one of 6
    labels = rng.integers(0, 5, size=70).astype(np.int32)

    def fit(strategy):
        s4tf.random.seed(0)
        model = MLP()
        loop = s4tf.TrainingLoop(
            training=Batches.from_arrays(images, labels, batch_size=16, shuffle=True, seed=0),
            validation=Batches.from_arrays(images[:20], labels[:20], batch_size=16),
            optimizer=optimizers.Adam(model, learning_rate=0.01),
            loss=s4tf.softmax_cross_entropy, progress=False, strategy=strategy)
        return loop.fit(model, epochs=2), loop

    single, single_loop = fit(None)
    strategy = distributed.DataParallel()
    parallel, loop = fit(strategy)
    assert parallel.hidden.weight.devices == strategy.devices
    assert_same_parameters(single, parallel)
    for mine, theirs in zip(loop.history, single_loop.history, strict=True):
        assert mine.keys() == theirs.keys()
        for key in mine:   # whole-batch metrics: the same numbers as on one device
            assert abs(mine[key] - theirs[key]) < 1e-5, key
