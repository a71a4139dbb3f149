"""The persistent compile cache's store: one verified file per compiled program.

Before compiling a program, JAX asks its persistent cache for the program's
key: a SHA-256 of the lowered program's text (source locations left out), its
devices, the compile options and the jaxlib and backend versions, prefixed by
the module's name. :mod:`.jax_settings` gives JAX this store in place of its
own file cache, which ran whatever file carried an entry's name: two swapped
entries of same-signature programs returned each other's numbers, entries of
other signatures crashed inside JAX, a FIFO hung the process, a link to
``/dev/zero`` read until memory ran out, and a truncated entry was warned
about on every run and never rewritten.

An entry is one regular file, named after its key (``<key>.xla``; a key that is
not a plain file name is hashed), made of a header line and JAX's bytes::

    s4tf-xla-cache 1 {"key": ..., "jax": ..., "jaxlib": ..., "size": n, "sha256": ...}\\n
    <n bytes: the compressed executable, as JAX serialises it>

An entry is handed to JAX only when it is a regular file (never a link, FIFO
or device: it is not even opened), its header names the asking key and this
process's jax and jaxlib, and the rest of the file is exactly ``size`` bytes
with that SHA-256; reads never go past the recorded size. Anything else is
removed with one :class:`CacheEntryWarning` naming the file and what was
wrong, and JAX compiles the program and writes the entry again. Writes go to a
temporary file in the same directory, synced, then renamed over the entry:
readers see a whole old entry or a whole new one, and two processes writing
the same entry at once leave one whole copy. Keys hold no paths (the
directory may be moved or copied; :mod:`.jax_settings` keeps XLA's autotuning
cache, whose path JAX would put into every key, off).

This checks an entry against accidents (swaps, copies, truncation, files that
are not entries), not against someone who may write to the directory on
purpose: whoever can write the cache can make this process run their code,
as with JAX's own cache. This module imports no JAX.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import sys
import threading
import warnings

__all__ = ["CacheEntryWarning", "EntryStore"]

_MAGIC = b"s4tf-xla-cache 1 "
# A header holds a key of ~80 characters and four short fields: a line longer
# than this is not a header, and no more of the file is read to find out.
_MAX_HEADER = 4096
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}")
_KINDS = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


class CacheEntryWarning(UserWarning):
    """An entry of the persistent compile cache (``S4TF_CACHE_DIR``) was not used, or not written.

    Raised once per entry and process, naming the file and what was wrong with
    it: not a regular file, truncated, damaged, or holding another program.
    Such an entry is never run: it is removed, the program is compiled and
    the entry written again, so the next process loads it.

    Examples
    --------
    >>> import warnings, s4tf
    >>> warnings.simplefilter("error", s4tf.xla.CacheEntryWarning)  # make it fatal
    """


def _user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel of the user's line: past s4tf's frames and JAX's.

    JAX's compiler calls the store, so :func:`s4tf.user_frames.user_stacklevel`
    (which skips s4tf's frames only) would point into JAX.
    """
    frame, level = sys._getframe(2), 2
    while frame is not None and any(part in frame.f_code.co_filename for part in _SKIPPED):
        frame, level = frame.f_back, level + 1
    return level


_SKIPPED = (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep,
            f"{os.sep}jax{os.sep}", f"{os.sep}jaxlib{os.sep}", "<frozen ")


class _Unusable(Exception):
    """What is wrong with an entry (the reason, as the warning words it)."""


