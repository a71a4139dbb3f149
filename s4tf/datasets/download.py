"""Finding, downloading and verifying the files a data set is made of.

A data set names its files as :class:`RemoteFile` records (the original file
name, mirrors, and the published SHA-256). :func:`obtain` looks for the file in
the data set's directory, checks it against the published SHA-256, parses it,
and downloads it only when it is missing or damaged and downloading is allowed.
A file that parses but is not the published one (placed by hand) is refused,
never replaced, unless the caller passes ``verify=False``. Downloads stream
through a tqdm bar into a temporary file in the same directory, are checked
against their size and SHA-256, and are renamed into place only when complete,
so an interrupted download never leaves a file that looks finished.

Directories are checked before use: one that is a file, cannot be read or
cannot be written (when a download needs to) gives an error naming the path
and where it came from (``S4TF_DATA_DIR``, ``root=`` or the default).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import stat
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
_DEFAULT_ROOT = os.path.join("~", ".cache", "s4tf")


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

    Raises
    ------
    NotADirectoryError
        The path (or a folder above it) is a file; the message names
        ``S4TF_DATA_DIR`` or ``root=``, whichever chose it.
    PermissionError
        The directory exists but cannot be read.

    Examples
    --------
    >>> data_directory("mnist", root="/data/mnist")
    PosixPath('/data/mnist')
    """
    if root is not None:
        directory = Path(root).expanduser()
        _check_readable(directory, f"root={os.fspath(root)!r}")
        return directory
    # Read the variable on every call, not at import, so that setting it in a
    # running program (or a test) takes effect.
    setting = os.environ.get("S4TF_DATA_DIR")
    directory = Path(setting or _DEFAULT_ROOT).expanduser() / name
    _check_readable(directory, _source(directory))
    return directory


def _source(directory: Path) -> str:
    """What chose ``directory``, for messages: the variable, the default or ``root=``."""
    setting = os.environ.get("S4TF_DATA_DIR")
    base = Path(setting or _DEFAULT_ROOT).expanduser()
    if directory == base or base in directory.parents:
        return f"S4TF_DATA_DIR={setting!r}" if setting else (
            f"the default data directory {_DEFAULT_ROOT} (S4TF_DATA_DIR is not set)")
    return f"root={str(directory)!r}"


def _fix(source: str) -> str:
    if source.startswith("root="):
        return "Pass root= a directory you can read and write (it is created if missing)."
    return ("Set S4TF_DATA_DIR to a directory you can read and write (it is created if "
            "missing), or pass root= to the data set.")


def _check_readable(directory: Path, source: str) -> None:
    """Raise unless ``directory`` is, or can become, a readable directory."""
    existing = directory
    while True:
        try:
            mode = os.stat(existing).st_mode
            break
        except (FileNotFoundError, NotADirectoryError):
            # Not there yet (a download creates it), or a folder above it is a
            # file: look further up for what exists.
            if existing.parent == existing:
                return
            existing = existing.parent
        except PermissionError as error:
            raise PermissionError(
                f"{source}: cannot look into {existing.parent} ({error.strerror}). "
                f"{_fix(source)}"
            ) from None
    if not stat.S_ISDIR(mode):
        raise NotADirectoryError(
            f"{source}: {existing} is a file, not a directory, so data sets cannot be stored "
            f"under it. {_fix(source)}"
        )
    if existing == directory:
        try:
            with os.scandir(directory) as entries:
                next(entries, None)
        except PermissionError as error:
            raise PermissionError(
                f"{source}: the directory {directory} cannot be read ({error.strerror}). "
                f"{_fix(source)}"
            ) from None


