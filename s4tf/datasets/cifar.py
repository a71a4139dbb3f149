"""CIFAR-10 and CIFAR-100: 32x32 colour images, from the "python version" archives.

The archives hold pickled dictionaries. They are read with an unpickler that
accepts only the few NumPy names an array needs, so a tampered file cannot run
code; and they are read straight from the ``.tar.gz`` (no extraction needed),
or from the extracted folder when it is there.
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import pickle
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .dataset import Dataset, Normalize, _in_memory
from .download import CorruptDataError, RemoteFile, data_directory, obtain

__all__ = ["CIFAR10", "CIFAR100"]

# How NumPy rebuilds a pickled array; taken from a live array so that it is
# right for NumPy 1 (numpy.core) and 2 (numpy._core) alike.
_RECONSTRUCT = np.ndarray.__reduce__(np.zeros(1))[0]
_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    # Python 3 writes bytes into protocol-2 pickles through codecs.encode.
    ("_codecs", "encode"): codecs.encode,
}


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED_GLOBALS[module, name]
        except KeyError:
            raise CorruptDataError(
                f"the pickle refers to {module}.{name}, which a CIFAR file never does; "
                f"refusing to load it"
            ) from None


def _unpickle(raw: bytes, name: str) -> dict:
    try:
        # The archives were written by Python 2: its str keys arrive as bytes.
        value = _ArrayUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except CorruptDataError as error:
        raise CorruptDataError(f"{name}: {error}") from None
    except Exception as error:  # any unpickling failure means a damaged file
        raise CorruptDataError(f"{name} is not a readable pickle ({error})") from error
    if not isinstance(value, dict):
        raise CorruptDataError(f"{name} holds a {type(value).__name__}, expected a dict")
    # Keys arrive as bytes from the official files, as str from re-pickled ones.
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in value.items()}


def _field(batch: dict, key: str, name: str):
    if key not in batch:
        raise CorruptDataError(f"{name} has no {key!r} entry (it has {sorted(batch)})")
    return batch[key]


def _images_and_labels(batch: dict, label_key: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    data = np.asarray(_field(batch, "data", name))
    labels = np.asarray(_field(batch, label_key, name))
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise CorruptDataError(
            f"{name}: 'data' is a {data.dtype.name} array of shape {data.shape}; "
            f"expected uint8 of shape (count, 3072)"
        )
    if labels.shape != (len(data),):
        raise CorruptDataError(
            f"{name}: {len(data)} images but {label_key!r} has shape {labels.shape}"
        )
    # Stored as (count, channel, row, column); s4tf images are NHWC.
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels.astype(np.int32)


def _read_members(members: list[str]) -> tuple[Callable[[Path], dict], Callable[[Path], dict]]:
    """Loaders returning ``{member: unpickled dict}`` from the archive or its folder."""

    def from_archive(path: Path) -> dict:
        raw = {}
        try:
            with gzip.open(path, "rb") as stream:
                # Stream mode: one sequential decompression, nothing extracted to disk.
                with tarfile.open(fileobj=stream, mode="r|") as archive:
                    for info in archive:
                        name = info.name.removeprefix("./")
                        if name in members and info.isfile():
                            raw[name] = archive.extractfile(info).read()
                # Tar stops at its end marker; reading on to the end of the gzip
                # stream checks its CRC and length, so a cut or damaged tail is
                # caught even when every member was readable.
                while stream.read(1 << 20):
                    pass
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as error:
            raise CorruptDataError(f"{path.name} is not a complete tar.gz ({error})") from error
        for member in members:
            if member not in raw:
                raise CorruptDataError(f"{path.name} has no file {member}")
        return {member: _unpickle(raw[member], member) for member in members}

    def from_folder(folder: Path) -> dict:
        found = {}
        for member in members:
            file = folder.parent / member
            if not file.is_file():
                raise CorruptDataError(f"{folder} has no file {file.name}")
            found[member] = _unpickle(file.read_bytes(), member)
        return found

    return from_archive, from_folder


_CIFAR_PAGE = "https://www.cs.toronto.edu/~kriz/"

_COMMON_DOC = """
    root : path-like or None
        The directory holding ``{archive}`` or its extracted ``{folder}/``.
        Default: ``$S4TF_DATA_DIR/{directory}`` (``S4TF_DATA_DIR`` defaults to
        ``~/.cache/s4tf``).
    download : bool
        Download the archive when missing or corrupt (SHA-256 verified).
    normalize : bool or (mean, std)
        ``False`` (default): images scaled to [0, 1]. ``True``: then
        standardised per channel by the training set's mean and standard
        deviation ({statistics}). A ``(mean, std)`` pair: standardised by those.
    seed : int or None
        Seeds the training shuffle (see :class:`Batches`).
    drop_remainder : bool
        Skip the last, smaller training batch.
    prefetch : bool
        Prepare the next batch in a background thread.
