"""Finding, downloading and verifying the files a data set is made of.

A data set names its files as :class:`RemoteFile` records (the original file
name, mirrors, and the published SHA-256). :func:`obtain` looks for the file in
the data set's directory, parses it, and downloads it only when it is missing
or corrupt and downloading is allowed. Downloads stream through a tqdm bar into
a temporary file in the same directory, are checked against their size and
SHA-256, and are renamed into place only when complete, so an interrupted
download never leaves a file that looks finished.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.request
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

from tqdm import tqdm

__all__ = [
    "CorruptDataError",
    "MissingDataError",
    "RemoteFile",
    "data_directory",
    "obtain",
]

T = TypeVar("T")

_CHUNK = 1 << 20
_TIMEOUT_SECONDS = 30


class MissingDataError(FileNotFoundError):
    """A data set file is not on disk and could not be downloaded.

    The message names the file, where to download it from and the directory to
    put it in.
    """


class CorruptDataError(ValueError):
    """A data set file is truncated, corrupt or not in the expected format."""


@dataclass(frozen=True)
class RemoteFile:
    """A file of a data set, as its authors publish it.

    Parameters
    ----------
    name : str
        The original file name; the file is stored under this name.
    urls : tuple of str
        Where to download it, tried in order (the first is the official
        source or the mirror whose checksum was recorded).
    sha256 : str or None
        The published SHA-256 of the file. ``None`` only where no checksum is
        known for sure; the file is then trusted after its format check alone.
    size : int or None
        The size in bytes, when known, so that truncation gets a clear message.

    Examples
    --------
    >>> f = RemoteFile("t10k-labels-idx1-ubyte.gz",
    ...                ("https://example.org/t10k-labels-idx1-ubyte.gz",), None)
    >>> f.name
    't10k-labels-idx1-ubyte.gz'
    """

    name: str
    urls: tuple[str, ...]
    sha256: str | None
    size: int | None = None


def data_directory(name: str, root: str | os.PathLike | None = None) -> Path:
    """Return the directory that holds a data set's files.

    Parameters
    ----------
    name : str
        The data set's directory name under the cache (e.g. ``"mnist"``).
    root : path-like or None
        An explicit directory; used as it is when given.

    Returns
    -------
    pathlib.Path
        ``root`` if given, else ``$S4TF_DATA_DIR/<name>`` where
        ``S4TF_DATA_DIR`` defaults to ``~/.cache/s4tf``. The directory is not
        created here: only a download creates it.

    Examples
    --------
    >>> data_directory("mnist", root="/data/mnist")
    PosixPath('/data/mnist')
    """
    if root is not None:
        return Path(root).expanduser()
    # Read the variable on every call, not at import, so that setting it in a
    # running program (or a test) takes effect.
    base = os.environ.get("S4TF_DATA_DIR") or os.path.join("~", ".cache", "s4tf")
    return Path(base).expanduser() / name


def obtain(
    remote: RemoteFile,
    directory: Path,
    load: Callable[[Path], T],
    *,
    download: bool,
    dataset: str,
    alternatives: Sequence[tuple[Path, Callable[[Path], T]]] = (),
) -> T:
    """Load a data set file, downloading it first if it is missing or corrupt.

    Parameters
    ----------
    remote : RemoteFile
        The file, its mirrors and checksum.
    directory : pathlib.Path
        Where the file lives (see :func:`data_directory`).
    load : callable
        Parses the file at a path; raises :class:`CorruptDataError` when the
        file is unreadable, so that it is re-fetched rather than used.
    download : bool
        Whether a missing or corrupt file may be downloaded.
    dataset : str
        The data set's name, for messages.
    alternatives : sequence of (path, load) pairs
        Other forms of the same data tried first when they exist (e.g. an
        extracted archive, a decompressed file), each with its own parser.

    Returns
    -------
    The value ``load`` returned.

    Raises
    ------
    MissingDataError
        The file is absent and could not be downloaded.
    CorruptDataError
        The file is unreadable and could not be replaced.

    Examples
    --------
    >>> import gzip
    >>> labels = obtain(remote, Path("/data/mnist"), read_labels,   # doctest: +SKIP
    ...                 download=False, dataset="MNIST")
    """
    target = directory / remote.name
    for path, load_alternative in alternatives:
        if not path.exists():
            continue
        try:
            return load_alternative(path)
        except CorruptDataError as error:
            if not download and not target.exists():
                raise CorruptDataError(
                    f"{dataset}: {path} is unusable: {error}\n"
                    f"{_where_to_get_it(remote, directory)}"
                ) from error
            warnings.warn(
                f"{dataset}: ignoring {path}, which is unusable ({error}); using "
                f"{remote.name} instead.",
                RuntimeWarning,
                stacklevel=3,
            )

    if target.exists():
        try:
            return load(target)
        except CorruptDataError as error:
            if not download:
                raise CorruptDataError(
                    f"{dataset}: {target} is corrupt or truncated: {error}\n"
                    f"Delete it and run again with download=True, or replace it by hand.\n"
                    f"{_where_to_get_it(remote, directory)}"
                ) from error
            warnings.warn(
                f"{dataset}: {target} is corrupt or truncated ({error}); downloading it again.",
                RuntimeWarning,
                stacklevel=3,
            )
    elif not download:
        raise MissingDataError(
            f"{dataset} needs the file {remote.name!r}, which is not in {directory} "
            f"(download=False, so it was not fetched).\n{_where_to_get_it(remote, directory)}"
        )

    fetch(remote, directory, dataset=dataset)
    try:
        return load(target)
    except CorruptDataError as error:
        raise CorruptDataError(
            f"{dataset}: the freshly downloaded {target} passed its checksum but cannot be "
            f"read: {error}. Please report this; meanwhile fetch the file by hand.\n"
            f"{_where_to_get_it(remote, directory)}"
        ) from error


def fetch(remote: RemoteFile, directory: Path, *, dataset: str) -> Path:
    """Download ``remote`` into ``directory``, trying each mirror in turn.

    The bytes stream into a temporary file in ``directory`` and are checked
    against the published size and SHA-256 before the file is renamed to its
    real name, so a reader never sees a partial file.

    Parameters
    ----------
    remote : RemoteFile
        What to download.
    directory : pathlib.Path
        Where to put it; created if needed.
    dataset : str
        The data set's name, for messages.

    Returns
    -------
    pathlib.Path
        The path of the complete, verified file.

    Raises
    ------
    MissingDataError
        No mirror could be reached (e.g. offline).
    CorruptDataError
        A mirror answered but its file failed the size or checksum check.

    Examples
    --------
    >>> fetch(remote, Path("/data/mnist"), dataset="MNIST")   # doctest: +SKIP
    PosixPath('/data/mnist/t10k-labels-idx1-ubyte.gz')
    """
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / remote.name
    network_failures: list[str] = []
    bad_files: list[str] = []
    for url in remote.urls:
        try:
            _download(url, remote, target)
            return target
        except CorruptDataError as error:
            bad_files.append(f"  {url}: {error}")
        except (OSError, http.client.HTTPException) as error:
            network_failures.append(f"  {url}: {type(error).__name__}: {error}")
    attempts = "\n".join(bad_files + network_failures)
    if bad_files:
        raise CorruptDataError(
            f"{dataset}: every download of {remote.name!r} failed its integrity check, "
            f"so nothing was written:\n{attempts}\n"
            f"Try again later (a transfer may have been cut), or fetch the file by hand.\n"
            f"{_where_to_get_it(remote, directory)}"
        )
    raise MissingDataError(
        f"{dataset} needs the file {remote.name!r}, which is not in {directory}, and "
        f"downloading it failed (are you offline?):\n{attempts}\n"
        f"{_where_to_get_it(remote, directory)}"
    )


def _open_url(url: str) -> tuple[BinaryIO, int | None]:
    """Open ``url`` for streaming; return the response and its announced length.

    Kept as the single point of contact with the network so that tests can
    replace it.
    """
    # Some hosts refuse urllib's default User-Agent.
    request = urllib.request.Request(url, headers={"User-Agent": "s4tf-datasets"})
    response = urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS)
    length = response.headers.get("Content-Length")
    return response, int(length) if length and length.isdigit() else None


def _download(url: str, remote: RemoteFile, target: Path) -> None:
    response, announced = _open_url(url)
    expected = remote.size if remote.size is not None else announced
    # The temporary file sits in the target's directory so that the final
    # os.replace is a rename within one file system, hence atomic.
    handle, temporary = tempfile.mkstemp(
        prefix=f".{remote.name}.", suffix=".part", dir=target.parent
    )
    try:
        digest = hashlib.sha256()
        received = 0
        with os.fdopen(handle, "wb") as out, response, tqdm(
            total=expected,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            desc=remote.name,
        ) as bar:
            while chunk := response.read(_CHUNK):
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                bar.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        if announced is not None and received != announced:
            raise CorruptDataError(
                f"the transfer stopped after {received} of {announced} bytes"
            )
        if remote.size is not None and received != remote.size:
            raise CorruptDataError(
                f"received {received} bytes, but the published file has {remote.size}"
            )
        actual = digest.hexdigest()
        if remote.sha256 is not None and actual != remote.sha256:
            raise CorruptDataError(
                f"its SHA-256 is {actual}, but the published SHA-256 is {remote.sha256}"
            )
        os.replace(temporary, target)
    except BaseException:
        # Never leave a partial download behind, whatever interrupted it.
        Path(temporary).unlink(missing_ok=True)
        raise


def _where_to_get_it(remote: RemoteFile, directory: Path) -> str:
    mirrors = "".join(f"\n    {url}" for url in remote.urls[1:])
    also = f"\n(or from a mirror:{mirrors})" if mirrors else ""
    return (
        f"Download it from\n    {remote.urls[0]}{also}\n"
        f"and put it, named exactly {remote.name!r}, in the directory\n"
        f"    {directory.resolve()}\n"
        f"(pass root= to use another directory, or set S4TF_DATA_DIR to move the cache)."
    )
