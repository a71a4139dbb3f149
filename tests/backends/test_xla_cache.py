"""The trace cache: training steps compile during warm-up only; what recompiles and warns."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import s4tf

pytest.importorskip("jax")

ROOT = pathlib.Path(__file__).resolve().parents[2]


class MLP(s4tf.Differentiable):
    w1: s4tf.Tensor
    b1: s4tf.Tensor
    w2: s4tf.Tensor
    b2: s4tf.Tensor

    def __call__(self, x):
        h = s4tf.tanh(x @ self.w1 + self.b1)
        return h @ self.w2 + self.b2


def _model():
    rng = np.random.default_rng(1)
    return MLP(
        w1=s4tf.Tensor(rng.normal(size=(8, 16)) * 0.3, dtype=s4tf.float32),
        b1=s4tf.zeros([16]),
        w2=s4tf.Tensor(rng.normal(size=(16, 4)) * 0.3, dtype=s4tf.float32),
        b2=s4tf.zeros([4]),
    )


def _batch(n, seed):
    rng = np.random.default_rng(seed)
    x = s4tf.Tensor(rng.normal(size=(n, 8)), dtype=s4tf.float32)
    labels = rng.integers(0, 4, size=n)
    return x, s4tf.one_hot(labels, 4)


def _loss(model, x, y):
    return -(s4tf.log_softmax(model(x)) * y).sum(axis=1).mean()


def _train(steps, lr_of=lambda i: 0.1, batch_of=lambda i: 32):
    model = _model()
    losses = []
    for i in range(steps):
        x, y = _batch(batch_of(i), i)
        loss, grads = s4tf.value_with_gradient(model, of=lambda m, x=x, y=y: _loss(m, x, y))
        model = model.moved(along=grads * -lr_of(i))
        s4tf.barrier()
        losses.append(loss)
    return model, [float(v) for v in losses]


@pytest.fixture(autouse=True)
def fresh_metrics():
    s4tf.barrier()
    s4tf.xla.reset_metrics()
    import s4tf.backends.xla.compiler as compiler

    compiler.clear_cache()


def test_training_steps_compile_during_warmup_only_and_match_naive():
    naive_model, naive_losses = _train(12)
    with s4tf.backend("xla"):
        lazy_model, lazy_losses = _train(12)
    m = s4tf.xla.metrics()
    assert m["compiles"] <= 3, m
    assert m["cache_hits"] >= 12 - m["compiles"]
    np.testing.assert_allclose(lazy_losses, naive_losses, rtol=1e-5)
    np.testing.assert_allclose(lazy_model.w1.numpy(), naive_model.w1.numpy(), rtol=1e-5, atol=1e-6)
    # Each step's old parameters are donated (nothing else holds them).
    assert m["donated_buffers"] >= 4 * 8


def test_changing_learning_rate_does_not_recompile():
    with s4tf.backend("xla"):
        _train(4)
        warm = s4tf.xla.metrics()["compiles"]
        s4tf.xla.reset_metrics()
        _, losses = _train(6, lr_of=lambda i: 0.1 / (1 + i))
    assert s4tf.xla.metrics()["compiles"] == 0 < warm
    naive = _train(6, lr_of=lambda i: 0.1 / (1 + i))[1]
    np.testing.assert_allclose(losses, naive, rtol=1e-5)


def test_changed_batch_shape_compiles_once_more_without_warning():
    with s4tf.backend("xla"):
        _train(4)
        warm = s4tf.xla.metrics()["compiles"]
        with warnings.catch_warnings():
            warnings.simplefilter("error", s4tf.xla.RecompilationWarning)
            _train(4, batch_of=lambda i: 32 if i < 3 else 20)  # a smaller last batch
    assert s4tf.xla.metrics()["compiles"] == warm + 1


def test_shapes_that_keep_changing_warn_and_name_the_change(monkeypatch):
    import s4tf.backends.xla.counters as xla_metrics

    monkeypatch.setattr(xla_metrics, "WARN_AFTER", 2)  # fewer compiles: a faster test
    with s4tf.backend("xla"):
        with pytest.warns(s4tf.xla.RecompilationWarning, match=r"input shapes changed \(.*\(\d+, 8\) -> \(\d+, 8\)"):
            _train(4, batch_of=lambda i: 8 + i)


def _same_graph(x):
    """One small graph whatever the dtype: the cache key must tell dtypes apart."""
    y = x * x + x
    s4tf.barrier()
    return y


@pytest.mark.parametrize("dtypes", [
    ("float32", "float64"),
    ("float32", "int32"),
    ("float64", "int32"),
])
def test_a_new_dtype_compiles_and_the_same_dtype_hits(dtypes):
    first, second = (getattr(s4tf, d) for d in dtypes)
    values = np.arange(6.0).reshape(2, 3)
    with s4tf.backend("xla"):
        a = _same_graph(s4tf.Tensor(values, dtype=first))
        assert s4tf.xla.metrics()["compiles"] == 1
        b = _same_graph(s4tf.Tensor(values, dtype=second))
        m = s4tf.xla.metrics()
        # JAX would specialise a wrongly shared entry underneath and still give the
        # right numbers: only the counts show whether the key held the dtype.
        assert (m["compiles"], m["cache_hits"]) == (2, 0), m
        assert (a.dtype, b.dtype) == (first, second)
        _same_graph(s4tf.Tensor(values + 1, dtype=first))
        _same_graph(s4tf.Tensor(values + 2, dtype=second))
        m = s4tf.xla.metrics()
        assert (m["compiles"], m["cache_hits"]) == (2, 2), m
    np.testing.assert_array_equal(a.numpy(), values * values + values)
    np.testing.assert_array_equal(b.numpy(), values * values + values)


def test_a_new_shape_compiles_and_the_same_shape_hits():
    with s4tf.backend("xla"):
        _same_graph(s4tf.ones([2, 3]))
        _same_graph(s4tf.ones([3, 2]))
        _same_graph(s4tf.ones([6]))
        m = s4tf.xla.metrics()
        assert (m["compiles"], m["cache_hits"]) == (3, 0), m
        _same_graph(s4tf.zeros([3, 2]))
        _same_graph(s4tf.zeros([2, 3]))
        m = s4tf.xla.metrics()
        assert (m["compiles"], m["cache_hits"]) == (3, 2), m
# One graph on one device, replicated over two and split over two (two CPU devices).
_LAYOUTS_SCRIPT = """
import json
import numpy as np
import s4tf
from s4tf import distributed
s4tf.set_backend("xla")
strategy = distributed.DataParallel()
values = np.arange(8.0).reshape(4, 2)
x = s4tf.Tensor(values, dtype=s4tf.float32)
layouts = [x, strategy.replicate(x), strategy.shard(x)]
assert [len(t.devices) for t in layouts] == [1, 2, 2]
s4tf.xla.reset_metrics()
counts = []
for _ in range(2):
    for t in layouts:
        assert (t * t + t).tolist() == (values * values + values).tolist()
    m = s4tf.xla.metrics()
    counts.append([m["compiles"], m["cache_hits"]])
