"""Reading compressed data set files, where any damage becomes a :class:`CorruptDataError`.

Data sets ship as ``.gz`` files (MNIST's IDX files) and ``.tar.gz`` archives
(CIFAR, Imagenette). Both are read here, as a stream, so that a truncated or
damaged file is reported the same way, and is therefore re-fetched by
:func:`~s4tf.datasets.download.obtain`, whichever data set it belongs to.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from .download import CorruptDataError

__all__ = ["open_tar_gz", "read_maybe_gzip"]

# What Python's gzip module raises on a file that is cut short or damaged.
_GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)
_CHUNK = 1 << 20


def read_maybe_gzip(path: str | os.PathLike) -> bytes:
    """The bytes of ``path``, decompressed when its name ends in ``.gz``.

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    bytes
        The (decompressed) contents.

    Raises
    ------
    CorruptDataError
        A ``.gz`` file is truncated or not gzip (the gzip CRC and length are
        checked).

    Examples
    --------
    >>> import gzip, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "hello.gz")
    >>> with gzip.open(path, "wb") as file:
    ...     _ = file.write(b"hello")
    >>> read_maybe_gzip(path)
    b'hello'
    """
    path = Path(path)
    if not path.name.endswith(".gz"):
        return path.read_bytes()
    try:
        with gzip.open(path, "rb") as file:
            return file.read()
    except _GZIP_ERRORS as error:
        raise CorruptDataError(f"{path.name} is not a complete gzip file ({error})") from error


@contextlib.contextmanager
def open_tar_gz(path: str | os.PathLike) -> Iterator[tarfile.TarFile]:
    """Stream a ``.tar.gz`` archive: one sequential decompression, nothing extracted.

    The archive is opened in tar's stream mode (``"r|"``), so members must be
    read in order, as they are iterated. After the ``with`` block the rest of
    the gzip stream is read too: tar stops at its end marker, and only reading
    on to the end checks the gzip CRC and length, so a cut or damaged tail is
    caught even when every member was readable.

    Parameters
    ----------
    path : path-like
        The archive.

    Yields
    ------
    tarfile.TarFile
        The archive, for iteration (``for info in archive``) and
        ``extractfile`` / ``extractall``.

    Raises
    ------
    CorruptDataError
        The archive is truncated, not gzip or not tar, whether this shows while
        opening it, while reading members in the block, or at its end.

    Examples
    --------
    >>> import io, os, tarfile, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "one.tar.gz")
    >>> with tarfile.open(path, "w:gz") as tar:
    ...     info = tarfile.TarInfo("a.txt"); info.size = 2
    ...     tar.addfile(info, io.BytesIO(b"hi"))
    >>> with open_tar_gz(path) as archive:
    ...     [(info.name, archive.extractfile(info).read()) for info in archive]
    [('a.txt', b'hi')]
    """
    path = Path(path)
    try:
        with gzip.open(path, "rb") as stream:
            with tarfile.open(fileobj=stream, mode="r|") as archive:
                yield archive
            while stream.read(_CHUNK):
                pass
    except (tarfile.TarError, *_GZIP_ERRORS) as error:
        raise CorruptDataError(f"{path.name} is not a complete tar.gz ({error})") from error
