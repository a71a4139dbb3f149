"""The naive convolution kernels on a thread pool: bit-identical to one thread, and really shared."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from s4tf.backends import im2col
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
    original = im2col.shares
    monkeypatch.setattr(im2col, "shares", lambda xp, work, parts: calls.append(len(parts))
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

    results = im2col.shares(np, work, [(i, i + 1) for i in range(7)])
    assert [parts for parts, _ in results] == [[(0, 1), (1, 2), (2, 3)], [(3, 4), (4, 5)],
                                               [(5, 6), (6, 7)]]
    assert results[0][1] == threading.get_ident() and len({ident for _, ident in results}) == 3


def test_one_thread_and_other_namespaces_stay_on_the_caller(monkeypatch):
    monkeypatch.setenv("S4TF_THREADS", "1")
    assert im2col.shares(np, lambda parts: len(parts), [(0, 1), (1, 2)]) == [2]
    monkeypatch.setenv("S4TF_THREADS", "4")
    assert im2col.shares(object(), lambda parts: len(parts), [(0, 1), (1, 2)]) == [2]


@pytest.mark.parametrize("setting", ["two", "0", "-1"])
def test_a_bad_thread_count_is_named(setting, monkeypatch):
    monkeypatch.setenv("S4TF_THREADS", setting)
    with pytest.raises(ValueError, match="S4TF_THREADS"):
        im2col.threads()


@pytest.mark.parametrize(("blas", "pooled"), [(None, False), ("2", False), ("1", True)])
def test_the_pool_defaults_to_the_cores_only_beside_single_threaded_blas(blas, pooled,
                                                                         monkeypatch):
    monkeypatch.delenv("S4TF_THREADS", raising=False)
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    if blas is not None:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", blas)
    monkeypatch.setattr(im2col.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert im2col.threads() == (3 if pooled else 1)
