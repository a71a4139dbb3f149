"""Writers of small files in the real data set formats, and a fake network.

The writers are independent of the loaders (struct, tarfile, pickle, pillow),
so a loader that misreads a format fails the round trip.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import pickle
import struct
import tarfile
import urllib.error
from pathlib import Path

import numpy as np
from PIL import Image

MNIST_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file: magic (0, 0, type, rank), big-endian dims, big-endian data."""
    codes = {"u1": 0x08, "i1": 0x09, "i2": 0x0B, "i4": 0x0C, "f4": 0x0D, "f8": 0x0E}
    code = codes[array.dtype.str[1:]]
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_mnist(directory: Path, train: int = 50, test: int = 20, seed: int = 0) -> dict:
    """Write the four MNIST files; return the arrays written."""
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte.gz": rng.integers(0, 256, (train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte.gz": rng.integers(0, 10, train, dtype=np.uint8),
        "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte.gz": rng.integers(0, 10, test, dtype=np.uint8),
    }
    directory.mkdir(parents=True, exist_ok=True)
    for name, array in arrays.items():
        (directory / name).write_bytes(gzip.compress(idx_bytes(array), mtime=0))
    return arrays


def _py2_style_pickle(value) -> bytes:
    # Protocol 2 with bytes keys: the layout of the official (Python 2) files.
    return pickle.dumps(value, protocol=2)


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()


def cifar10_members(per_batch: int = 6, test: int = 8, seed: int = 0) -> tuple[dict, dict]:
    """CIFAR-10 archive members (name -> bytes) and the arrays they hold."""
    rng = np.random.default_rng(seed)
    members, arrays = {}, {}
    names = [b"airplane", b"automobile", b"bird", b"cat", b"deer",
             b"dog", b"frog", b"horse", b"ship", b"truck"]
    for name, count in [*[(f"data_batch_{i}", per_batch) for i in range(1, 6)],
                        ("test_batch", test)]:
        data = rng.integers(0, 256, (count, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, count).tolist()
        arrays[name] = (data, labels)
        members[f"cifar-10-batches-py/{name}"] = _py2_style_pickle(
            {b"batch_label": name.encode(), b"labels": labels, b"data": data,
             b"filenames": [b"x.png"] * count}
        )
    members["cifar-10-batches-py/batches.meta"] = _py2_style_pickle(
        {b"label_names": names, b"num_cases_per_batch": per_batch, b"num_vis": 3072}
    )
    return members, arrays


def cifar100_members(train: int = 12, test: int = 5, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    members, arrays = {}, {}
    for name, count in (("train", train), ("test", test)):
        data = rng.integers(0, 256, (count, 3072), dtype=np.uint8)
        fine = rng.integers(0, 100, count).tolist()
        coarse = rng.integers(0, 20, count).tolist()
        arrays[name] = (data, fine, coarse)
        members[f"cifar-100-python/{name}"] = _py2_style_pickle(
            {b"filenames": [b"x.png"] * count, b"batch_label": name.encode(),
             b"fine_labels": fine, b"coarse_labels": coarse, b"data": data}
        )
    members["cifar-100-python/meta"] = _py2_style_pickle(
        {b"fine_label_names": [f"fine{i}".encode() for i in range(100)],
         b"coarse_label_names": [f"coarse{i}".encode() for i in range(20)]}
    )
    return members, arrays


def write_tar_gz(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_tar_gz(members))
    return path


def write_members(directory: Path, members: dict[str, bytes]) -> None:
    """Write archive members as an extracted folder tree."""
    for name, payload in members.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(payload)


COLOURS = {"blue": (0, 0, 255), "green": (0, 255, 0), "red": (255, 0, 0)}


def write_image(path: Path, colour: tuple[int, int, int], size=(12, 10)) -> None:
    """A solid-colour image; ``size`` is (width, height) as pillow counts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)


def png_bytes(colour: tuple[int, int, int], size=(12, 10)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


class FakeNetwork:
    """Stands in for ``download._open_url``: serves bytes per URL, records calls."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.failures: dict[str, BaseException] = {}
        self.announce: dict[str, int] = {}
        self.calls: list[str] = []

    def serve(self, url: str, payload: bytes, announce: int | None = None) -> str:
        self.files[url] = payload
        if announce is not None:
            self.announce[url] = announce
        return hashlib.sha256(payload).hexdigest()

    def __call__(self, url: str):
        self.calls.append(url)
        if url in self.failures:
            raise self.failures[url]
        if url not in self.files:
            raise urllib.error.URLError("network unreachable (fake)")
        payload = self.files[url]
        return io.BytesIO(payload), self.announce.get(url, len(payload))
