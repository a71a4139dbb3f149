"""CIFAR-10 and CIFAR-100: 32x32 colour images, from the "python version" archives.

The archives hold pickled dictionaries. They are read with an unpickler that
accepts only the few NumPy names an array needs, so a tampered file cannot run
code; and they are read straight from the ``.tar.gz`` (no extraction needed),
or from the extracted folder when it is there.
"""

from __future__ import annotations

import codecs
import io
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .archives import open_tar_gz
from .dataset import Normalize, _DownloadedDataset, _options_doc
from .download import CorruptDataError, RemoteFile, obtain

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
        with open_tar_gz(path) as archive:
            for info in archive:
                name = info.name.removeprefix("./")
                if name in members and info.isfile():
                    raw[name] = archive.extractfile(info).read()
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
    verify : bool
        Check an archive found in ``root`` against its published SHA-256 and
        refuse one that differs. ``False`` accepts such an archive; an
        extracted folder is never checked.
"""


def _parameters_doc(cls: type[_CIFAR], statistics: str) -> str:
    return _COMMON_DOC.format(
        archive=cls._remote.name, folder=cls._folder, directory=cls._directory
    ) + _options_doc(
        standard=f"per channel by the training set's mean and standard deviation ({statistics})"
    )


class _CIFAR(_DownloadedDataset):
    """The shared loader of CIFAR-10 and CIFAR-100 (subclasses set the class attributes)."""

    _remote: RemoteFile
    # The archive's top folder, also the name of the extracted folder.
    _folder: str
    # Members of _folder: the training batches, the test batch, the class names.
    _training: tuple[str, ...]
    _test: str
    _meta: str
    _label_key, _names_key = "labels", "label_names"

    def _arrays(self, directory: Path, download: bool, verify: bool):
        members = [f"{self._folder}/{m}" for m in (*self._training, self._test, self._meta)]
        *training, test, meta = members
        from_archive, from_folder = _read_members(members)
        batches = obtain(
            self._remote, directory, from_archive, download=download,
            dataset=type(self).__name__,
            alternatives=[(directory / self._folder, from_folder)],
            verify=verify,
        )
        parts = [_images_and_labels(batches[m], self._label_key, m) for m in training]
        # One training file (CIFAR-100) is used as it is: no 150 MB copy.
        training_arrays = parts[0] if len(parts) == 1 else (
            np.concatenate([images for images, _ in parts]),
            np.concatenate([labels for _, labels in parts]),
        )
        names = _field(batches[meta], self._names_key, meta)
        return (
            training_arrays,
            _images_and_labels(batches[test], self._label_key, test),
            [_text(name) for name in names],
        )


class CIFAR10(_CIFAR):
    _remote = RemoteFile(
        "cifar-10-python.tar.gz",
        (_CIFAR_PAGE + "cifar-10-python.tar.gz",),
        "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
        170498071,
    )
    _folder = "cifar-10-batches-py"
    _directory = "cifar10"
    _training = tuple(f"data_batch_{i}" for i in range(1, 6))
    _test, _meta = "test_batch", "batches.meta"


CIFAR10.__doc__ = (
    """CIFAR-10: 50,000 training and 10,000 validation 32x32 colour images, 10 classes.

    Images are (32, 32, 3) float32 in [0, 1]; the validation split is the
    official test batch.

    Parameters
    ----------
    batch_size : int
        Examples per batch."""
    + _parameters_doc(CIFAR10, "about (0.4914, 0.4822, 0.4465) and (0.2470, 0.2435, 0.2616)")
    + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> cifar = datasets.CIFAR10(batch_size=128, normalize=True)   # doctest: +SKIP
    >>> cifar.class_names[:2]                                      # doctest: +SKIP
    ('airplane', 'automobile')
"""
)


class CIFAR100(_CIFAR):
    _remote = RemoteFile(
        "cifar-100-python.tar.gz",
        (_CIFAR_PAGE + "cifar-100-python.tar.gz",),
        "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
        169001437,
    )
    _folder = "cifar-100-python"
    _directory = "cifar100"
    _training, _test, _meta = ("train",), "test", "meta"

    def __init__(
        self,
        batch_size: int = 128,
        root: str | os.PathLike | None = None,
        download: bool = True,
        *,
        verify: bool = True,
        label_mode: str = "fine",
        normalize: Normalize = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
        transform=None,
        validation_transform=None,
    ):
        if label_mode not in ("fine", "coarse"):
            raise ValueError(
                f"CIFAR100: label_mode must be 'fine' (100 classes) or 'coarse' "
                f"(20 superclasses); received label_mode={label_mode!r}."
            )
        self._label_key = f"{label_mode}_labels"
        self._names_key = f"{label_mode}_label_names"
        super().__init__(batch_size, root, download, verify=verify, normalize=normalize,
                         seed=seed, drop_remainder=drop_remainder, prefetch=prefetch,
                         transform=transform, validation_transform=validation_transform)


CIFAR100.__doc__ = (
    """CIFAR-100: 50,000 training and 10,000 validation 32x32 colour images, 100 classes.

    Each image has a fine label (100 classes) and a coarse one (20
    superclasses); ``label_mode`` picks which the batches carry.

    Parameters
    ----------
    batch_size : int
        Examples per batch.
    label_mode : {"fine", "coarse"}
        Which labels to use."""
    + _parameters_doc(CIFAR100, "about (0.5071, 0.4865, 0.4409) and (0.2673, 0.2564, 0.2762)")
    + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> cifar = datasets.CIFAR100(label_mode="coarse")     # doctest: +SKIP
    >>> cifar.num_classes                                  # doctest: +SKIP
    20
"""
)


def _text(name) -> str:
    return name.decode("utf-8") if isinstance(name, bytes) else str(name)