print(json.dumps(counts))
"""


def test_a_new_layout_compiles_and_the_same_layout_hits():
    # XLA partitions a step by its inputs' layouts: a key without them would run
    # the program of another layout (JAX would fix it underneath, uncounted).
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "PYTHONPATH": str(ROOT), "S4TF_CACHE_DIR": ""}
    done = subprocess.run([sys.executable, "-c", _LAYOUTS_SCRIPT], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [[3, 0], [3, 3]]


def test_the_recompilation_warning_points_at_the_users_line(monkeypatch):
    import s4tf.backends.xla.counters as xla_metrics

    monkeypatch.setattr(xla_metrics, "WARN_AFTER", 1)  # warn at the second trace: fast
    with s4tf.backend("xla"):
        with pytest.warns(s4tf.xla.RecompilationWarning) as caught:
            _train(2, batch_of=lambda i: 8 + i)
    first = next(w for w in caught if issubclass(w.category, s4tf.xla.RecompilationWarning))
    # The first frame outside s4tf: the barrier in _train, not s4tf's compiler.
    barrier_line = next(i for i, line in enumerate(open(__file__), start=1)
                        if line.strip() == "s4tf.barrier()")
    assert (first.filename, first.lineno) == (__file__, barrier_line)
    assert f"{__file__}:{barrier_line}: s4tf.barrier() has compiled" in str(first.message)


# A training step of _train's MLP in a fresh process, reporting what compiled.
_STEP_SCRIPT = """
import json, os, sys
sys.path.insert(0, os.environ["TESTS_DIR"])
import s4tf
from test_xla_cache import _train
s4tf.set_backend("xla")
_train(2)
import jax
print(json.dumps({**s4tf.xla.metrics(), "jax_cache_dir": jax.config.jax_compilation_cache_dir}))
"""


def _step_in_a_new_process(cache_dir: str | None) -> dict:
    """Run _STEP_SCRIPT with S4TF_CACHE_DIR=cache_dir (None: unset) and return its metrics."""
    env = {**os.environ, "S4TF_CACHE_DIR": cache_dir, "PYTHONPATH": str(ROOT),
           "TESTS_DIR": str(pathlib.Path(__file__).parent)}
    if cache_dir is None:
        del env["S4TF_CACHE_DIR"]
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", _STEP_SCRIPT], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_its_programs_from_the_persistent_cache(tmp_path):
    cache = tmp_path / "xla-cache"
    first = _step_in_a_new_process(str(cache))
    assert first["compiles"] >= 1 and first["persistent_cache_hits"] == 0, first
    assert first["jax_cache_dir"] == str(cache) and any(cache.iterdir())
    second = _step_in_a_new_process(str(cache))
    # JAX's own cache-hit event: XLA compiled nothing in the second process.
    assert second["compiles"] == first["compiles"], second
    assert second["persistent_cache_hits"] == second["compiles"], second


def test_an_empty_cache_dir_turns_the_persistent_cache_off(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # the default cache would land here
    done = _step_in_a_new_process("")
    assert done["jax_cache_dir"] is None and done["persistent_cache_hits"] == 0, done
    assert not any(home.iterdir())


def test_the_persistent_cache_is_on_by_default_under_the_users_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    done = _step_in_a_new_process(None)
    default = tmp_path / ".cache" / "s4tf" / "xla"
    assert done["jax_cache_dir"] == str(default) and any(default.iterdir()), done


# Small programs in a fresh process, each observed at once (one XLA program each),
# reporting their values, the cache entries each one added, and every warning.
_PROGRAMS_SCRIPT = """
import json, os, sys, warnings
import numpy as np
import s4tf
s4tf.set_backend("xla")
caught = []
warnings.simplefilter("always")
warnings.showwarning = lambda message, category, filename, *rest: caught.append(
    {"category": category.__name__, "message": str(message), "filename": filename})
