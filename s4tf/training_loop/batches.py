"""What the training loop reads: ``(data, labels)`` batches, checked, one pass per epoch.

Each batch must be a pair of s4tf tensors (trees of them for several inputs);
anything else is refused with a message that says what came and what to pass.
An iterator is used up by one pass, so it is refused for several epochs, and
data that gives no batch in an epoch raises instead of training on nothing.
:func:`same_size_batches` leaves out a short last batch where a new shape
would cost a compile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from ..tensor import Tensor
from ..tree import tree_leaves

__all__ = ["as_pair", "batch_size", "divides", "length", "no_batches_message", "refuse_one_shot",
           "same_size_batches"]


def divides(data, devices: int) -> bool:
    """Whether ``data``'s batch size is a multiple of ``devices``."""
    size = batch_size(data, None)
    return size is not None and size % devices == 0


def batch_size(data, labels) -> int | None:
    """The leading size of the first tensor of rank >= 1 in ``labels``, then ``data``."""
    for leaf in tree_leaves((labels, data)):
        if isinstance(leaf, Tensor) and leaf.rank:
            return leaf.shape[0]
    return None


def _compiles_per_shape(data, labels) -> bool:
    return any(isinstance(leaf, Tensor) and leaf._backend.compiles_per_shape
               for leaf in tree_leaves((labels, data)))


def same_size_batches(batches: Iterable, drop: bool | None,
                      on_drop: Callable[[int, int], None]) -> Iterator:
    """``batches``, without a last batch smaller than the first when ``drop`` says so.

    ``drop=None`` decides by the first batch's backend (drop where shapes cost
    compiles). One batch is read ahead, to know which batch is the last.
    ``on_drop(short, full)`` is told the sizes when a batch is left out.
    """
    iterator = iter(batches)
    try:
        held = next(iterator, None)
        if held is None:
            return
        held = as_pair(held, "training", 0)
        full = batch_size(*held)
        if drop is None:
            drop = _compiles_per_shape(*held)
        for index, following in enumerate(iterator, start=1):
            yield held
            held = as_pair(following, "training", index)
        short = batch_size(*held)
        if drop and full is not None and short is not None and short < full:
            on_drop(short, full)
            return
        yield held
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:  # a generator (a prefetching pass) stops its thread now
            close()


def as_pair(batch, role: str, index: int) -> tuple:
    """``batch`` as ``(data, labels)``, or an error saying what it is and what is expected.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop.batches import as_pair
    >>> x = s4tf.ones([4, 3])
    >>> as_pair((x, x, x), "training", 0)
    Traceback (most recent call last):
    TypeError: TrainingLoop: each training batch must be a (data, labels) pair; batch 0 is a tuple of 3 items (a Tensor of shape [4, 3], a Tensor of shape [4, 3], a Tensor of shape [4, 3]). Yield (data, labels) tuples (s4tf.datasets.Batches does), and put several inputs in a tuple as data: ((x1, x2), labels).
    """
    if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
        raise TypeError(
            f"TrainingLoop: each {role} batch must be a (data, labels) pair; batch {index} is "
            f"{_describe(batch)}. Yield (data, labels) tuples (s4tf.datasets.Batches does), "
            "and put several inputs in a tuple as data: ((x1, x2), labels).")
    for part, value in zip(("data", "labels"), batch, strict=True):
        found = _numpy_array_in(value)
        if found is not None:
            raise TypeError(
                f"TrainingLoop: the {part} of {role} batch {index} is a NumPy array "
                f"(shape {found.shape}, {found.dtype}); the loop trains on s4tf tensors. Wrap "
                "each array with s4tf.Tensor(array), or batch NumPy arrays with "
                "s4tf.datasets.Batches.from_arrays(x, y, batch_size=...).")
    return batch


def _numpy_array_in(value):
    """A NumPy array in ``value`` or one level inside a tuple, list or dict; else None."""
    parts = value.values() if isinstance(value, dict) else (
        value if isinstance(value, (tuple, list)) else ())
    for part in (value, *parts):
        if isinstance(part, np.ndarray):
            return part
    return None


def _describe(value) -> str:
    if isinstance(value, (tuple, list)):
        kinds = ", ".join(_describe(part) for part in value[:4])
        more = ", ..." if len(value) > 4 else ""
        return f"a {type(value).__name__} of {len(value)} items ({kinds}{more})"
    if isinstance(value, Tensor):
        return f"a Tensor of shape {list(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"a NumPy array of shape {value.shape}"
    return f"a {type(value).__name__}"


def refuse_one_shot(data, role: str, epochs: int) -> None:
    """Refuse an iterator (used up by one pass) given for several epochs.

    Only ``isinstance(data, Iterator)`` is looked at: calling ``iter()`` on a
    data set would start (and waste) a pass.
    """
    if epochs > 1 and isinstance(data, Iterator):
        raise TypeError(
            f"TrainingLoop: the {role} data is a one-shot iterator ({type(data).__name__}): "
            f"its first epoch would use it up and the other {epochs - 1} would be empty. "
            "Pass something that starts a new pass each time it is iterated: a list of "
            "(data, labels) pairs, an s4tf.datasets.Batches, or an object whose __iter__ "
            "returns a fresh iterator (or call fit for one epoch at a time).")


def no_batches_message(data, role: str, epoch: int, earlier: bool) -> str:
    """Why the ``role`` data had no batch in ``epoch``: used up after an ``earlier`` epoch, or empty."""
    if earlier:
        return (f"TrainingLoop: the {role} data gave no batches in epoch {epoch + 1}, after "
                f"giving some in an earlier epoch of this fit: {type(data).__name__}'s "
                "__iter__ does not start a new pass. Pass a list of (data, labels) pairs, an "
                "s4tf.datasets.Batches, or an object whose __iter__ returns a fresh iterator.")
    return (f"TrainingLoop: the {role} data ({type(data).__name__}) gave no batches in "
            f"epoch {epoch + 1}: it is empty or used up. Give it at least one "
            "(data, labels) batch.")


def length(iterable) -> int | None:
    """``len(iterable)``, or None when it has none."""
    try:
        return len(iterable)
    except TypeError:
        return None

