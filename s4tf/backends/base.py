"""The backend registry and switch: which array library runs the kernels.

A backend is an object with a ``name``, a ``kernels`` table (one method per
primitive of :mod:`s4tf.ops`, named after it) and a handful of conversions
(:class:`Backend`). Tensors remember their backend; new tensors are made on the
*current* backend, chosen by ``S4TF_BACKEND``, :func:`set_backend` or the
:func:`backend` context manager.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
import threading

__all__ = ["Backend", "backend", "barrier", "get_backend", "get_backend_object", "set_backend"]

BACKEND_NAMES = ("naive", "cupy", "xla", "jax")
_EXTRAS = {"cupy": ("cupy", "cuda"), "xla": ("jax", "xla"), "jax": ("jax", "xla")}
# Every backend is a folder with the same file names; its BACKEND is in backend.py.
_MODULES = {name: f"s4tf.backends.{name}.backend" for name in BACKEND_NAMES}

_loaded: dict[str, Backend] = {}
_load_lock = threading.Lock()


class Backend:
    """What every backend provides. Subclasses fill these in; see ``array_module_backend.py``.

    Code outside ``backends/`` uses only what this class declares: the
    attributes below and the methods that follow (``asarray``, ``to_numpy``,
    ``copy``, ...). Every backend defines each of them.

    Attributes
    ----------
    name : str
        ``"naive"``, ``"cupy"``, ``"xla"`` or ``"jax"`` (eager, on JAX arrays and
        tracers: what s4tf values are inside ``jax.jit`` and friends).
    kernels : object
        One method per primitive, taking and returning backend arrays.
    array_type : type
        The type of this backend's arrays (``numpy.ndarray``, ``cupy.ndarray``,
        the lazy backend's ``LazyArray``); a tensor's storage is one of these.
        In-place paths check it before writing a buffer, since a tensor may
        also hold a foreign array (a NumPy scalar, another module's array).
    xp : module or None
        The NumPy-compatible array module the eager backends' kernels are
        written against (``numpy``, ``cupy``); ``None`` on the lazy backend,
        whose arrays are graph nodes. Kernels use it; other code calls the
        methods below instead.
    supports_inplace : bool
        Whether ``add_inplace`` / ``index_add_inplace`` may write into a buffer
        (eager backends); the lazy backend builds new values instead.
    lazy : bool
        Whether reading a value may run pending work (the xla backend): checks
        that need the numbers (index ranges) are skipped there unless
        ``S4TF_CHECKS=1``.
    absorbs_others : bool
        Whether an op meeting tensors of this backend and of another computes on
        this one (the jax backend: inside a JAX transformation, tensors of other
        backends are constants of the traced function); otherwise mixing
        backends is an error naming the fix.
    compiles_per_shape : bool
        Whether each new combination of shapes costs a compile (the lazy
        backend), so the training loop keeps every step's shapes the same.
    """

    name: str = "?"
    kernels = None
    array_type: type  # each backend sets it; no default, so a backend that forgets fails loudly
    xp = None
    supports_inplace = False
    lazy = False
    absorbs_others = False
    compiles_per_shape = False

    def asarray(self, value, dtype):
        """A new backend array holding a copy of ``value`` (NumPy array or scalar)."""
        raise NotImplementedError  # abstract: each backend defines it

    def to_numpy(self, data):
        """The host NumPy array for backend array ``data`` (may share memory)."""
        raise NotImplementedError  # abstract: each backend defines it

    def copy(self, data):
        """A backend array equal to ``data`` that nobody else refers to.

        Eager backends give a fresh buffer the caller may write in place
        (``add_inplace``); the lazy backend, whose arrays are never written,
        may return ``data`` itself.
        """
        raise NotImplementedError  # abstract: each backend defines it

    def scalar(self, value, dtype):
        """A Python scalar entering an op, as a 0-d array of ``dtype``."""
        return self.asarray(value, dtype)

    def weak_scalar(self, value, numpy_dtype):
        """A Python number meeting a floating array of ``numpy_dtype`` in an op."""
        from ..dtypes import as_dtype

        return self.scalar(value, as_dtype(numpy_dtype))

    def owns_storage(self, data) -> bool:
        """Whether backend array ``data`` owns its memory and may be written in place.

        Copy-on-write asks this before writing a buffer nobody else refers to; a
        view, a read-only or a foreign buffer is not ours to write. The lazy
        backend never writes in place.
        """
        return False

    def add_inplace(self, dst, src):
        raise NotImplementedError  # abstract: only eager backends define it

    def index_add_inplace(self, dst, index, src, axis=None):
        raise NotImplementedError  # abstract: only eager backends define it

    def to_jax(self, data):
        """``data`` as a ``jax.Array`` (JAX must be installed): the device buffer itself
        where the backend has one (xla, jax), else a copy from the host.

        Whoever receives it may keep it, so a backend that could later reuse the
        buffer (xla's donation) must mark it as seen by someone else here.
        """
        import jax.numpy as jnp

        return jnp.asarray(self.to_numpy(data))

    def from_jax(self, array):
        """A backend array holding the values of ``jax.Array`` ``array``: the same buffer
        where the backend can hold one (xla, jax), else a copy on this backend."""
        import numpy as np

        from ..dtypes import as_dtype

        host = np.asarray(array)
        return self.asarray(host, as_dtype(host.dtype))

    def dlpack_source(self, data):
        """An array exporting ``data``'s values through DLPack without a copy (the host
        array on naive, the CuPy array on cupy, the JAX buffer on xla and jax)."""
        return self.to_numpy(data)

    def follow_layout(self, data, like):
        """``data`` laid out across devices as ``like`` is (only the xla backend has layouts)."""
        return data

    def devices(self, data) -> tuple:
        """Where ``data`` lives, for :attr:`s4tf.Tensor.devices` (the host's memory here)."""
        return ("cpu",)

    def barrier(self) -> None:
        """Run pending work (the lazy backend); a no-op on eager backends."""

    def __repr__(self) -> str:
        return f"<s4tf backend {self.name!r}>"


def get_backend_object(name: str) -> Backend:
    """The :class:`Backend` called ``name``, importing it on first use."""
    found = _loaded.get(name)
    if found is not None:
        return found
    if name not in _MODULES:
        raise ValueError(
            f"Unknown s4tf backend {name!r}. Choose one of {', '.join(map(repr, BACKEND_NAMES))}."
        )
    with _load_lock:
        if name not in _loaded:
            try:
                module = importlib.import_module(_MODULES[name])
            except ImportError as error:
                package, extra = _EXTRAS.get(name, (name, name))
                if not (getattr(error, "name", None) or "").startswith(package):
                    raise  # not the extra package missing: s4tf's own import failed
                raise ImportError(
                    f"The s4tf backend {name!r} needs the package {package!r}, which could not "
                    f"be imported ({error}). Install it with: pip install 's4tf[{extra}]'"
                ) from error
            _loaded[name] = module.BACKEND
    return _loaded[name]


def _initial_backend() -> str:
    name = os.environ.get("S4TF_BACKEND", "naive").strip() or "naive"
    if name not in _MODULES:
        raise ValueError(
            f"S4TF_BACKEND={name!r} is not an s4tf backend; use one of {', '.join(BACKEND_NAMES)}."
        )
    return name


_default_name = _initial_backend()
_override: contextvars.ContextVar[str | None] = contextvars.ContextVar("s4tf_backend", default=None)


def get_backend() -> str:
    """The name of the backend new tensors are created on.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.get_backend()
    'naive'
    """
    return _override.get() or _default_name


def current_backend() -> Backend:
    """The :class:`Backend` object new tensors are created on."""
    return get_backend_object(_override.get() or _default_name)


def set_backend(name: str) -> None:
    """Make ``name`` the backend for new tensors (``"naive"``, ``"cupy"``, ``"xla"``, ``"jax"``).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.set_backend("naive")
    >>> s4tf.zeros([2]).backend
    'naive'
    """
    global _default_name
    get_backend_object(name)
    _default_name = name


@contextlib.contextmanager
def backend(name: str):
    """Create tensors on backend ``name`` inside the ``with`` block.

    Examples
    --------
    >>> import s4tf
    >>> with s4tf.backend("naive"):
    ...     s4tf.ones([3]).backend
    'naive'
    """
    get_backend_object(name)
    token = _override.set(name)
    try:
        yield get_backend_object(name)
    finally:
        _override.reset(token)


def barrier() -> None:
    """The LazyTensorBarrier: compile and run everything pending on the lazy backend.

    A no-op on eager backends, so a training loop written once calls it after every
    optimizer update and runs on all three.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.barrier()
    """
    for loaded in list(_loaded.values()):
        loaded.barrier()
