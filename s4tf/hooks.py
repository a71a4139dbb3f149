"""One stack of hooks: who listens to the package's events while a captured step or a summary runs.

Code deep in the package tells whoever is listening what just happened: the
lazy backend that it made an array from host data (:data:`on_array`) or is
about to run a barrier (:data:`on_barrier`), an optimizer that it is updating
(:data:`on_update`), the random stream that it drew (:data:`on_draw`), a layer
that it is being called (:data:`around_layer_call`). Nobody listens most of
the time, so each of those places reads one attribute of this module, which is
``None`` then, and pays nothing more.

Listeners come and go as a stack with :func:`listening` (a captured step's
recording, :mod:`s4tf.capture`; :func:`s4tf.summary`). The innermost listener
of each kind hears an event; a listener installed for its own thread only
(``thread=``) is not heard from other threads. This module sits at the bottom
of the package, so every layer can speak to listeners it does not know.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import typing

__all__ = ["Listener", "around_layer_call", "hearer", "installed", "listening", "on_array",
           "on_barrier", "on_draw", "on_update"]

KINDS = ("on_array", "on_barrier", "on_update", "on_draw", "around_layer_call")


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Listener:
    """What one installer listens to; a kind left ``None`` is not heard by it.

    Attributes
    ----------
    owner : str
        Who installed it (``"captured step"``, ``"summary"``): :func:`installed`
        asks by this name.
    on_array : callable, optional
        ``on_array(value, array)``: the lazy backend made ``array`` from the
        host value ``value`` (a Python number entering an op, a constant).
    on_barrier : callable, optional
        ``on_barrier()``: a barrier of the lazy graph is about to run.
    on_update : callable, optional
        ``on_update(optimizer, model, constants) -> constants``: an optimizer
        update of ``model`` with its ``step_constants``; returns those the
        update uses.
    on_draw : callable, optional
        ``on_draw(tensor, redraw)``: a draw from the global random stream;
        ``redraw()`` draws the same way again.
    around_layer_call : callable, optional
        ``around_layer_call(layer, call, args, kwargs) -> output``: a layer is
        being called; the listener runs ``call(layer, *args, **kwargs)`` and
        returns its output.
    thread : int, optional
        The only thread whose events it hears (``threading.get_ident()``);
        ``None`` for every thread.

    Examples
    --------
    >>> from s4tf import hooks
    >>> seen = []
    >>> with hooks.listening(hooks.Listener("example", on_barrier=lambda: seen.append(1))):
    ...     hooks.on_barrier()
    >>> seen, hooks.on_barrier is None
    ([1], True)
    """

    owner: str
    on_array: typing.Callable | None = None
    on_barrier: typing.Callable | None = None
    on_update: typing.Callable | None = None
    on_draw: typing.Callable | None = None
    around_layer_call: typing.Callable | None = None
    thread: int | None = None


# What an event does when no listener of the running thread hears it.
_UNHEARD = {
    "on_array": lambda value, array: None,
    "on_barrier": lambda: None,
    "on_update": lambda optimizer, model, constants: constants,
    "on_draw": lambda tensor, redraw: None,
    "around_layer_call": lambda layer, call, args, kwargs: call(layer, *args, **kwargs),
}

# The installed listeners, innermost last; a tuple, replaced whole, so that a
# thread reading it never sees it half changed.
_stack: tuple[Listener, ...] = ()
_lock = threading.Lock()

# Per kind: None when nobody listens, the listener's function when exactly one
# listener of every thread does, else a function that finds the innermost one
# for the running thread.
on_array: typing.Callable | None = None
on_barrier: typing.Callable | None = None
on_update: typing.Callable | None = None
on_draw: typing.Callable | None = None
around_layer_call: typing.Callable | None = None


def _applies(listener: Listener) -> bool:
    return listener.thread is None or listener.thread == threading.get_ident()


def _dispatcher(kind: str):
    def dispatch(*args):
        for listener in reversed(_stack):
            handler = getattr(listener, kind)
            if handler is not None and _applies(listener):
                return handler(*args)
        return _UNHEARD[kind](*args)

    return dispatch


def _refresh() -> None:
    for kind in KINDS:
        hearing = [listener for listener in _stack if getattr(listener, kind) is not None]
        if not hearing:
            handler = None
        elif len(hearing) == 1 and hearing[0].thread is None:
            handler = getattr(hearing[0], kind)
        else:
            handler = _dispatcher(kind)
        globals()[kind] = handler


@contextlib.contextmanager
def listening(listener: Listener):
    """Install ``listener`` (innermost) for the duration of a ``with`` block.

    Examples
    --------
    >>> from s4tf import hooks
    >>> with hooks.listening(hooks.Listener("example")):
    ...     hooks.installed("example")
    True
    >>> hooks.installed("example")
    False
    """
    global _stack
    with _lock:
        _stack = (*_stack, listener)
        _refresh()
    try:
        yield listener
    finally:
        with _lock:
            _stack = tuple(entry for entry in _stack if entry is not listener)
            _refresh()


def installed(owner: str) -> bool:
    """Whether a listener installed by ``owner`` hears the running thread's events.

    Examples
    --------
    >>> from s4tf import hooks
    >>> hooks.installed("summary")
    False
    """
    return any(listener.owner == owner and _applies(listener) for listener in _stack)


def hearer(kind: str):
    """The handler that hears an event of ``kind`` in this thread now (None: nobody).

    What a listener that passes events on (changed) calls: the handler the
    event would reach without it, found before it is installed.

    Examples
    --------
    >>> from s4tf import hooks
    >>> seen = []
    >>> with hooks.listening(hooks.Listener("example", on_barrier=lambda: seen.append(1))):
    ...     hooks.hearer("on_barrier")()
    >>> seen, hooks.hearer("on_barrier")
    ([1], None)
    """
    for listener in reversed(_stack):
        handler = getattr(listener, kind)
        if handler is not None and _applies(listener):
            return handler
    return None
