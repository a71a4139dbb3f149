"""Atomic file writes, and removing what a killed write left behind.

The bytes go to a temporary file in the target's directory, which is renamed
over the target only when complete, so a reader never sees half a checkpoint.
A target that is a symbolic link is followed: the file it points to is the one
replaced (the temporary file goes beside it), and the link stays a link.
A process killed mid-write (SIGKILL, power loss) cannot delete its temporary
file; its name therefore records the writer, ``.<target>.s4tf-<host>-<pid>-
<random>.tmp``, and every later write into the directory removes such files
whose writer was a process of this host that no longer runs. Files of a live
process (a concurrent save, even from another thread of this one), of another
host (a shared network drive) and every other file are left alone.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import tempfile
import zlib

__all__ = ["remove_stale_temporaries", "write_atomically"]

_TEMPORARY = re.compile(r"\..+\.s4tf-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[a-z0-9_]+\.tmp")


def _host() -> str:
    # Eight hex digits: host names may hold characters file names should not.
    return f"{zlib.crc32(socket.gethostname().encode()):08x}"


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed over it when complete."""
    path = _link_target(path)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    remove_stale_temporaries(directory)
    handle, temporary = tempfile.mkstemp(
        dir=directory, prefix=f".{os.path.basename(path)}.s4tf-{_host()}-{os.getpid()}-",
        suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def _link_target(path: str) -> str:
    """The absolute path a write to ``path`` replaces: the final target of a symbolic link."""
    # A rename over the link itself would turn it into a regular file and leave
    # the file it points to (a "latest" link, a file on another disk) stale.
    if not os.path.islink(path):
        return os.path.abspath(path)
    target = os.path.realpath(path)
    if os.path.islink(target):
        raise OSError(
            f"Cannot save to {path!r}: its symbolic links form a loop (they never reach a "
            "file). Point the link at a file, or remove it and save again."
        )
    return target


def remove_stale_temporaries(directory: str) -> list[str]:
    """Delete the temporary files of killed writes in ``directory``; return their names."""
    if os.name != "posix":
        return []  # no safe liveness test: os.kill(pid, 0) would signal the process
    host, removed = _host(), []
    with os.scandir(directory) as entries:
        for entry in entries:
            match = _TEMPORARY.fullmatch(entry.name)
            if (match is None or match["host"] != host or _running(int(match["pid"]))
                    or not stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode)):
                continue
            try:
                os.remove(entry.path)
            except FileNotFoundError:
                continue  # another save cleaned it up first
            removed.append(entry.name)
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # a process of another user: alive; an absurd pid: leave the file alone
    return True
