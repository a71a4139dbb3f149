"""The naive kernels' thread pool: independent chunks of one kernel, run at once.

NumPy releases the GIL inside BLAS, ufuncs and copies, so a convolution's
im2col chunks (``im2col.py``) and a row-wise kernel's blocks of rows can run
on several cores from one Python thread. :func:`shares` cuts a chunk list into
one contiguous share per thread and runs them on a persistent pool, the first
on the caller; :func:`threads` says how many (``S4TF_THREADS``, or every CPU
where OpenBLAS can be held at one thread meanwhile: ``blas_threads.py``). Each
share writes only its own slices, so results have the same bits for any
thread count.

Examples
--------
>>> import numpy as np
>>> from s4tf.backends import kernel_pool
>>> sum(kernel_pool.shares(np, len, [(0, 1), (1, 2), (2, 3)]))
3
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import blas_threads

__all__ = ["THREADS_VARIABLE", "shares", "threads"]


#: Environment variable naming how many threads the naive kernels use (``1`` runs
#: every chunk on the calling thread); see :func:`threads` for the default.
THREADS_VARIABLE = "S4TF_THREADS"

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_worker = threading.local()


def threads() -> int:
    """How many threads the chunked naive kernels run on.

    ``S4TF_THREADS`` when set; otherwise every CPU this process may use,
    unless OpenBLAS uses several threads and cannot be switched to one while
    the chunks run (see :func:`shares`): then 1, since concurrent chunks next
    to OpenBLAS's own threads on every core oversubscribe the cores and
    measured up to 2.4x slower (benchmarks/RESULTS.md, issue 24). Read on
    every call, so setting a variable takes effect at once.

    Examples
    --------
    >>> import os
    >>> os.environ["S4TF_THREADS"] = "3"; threads()
    3
    >>> del os.environ["S4TF_THREADS"]
    """
    setting = os.environ.get(THREADS_VARIABLE, "").strip()
    if setting:
        try:
            count = int(setting)
        except ValueError:
            raise ValueError(f"{THREADS_VARIABLE}={setting!r} is not a whole number: set it to "
                             f"a thread count such as 1 or 2, or unset it") from None
        if count < 1:
            raise ValueError(f"{THREADS_VARIABLE}={count} must be at least 1 (1 runs the "
                             f"kernels on the calling thread alone)")
        return count
    if blas_threads.setting() != "1" and blas_threads.openblas_functions() is None:
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def shares(xp, work, parts):
    """``[work(share) for share in ...]``: ``parts`` cut into contiguous shares, one per thread.

    The shares run at once on a persistent thread pool (NumPy releases the GIL
    in BLAS and in copies), the first on the calling thread; each share must
    write only its own slices of shared arrays, so the result does not depend
    on the thread count. While they run, OpenBLAS is held at one thread
    (:func:`~s4tf.backends.blas_threads.one_blas_thread`). Results come back in the order of ``parts``. One
    share (a single thread, a single part, a namespace other than NumPy, or a
    call from a pool thread itself) runs on the calling thread alone.

    Examples
    --------
    >>> import numpy as np
    >>> sum(shares(np, len, [(0, 1), (1, 2), (2, 3)]))  # every part, whatever the thread count
    3
    """
    count = min(threads(), len(parts)) if xp is np else 1
    if count <= 1 or getattr(_in_worker, "active", False):
        return [work(parts)]
    step, extra = divmod(len(parts), count)
    cuts = [0]
    for i in range(count):
        cuts.append(cuts[-1] + step + (i < extra))
    pieces = [parts[a:b] for a, b in itertools.pairwise(cuts)]
    pool = _executor(count - 1)
    with blas_threads.one_blas_thread():
        futures = [pool.submit(_as_worker, work, piece) for piece in pieces[1:]]
        try:
            first = work(pieces[0])
        finally:  # never leave a share running on buffers the caller is about to free
            rest = [future.result() for future in futures]
    return [first, *rest]


def _as_worker(work, piece):
    """``work(piece)`` on a pool thread, marked so that nested kernels stay on it."""
    _in_worker.active = True
    try:
        return work(piece)
    finally:
        _in_worker.active = False


def _executor(workers: int) -> ThreadPoolExecutor:
    """The persistent pool, grown (replaced) when more workers are asked for."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers < workers:
            old, _pool = _pool, ThreadPoolExecutor(workers, thread_name_prefix="s4tf-kernel")
            if old is not None:
                old.shutdown(wait=False)
        return _pool
