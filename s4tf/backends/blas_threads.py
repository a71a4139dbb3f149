"""NumPy's OpenBLAS thread count: what the environment asks for, and holding it at one.

The naive kernels' pool (:func:`s4tf.backends.kernel_pool.shares`) runs convolution
chunks on every core; OpenBLAS's own threads beside them would put two busy
threads on each core, and its worker threads keep spinning for a while after
each multi-threaded GEMM, on the cores the next chunks need. So while the pool
works, OpenBLAS is held at one thread (:func:`one_blas_thread`), switched
through its ``openblas_set_num_threads`` found with ctypes, the way
threadpoolctl finds it; NumPy's wheels bundle it in ``numpy.libs``.
threadpoolctl itself is not used: the hold must count nested holders from
several threads (the first saves the count, the last restores it), which its
per-call limit does not, and the lookup is the only part it would share.

Examples
--------
>>> import numpy as np
>>> from s4tf.backends import blas_threads
>>> with blas_threads.one_blas_thread():
...     product = np.ones((64, 64), np.float32) @ np.ones((64, 64), np.float32)
>>> float(product[0, 0])
64.0
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import itertools
import os
import threading

import numpy as np

__all__ = ["THREAD_VARIABLES", "one_blas_thread", "openblas_functions", "setting"]

#: The variables OpenBLAS reads its thread count from, in its order.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")

#: The ``(get, set)`` thread-count functions of the OpenBLAS NumPy calls, ``None``
#: when there is none to switch, or ``...`` before the first look.
_openblas = ...
#: How many :func:`one_blas_thread` blocks are open (the first saves and switches,
#: the last restores), the count OpenBLAS had before them, and their lock.
_holders = 0
_saved = 1
_lock = threading.Lock()


def setting() -> str | None:
    """The thread count the environment gives OpenBLAS (a string), or ``None`` for its default.

    Examples
    --------
    >>> import os
    >>> os.environ["OPENBLAS_NUM_THREADS"] = "1"; setting()
    '1'
    >>> del os.environ["OPENBLAS_NUM_THREADS"]
    """
    return next((os.environ[name].strip() for name in THREAD_VARIABLES
                 if os.environ.get(name, "").strip()), None)


def openblas_functions():
    """The ``(get, set)`` thread-count functions of the OpenBLAS NumPy uses, or ``None``.

    Looked for in the ``numpy.libs`` folder of NumPy's wheels first (SciPy
    bundles an OpenBLAS of its own, which would be the wrong one to switch),
    then among the libraries this process has loaded (Linux's
    ``/proc/self/maps``: a NumPy built against the system's OpenBLAS); the
    names carry the prefix and suffix of the build (``scipy_openblas``,
    ``64_``), as threadpoolctl looks them up. Looked up once.

    Examples
    --------
    >>> functions = openblas_functions()
    >>> functions is None or all(callable(f) for f in functions)
    True
    """
    global _openblas
    if _openblas is not ...:
        return _openblas
    _openblas = None
    paths = sorted(glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                          "*openblas*")))
    if not paths:
        try:
            with open("/proc/self/maps") as maps:
                paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()
                                and line.split()[-1].startswith("/")})
        except OSError:  # not on Linux
            paths = []
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in itertools.product(("scipy_openblas", "openblas"), ("64_", "")):
            get = getattr(library, f"{prefix}_get_num_threads{suffix}", None)
            put = getattr(library, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                _openblas = get, put
                return _openblas
    return _openblas


@contextlib.contextmanager
def one_blas_thread():
    """OpenBLAS held at one thread inside the block (each chunk's GEMM on its own core).

    The chunks of :func:`s4tf.backends.kernel_pool.shares` already fill the cores; OpenBLAS's threads
    beside them would make two threads per core. The count it had is put
    back when the last open block closes (blocks from several callers nest).
    Nothing happens when OpenBLAS cannot be switched.

    Examples
    --------
    >>> import numpy as np
    >>> with one_blas_thread():
    ...     product = np.ones((64, 64), np.float32) @ np.ones((64, 64), np.float32)
    >>> float(product[0, 0])
    64.0
    """
    global _holders, _saved
    functions = openblas_functions()
    if functions is None:
        yield
        return
    get, put = functions
    with _lock:
        if _holders == 0:
            _saved = get()
            if _saved != 1:
                put(1)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _saved != 1:
                put(_saved)
