"""MNIST, Fashion-MNIST and Kuzushiji-MNIST: 28x28 grey images in IDX files.

All three ship the same four gzip-compressed IDX files under the same names;
only the source and the class names differ.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from .archives import read_maybe_gzip
from .dataset import _DownloadedDataset, _options_doc
from .download import CorruptDataError, RemoteFile, obtain

__all__ = ["FashionMNIST", "KuzushijiMNIST", "MNIST", "read_idx"]

# The IDX type codes (http://yann.lecun.com/exdb/mnist/, bottom of the page);
# multi-byte values are big-endian.
_IDX_TYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (optionally gzip-compressed) into a NumPy array.

    Parameters
    ----------
    path : path-like
        The file; a name ending in ``.gz`` is decompressed.

    Returns
    -------
    numpy.ndarray
        The array, with the shape and type the file's header declares (in
        native byte order).

    Raises
    ------
    CorruptDataError
        The file is truncated, not gzip, or its header and size disagree.

    Examples
    --------
    >>> import gzip, os, struct, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "labels-idx1-ubyte.gz")
    >>> with gzip.open(path, "wb") as file:   # magic: 0, 0, type uint8, 1 dimension
    ...     _ = file.write(bytes([0, 0, 0x08, 1]) + struct.pack(">I", 3) + bytes([7, 2, 1]))
    >>> read_idx(path)
    array([7, 2, 1], dtype=uint8)
    """
    return _parse_idx(read_maybe_gzip(path), Path(path).name)


def _parse_idx(raw: bytes, name: str) -> np.ndarray:
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise CorruptDataError(
            f"{name} does not start with an IDX magic number (two zero bytes, a type code, "
            f"the number of dimensions); it starts with {raw[:4].hex() or 'nothing'}"
        )
    dtype, rank = _IDX_TYPES[raw[2]], raw[3]
    header = 4 + 4 * rank
    if len(raw) < header:
        raise CorruptDataError(f"{name} ends inside its IDX header")
    shape = struct.unpack(f">{rank}I", raw[4:header])
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise CorruptDataError(
            f"{name} declares shape {shape} of {dtype.name}, i.e. {expected} bytes, "
            f"but holds {len(raw)} bytes"
        )
    array = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="), copy=False)


def _expect(array: np.ndarray, rank: int, name: str) -> np.ndarray:
    if array.ndim != rank or array.dtype != np.uint8:
        raise CorruptDataError(
            f"{name} holds a {array.dtype.name} array of shape {array.shape}; expected "
            f"{'images (count, height, width)' if rank == 3 else 'labels (count,)'} of uint8"
        )
    return array


class _IDXDataset(_DownloadedDataset):
    """The shared loader of the MNIST family (subclasses set the class attributes)."""

    _urls: tuple[str, ...]
    # file name -> (published SHA-256, size in bytes)
    _checksums: dict[str, tuple[str, int]]
    _class_names: tuple[str, ...]

    def _arrays(self, directory: Path, download: bool, verify: bool):
        splits = []
        for split in ("train", "t10k"):
            images = self._read(f"{split}-images-idx3-ubyte.gz", directory, download, verify, 3)
            labels = self._read(f"{split}-labels-idx1-ubyte.gz", directory, download, verify, 1)
            if len(images) != len(labels):
                raise CorruptDataError(
                    f"{type(self).__name__}: {split}-images holds {len(images)} images but "
                    f"{split}-labels holds {len(labels)} labels; the two files in {directory} "
                    f"come from different data sets. Replace them with a matching pair."
                )
            splits.append((images[..., np.newaxis], labels))
        return splits[0], splits[1], self._class_names

    def _read(self, name: str, directory: Path, download: bool, verify: bool,
              rank: int) -> np.ndarray:
        sha256, size = self._checksums[name]
        remote = RemoteFile(name, tuple(url + name for url in self._urls), sha256, size)
        load = lambda path: _expect(read_idx(path), rank, path.name)
        # A hand-decompressed copy (the name without .gz) is read as it is.
        plain = directory / name.removesuffix(".gz")
        return obtain(
            remote,
            directory,
            load,
            download=download,
            dataset=type(self).__name__,
            alternatives=[(plain, load)],
            verify=verify,
        )