"""


class CIFAR10(Dataset):
    __doc__ = (
        """CIFAR-10: 50,000 training and 10,000 validation 32x32 colour images, 10 classes.

    Images are (32, 32, 3) float32 in [0, 1]; the validation split is the
    official test batch.

    Parameters
    ----------
    batch_size : int
        Examples per batch."""
        + _COMMON_DOC.format(
            archive="cifar-10-python.tar.gz",
            folder="cifar-10-batches-py",
            directory="cifar10",
            statistics="about (0.4914, 0.4822, 0.4465) and (0.2470, 0.2435, 0.2616)",
        )
        + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> cifar = datasets.CIFAR10(batch_size=128, normalize=True)   # doctest: +SKIP
    >>> cifar.class_names[:2]                                      # doctest: +SKIP
    ('airplane', 'automobile')
"""
    )

    def __init__(
        self,
        batch_size: int = 128,
        root: str | os.PathLike | None = None,
        download: bool = True,
        *,
        normalize: Normalize = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
    ):
        folder = "cifar-10-batches-py"
        training = [f"{folder}/data_batch_{i}" for i in range(1, 6)]
        test, meta = f"{folder}/test_batch", f"{folder}/batches.meta"
        directory = data_directory("cifar10", root)
        from_archive, from_folder = _read_members([*training, test, meta])
        remote = RemoteFile(
            "cifar-10-python.tar.gz",
            (_CIFAR_PAGE + "cifar-10-python.tar.gz",),
            "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
            170498071,
        )
        batches = obtain(
            remote, directory, from_archive, download=download, dataset="CIFAR10",
            alternatives=[(directory / folder, from_folder)],
        )
        parts = [_images_and_labels(batches[m], "labels", m) for m in training]
        names = _field(batches[meta], "label_names", meta)
        _in_memory(
            self,
            training=(
                np.concatenate([images for images, _ in parts]),
                np.concatenate([labels for _, labels in parts]),
            ),
            validation=_images_and_labels(batches[test], "labels", test),
            maximum=255,
            class_names=[_text(name) for name in names],
            batch_size=batch_size,
            normalize=normalize,
            seed=seed,
            drop_remainder=drop_remainder,
            prefetch=prefetch,
        )


class CIFAR100(Dataset):
    __doc__ = (
        """CIFAR-100: 50,000 training and 10,000 validation 32x32 colour images, 100 classes.

    Each image has a fine label (100 classes) and a coarse one (20
    superclasses); ``label_mode`` picks which the batches carry.

    Parameters
    ----------
    batch_size : int
        Examples per batch.
    label_mode : {"fine", "coarse"}
        Which labels to use."""
        + _COMMON_DOC.format(
            archive="cifar-100-python.tar.gz",
            folder="cifar-100-python",
            directory="cifar100",
            statistics="about (0.5071, 0.4865, 0.4409) and (0.2673, 0.2564, 0.2762)",
        )
        + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> cifar = datasets.CIFAR100(label_mode="coarse")     # doctest: +SKIP
    >>> cifar.num_classes                                  # doctest: +SKIP
    20
"""
    )

    def __init__(
        self,
        batch_size: int = 128,
        root: str | os.PathLike | None = None,
        download: bool = True,
        *,
        label_mode: str = "fine",
        normalize: Normalize = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
    ):
        if label_mode not in ("fine", "coarse"):
            raise ValueError(
                f"CIFAR100: label_mode must be 'fine' (100 classes) or 'coarse' "
                f"(20 superclasses); received label_mode={label_mode!r}."
            )
        folder = "cifar-100-python"
        train, test, meta = f"{folder}/train", f"{folder}/test", f"{folder}/meta"
        directory = data_directory("cifar100", root)
        from_archive, from_folder = _read_members([train, test, meta])
        remote = RemoteFile(
            "cifar-100-python.tar.gz",
            (_CIFAR_PAGE + "cifar-100-python.tar.gz",),
            "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
            169001437,
        )
        batches = obtain(
            remote, directory, from_archive, download=download, dataset="CIFAR100",
            alternatives=[(directory / folder, from_folder)],
        )
        label_key = f"{label_mode}_labels"
        names = _field(batches[meta], f"{label_mode}_label_names", meta)
        _in_memory(
            self,
            training=_images_and_labels(batches[train], label_key, train),
            validation=_images_and_labels(batches[test], label_key, test),
            maximum=255,
            class_names=[_text(name) for name in names],
            batch_size=batch_size,
            normalize=normalize,
            seed=seed,
            drop_remainder=drop_remainder,
            prefetch=prefetch,
        )


def _text(name) -> str:
    return name.decode("utf-8") if isinstance(name, bytes) else str(name)
