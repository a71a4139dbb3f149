"""Batches of labeled examples: shuffling, epochs and background prefetching.

Every data set hands out two :class:`Batches`: ``training`` draws a new
permutation on each pass (one pass is one epoch) and ``validation`` keeps the
stored order. Batches are assembled as NumPy arrays, by a background thread
that works on the next batch while the current one trains, and become s4tf
Tensors only in the consuming thread: the current backend belongs to the code
that iterates, not to the helper thread.
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..tensor import Tensor
from .transforms import Transform

__all__ = ["Batches", "LabeledBatch"]


class LabeledBatch(NamedTuple):
    """A batch of examples and their labels.

    Attributes
    ----------
    data : s4tf.Tensor
        The inputs, e.g. images of shape ``(batch, height, width, channels)``.
    label : s4tf.Tensor
        The int32 class labels, of shape ``(batch,)``.

    Examples
    --------
    >>> from s4tf import datasets
    >>> digits = datasets.Digits(batch_size=32)
    >>> images, labels = next(iter(digits.validation))
    >>> images.shape, labels.shape
    ((32, 8, 8, 1), (32,))
    """

    data: Any
    label: Any


class _Examples(Protocol):
    """What :class:`Batches` draws from: indexable examples with labels."""

    def __len__(self) -> int: ...

    def take(self, index: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]: ...


class _ArrayExamples:
    """Examples held in memory as arrays, with an optional per-batch transform.

    Keeping images in their stored dtype (uint8) and converting one batch at a
    time keeps memory at a quarter of a float32 copy of the whole set.
    """

    def __init__(self, data: np.ndarray, labels: np.ndarray, transform=None):
        data = np.asarray(data)
        labels = np.asarray(labels)
        if len(data) != len(labels):
            raise ValueError(
                f"data and labels must have the same number of examples; received "
                f"data.shape={data.shape} and labels.shape={labels.shape}."
            )
        self.data = data
        self.labels = labels.astype(np.int32, copy=False)
        self.transform = transform

    def __len__(self) -> int:
        return len(self.data)

    def take(self, index: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        data = self.data[index]
        if self.transform is not None:
            data = self.transform(data)
        return data, self.labels[index]


class Batches:
    """An iterable of :class:`LabeledBatch` over a set of examples.

    Parameters
    ----------
    examples
        The examples (internal; use :meth:`from_arrays` for your own arrays).
    batch_size : int
        Examples per batch.
    shuffle : bool
        If true, every pass visits the examples in a new random order (use for
        training); otherwise in stored order (use for validation).
    seed : int or None
        Seeds the shuffling. Pass ``k`` of a given seed always uses the same
        order, so runs, and resumed runs, are reproducible. ``None`` draws a
        random seed.
    drop_remainder : bool
        If true, a last batch smaller than ``batch_size`` is skipped, so every
        batch has the same shape.
    prefetch : bool
        If true, a background thread prepares the next batch while the current
        one is used.
    transform : callable, optional
        Applied to each batch's NumPy data (NHWC images) before it becomes a
        tensor, in the prefetch thread: a :mod:`s4tf.datasets.transforms`
        object (e.g. augmentation for training) or any function of the array.
        A transform's random draws come from a generator made from ``seed``,
        the epoch and the batch's index, so pass ``k`` augments the same way
        in every run, resumed runs included.

    Attributes
    ----------
    epoch : int
        The number of passes started so far. Pass ``epoch`` uses the order of
        that pass; set it to resume the shuffling sequence of a stopped run.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import Batches
    >>> batches = Batches.from_arrays(np.zeros((10, 2)), np.arange(10), batch_size=4)
    >>> len(batches)
    3
    >>> [len(labels.numpy()) for _, labels in batches]
    [4, 4, 2]
    """

    def __init__(
        self,
        examples: _Examples,
        batch_size: int,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
        transform=None,
    ):
        if transform is not None and not callable(transform):
            raise TypeError(
                f"transform must be a function of a NumPy batch (e.g. from "
                f"s4tf.datasets.transforms) or None; received transform={transform!r}."
            )
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, (int, np.integer))
            or batch_size < 1
        ):
            raise ValueError(
                f"batch_size must be a positive integer; received batch_size={batch_size!r}."
            )
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
        elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(
                f"seed must be a non-negative integer or None; received seed={seed!r}."
            )
        self.examples = examples
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_remainder = bool(drop_remainder)
        self.prefetch = bool(prefetch)
        self.transform = transform
        self.epoch = 0

    @classmethod
    def from_arrays(
        cls,
        data: np.ndarray,
        labels: np.ndarray,
        batch_size: int,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
        transform=None,
    ) -> Batches:
        """Batch in-memory arrays: ``data[i]`` is labeled ``labels[i]``.

        The data is batched as it is (same dtype); labels become int32.
        ``transform`` (see :class:`Batches`) runs on each batch of ``data``:
        give the training batches the augmentation and the validation batches
        its ``deterministic()`` part.

        Examples
        --------
        >>> import numpy as np
        >>> from s4tf.datasets import transforms
        >>> images = np.random.default_rng(0).random((6, 32, 32, 3), np.float32)
        >>> augment = transforms.Compose([transforms.RandomCrop(32, padding=4),
        ...                               transforms.RandomFlip()])
        >>> batches = Batches.from_arrays(images, [0, 1] * 3, batch_size=4, shuffle=True,
        ...                               seed=0, transform=augment)
        >>> next(iter(batches)).data.shape
        (4, 32, 32, 3)
        >>> validation = Batches.from_arrays(images, [0, 1] * 3, batch_size=4,
        ...                                  transform=augment.deterministic())
        """
        return cls(
            _ArrayExamples(data, labels),
            batch_size,
            shuffle=shuffle,
            seed=seed,
            drop_remainder=drop_remainder,
            prefetch=prefetch,
            transform=transform,
        )

    @property
    def num_examples(self) -> int:
        """The number of examples one pass visits (including a dropped remainder)."""
        return len(self.examples)

    def __len__(self) -> int:
        """The number of batches in one pass."""
        if self.drop_remainder:
            return self.num_examples // self.batch_size
        return math.ceil(self.num_examples / self.batch_size)

    def order(self, epoch: int) -> np.ndarray:
        """The order in which pass number ``epoch`` visits the examples.

        Examples
        --------
        >>> import numpy as np
        >>> b = Batches.from_arrays(np.zeros(5), np.zeros(5), 2, shuffle=True, seed=1)
        >>> sorted(b.order(0).tolist())
        [0, 1, 2, 3, 4]
        """
        if not self.shuffle:
            return np.arange(self.num_examples)
        # One generator per (seed, epoch) rather than one shared stream: pass k
        # is then the same whatever happened before it, which makes resuming a
        # run at epoch k reproduce the uninterrupted run.
        return np.random.default_rng((self.seed, int(epoch))).permutation(self.num_examples)

    def __iter__(self) -> Iterator[LabeledBatch]:
        """Start a pass: an iterator of :class:`LabeledBatch` of s4tf Tensors."""
        return _as_tensors(self._numpy_batches())

    def _numpy_batches(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Start a pass; yield ``(data, label)`` NumPy arrays."""
        # Claim the epoch number now, when the pass starts, so that two passes
        # begun one after the other never share an order.
        epoch = self.epoch
        self.epoch += 1
        batches = self._assemble(self.order(epoch), epoch)
        return _prefetched(batches) if self.prefetch else batches

    def _assemble(self, order: np.ndarray,
                  epoch: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        size = self.batch_size
        for batch in range(len(self)):
            start, stop = batch * size, min((batch + 1) * size, len(order))
            # A contiguous slice avoids a gather copy on ordered passes.
            index = slice(start, stop) if not self.shuffle else order[start:stop]
            data, labels = self.examples.take(index)
            if self.transform is not None:
                data = self._transformed(data, epoch, batch)
            yield data, labels

    def _transformed(self, data: np.ndarray, epoch: int, batch: int) -> np.ndarray:
        if not isinstance(self.transform, Transform):
            return np.asarray(self.transform(data))
        # Keyed by (seed, epoch, batch) like the shuffle: a pass augments the same way
        # whenever it runs, and no stream is shared with the consuming thread.
        return self.transform(data, rng=np.random.default_rng((self.seed, int(epoch), batch)))

    def __repr__(self) -> str:
        kind = "shuffled" if self.shuffle else "ordered"
        return (
            f"Batches({self.num_examples} examples, {len(self)} {kind} batches of "
            f"{self.batch_size}, drop_remainder={self.drop_remainder})"
        )


def _as_tensors(batches: Iterator[tuple[np.ndarray, np.ndarray]]) -> Iterator[LabeledBatch]:
    for data, label in batches:
        yield LabeledBatch(Tensor(data), Tensor(label))


_DONE = object()


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


def _prefetched(items: Iterator, depth: int = 1) -> Iterator:
    """Yield ``items`` while a background thread computes up to ``depth`` ahead.

    An exception raised while producing an item is re-raised in the consumer at
    that item. When the consumer stops early (``break``), the thread is told to
    stop and is joined, so no thread outlives its pass.
    """
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        # A bounded wait instead of a blocking put, so that a consumer that
        # went away (stop set) cannot leave this thread blocked forever.
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as error:  # handed to the consumer, which re-raises it
            put(_Failure(error))

    worker = threading.Thread(target=produce, name="s4tf-datasets-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stop.set()
        worker.join()
