"""The naive kernels on a thread pool: bit-identical to one thread, really shared, OpenBLAS kept aside."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from s4tf.backends import blas_threads, im2col, kernel_pool
from s4tf.backends.naive import kernels
from s4tf.backends.naive.kernels import NumPyKernels

KERNELS = NumPyKernels(np)

# (input shape, filter shape, strides, padding): rows layout, pixel-major with a stride,
# offset-major (3 channels), a strided 1x1 projection, depthwise groups.
CASES = [
    ((9, 12, 12, 16), (3, 3, 16, 8), (1, 1), ((1, 1), (1, 1))),
    ((9, 12, 12, 16), (3, 3, 16, 8), (2, 2), ((0, 1), (0, 1))),
    ((9, 12, 12, 3), (3, 3, 3, 8), (1, 1), ((1, 1), (1, 1))),
    ((9, 12, 12, 16), (1, 1, 16, 8), (2, 2), ((0, 0), (0, 0))),
    ((9, 12, 12, 8), (3, 3, 1, 8), (1, 1), ((1, 1), (1, 1))),
]


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch):
    """Chunks of about one image, so that these small batches make several shares."""
    monkeypatch.setattr(im2col, "CHUNK_BYTES", 1)


def _conv_and_gradients(case):
    x_shape, w_shape, strides, padding = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    keywords = dict(strides=strides, padding=padding, dilations=(1, 1),
                    groups=x_shape[-1] // w_shape[-2])
    y = KERNELS.conv(x, w, **keywords)
    g = rng.standard_normal(y.shape).astype(np.float32)
    return (y, KERNELS.conv_backprop_filter(x, g, filter_shape=w_shape, **keywords),
            KERNELS.conv_backprop_input(g, w, input_shape=x_shape, **keywords))


@pytest.mark.parametrize("case", CASES)
def test_threads_give_the_bits_of_one_thread(case, monkeypatch):
    calls = []
    original = kernel_pool.shares
    monkeypatch.setattr(kernel_pool, "shares", lambda xp, work, parts: calls.append(len(parts))
                        or original(xp, work, parts))
    monkeypatch.setenv("S4TF_THREADS", "1")
    alone = _conv_and_gradients(case)
    assert max(calls) > 1  # the kernels hand the pool several chunks to share
    for count in ("2", "4"):
        monkeypatch.setenv("S4TF_THREADS", count)
        for got, want in zip(_conv_and_gradients(case), alone, strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                          np.ascontiguousarray(want).view(np.uint8))


def test_shares_run_on_several_threads_in_order(monkeypatch):
    monkeypatch.setenv("S4TF_THREADS", "3")
    barrier = threading.Barrier(3, timeout=10)  # passes only if three shares run at once

    def work(parts):
        barrier.wait()
        return parts, threading.get_ident()

    results = kernel_pool.shares(np, work, [(i, i + 1) for i in range(7)])
    assert [parts for parts, _ in results] == [[(0, 1), (1, 2), (2, 3)], [(3, 4), (4, 5)],
                                               [(5, 6), (6, 7)]]
    assert results[0][1] == threading.get_ident() and len({ident for _, ident in results}) == 3


def test_one_thread_and_other_namespaces_stay_on_the_caller(monkeypatch):
    monkeypatch.setenv("S4TF_THREADS", "1")
    assert kernel_pool.shares(np, lambda parts: len(parts), [(0, 1), (1, 2)]) == [2]
    monkeypatch.setenv("S4TF_THREADS", "4")
    assert kernel_pool.shares(object(), lambda parts: len(parts), [(0, 1), (1, 2)]) == [2]


@pytest.mark.parametrize("setting", ["two", "0", "-1"])
def test_a_bad_thread_count_is_named(setting, monkeypatch):
    monkeypatch.setenv("S4TF_THREADS", setting)
    with pytest.raises(ValueError, match="S4TF_THREADS"):
        kernel_pool.threads()


class _FakeOpenBLAS:
    """OpenBLAS's ``(get, set)`` thread-count functions, over a count of our own."""

    def __init__(self, count=2):
        self.count = count

    def get(self):
        return self.count

    def set(self, count):
        self.count = count


@pytest.mark.parametrize(("blas", "switchable", "pooled"),
                         [(None, False, False), ("2", False, False), ("1", False, True),
                          (None, True, True), ("2", True, True)])
