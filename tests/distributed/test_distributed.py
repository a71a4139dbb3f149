"""s4tf.distributed: errors on one device here, and the 8-device suite in a subprocess."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import s4tf
from s4tf import distributed

jax = pytest.importorskip("jax")
_CASES = pathlib.Path(__file__).with_name("multi_device_cases.py")


def test_the_eight_device_suite_passes_in_its_own_process():
    environment = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
                       PYTHONPATH=os.pathsep.join([str(_CASES.parents[2]),
                                                   os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(_CASES)],
        capture_output=True, text=True, env=environment, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout.splitlines()[-1]


def test_a_strategy_refuses_tensors_of_an_eager_backend_and_says_to_use_xla():
    strategy = distributed.DataParallel()
    with s4tf.backend("naive"):
        model = s4tf.layers.Dense(3, 2)
    with pytest.raises(ValueError, match=r"'naive' backend.*set_backend\('xla'\)"):
        strategy.replicate(model)
    with pytest.raises(ValueError, match="naive"):
        strategy.shard(s4tf.ones([4, 3]))


def test_device_choices_are_checked():
    count = len(jax.devices())
    with pytest.raises(ValueError, match=f"there are {count} XLA devices"):
        distributed.DataParallel(devices=count + 1)
    with pytest.raises(TypeError, match="devices"):
        distributed.DataParallel(devices=True)
    with pytest.raises(ValueError, match="at least one"):
        distributed.DataParallel(devices=[])
    with pytest.raises(ValueError, match="min_size"):
        distributed.FullySharded(min_size=0)
    assert distributed.DataParallel(devices=1).devices == tuple(jax.devices()[:1])


@pytest.mark.parametrize("strategy", [distributed.DataParallel, distributed.FullySharded])
def test_devices_of_another_kind_are_refused_saying_what_is_accepted(strategy):
    for wrong in (2.0, "cpu", object()):
        with pytest.raises(TypeError, match=r"devices=\.\.\.\) takes None \(every device\), a count "
                                            r"\(an int, e.g. devices=2\) or a sequence of jax "
                                            rf"devices.*received {re.escape(repr(wrong))}"):
            strategy(devices=wrong)
    with pytest.raises(ValueError, match=r"\[2\] are not among JAX's devices.*or a count"):
        strategy(devices=[2])
    first = tuple(jax.devices()[:1])
    assert strategy(devices=np.int64(1)).devices == first  # NumPy ints count too
    assert strategy(devices=(d for d in first)).devices == first
    assert strategy(devices=np.array(first)).devices == first


def test_tensor_devices_on_every_backend():
    assert s4tf.ones([2]).devices == ("cpu",)
    with s4tf.backend("xla"):
        pending = s4tf.ones([3]) * 2
        assert pending.devices == (jax.devices()[0],)


def test_initialize_hands_its_arguments_to_jax(monkeypatch):
    seen = {}
    monkeypatch.setattr(jax.distributed, "initialize", lambda **kwargs: seen.update(kwargs))
    distributed.initialize("10.0.0.1:1234", num_processes=2, process_id=1,
                           initialization_timeout=60)
    assert seen == {"coordinator_address": "10.0.0.1:1234", "num_processes": 2,
                    "process_id": 1, "local_device_ids": None, "initialization_timeout": 60}


def test_a_scalar_cannot_be_sharded():
    with s4tf.backend("xla"), pytest.raises(ValueError, match="scalar"):
        distributed.DataParallel().shard(s4tf.Tensor(1.0))


def test_a_training_loop_with_a_strategy_on_the_naive_backend_says_to_use_xla():
    from s4tf.datasets import Batches

    model = s4tf.layers.Dense(3, 2)
    loop = s4tf.TrainingLoop(
        training=Batches.from_arrays(np.zeros((4, 3), np.float32), np.zeros(4, np.int32), 2),
        optimizer=s4tf.optimizers.SGD(model), loss=s4tf.softmax_cross_entropy,
        progress=False, strategy=distributed.DataParallel())
    with pytest.raises(ValueError, match=r"set_backend\('xla'\)"):
        loop.fit(model, epochs=1)
    with pytest.raises(TypeError, match="strategy"):
        s4tf.TrainingLoop(training=[], optimizer=s4tf.optimizers.SGD(model),
                          loss=s4tf.softmax_cross_entropy, strategy="ddp")
