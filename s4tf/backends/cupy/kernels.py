"""The cupy backend's kernel table: the shared kernels, with CuPy's own scatter-add."""

from __future__ import annotations

from ..array_kernels import ArrayKernels

__all__ = ["CuPyKernels"]


def _scatter_add_function(xp):
    if getattr(xp, "is_standin", False):
        return xp.scatter_add
    import cupyx

    return cupyx.scatter_add


class CuPyKernels(ArrayKernels):
    """:class:`ArrayKernels` over CuPy, with ``cupyx.scatter_add`` for repeated indices.

    Examples
    --------
    >>> from s4tf.backends.cupy import standin as xp
    >>> kernels = CuPyKernels(xp)
    >>> out = kernels.scatter_add(xp.zeros(3), xp.asarray([1, 1]), xp.ones(2), axis=0)
    >>> out.get().tolist()
    [0.0, 2.0, 0.0]
    """

    def __init__(self, xp) -> None:
        super().__init__(xp)
        self._scatter_add = _scatter_add_function(xp)

    def scatter_add(self, x, indices, updates, *, axis):
        out = self.xp.array(x, copy=True)
        self.scatter_add_into(out, indices, updates, axis)
        return out

    def scatter_add_into(self, out, indices, updates, axis):
        xp, k = self.xp, indices.ndim
        target = xp.moveaxis(out, axis, 0)
        source = xp.moveaxis(updates, list(range(axis, axis + k)), list(range(k)))
        self._scatter_add(target, indices, source)
