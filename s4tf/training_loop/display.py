"""What the training loop shows: one line per epoch, live on a terminal, plain elsewhere.

On a terminal (or in a notebook, where tqdm draws widgets) each epoch is a
tqdm bar that stays on screen (``leave=True``) and ends showing the epoch's
loss, metrics and validation metrics, as Keras does. When the stream is not a
terminal (a log file, a pipe, CI), bars would write runs of ``\\r`` updates, so
each epoch prints one plain line instead when it ends.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator

from tqdm.auto import tqdm

__all__ = ["EpochDisplay"]

_REFRESH_SECONDS = 0.5  # how often a live bar reads the running metrics (a device sync)


def _in_notebook() -> bool:
    # tqdm.auto resolves to its notebook class inside a Jupyter kernel with widgets.
    return any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__)


def _format(logs: dict) -> dict:
    return {name: f"{value:.4f}" for name, value in logs.items()}


class EpochDisplay:
    """The loop's output stream: a live bar per epoch, or one plain line per epoch.

    Parameters
    ----------
    enabled : bool
        False shows nothing at all.
    file : file object, optional
        Where to write; ``sys.stderr`` (read when the display is made) by
        default. It is live when it is a terminal or when running in a notebook.

    Examples
    --------
    >>> import io
    >>> from s4tf.training_loop.display import EpochDisplay
    >>> out = io.StringIO()                      # not a terminal: plain lines
    >>> display = EpochDisplay(file=out)
    >>> display.start_epoch(0, 2, total=3)
    >>> for _ in range(3):
    ...     display.advance(lambda: {"loss": 0.5})
    >>> display.end_epoch({"loss": 0.5, "val_loss": 0.25})
    >>> line = out.getvalue()
    >>> line.startswith("Epoch 1/2 - 3 batches in "), line.endswith(" - loss: 0.5000 - val_loss: 0.2500\\n")
    (True, True)
    """

    def __init__(self, enabled: bool = True, file=None):
        self.enabled = enabled
        self.file = sys.stderr if file is None else file
        isatty = getattr(self.file, "isatty", None)
        self.live = enabled and (_in_notebook() or bool(isatty and isatty()))
        self._bar = None
        self._batches = 0

    def start_epoch(self, epoch: int, epochs: int, total: int | None) -> None:
        """Epoch ``epoch`` (from 0) of ``epochs`` starts; ``total`` batches if known."""
        self._title = f"Epoch {epoch + 1}/{epochs}"
        self._start = self._shown = time.monotonic()
        self._batches = 0
        if self.live:  # not given the data: see _counted
            self._bar = tqdm(desc=self._title, total=total, leave=True, unit="batch",
                             file=self.file)

    def advance(self, running_logs: Callable[[], dict]) -> None:
        """One batch is done; a live bar shows ``running_logs()`` at most twice a second."""
        self._batches += 1
        if self._bar is None:
            return
        now = time.monotonic()
        if now - self._shown > _REFRESH_SECONDS:
            self._bar.set_postfix(_format(running_logs()), refresh=False)
            self._shown = now
        self._bar.update(1)

    def shorten(self) -> None:
        """The epoch will have one batch fewer than announced (a dropped last batch)."""
        if self._bar is not None and self._bar.total:
            self._bar.total -= 1

    def end_epoch(self, logs: dict) -> None:
        """Show the epoch's final ``logs`` (``val_`` ones included) on its line and keep it."""
        if self._bar is not None:
            self._bar.set_postfix(_format(logs), refresh=False)
            self._bar.close()  # leave=True: the final line, with these logs, stays
            self._bar = None
        elif self.enabled:
            seconds = time.monotonic() - self._start
            parts = [self._title, f"{self._batches} batches in {seconds:.1f} s"]
            parts += [f"{name}: {value:.4f}" for name, value in logs.items()]
            print(" - ".join(parts), file=self.file, flush=True)

    def close(self) -> None:
        """Close a bar an interrupted epoch left open, keeping what it showed."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def validation(self, batches: Iterable, total: int | None) -> Iterable:
        """``batches`` with a transient bar below the epoch's when live."""
        if not self.live:
            return batches
        return self._counted(batches, total)

    def _counted(self, batches: Iterable, total: int | None) -> Iterator:
        # The bar is never handed the iterable: tqdm.auto calls iter() on it at
        # construction, which on a data set starts (and wastes) a whole pass.
        bar = tqdm(desc="validation", total=total, leave=False, file=self.file)
        try:
            for batch in batches:
                yield batch
                bar.update(1)
        finally:
            bar.close()

    def note(self, message: str) -> None:
        """A one-off line (e.g. that a short last batch is left out), kept clear of bars."""
        if not self.enabled:
            return
        if self.live:
            tqdm.write(message, file=self.file)
        else:
            print(message, file=self.file, flush=True)