class EntryStore:
    """A directory of verified cache entries, with the ``get``/``put`` JAX's compiler calls.

    Parameters
    ----------
    directory : str
        Where the entries live (created if missing).
    versions : dict
        ``{"jax": ..., "jaxlib": ...}`` of this process, recorded in every
        entry and required of every entry read.

    Examples
    --------
    >>> import tempfile
    >>> from s4tf.backends.xla.persistent_cache import EntryStore
    >>> store = EntryStore(tempfile.mkdtemp(), {"jax": "1", "jaxlib": "1"})
    >>> store.get("jit_step-ab12") is None            # a miss: nothing written yet
    True
    >>> store.put("jit_step-ab12", b"compiled bytes")
    >>> store.get("jit_step-ab12")
    b'compiled bytes'
    """

    def __init__(self, directory: str, versions: dict) -> None:
        os.makedirs(directory, exist_ok=True)
        self._path = directory  # the attribute name JAX's cache wrappers and logs read
        self._versions = dict(versions)
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def path_of(self, key: str) -> str:
        """The file of ``key``'s entry: a plain key names it, any other key its SHA-256."""
        name = key if _PLAIN_NAME.fullmatch(key) else hashlib.sha256(key.encode()).hexdigest()
        return os.path.join(self._path, name + ".xla")

    def get(self, key: str) -> bytes | None:
        """The bytes stored for ``key``, verified; None on a miss or an unusable entry."""
        path = self.path_of(key)
        try:
            return self._read(path, key)
        except FileNotFoundError:
            return None
        except _Unusable as error:
            self._discard(path, str(error))
        except OSError as error:
            self._discard(path, f"could not be read ({error})")
        return None

    def put(self, key: str, value: bytes) -> None:
        """Store ``value`` for ``key`` atomically (a temporary file renamed over the entry)."""
        path = self.path_of(key)
        header = {"key": key, **self._versions, "size": len(value),
                  "sha256": hashlib.sha256(value).hexdigest()}
        # A hidden name of this writer's own (never an entry's name); created as any
        # file the user writes is, so the umask decides who may read the entry.
        temporary = os.path.join(self._path, f".{secrets.token_hex(8)}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            with os.fdopen(fd, "wb") as file:
                file.write(_MAGIC + json.dumps(header).encode() + b"\n")
                file.write(value)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            # Once per process: a full disk would otherwise warn at every compile.
            self._warn_once(self._path, (
                f"s4tf xla: could not write the compile cache entry {path} ({error}). The "
                "program runs, but the next process compiles it again (entries that cannot be "
                "written are not reported again). Free space in that directory, point "
                "S4TF_CACHE_DIR at another one, or set S4TF_CACHE_DIR='' to turn the "
                "persistent cache off."))
            return
        self._sync_directory()

    def _read(self, path: str, key: str) -> bytes:
        kind = stat.S_IFMT(os.lstat(path).st_mode)
        if kind != stat.S_IFREG:
            # Opening a FIFO blocks and a device may never end: look, never open.
            raise _Unusable(f"is {_KINDS.get(kind, 'not a regular file')}, not a regular file")
        # O_NOFOLLOW and O_NONBLOCK: swapped for a link or a FIFO since lstat, it still cannot block.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as file:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                raise _Unusable("is not a regular file")
            size = opened.st_size
            line = file.readline(_MAX_HEADER)
            header = self._header(line, key)
            expected = len(line) + header["size"]
            if size < expected:
                raise _Unusable(f"is truncated: {size} of the {expected} bytes its header records")
            if size > expected:
                raise _Unusable(f"has {size - expected} bytes more than the {expected} its header records")
            payload = file.read(header["size"])  # never more than recorded, whatever the file does
        if len(payload) != header["size"]:
            raise _Unusable(f"is truncated: {len(line) + len(payload)} of the {expected} bytes "
                            "its header records")
        if hashlib.sha256(payload).hexdigest() != header["sha256"]:
            raise _Unusable("is damaged: its contents do not match the SHA-256 in its header")
        return payload

    def _header(self, line: bytes, key: str) -> dict:
        if not line.startswith(_MAGIC) or not line.endswith(b"\n"):
            raise _Unusable("does not start with an s4tf cache header (written by another "
                            "program or an older s4tf, or damaged)")
        try:
            header = json.loads(line[len(_MAGIC):])
            fields = (header["key"], header["jax"], header["jaxlib"], header["size"], header["sha256"])
        except (ValueError, TypeError, KeyError):
            raise _Unusable("has a damaged header") from None
        if not isinstance(fields[3], int) or fields[3] < 0:
            raise _Unusable("has a damaged header (its size is not a byte count)")
        if fields[0] != key:
            raise _Unusable(f"holds the program {fields[0]!r}, not {key!r} (entries were "
                            "swapped, copied or renamed)")
        written = {"jax": fields[1], "jaxlib": fields[2]}
        if written != self._versions:
            raise _Unusable(f"was written by jax {fields[1]} / jaxlib {fields[2]}, this process "
                            f"runs jax {self._versions['jax']} / jaxlib {self._versions['jaxlib']}")
        return header

    def _discard(self, path: str, reason: str) -> None:
        """Warn once about the unusable entry at ``path`` and remove it (JAX then rewrites it)."""
        outcome = "its entry is written again"
        try:
            os.unlink(path)  # a link goes, never what it points to
        except FileNotFoundError:
            pass
        except OSError as error:  # a directory, a read-only cache
            outcome = f"it stays uncached: the entry could not be removed ({error})"
        self._warn_once(path, (
            f"s4tf xla: the compile cache entry {path} {reason}; it was not used. The program "
            f"is compiled again and {outcome}."))

    def _warn_once(self, subject: str, message: str) -> None:
        with self._lock:
            if subject in self._warned:
                return
            self._warned.add(subject)
        warnings.warn(message, CacheEntryWarning, stacklevel=_user_stacklevel())

    def _sync_directory(self) -> None:
        """Make the rename itself durable where the platform allows (POSIX directories)."""
        with contextlib.suppress(OSError, AttributeError):
            fd = os.open(self._path, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