cache = os.environ["S4TF_CACHE_DIR"]
x = s4tf.Tensor(np.linspace(0.1, 0.4, 4), dtype=s4tf.float32)
programs = {"exp": lambda: [s4tf.exp(x)], "sin": lambda: [s4tf.sin(x)],
            "pair": lambda: [x.sum(), x.reshape([2, 2]) * 3]}  # another signature
report = {"values": {}, "entries": {}}
for name in sys.argv[1:]:
    before = set(os.listdir(cache))
    report["values"][name] = [t.numpy().tolist() for t in programs[name]()]
    report["entries"][name] = sorted(n for n in set(os.listdir(cache)) - before
                                     if not n.startswith("."))
metrics = s4tf.xla.metrics()
report.update(compiles=metrics["compiles"], hits=metrics["persistent_cache_hits"],
              warnings=caught)
print(json.dumps(report))
"""
_X = np.linspace(0.1, 0.4, 4).astype(np.float32)
_EXPECTED = {"exp": [np.exp(_X)], "sin": [np.sin(_X)], "pair": [_X.sum(), _X.reshape(2, 2) * 3]}


def _programs_in_a_new_process(cache, *names, timeout=120) -> dict:
    """Run _PROGRAMS_SCRIPT's ``names`` on the cache ``cache``; fail (not hang) past ``timeout``."""
    env = {**os.environ, "S4TF_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    try:
        done = subprocess.run([sys.executable, "-c", _PROGRAMS_SCRIPT, *names], capture_output=True,
                              text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a process running {names} on the cache {cache} hung: killed after {timeout} s")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for name in names:  # whatever the cache held, the numbers are the program's own
        for got, want in zip(report["values"][name], _EXPECTED[name], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{name} on {cache}")
    return report


def _filled(cache, *names) -> dict:
    """Fill ``cache`` with the entries of ``names``: {name: its entry's path}."""
    report = _programs_in_a_new_process(cache, *names)
    assert report["compiles"] == len(names) and report["warnings"] == [], report
    assert all(len(report["entries"][n]) == 1 for n in names), report["entries"]
    return {n: cache / report["entries"][n][0] for n in names}


def _one_warning_each(report, entries, reason: str) -> None:
    """Exactly one CacheEntryWarning per entry in ``entries`` (naming it and ``reason``), nothing else."""
    assert len(report["warnings"]) == len(entries), report["warnings"]
    for warning, entry in zip(report["warnings"], entries, strict=True):
        assert warning["category"] == "CacheEntryWarning", warning
        assert str(entry) in warning["message"] and reason in warning["message"], warning
        assert warning["filename"] == "<string>", warning  # the user's line, not JAX's


@pytest.mark.parametrize("other", ["sin", "pair"])
def test_swapped_entries_are_never_run_and_are_rewritten(tmp_path, other):
    # Swapping exp's and sin's entries made exp return sin's numbers; swapping
    # entries of programs with other signatures crashed in JAX (AssertionError: (1, 2)).
    cache = tmp_path / "cache"
    entries = _filled(cache, "exp", other)
    a, b = entries["exp"], entries[other]
    a.rename(tmp_path / "swap")
    b.rename(a)
    (tmp_path / "swap").rename(b)
    swapped = _programs_in_a_new_process(cache, "exp", other)
    assert (swapped["compiles"], swapped["hits"]) == (2, 0), swapped
    _one_warning_each(swapped, [a, b], "holds the program")
    again = _programs_in_a_new_process(cache, "exp", other)
    assert (again["compiles"], again["hits"], again["warnings"]) == (2, 2, []), again


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_an_entry_that_is_no_regular_file_is_never_opened(tmp_path, kind):
    # A FIFO as an entry hung the process; a link to /dev/zero read until it was killed.
    cache = tmp_path / "cache"
    entry = _filled(cache, "exp")["exp"]
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero")
    report = _programs_in_a_new_process(cache, "exp", timeout=60)
    _one_warning_each(report, [entry], "a FIFO" if kind == "fifo" else "a symbolic link")
    assert entry.is_file() and not entry.is_symlink()  # rewritten in its place
    again = _programs_in_a_new_process(cache, "exp")
    assert (again["hits"], again["warnings"]) == (1, []), again


def test_a_truncated_entry_is_rewritten_and_the_next_process_hits_without_warning(tmp_path):
    # A full disk left truncated entries that were warned about on every later
    # run and never rewritten.
    cache = tmp_path / "cache"
    entry = _filled(cache, "exp")["exp"]
    with open(entry, "r+b") as file:
        file.truncate(entry.stat().st_size // 2)
    report = _programs_in_a_new_process(cache, "exp")
    assert report["hits"] == 0, report
    _one_warning_each(report, [entry], "truncated")
    again = _programs_in_a_new_process(cache, "exp")
    assert (again["hits"], again["warnings"]) == (1, []), again


def test_a_moved_or_copied_cache_directory_still_hits(tmp_path):
    # JAX put the absolute path of XLA's autotuning cache into every key: a moved
    # or copied cache directory never hit.
    first = tmp_path / "first"
    _filled(first, "exp", "pair")
    copied = tmp_path / "copied"
    shutil.copytree(first, copied)
    moved = tmp_path / "elsewhere" / "moved"
    first.rename(tmp_path / "moving")
    moved.parent.mkdir()
    (tmp_path / "moving").rename(moved)
    for cache in (copied, moved):
        report = _programs_in_a_new_process(cache, "exp", "pair")
        assert (report["compiles"], report["hits"], report["warnings"]) == (2, 2, []), report


def _flip_last_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))


def _as_other_versions(path):
    path.write_bytes(path.read_bytes().replace(b'"jaxlib": "l"', b'"jaxlib": "m"'))


@pytest.mark.parametrize("damage, reason", [
    (_flip_last_byte, "do not match the SHA-256"),
    (lambda path: path.write_bytes(path.read_bytes() + b"x"), "1 bytes more than"),
    (_as_other_versions, "written by jax j / jaxlib m"),
    (lambda path: path.write_bytes(b"\x00" * 100_000), "does not start with an s4tf cache header"),
    (lambda path: (path.unlink(), path.mkdir()), "a directory"),
])
def test_a_damaged_entry_is_refused_with_one_warning_and_replaced(tmp_path, damage, reason):
    from s4tf.backends.xla.persistent_cache import EntryStore

    store = EntryStore(str(tmp_path), {"jax": "j", "jaxlib": "l"})
    store.put("jit_step-1", b"program")
    path = pathlib.Path(store.path_of("jit_step-1"))
    damage(path)
    with pytest.warns(s4tf.xla.CacheEntryWarning) as caught:
        assert store.get("jit_step-1") is None
        assert store.get("jit_step-1") is None  # no second warning for the same entry
    assert len(caught) == 1 and str(path) in str(caught[0].message), [str(w.message) for w in caught]
    assert reason in str(caught[0].message)
    if path.is_dir():  # cannot be replaced: the program runs uncached, and says so
        assert "could not be removed" in str(caught[0].message)
        return
    store.put("jit_step-1", b"program")
    assert store.get("jit_step-1") == b"program"


def test_an_entry_that_cannot_be_written_warns_once(tmp_path):
    from s4tf.backends.xla.persistent_cache import EntryStore

    store = EntryStore(str(tmp_path / "cache"), {"jax": "j", "jaxlib": "l"})
    (tmp_path / "cache").rmdir()  # as good as a full disk: no file can be created
    with pytest.warns(s4tf.xla.CacheEntryWarning, match="could not write") as caught:
        store.put("jit_a-1", b"program")
        store.put("jit_b-2", b"program")
    assert len(caught) == 1, [str(w.message) for w in caught]


def test_concurrent_writers_of_one_entry_leave_a_whole_entry(tmp_path):
    # Two processes compiling the same program write the same entry; a reader
    # must see an old or a new entry whole, never a half-written one.
    from s4tf.backends.xla.persistent_cache import EntryStore

    store = EntryStore(str(tmp_path), {"jax": "j", "jaxlib": "l"})
    payloads = [bytes([n]) * (1 << 20) * (1 + n % 3) for n in range(4)]
    seen = []

    def write(payload):
        for _ in range(8):
            store.put("jit_step-1", payload)

    def read():
        for _ in range(40):
            seen.append(store.get("jit_step-1"))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
        threads += [threading.Thread(target=read) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [str(w.message) for w in caught] == []
    assert all(value is None or value in payloads for value in seen)
    assert store.get("jit_step-1") in payloads
    assert [p.name for p in tmp_path.iterdir()] == ["jit_step-1.xla"]  # no temporary left


def _table_sizes() -> dict:
    """Every table the lazy backend keeps between steps, by size."""
    from s4tf.backends.xla import compiler, counters, graph, recording, scalar_buffers, shapes

    return {"shapes": len(shapes._cache), "parameter keys": len(recording._interned),
            "scalar buffers": scalar_buffers.cached_count(), "executables": compiler.cache_size(),
            "compile sites": len(counters._sites), "pending": graph.pending_count()}


def test_the_backends_tables_stay_the_same_size_from_step_to_step():
    # A table keyed by something that changes every step (here the learning rate,
    # a new Python float each step) would grow with the run: memory per step.
    with s4tf.backend("xla"):
        _train(3)
        warm = _table_sizes()
        _train(12, lr_of=lambda i: 0.1 / (1 + i))
        assert _table_sizes() == warm


class _CountedHash:
    """A key part that counts how often it is hashed; equal when its name is."""

    hashes = 0

    def __init__(self, name):
        self.name = name

    def __hash__(self):
        _CountedHash.hashes += 1
        return 7

    def __eq__(self, other):
        return isinstance(other, _CountedHash) and other.name == self.name


def _handmade_trace(op, name):
    """A one-op trace ``op(x, x)`` whose key holds a _CountedHash and whose hash is 1."""
    import jax.numpy as jnp

    from s4tf.backends.xla import graph

    trace = graph.Trace()
    entries = (("P", (2,), "float32", "device", None), (op, _CountedHash(name), (0, 0)))
    trace.key = (entries, (1,), ())
    trace.hash = 1  # every handmade trace collides: only the keys can tell them apart
    trace.program, trace.n_slots = [(1, op, {}, (0, 0))], 2
    trace.parameter_slots, trace.out_slots, trace.donate = [0], [1], ()
    trace.arguments = (jnp.asarray([3.0, 4.0], dtype=jnp.float32),)
    return trace


def test_a_cache_lookup_uses_the_traces_own_hash_and_still_compares_whole_keys():
    # A key has an entry per value of the step: the trace hashes it once (collect), and
    # the lookup reuses that hash. Equal hashes still never share an executable unless
    # the whole keys are equal.
    from s4tf.backends.xla import compiler

    before = compiler.cache_size()
    _CountedHash.hashes = 0
    [added] = compiler.run(_handmade_trace("add", "a"))
    [again] = compiler.run(_handmade_trace("add", "a"))
    assert compiler.cache_size() == before + 1
    [multiplied] = compiler.run(_handmade_trace("mul", "b"))  # same hash, another key
    assert compiler.cache_size() == before + 2
    assert _CountedHash.hashes == 0
    assert np.asarray(added).tolist() == np.asarray(again).tolist() == [6.0, 8.0]
    assert np.asarray(multiplied).tolist() == [9.0, 16.0]