def test_the_pool_defaults_to_the_cores_where_openblas_can_make_room(blas, switchable, pooled,
                                                                      monkeypatch):
    monkeypatch.delenv("S4TF_THREADS", raising=False)
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    if blas is not None:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", blas)
    fake = _FakeOpenBLAS()
    monkeypatch.setattr(blas_threads, "_openblas", (fake.get, fake.set) if switchable else None)
    monkeypatch.setattr(kernel_pool.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert kernel_pool.threads() == (3 if pooled else 1)


def test_shares_hold_openblas_at_one_thread_and_restore_it(monkeypatch):
    fake = _FakeOpenBLAS(4)
    monkeypatch.setattr(blas_threads, "_openblas", (fake.get, fake.set))
    monkeypatch.setenv("S4TF_THREADS", "2")
    seen = kernel_pool.shares(np, lambda parts: fake.count, [(0, 1), (1, 2)])
    assert seen == [1, 1] and fake.count == 4


@pytest.mark.parametrize("case", [CASES[0], CASES[3], ((2, 4, 4, 8), (1, 1, 8, 4), (1, 1),
                                                       ((0, 0), (0, 0)))])
def test_convolutions_keep_openblas_at_one_thread_beside_the_pool(case, monkeypatch):
    # Every GEMM of a convolution, also one that runs outside the pool's shares (a
    # 1x1 window's single product, the last case): a multi-threaded call would leave
    # OpenBLAS's worker spinning on the core the next chunks need.
    fake, counts = _FakeOpenBLAS(), []
    monkeypatch.setattr(blas_threads, "_openblas", (fake.get, fake.set))
    for name in ("_gemm_into", "_mm"):
        original = getattr(NumPyKernels, name)
        monkeypatch.setattr(NumPyKernels, name, lambda self, *args, _original=original:
                            counts.append(fake.count) or _original(self, *args))
    monkeypatch.setenv("S4TF_THREADS", "2")
    _conv_and_gradients(case)
    assert counts and set(counts) == {1} and fake.count == 2
    counts.clear()
    monkeypatch.setenv("S4TF_THREADS", "1")  # no pool: OpenBLAS keeps its threads
    _conv_and_gradients(case)
    assert counts and set(counts) == {2}


# (kernel, leading operands, the others' shapes): every kernel of ROW_WISE.
ROW_CASES = [("gelu_grad", [(8, 6, 5)] * 2, [])]


def test_every_row_wise_kernel_is_checked():
    assert set(kernels.ROW_WISE) == {case[0] for case in ROW_CASES}


@pytest.mark.parametrize(("name", "leading", "others"), ROW_CASES, ids=[c[0] for c in ROW_CASES])
def test_row_wise_kernels_share_rows_and_keep_the_bits_of_one_thread(name, leading, others,
                                                                    monkeypatch):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(shape).astype(np.float32) for shape in leading + others]
    params = {"epsilon": 1e-5} if "norm" in name else {}
    calls = []
    original = kernel_pool.shares
    monkeypatch.setattr(kernel_pool, "shares", lambda xp, work, parts: calls.append(len(parts))
                        or original(xp, work, parts))
    monkeypatch.setenv("S4TF_THREADS", "1")
    alone = getattr(KERNELS, name)(*args, **params)
    assert not calls  # one thread: the kernel runs whole
    for count in ("2", "3"):
        monkeypatch.setenv("S4TF_THREADS", count)
        got = getattr(KERNELS, name)(*args, **params)
        assert got.dtype == alone.dtype and got.shape == alone.shape
        np.testing.assert_array_equal(got.view(np.uint8), alone.view(np.uint8))
    assert calls == [8, 8]  # a block per row (CHUNK_BYTES is 1 here)


def test_row_wise_kernels_run_whole_when_an_operand_would_change_the_result(monkeypatch):
    monkeypatch.setenv("S4TF_THREADS", "2")
    calls = []
    original = kernel_pool.shares
    monkeypatch.setattr(kernel_pool, "shares", lambda xp, work, parts: calls.append(len(parts))
                        or original(xp, work, parts))
    v, x = np.ones((4, 3), np.float32), np.ones((4, 3), np.float32)
    KERNELS.gelu_grad(v, x)
    assert calls == [4]
    # A float64 operand makes a float64 result; a broadcast one has no rows to cut.
    assert KERNELS.gelu_grad(v.astype(np.float64), x).dtype == np.float64
    assert KERNELS.gelu_grad(v, x[:1]).shape == (4, 3)
    assert calls == [4]


def test_im2col_keeps_its_buffer_between_calls_but_never_shares_an_open_one():
    x = np.random.default_rng(5).standard_normal((1, 6, 6, 8)).astype(np.float32)
    args = (np, x, (4, 4), (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    [(_, _, first)] = list(im2col.columns(*args))
    want = first.copy()
    [(_, _, again)] = list(im2col.columns(*args))
    assert np.shares_memory(first, again)  # no fresh pages to fault in on every call
    outer, inner = im2col.columns(*args), im2col.columns(*args[:1], 2 * x, *args[2:])
    (_, _, a), (_, _, b) = next(outer), next(inner)
    assert not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(b, 2 * want)


def test_one_blas_thread_switches_the_openblas_numpy_runs_on():
    functions = blas_threads.openblas_functions()
    if functions is None:
        pytest.skip("this NumPy has no OpenBLAS that can be switched")
    get, put = functions
    before = get()
    with blas_threads.one_blas_thread():
        assert get() == 1
        assert (np.ones((256, 256), np.float32) @ np.ones((256, 256), np.float32))[0, 0] == 256
    assert get() == before
