import gc
import threading

import numpy as np
import pytest

import s4tf
from s4tf.datasets import Batches, LabeledBatch
from s4tf.datasets.batching import _ArrayExamples


def numpy_pass(batches: Batches) -> list[tuple[np.ndarray, np.ndarray]]:
    return list(batches._numpy_batches())


def ids(batches: Batches) -> np.ndarray:
    """One pass, as the sequence of example ids (the data holds each id)."""
    return np.concatenate([data for data, _ in numpy_pass(batches)])


def id_batches(n: int, batch_size: int, **options) -> Batches:
    return Batches.from_arrays(np.arange(n), np.arange(n) % 7, batch_size, **options)


def prefetch_threads() -> int:
    return sum(t.name == "s4tf-datasets-prefetch" for t in threading.enumerate())


@pytest.mark.parametrize("n, size, drop, lengths", [
    (10, 4, False, [4, 4, 2]),
    (10, 4, True, [4, 4]),
    (12, 4, True, [4, 4, 4]),
    (3, 8, False, [3]),
    (3, 8, True, []),
])
def test_batch_count_and_sizes(n, size, drop, lengths):
    batches = id_batches(n, size, drop_remainder=drop)
    assert len(batches) == len(lengths)
    assert [len(data) for data, _ in numpy_pass(batches)] == lengths


def test_labels_follow_their_examples_and_are_int32():
    batches = id_batches(23, 5, shuffle=True, seed=3)
    for data, label in numpy_pass(batches):
        assert label.dtype == np.int32
        np.testing.assert_array_equal(label, data % 7)


def test_training_reshuffles_every_epoch_and_visits_each_example_once():
    batches = id_batches(50, 8, shuffle=True, seed=0)
    first, second = ids(batches), ids(batches)
    assert sorted(first) == list(range(50))
    assert sorted(second) == list(range(50))
    assert not np.array_equal(first, second)
    assert batches.epoch == 2


def test_shuffling_is_reproducible_from_the_seed():
    a, b, c = (id_batches(40, 6, shuffle=True, seed=s) for s in (7, 7, 8))
    assert np.array_equal(ids(a), ids(b))
    assert np.array_equal(ids(a), ids(b))  # second epochs agree too
    assert not np.array_equal(ids(id_batches(40, 6, shuffle=True, seed=7)), ids(c))


def test_setting_epoch_resumes_the_shuffle_sequence():
    uninterrupted = id_batches(30, 4, shuffle=True, seed=5)
    passes = [ids(uninterrupted) for _ in range(4)]
    resumed = id_batches(30, 4, shuffle=True, seed=5)
    resumed.epoch = 3
    assert np.array_equal(ids(resumed), passes[3])


def test_dropped_remainder_is_a_different_subset_each_epoch():
    batches = id_batches(10, 4, shuffle=True, seed=1, drop_remainder=True)
    seen = [set(ids(batches)) for _ in range(6)]
    assert all(len(s) == 8 for s in seen)
    assert len(set.union(*seen)) == 10


def test_validation_keeps_the_stored_order_every_pass():
    batches = id_batches(17, 5)
    assert np.array_equal(ids(batches), np.arange(17))
    assert np.array_equal(ids(batches), np.arange(17))


@pytest.mark.parametrize("shuffle", [False, True])
def test_prefetching_yields_the_same_batches_as_not_prefetching(shuffle):
    data = np.random.default_rng(0).normal(size=(37, 3)).astype(np.float32)
    labels = np.arange(37) % 4
    results = []
    for prefetch in (True, False):
        batches = Batches.from_arrays(data, labels, 8, shuffle=shuffle, seed=11,
                                      prefetch=prefetch)
        results.append([numpy_pass(batches) for _ in range(2)])
    for (a_data, a_label), (b_data, b_label) in zip(
        sum(results[0], []), sum(results[1], []), strict=True
    ):
        np.testing.assert_array_equal(a_data, b_data)
        np.testing.assert_array_equal(a_label, b_label)


def test_prefetching_happens_in_a_background_thread():
    seen = []

    class Recording(_ArrayExamples):
        def take(self, index):
            seen.append(threading.current_thread())
            return super().take(index)

    batches = Batches(Recording(np.arange(6), np.arange(6)), 2, prefetch=True)
    numpy_pass(batches)
    assert seen and all(t is not threading.main_thread() for t in seen)


def test_an_error_while_prefetching_reaches_the_consumer_at_its_batch():
    class Failing(_ArrayExamples):
        def take(self, index):
            data, labels = super().take(index)
            if 6 in data:
                raise OSError("disk on fire at example 6")
            return data, labels

    batches = Batches(Failing(np.arange(10), np.arange(10)), 3, prefetch=True)
    received = []
    with pytest.raises(OSError, match="disk on fire"):
        for data, _ in batches._numpy_batches():
            received.append(data)
    assert len(received) == 2
    assert prefetch_threads() == 0


def test_leaving_a_pass_early_stops_its_prefetch_thread():
    batches = id_batches(1000, 10, prefetch=True)
    iterator = batches._numpy_batches()
    next(iterator)
    assert prefetch_threads() == 1
    del iterator
    gc.collect()
    assert prefetch_threads() == 0


@pytest.mark.parametrize("size", [0, -3, 2.5, True, "8"])
def test_a_bad_batch_size_is_refused_with_the_value(size):
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        id_batches(10, size)


def test_a_negative_seed_is_refused():
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        id_batches(10, 2, shuffle=True, seed=-1)


def test_mismatched_data_and_labels_are_refused():
    with pytest.raises(ValueError, match=r"data.shape=\(4,\).*labels.shape=\(3,\)"):
        Batches.from_arrays(np.zeros(4), np.zeros(3), 2)


def test_iteration_yields_labeled_batches_of_s4tf_tensors():
    data = np.random.default_rng(0).random((9, 2, 2, 1), dtype=np.float32)
    batches = Batches.from_arrays(data, np.arange(9) % 3, 4, shuffle=True, seed=2)
    out = list(batches)
    assert [type(b) for b in out] == [LabeledBatch] * 3
    images, labels = out[0]
    assert isinstance(images, s4tf.Tensor) and isinstance(labels, s4tf.Tensor)
    assert images.shape == (4, 2, 2, 1) and labels.shape == (4,)
    assert images.dtype == s4tf.float32 and labels.dtype == s4tf.int32
    order = batches.order(0)[:4]
    np.testing.assert_array_equal(images.numpy(), data[order])
    np.testing.assert_array_equal(labels.numpy(), order % 3)
