"""JAX as the lazy backend needs it, set once, when the backend first imports JAX.

* 64-bit types (``jax_enable_x64``), so that float64 tensors stay float64, as
  on the other backends; s4tf always passes explicit dtypes, so nothing else
  changes width.
* JAX's persistent compilation cache under ``S4TF_CACHE_DIR`` (default
  ``~/.cache/s4tf/xla``; ``S4TF_CACHE_DIR=""`` turns it off), for programs of
  any size and compile time: a second process running the same step loads
  its executables instead of compiling them. JAX keys and serialises the
  programs; s4tf's :class:`~.persistent_cache.EntryStore` keeps them, and
  hands JAX an entry only once it is verified to be the asking program's
  (JAX's own file cache ran whatever file had the entry's name). XLA's GPU
  autotuning cache stays off: JAX would write its absolute path into every
  key, and a moved or copied cache directory would never hit. When
  ``S4TF_CACHE_DIR`` is unset and JAX already has a cache directory of its
  own (``JAX_COMPILATION_CACHE_DIR``), that one is kept as configured.
* A count of the executables JAX loaded from that cache
  (:func:`persistent_cache_hits`), read from JAX's own monitoring events.
* The objects alive at that moment (JAX's modules above all: ~150,000 of
  them) move to the cycle collector's permanent generation (``gc.freeze``),
  after one collection. Recording a training step allocates thousands of
  objects, which makes the collector run its full passes; walking JAX's
  objects in each of them took a third of the time a ResNet-56 step spent
  recording. Reference counting still frees every frozen object; only a
  reference cycle among objects that already existed when the backend loaded
  would no longer be collected.

Every module of this package that imports JAX imports this one first.
"""

from __future__ import annotations

import gc
import os
import warnings

import jax
from jax._src import compilation_cache

from .persistent_cache import EntryStore

__all__ = ["cache_directory", "persistent_cache_hits"]

jax.config.update("jax_enable_x64", True)

_CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
_hits = 0


def cache_directory() -> str | None:
    """Where s4tf asks JAX to keep compiled programs (None: s4tf sets no cache up)."""
    chosen = os.environ.get("S4TF_CACHE_DIR")
    if chosen is None:
        if jax.config.jax_compilation_cache_dir:
            return None  # the user's own JAX cache stays as they configured it
        return os.path.join(os.path.expanduser("~"), ".cache", "s4tf", "xla")
    return os.path.expanduser(chosen) or None


def persistent_cache_hits() -> int:
    """How many compiled programs JAX has loaded from its persistent cache in this process."""
    return _hits


def _count_hits(event: str, **_metadata) -> None:
    global _hits
    if event == _CACHE_HIT_EVENT:
        _hits += 1


def _use_persistent_cache(directory: str) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        warnings.warn(
            f"s4tf xla: cannot create the compilation cache directory {directory!r} ({error}); "
            "compiled programs will not be kept between runs. Point S4TF_CACHE_DIR at a "
            "writable directory, or set S4TF_CACHE_DIR='' to turn the cache off.",
            RuntimeWarning, stacklevel=2)
        return
    jax.config.update("jax_compilation_cache_dir", directory)
    # Every program, however small or quick to compile: a training script's
    # steps, its evaluation and its metric sums all start warm the next time.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # No path in the keys: the cache directory may be moved or copied.
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
    store = EntryStore(directory, {"jax": jax.__version__, "jaxlib": jax.lib.__version__})
    # JAX reads and writes its persistent cache through one object, made on first
    # use from the directory; putting s4tf's in its place first is the one hook.
    with compilation_cache._cache_initialized_mutex:
        compilation_cache._cache = store
        compilation_cache._cache_initialized = True


_directory = cache_directory()
if _directory is not None:
    _use_persistent_cache(_directory)
jax.monitoring.register_event_listener(_count_hits)
gc.collect()
gc.freeze()
