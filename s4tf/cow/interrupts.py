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

__all__ = ["InterruptsDeferred"]


class InterruptsDeferred:
    """A context that holds back SIGINT until it exits, then raises it.

    ``pending`` tells, inside the block, whether an interrupt arrived.

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
        previous = signal.getsignal(signal.SIGINT)
        # SIG_DFL, SIG_IGN or a handler installed outside Python: not ours to defer.
        if callable(previous):
            self._previous = previous
            signal.signal(signal.SIGINT, self._handler)
        return self

    def _handler(self, signum, frame) -> None:
        if self.pending:
            self._previous(signum, frame)  # a second Ctrl-C: do not wait any longer
        self.pending, self._frame = True, frame

    def __exit__(self, *exc) -> bool:
        previous = self._previous
        if previous is not None:
            self._previous = None
            signal.signal(signal.SIGINT, previous)
            if self.pending:
                frame, self._frame = self._frame, None
                previous(signal.SIGINT, frame)
        return False