def require_writable(directory: Path, doing: str) -> None:
    """Create ``directory`` if needed and make sure files can be created in it.

    ``doing`` completes the message: what the write was for. The check creates
    (and removes) a temporary file, the only test that holds for every cause:
    permission bits, read-only mounts, access-control lists, quotas.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        source = _source(directory)
        raise PermissionError(
            f"cannot {doing}: {source}: {directory} is not a writable directory "
            f"({error.strerror or error}). {_fix(source)}"
        ) from None


def obtain(
    remote: RemoteFile,
    directory: Path,
    load: Callable[[Path], T],
    *,
    download: bool,
    dataset: str,
    alternatives: Sequence[tuple[Path, Callable[[Path], T]]] = (),
    verify: bool = True,
    check: Callable[[Path], object] | None = None,
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
        No checksum is published for them: only their parser checks them.
    verify : bool
        Check a file already on disk against the published SHA-256 before
        using it. One that differs and that the parser rejects is damaged
        (fetched again when ``download`` allows); one that parses is someone's
        own file (a re-compressed copy, another version): it is refused, never
        replaced. ``False`` accepts it. Downloads are verified either way.
    check : callable or None
        Tells a damaged file from a different one: raises
        :class:`CorruptDataError` for a damaged file, with no side effects.
        Default: ``load`` (give one when ``load`` writes, e.g. extracts).

    Returns
    -------
    The value ``load`` returned.

    Raises
    ------
    MissingDataError
        The file is absent and could not be downloaded.
    CorruptDataError
        The file is unreadable and could not be replaced (also when it was
        there but the download of a fresh copy failed), or it is not the
        published file and ``verify`` is true.
    PermissionError
        A download is needed but the directory is not writable.

    Examples
    --------
    >>> import gzip
    >>> labels = obtain(remote, Path("/data/mnist"), read_labels,   # doctest: +SKIP
    ...                 download=False, dataset="MNIST")
    """
    _check_readable(directory, _source(directory))
    target = directory / remote.name
    unusable = None  # why what is on disk was not used, should the download fail too
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
            unusable = f"{path} is unusable ({error})"

    if target.exists():
        try:
            return _load_verified(remote, target, load, check or load, dataset, verify)
        except _NotPublishedError:
            raise
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
            unusable = f"{target} is corrupt or truncated ({error})"
    elif not download:
        raise MissingDataError(
            f"{dataset} needs the file {remote.name!r}, which is not in {directory} "
            f"(download=False, so it was not fetched).\n{_where_to_get_it(remote, directory)}"
        )

    fetch(remote, directory, dataset=dataset, replacing=unusable)
    try:
        return load(target)
    except CorruptDataError as error:
        raise CorruptDataError(
            f"{dataset}: the freshly downloaded {target} passed its checksum but cannot be "
            f"read: {error}. Please report this; meanwhile fetch the file by hand.\n"
            f"{_where_to_get_it(remote, directory)}"
        ) from error


class _NotPublishedError(CorruptDataError):
    """A file on disk that may be the user's own: refused, never fetched over."""


def _load_verified(remote: RemoteFile, target: Path, load: Callable[[Path], T],
                   check: Callable[[Path], object], dataset: str, verify: bool) -> T:
    """``load(target)`` once ``target`` has passed its SHA-256 (when ``verify``).

    Raises :class:`CorruptDataError` for a damaged file (the caller fetches it
    again when it may) and refuses a readable file that differs from the
    published one: it may be the user's own, so it is never replaced.
    """
    actual = _sha256(target) if verify and remote.sha256 is not None else remote.sha256
    if actual == remote.sha256:
        return load(target)
    check(target)  # a damaged file raises CorruptDataError here
    raise _NotPublishedError(
        f"{dataset}: {target} is not the published {remote.name}: its SHA-256 is {actual}, "
        f"but the published SHA-256 is {remote.sha256}. s4tf does not use a file it cannot "
        f"verify. If you placed this file on purpose (e.g. a copy you re-compressed), pass "
        f"verify=False to use it; otherwise delete it and run again with download=True to "
        f"fetch the original.\n{_where_to_get_it(remote, target.parent)}"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(remote: RemoteFile, directory: Path, *, dataset: str, replacing: str | None = None) -> Path:
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
    replacing : str or None
        Why the copy on disk is being replaced (it is damaged), when it is:
        should every mirror fail, the error reports the damage, not a
        missing file.

    Returns
    -------
    pathlib.Path
        The path of the complete, verified file.

    Raises
    ------
    MissingDataError
        No mirror could be reached (e.g. offline) and no damaged copy is being
        replaced.
    CorruptDataError
        A mirror answered but its file failed the size or checksum check, or
        the damaged copy could not be replaced.
    PermissionError
        ``directory`` cannot be created or written.

    Examples
    --------
    >>> fetch(remote, Path("/data/mnist"), dataset="MNIST")   # doctest: +SKIP
    PosixPath('/data/mnist/t10k-labels-idx1-ubyte.gz')
    """
    require_writable(directory, f"download {remote.name!r} for {dataset}")
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
    if replacing is not None:
        raise CorruptDataError(
            f"{dataset}: {replacing}, and downloading a fresh copy failed"
            f"{' (are you offline?)' if not bad_files else ''}:\n{attempts}\n"
            f"Delete it and run again when online, or replace it by hand.\n"
            f"{_where_to_get_it(remote, directory)}"
        )
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
