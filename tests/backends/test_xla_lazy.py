"""The eager illusion of the lazy backend: shapes, printing, control flow, switching."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import s4tf

pytest.importorskip("jax")

from s4tf.backends import base  # noqa: E402
from s4tf.backends.xla import graph  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_metrics():
    s4tf.barrier()
    s4tf.xla.reset_metrics()
    yield


def test_shape_and_dtype_without_execution():
    with s4tf.backend("xla"):
        x = s4tf.ones([4, 3])
        y = (x @ x.T).sum(axis=0) * 2.0
    assert y.shape == (4,) and y.dtype == s4tf.float32 and y.backend == "xla"
    assert y._data.is_pending
    m = s4tf.xla.metrics()
    assert m["executions"] == 0 and m["compiles"] == 0 and m["traced_ops"] >= 3


def test_observation_runs_pending_graph_once_and_matches_naive():
    def compute():
        x = s4tf.Tensor(np.linspace(-1, 1, 12).reshape(3, 4))
        return s4tf.softmax(x @ x.T, axis=-1), x.max()

    naive = compute()
    with s4tf.backend("xla"):
        lazy = compute()
    np.testing.assert_allclose(lazy[0].numpy(), naive[0].numpy(), rtol=1e-6)
    # One execution computed both pending results; observing the second runs nothing.
    assert s4tf.xla.metrics()["executions"] == 1
    assert float(lazy[1]) == float(naive[1])
    assert s4tf.xla.metrics()["executions"] == 1


def test_host_control_flow_and_printing():
    with s4tf.backend("xla"):
        x = s4tf.Tensor([3.0, -1.0, 2.0])
        steps = 0
        while bool((x * x).sum() > 1.0):
            x = x * 0.5
            steps += 1
        text = repr(x)
        index = int(x.argmax())
    assert steps == 2
    assert "backend=xla" in text and "0.75" in text
    assert index == 0
    assert x.tolist() == [0.75, -0.25, 0.5]


def test_barrier_materialises_and_is_noop_when_nothing_pending():
    with s4tf.backend("xla"):
        y = s4tf.ones([2]) + 1.0
    s4tf.barrier()
    assert not y._data.is_pending
    assert graph.pending_count() == 0
    executions = s4tf.xla.metrics()["executions"]
    s4tf.barrier()
    assert s4tf.xla.metrics()["executions"] == executions


def test_intermediates_are_not_outputs():
    with s4tf.backend("xla"):
        x = s4tf.ones([5])
        a = x * 2.0
        b = a + 1.0
        c = b * b
        del a, b
        keep = c
    assert graph.pending_count() == 3
    s4tf.barrier()
    assert graph.pending_count() == 0
    assert keep.tolist() == [9.0] * 5


def test_identical_subgraphs_are_computed_once():
    import s4tf.backends.xla.compiler as compiler

    with s4tf.backend("xla"):
        x = s4tf.ones([3])
        y1 = s4tf.exp(x) * 2.0
        y2 = s4tf.exp(x) * 2.0
    s4tf.barrier()
    key = next(reversed(compiler._cache))
    ops = [entry[0] for entry in key[0] if entry[0] != "P"]
    assert ops.count("exp") == 1
    assert y1.tolist() == y2.tolist()


def test_mixing_backends_raises_type_error():
    with s4tf.backend("xla"):
        lazy = s4tf.ones([2])
    with pytest.raises(TypeError, match="different backends.*'xla'.*'naive'"):
        lazy + s4tf.ones([2])
    with pytest.raises(TypeError, match="different backends"):
        s4tf.where(s4tf.ones([2]) > 0, lazy, lazy)


def test_to_backend_moves_values_both_ways():
    class Pair(s4tf.Differentiable):
        w: s4tf.Tensor
        b: s4tf.Tensor

    pair = Pair(w=s4tf.Tensor([[1.0, 2.0]]), b=s4tf.Tensor([0.5]))
    lazy = s4tf.to_backend(pair, "xla")
    assert lazy.w.backend == "xla" and lazy.b.backend == "xla"
    lazy = s4tf.replace(lazy, w=lazy.w * 3.0)
    back = lazy.to("naive")
    assert back.w.backend == "naive"
    assert back.w.tolist() == [[3.0, 6.0]] and back.b.tolist() == [0.5]
    assert s4tf.to_backend(back, "cupy").w.backend == "cupy"


def test_numpy_is_read_only_copy_that_survives_donation():
    with s4tf.backend("xla"):
        w = s4tf.ones([64])
    host = w.numpy()
    assert not host.flags.writeable
    w = w * 2.0  # the old buffer is donated at the barrier
    s4tf.barrier()
    assert s4tf.xla.metrics()["donated_buffers"] == 1
    assert host.tolist() == [1.0] * 64 and w.tolist() == [2.0] * 64


def test_kept_tensor_is_not_donated():
    with s4tf.backend("xla"):
        w = s4tf.ones([64])
    old = w
    w = w * 2.0
    s4tf.barrier()
    assert s4tf.xla.metrics()["donated_buffers"] == 0
    assert old.tolist() == [1.0] * 64


def test_trace_size_limit_materialises(monkeypatch):
    monkeypatch.setattr(graph, "MAX_PENDING", 50)
    with s4tf.backend("xla"):
        x = s4tf.ones([2])
        for _ in range(120):
            x = x + 1.0
    assert s4tf.xla.metrics()["executions"] >= 2
    assert x.tolist() == [121.0, 121.0]


def test_debug_prints_compile_and_hit(monkeypatch, capsys):
    monkeypatch.setenv("S4TF_DEBUG", "1")
    for _ in range(2):
        with s4tf.backend("xla"):
            (s4tf.ones([7]) * 3.0).numpy()
    err = capsys.readouterr().err
    assert "compile trace" in err and "cache hit trace" in err
    compiled = err.split("compile trace ")[1].split()[0]
    assert f"cache hit trace {compiled}" in err


def test_missing_jax_names_the_extra(monkeypatch):
    monkeypatch.delitem(base._loaded, "xla")
    # The package itself (s4tf.xla) imports no JAX and stays; its submodules are
    # imported afresh, and the package's attributes for them are put back afterwards.
    package = sys.modules["s4tf.backends.xla"]
    for name in [m for m in sys.modules if m == "jax" or m.startswith("s4tf.backends.xla.")]:
        monkeypatch.delitem(sys.modules, name)
        if name != "jax":
            attribute = name.rpartition(".")[2]
            monkeypatch.setattr(package, attribute, getattr(package, attribute))
    monkeypatch.setitem(sys.modules, "jax", None)  # `import jax` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 's4tf\[xla\]'"):
        s4tf.set_backend("xla")


def test_float64_is_kept():
    with s4tf.backend("xla"):
        x = s4tf.Tensor(np.array([1.0, 2.0]), dtype=s4tf.float64)
        y = x / 3.0
    assert y.dtype == s4tf.float64
    assert y.numpy()[0] == 1.0 / 3.0


def test_s4tf_xla_is_the_backend_package_and_imports_no_jax():
    # s4tf.xla lives in backends/xla/ and must not pull JAX into `import s4tf`.
    code = (
        "import sys, s4tf\n"
        "assert 'jax' not in sys.modules, 'import s4tf imported jax'\n"
        "import s4tf.xla\n"
        "from s4tf import xla\n"
        "from s4tf.xla import RecompilationWarning, ZERO_METRICS, metrics, reset_metrics\n"
        "assert xla is s4tf.xla is sys.modules['s4tf.backends.xla']\n"
        "assert metrics() == ZERO_METRICS and 'jax' not in sys.modules\n"
        "import gc\n"
        "assert gc.get_freeze_count() == 0\n"
        "s4tf.set_backend('xla')\n"
        "import jax\n"
        "assert jax.config.jax_enable_x64\n"
        # JAX's objects leave the cycle collector's passes once the backend loads.
        "assert gc.get_freeze_count() > 50_000, gc.get_freeze_count()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_each_python_scalar_is_a_parameter_of_its_own_sharing_a_buffer_by_value():
    # One parameter per scalar keeps XLA's fused kernels alike (compiled once per
    # kind); equal values share one device buffer, so a step transfers nothing new.
    with s4tf.backend("xla"):
        x = s4tf.ones([4])
        y = x * 0.5 + x * 0.5 - x * 0.25
    trace = graph.collect()
    host = [a for a in trace.arguments if a is not x._data.buffer]
    assert len(host) == 3 and host[0] is host[1] and host[0] is not host[2]
    assert [float(a) for a in host] == [0.5, 0.5, 0.25]
    graph.execute(trace)
    assert y.tolist() == [0.75] * 4


_EXIT_WHILE_RUNNING = """
import numpy as np, s4tf
from s4tf.backends.xla import graph
record = graph.record
graph.record = lambda *args: record(*args)  # module teardown order that met the crash
rng = np.random.default_rng(0)
with s4tf.backend("xla"):
    model = s4tf.models.ResNet(depth=56, classes=10, stem="cifar")
    x = s4tf.Tensor(rng.uniform(size=(16, 32, 32, 3)).astype(np.float32))
    y = s4tf.Tensor(rng.integers(0, 10, size=16))
    opt = s4tf.optimizers.SGD(model, learning_rate=0.01, momentum=0.9)
    with s4tf.training():
        for _ in range(2):
            loss, grads = s4tf.value_with_gradient(
                model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=y))
            model = opt.update(model, grads)
            del grads
            s4tf.barrier()
