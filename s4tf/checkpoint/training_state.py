"""Resumable training states: model, optimizer state, epoch and random state in one file."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from .. import random as _random
from ..backends.base import current_backend
from ..tensor import Tensor, from_numpy
from ..tree import tree_leaves
from .files import (
    _json,
    decode_section,
    encode_into,
    read_file,
    refuse_unexpected,
    restore,
    under,
    write_file,
)
from .structure import CheckpointError, is_finite_json

__all__ = ["TrainingState", "load_training_state", "save_training_state"]

TRAINING_FORMAT = "s4tf.training_state/1"
_MODEL, _OPTIMIZER = "model.", "optimizer."


class TrainingState(NamedTuple):
    """What :func:`load_training_state` returns: ``model, epoch, extra = state``."""

    model: Any
    epoch: int
    extra: Any


def save_training_state(path, model, optimizer=None, *, epoch: int = 0, extra=None) -> None:
    """Save everything a run needs to resume exactly where it stopped.

    The file holds the model (as :func:`s4tf.save` would, keys prefixed
    ``model.``), ``optimizer.state_dict()`` (keys prefixed ``optimizer.``), the
    number of finished epochs, the global :mod:`s4tf.random` state and
    ``extra`` (any JSON value: a best score, a config). The write is atomic.

    Examples
    --------
    >>> import s4tf, tempfile, os
    >>> class Affine(s4tf.Differentiable):
    ...     w: s4tf.Tensor
    >>> path = os.path.join(tempfile.mkdtemp(), "run.safetensors")
    >>> s4tf.save_training_state(path, Affine(s4tf.ones([2])), epoch=3, extra={"best": 0.9})
    >>> model, epoch, extra = s4tf.load_training_state(path)
    >>> epoch, extra
    (3, {'best': 0.9})
    """
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise ValueError(f"epoch must be a non-negative int (epochs finished); received {epoch!r}.")
    if not is_finite_json(extra):
        raise TypeError(
            f"extra must be JSON data (dicts with str keys, lists, str, int, finite float, "
            f"bool, None); received {extra!r}. Save tensors in the model instead."
        )
    tensors: dict = {}
    metadata = {
        "format": TRAINING_FORMAT,
        "model": encode_into(tensors, model, _MODEL),
        "epoch": str(epoch),
        "rng": json.dumps(_random.get_state()),
        "extra": json.dumps(extra),
    }
    if optimizer is not None:
        metadata["optimizer"] = encode_into(tensors, _state_dict(optimizer), _OPTIMIZER,
                                            differentiable=False)
        metadata["optimizer_class"] = type(optimizer).__qualname__
    write_file(path, tensors, metadata)


def _state_dict(optimizer):
    method = getattr(optimizer, "state_dict", None)
    if method is None:
        raise TypeError(
            f"{type(optimizer).__name__} has no state_dict() method; pass an s4tf optimizer "
            "(s4tf.optimizers.SGD, Adam, ...) or optimizer=None."
        )
    return method()


def load_training_state(path, like=None, optimizer=None) -> TrainingState:
    """Restore a state written by :func:`save_training_state`.

    Returns ``TrainingState(model, epoch, extra)``; loads the optimizer state
    into ``optimizer`` (with ``optimizer.load_state_dict``) and restores the
    global :mod:`s4tf.random` state, so continuing with ``fit(...,
    initial_epoch=epoch)`` gives the same result as a run never interrupted.
    ``like`` works as in :func:`s4tf.load`.

    Examples
    --------
    >>> import os, tempfile, s4tf
    >>> model = s4tf.layers.Dense(3, 2)
    >>> opt = s4tf.optimizers.Adam(model)
    >>> path = os.path.join(tempfile.mkdtemp(), "dense.safetensors")
    >>> s4tf.save_training_state(path, model, opt, epoch=1)
    >>> state = s4tf.load_training_state(path, like=s4tf.layers.Dense(3, 2), optimizer=opt)
    >>> state.model.weight.shape, state.epoch
    ((3, 2), 1)
    """
    arrays, metadata = read_file(path, TRAINING_FORMAT)
    # The epoch, extra and stray tensors are checked before anything decodes,
    # so that such a file changes neither the optimizer nor the random state.
    epoch, extra = _epoch(metadata, path), _json(metadata, "extra", path)
    sections = (_MODEL, _OPTIMIZER) if "optimizer" in metadata else (_MODEL,)
    refuse_unexpected(sorted(key for key in arrays if not key.startswith(sections)), path)
    model = restore(_json(metadata, "model", path), arrays, like, path, prefix=_MODEL)
    if optimizer is not None:
        if "optimizer" not in metadata:
            raise CheckpointError(
                f"{path!r} holds no optimizer state (it was saved with optimizer=None); "
                "call load_training_state without optimizer= or save one."
            )
        saved_class = metadata.get("optimizer_class")
        if saved_class != type(optimizer).__qualname__:
            raise CheckpointError(
                f"{path!r} holds the state of a {saved_class} optimizer, but a "
                f"{type(optimizer).__qualname__} was passed; pass the same kind of optimizer."
            )
        backend = _backend_of(model)
        state = decode_section(
            _json(metadata, "optimizer", path),
            under(arrays, _OPTIMIZER),
            lambda array, key: from_numpy(array, like=backend),
            path, _OPTIMIZER, differentiable=False,
        )
        optimizer.load_state_dict(state)
    try:
        _random.set_state(_json(metadata, "rng", path))
    except (KeyError, TypeError, ValueError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"{path!r} has a damaged 'rng' entry in its metadata ({error}).") from None
    return TrainingState(model, epoch, extra)


def _epoch(metadata: dict, path) -> int:
    text = metadata.get("epoch")
    # save_training_state writes str(epoch) of a non-negative int: ASCII digits
    # only, so "-1", "2.5" and " 3" are edits, as is a missing entry.
    if isinstance(text, str) and text.isascii() and text.isdigit():
        return int(text)
    found = "no 'epoch' entry" if text is None else f"the 'epoch' entry {text!r}"
    raise CheckpointError(
        f"{path!r} has {found} in its metadata; it must be a non-negative int (the epochs "
        "finished), as save_training_state writes it. The file was edited or damaged: save "
        "the training state again."
    )


def _backend_of(model):
    # Optimizer moments live where the model's parameters live.
    for leaf in tree_leaves(model):
        if isinstance(leaf, Tensor):
            return leaf._backend
    return current_backend()
