"""Atomic writes (``s4tf/checkpoint/atomic.py``): a save through a symbolic link."""

from __future__ import annotations

import os

import numpy as np
import pytest

import s4tf

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")


class Weights(s4tf.Differentiable):
    w: s4tf.Tensor


def test_saving_to_a_symlink_replaces_its_target_and_keeps_the_link(tmp_path, monkeypatch):
    store = tmp_path / "store"
    store.mkdir()
    target = store / "weights.safetensors"
    s4tf.save(Weights(s4tf.zeros([2])), target)
    link = tmp_path / "latest.safetensors"
    link.symlink_to(target)

    renames = []
    replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renames.append((src, dst)),
                                                         replace(src, dst))[1])
    s4tf.save(Weights(s4tf.Tensor([1.0, 2.0])), link)
    monkeypatch.undo()

    assert link.is_symlink() and os.readlink(link) == str(target)
    np.testing.assert_array_equal(s4tf.load(target).w.numpy(), [1.0, 2.0])
    # One rename, of a temporary file beside the target, over the target itself.
    [(source, destination)] = renames
    real = os.path.realpath  # tmp_path may itself sit below a link (macOS's /tmp)
    assert os.path.dirname(source) == real(store) and destination == real(target)
    assert sorted(os.listdir(store)) == ["weights.safetensors"]
    assert sorted(os.listdir(tmp_path)) == ["latest.safetensors", "store"]


def test_a_link_chain_and_a_relative_link_are_followed(tmp_path):
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "model.safetensors"
    (tmp_path / "runs" / "best.safetensors").symlink_to("model.safetensors")  # relative
    (tmp_path / "best.safetensors").symlink_to(tmp_path / "runs" / "best.safetensors")
    s4tf.save(Weights(s4tf.ones([3])), tmp_path / "best.safetensors")
    assert target.is_file() and not target.is_symlink()
    assert (tmp_path / "best.safetensors").is_symlink()
    assert (tmp_path / "runs" / "best.safetensors").is_symlink()
    np.testing.assert_array_equal(s4tf.load(target).w.numpy(), [1.0, 1.0, 1.0])


def test_a_link_loop_is_refused_with_its_path(tmp_path):
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(OSError, match=r"a\.safetensors.*symbolic links? .*loop"):
        s4tf.save(Weights(s4tf.ones([1])), a)
    assert a.is_symlink() and b.is_symlink()