# the script ends while the last step still runs
"""


def test_a_script_may_end_while_its_last_step_still_runs():
    # Without waiting for launched steps at exit, the interpreter's teardown freed
    # buffers under the running program: a segmentation fault after the last line
    # (every run of this script, here).
    done = subprocess.run([sys.executable, "-c", _EXIT_WHILE_RUNNING], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


def test_a_cast_or_reshape_that_changes_nothing_records_no_node():
    with s4tf.backend("xla"):
        x = s4tf.ones([2, 3]) * 2.0
        before = s4tf.xla.metrics()["traced_ops"]
        same = [x.astype(s4tf.float32), x.reshape([2, 3]), s4tf.broadcast_to(x, [2, 3])]
        assert s4tf.xla.metrics()["traced_ops"] == before
        changed = x.astype(s4tf.float64)
        assert s4tf.xla.metrics()["traced_ops"] == before + 1
    assert all(t.tolist() == [[2.0] * 3] * 2 for t in same)
    assert changed.dtype == s4tf.float64 and changed.tolist() == [[2.0] * 3] * 2


def test_parameter_keys_are_shared_and_tell_apart_what_replays_differently():
    from s4tf.backends.xla.recording import param_key

    key, params = param_key({"axis": (1, 2), "keepdims": True})
    again, shared = param_key({"axis": (1, 2), "keepdims": True})
    assert again is key and shared is params  # one object per distinct value
    # A NumPy float64 promotes differently from a Python float under JAX; a list
    # is not a tuple: each keys apart.
    assert param_key({"value": np.float64(0.5)})[0] != param_key({"value": 0.5})[0]
    assert param_key({"axis": [1, 2]})[0] != param_key({"axis": (1, 2)})[0]


def test_numpy_scalar_parameters_of_each_dtype_record_and_compile_apart(monkeypatch):
    # JAX multiplies a float32 array by a NumPy float64 into float64, by a NumPy
    # float32 or a Python float into float32. Today's kernels cast their scalar
    # parameters, but the kernel table is open: keyed alike, the later calls would
    # take the first's dtype and its compiled program. Parameters key two ways
    # (plain, or frozen when one of them is a list, a slice...): both are tried.
    import jax.numpy as jnp

    from s4tf.backends.xla import compiler
    from s4tf.backends.xla.backend import BACKEND
    from s4tf.backends.xla.kernels import JAX_KERNELS
    from s4tf.backends.xla.recording import LazyKernels, param_key

    assert param_key({"factor": np.float32(0.5)})[0] != param_key({"factor": np.float64(0.5)})[0]
    assert param_key({"factor": np.float64(0.5), "axes": [0]})[0] != param_key(
        {"factor": 0.5, "axes": [0]})[0]
    monkeypatch.setattr(JAX_KERNELS, "scaled", lambda x, *, factor, axes: x * factor,
                        raising=False)
    compiler.clear_cache()
    kernels = LazyKernels()
    x = BACKEND.asarray(np.ones(2, np.float32), np.dtype("float32"))
    for axes in [(0,), [0]]:
        for factor in [np.float32(0.5), np.float64(0.5), 0.5, np.float32(0.5)]:
            node = kernels.scaled(x, factor=factor, axes=axes)
            graph.barrier()
            want = (jnp.ones(2, jnp.float32) * factor).dtype
            assert node.dtype == want == np.asarray(node.buffer).dtype, (factor, axes, node.dtype)
            assert np.asarray(node.buffer).tolist() == [0.5, 0.5]
    # The last float32 call of each kind of key hits the first.
    assert s4tf.xla.metrics()["compiles"] == 6


def test_a_list_and_a_tuple_in_an_index_key_never_share_a_program_that_differs():
    # What each means, under NumPy and JAX alike: inside the key, a list and a tuple
    # of ints are the same advanced index, so (:, [0, 1]) and (:, (0, 1)) agree. As
    # the key itself they differ: (1:, 0) is basic indexing, and JAX refuses the
    # list [1:, 0] (a non-tuple sequence), which must not borrow the tuple's program.
    from s4tf.backends.xla.backend import BACKEND
    from s4tf.backends.xla.recording import LazyKernels

    kernels = LazyKernels()
    data = np.arange(12.0).reshape(3, 4)
    x = BACKEND.asarray(data, np.dtype("float64"))
    for key in [(slice(None), [0, 1]), (slice(None), (0, 1)), (slice(1, None), 0)]:
        node = kernels.getitem(x, key=key)
        graph.barrier()
        np.testing.assert_array_equal(np.asarray(node.buffer), data[key])
    with pytest.raises(TypeError, match="non-tuple sequence"):
        kernels.getitem(x, key=[slice(1, None), 0])
