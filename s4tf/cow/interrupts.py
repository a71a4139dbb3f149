"""Ctrl-C during an update: finish the update first, then raise.

An update that writes a model in place cannot stop half-way without leaving a
half-written model, and one that copies must not leave the optimizer a step
ahead of the model its caller still holds. So the update runs inside
:class:`InterruptsDeferred`: a SIGINT that arrives meanwhile is recorded, and
raised (by the handler that was installed before) once the update is over. A
second Ctrl-C while deferring is not deferred: the user insists (a rule that
never returns must stay interruptible).

Python runs signal handlers on the main thread only, so elsewhere the update
just runs.
"""

from __future__ import annotations

import signal
import threading

try:  # The C module: signal.signal/getsignal wrap it in enum conversions costing ~10 µs.
    import _signal as _raw
except ImportError:  # pragma: no cover - every CPython has it
    _raw = signal

__all__ = ["InterruptsDeferred"]

_SIGINT = int(signal.SIGINT)


class InterruptsDeferred:
    """A context that holds back SIGINT until it exits, then raises it.

    ``pending`` tells, inside the block, whether an interrupt arrived and has
    not been delivered yet; :meth:`deliver` runs its handler early.

    Examples
    --------
    >>> import signal
    >>> from s4tf.cow.interrupts import InterruptsDeferred
    >>> done = []
    >>> try:
    ...     with InterruptsDeferred() as deferred:
    ...         signal.raise_signal(signal.SIGINT)
    ...         done.append(deferred.pending)
    ... except KeyboardInterrupt:
    ...     print("raised after the block:", done)
    raised after the block: [True]
    """

    __slots__ = ("pending", "_frame", "_previous")

    def __init__(self) -> None:
        self.pending = False
        self._frame = None
        self._previous = None

    def __enter__(self) -> InterruptsDeferred:
        if threading.current_thread() is not threading.main_thread():
            return self
        previous = _raw.getsignal(_SIGINT)
        # SIG_DFL, SIG_IGN or a handler installed outside Python: not ours to defer.
        if callable(previous):
            self._previous = previous
            _raw.signal(_SIGINT, self._handler)
        return self

    def _handler(self, signum, frame) -> None:
        if self.pending:
            self._previous(signum, frame)  # a second Ctrl-C: do not wait any longer
        self.pending, self._frame = True, frame

    def deliver(self) -> None:
        """Run the held-back interrupt's handler now, still deferring new ones.

        The default handler raises ``KeyboardInterrupt``; a user's handler may
        return, and then the caller goes on as if nothing had happened.
        """
        if self.pending:
            self.pending = False
            frame, self._frame = self._frame, None
            self._previous(_SIGINT, frame)

    def __exit__(self, *exc) -> bool:
        previous = self._previous
        if previous is not None:
            _raw.signal(_SIGINT, previous)
            try:
                self.deliver()
            finally:
                self._previous = None
        return False
