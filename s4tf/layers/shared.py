"""``layers.Shared``: a field that stands for another part of the model (tied parameters)."""

from __future__ import annotations

from collections.abc import Callable

from ..differentiable import Differentiable, no_derivative
from ..tree import get

__all__ = ["Shared"]


class Shared(Differentiable):
    """The placeholder :func:`s4tf.tie` puts in a tied field: "the value at ``source``".

    It holds no parameter of its own (so the source is counted, saved and
    trained once); the tied model puts ``transform(<value at source>)`` in
    its place each time it is called, so both uses' gradients reach the
    source, summed. Read the value it stands for with
    ``shared.resolve(model)``.

    Parameters
    ----------
    source : str
        The dotted path of the value it stands for, e.g. ``"embedding.embeddings"``.
    transform : callable or None
        Applied to that value (e.g. ``s4tf.transpose``); None for the value itself.

    Examples
    --------
    >>> import s4tf
    >>> shared = s4tf.layers.Shared("w", s4tf.transpose)
    >>> shared.resolve({"w": s4tf.Tensor([[1.0, 2.0]])}).tolist()
    [[1.0], [2.0]]
    """

    source: str = no_derivative()
    transform: Callable | None = no_derivative(default=None)

    def __init__(self, source: str, transform: Callable | None = None) -> None:
        if not isinstance(source, str):
            raise TypeError(f"Shared: source must be a dotted path such as "
                            f"'embedding.embeddings'; received {source!r}.")
        if transform is not None and not callable(transform):
            raise TypeError(f"Shared: transform must be a function (e.g. s4tf.transpose) or "
                            f"None; received {transform!r}.")
        self.source, self.transform = source, transform

    def resolve(self, model):
        """The value this placeholder stands for inside ``model``."""
        value = get(model, self.source)
        return value if self.transform is None else self.transform(value)
