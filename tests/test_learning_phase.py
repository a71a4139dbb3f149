"""Learning phase: default, context managers, nesting, restoration, threads."""

import threading

import pytest

import s4tf


def test_default_and_contexts():
    assert s4tf.current_learning_phase() == "inference"
    with s4tf.learning_phase("training"):
        assert s4tf.current_learning_phase() == "training"
        with s4tf.inference():
            assert s4tf.current_learning_phase() == "inference"
        assert s4tf.current_learning_phase() == "training"
    with s4tf.training():
        assert s4tf.current_learning_phase() == "training"
    assert s4tf.current_learning_phase() == "inference"


def test_restored_after_an_exception():
    with pytest.raises(RuntimeError):
        with s4tf.training():
            raise RuntimeError("boom")
    assert s4tf.current_learning_phase() == "inference"


def test_unknown_phase_is_rejected():
    with pytest.raises(ValueError, match="unknown phase 'train'"):
        with s4tf.learning_phase("train"):
            pass


def test_phase_is_per_thread():
    seen = []
    with s4tf.training():
        thread = threading.Thread(target=lambda: seen.append(s4tf.current_learning_phase()))
        thread.start()
        thread.join()
    assert seen == ["inference"]