_PARAMETERS_DOC = """
    Parameters
    ----------
    batch_size : int
        Examples per batch.
    root : path-like or None
        The directory holding the four files under their original names
        (``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
        ``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz``; unzipped
        copies without ``.gz`` also work). Default:
        ``$S4TF_DATA_DIR/{directory}`` (``S4TF_DATA_DIR`` defaults to
        ``~/.cache/s4tf``).
    download : bool
        Download missing or corrupt files (SHA-256 verified).
    verify : bool
        Check the ``.gz`` files found in ``root`` against their published
        SHA-256 and refuse one that differs. ``False`` accepts such a file
        (e.g. one you re-compressed); unzipped copies are never checked.
"""


def _parameters_doc(directory: str, statistics: str) -> str:
    return _PARAMETERS_DOC.format(directory=directory) + _options_doc(
        standard=f"by the training set's mean and standard deviation ({statistics})"
    )


class MNIST(_IDXDataset):
    __doc__ = (
        """The MNIST handwritten digits: 60,000 training and 10,000 validation images.

    Images are 28x28x1 float32 in [0, 1]; labels are the digits 0-9 (int32).
    The validation split is MNIST's official test set.
"""
        + _parameters_doc("mnist", "0.1307 and 0.3081")
        + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> mnist = datasets.MNIST(batch_size=128)              # doctest: +SKIP
    >>> for images, labels in mnist.training:               # doctest: +SKIP
    ...     assert images.shape[1:] == (28, 28, 1)
"""
    )

    _directory = "mnist"
    _urls = (
        # The checksums were recorded from this mirror (TensorFlow Datasets);
        # the others serve the same bytes.
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    )
    _checksums = {
        "train-images-idx3-ubyte.gz": (
            "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", 9912422),
        "train-labels-idx1-ubyte.gz": (
            "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28881),
        "t10k-images-idx3-ubyte.gz": (
            "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1648877),
        "t10k-labels-idx1-ubyte.gz": (
            "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4542),
    }
    _class_names = tuple(str(digit) for digit in range(10))


class FashionMNIST(_IDXDataset):
    __doc__ = (
        """Zalando's Fashion-MNIST: 28x28 grey images of 10 kinds of clothing.

    60,000 training and 10,000 validation images, in MNIST's file format.
"""
        + _parameters_doc("fashion_mnist", "0.2860 and 0.3530")
        + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> fashion = datasets.FashionMNIST(batch_size=64)      # doctest: +SKIP
    >>> fashion.class_names[9]                              # doctest: +SKIP
    'ankle boot'
"""
    )

    _directory = "fashion_mnist"
    _urls = (
        "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
    )
    _checksums = {
        "train-images-idx3-ubyte.gz": (
            "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", 26421880),
        "train-labels-idx1-ubyte.gz": (
            "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", 29515),
        "t10k-images-idx3-ubyte.gz": (
            "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", 4422102),
        "t10k-labels-idx1-ubyte.gz": (
            "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", 5148),
    }
    _class_names = (
        "t-shirt/top", "trouser", "pullover", "dress", "coat",
        "sandal", "shirt", "sneaker", "bag", "ankle boot",
    )


class KuzushijiMNIST(_IDXDataset):
    __doc__ = (
        """Kuzushiji-MNIST: 28x28 grey images of 10 cursive Japanese (hiragana) characters.

    60,000 training and 10,000 validation images, in MNIST's file format.
    Class names are the romanised syllables (``"o"``, ``"ki"``, ...).
"""
        + _parameters_doc("kuzushiji_mnist", "computed exactly from the training files")
        + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> kmnist = datasets.KuzushijiMNIST(batch_size=64)     # doctest: +SKIP
    >>> kmnist.class_names[:3]                              # doctest: +SKIP
    ('o', 'ki', 'su')
"""
    )

    _directory = "kuzushiji_mnist"
    _urls = ("http://codh.rois.ac.jp/kmnist/dataset/kmnist/",)
    _checksums = {
        "train-images-idx3-ubyte.gz": (
            "51467d22d8cc72929e2a028a0428f2086b092bb31cfb79c69cc0a90ce135fde4", 18165135),
        "train-labels-idx1-ubyte.gz": (
            "e38f9ebcd0f3ebcdec7fc8eabdcdaef93bb0df8ea12bee65224341c8183d8e17", 29497),
        "t10k-images-idx3-ubyte.gz": (
            "edd7a857845ad6bb1d0ba43fe7e794d164fe2dce499a1694695a792adfac43c5", 3041136),
        "t10k-labels-idx1-ubyte.gz": (
            "20bb9a0ef54c7db3efc55a92eef5582c109615df22683c380526788f98e42a1c", 5120),
    }
    _class_names = ("o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo")
