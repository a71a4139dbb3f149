"""Element-wise rules on flat blocks of bounded size: chunks of large parameters, packs of small ones.

An optimizer's rule (:meth:`~s4tf.optimizers.Optimizer.update_parameter`)
writes in place but needs temporaries (``np.empty_like(param)``); run on a
whole parameter they are as large as the largest tensor, 3 % to 33 % of a
model's parameter bytes. A rule marked :func:`elementwise` (each output element
depends only on the same element of its inputs) gives the same numbers, bit for
bit, on any flat piece of its arrays, so on the host the optimizer runs it on
blocks instead:

- a large parameter whose gradient and slots are C-contiguous like it, in
  :data:`CHUNK_BYTES` chunks (flat views, no copies): the temporaries are one
  chunk's, and the chunk's parameter, gradient, slots and temporaries stay in a
  core's L2 cache between the rule's passes;
- parameters of at most :data:`SMALL_SIZE` elements (biases, normalisation
  scales), together: a :class:`Pack` keeps their slots in one flat buffer per
  slot name (their slot tensors are views into it); each update gathers their
  parameters and gradients into blocks of at most :data:`PACK_BYTES`, runs the
  rule once per block and writes the parameters back, so dozens of tiny
  parameters cost one rule call instead of one each.

Anything else runs whole, as before: a view or a non-contiguous gradient (the
broadcast zero of a ``None`` gradient), a CuPy array (a GPU prefers one large
kernel), a rule not marked element-wise.
"""

from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor

__all__ = ["CHUNK_BYTES", "PACK_BYTES", "SMALL_SIZE", "Pack", "elementwise", "is_elementwise",
           "packable", "run_chunked"]

CHUNK_BYTES = 256 * 1024  # 64 Ki float32: Adam's five arrays of a chunk fit a 2 MiB L2
PACK_BYTES = 16 * 1024  # a pack block: its gathered copies are temporaries too
SMALL_SIZE = 1024  # elements; larger tensors cost few ufunc calls per element anyway


def elementwise(rule):
    """Mark an ``update_parameter`` rule as element-wise, so it may run on flat blocks.

    Element-wise: every element written depends only on the same element of
    ``param``, ``grad`` and the slots (no reductions such as a norm, no use of
    the arrays' shapes). A subclass that overrides a marked rule marks its own
    when it is element-wise too; unmarked rules run on whole parameters.

    Examples
    --------
    >>> import numpy as np, s4tf
    >>> from s4tf.optimizers.blocks import elementwise
    >>> class SignSGD(s4tf.optimizers.SGD):
    ...     @elementwise
    ...     def update_parameter(self, param, grad, state, constants):
    ...         param -= constants["lr"] * np.sign(grad)
    >>> opt = SignSGD([s4tf.ones([2])], learning_rate=0.5)
    >>> opt.update([s4tf.ones([2])], [s4tf.Tensor([3.0, -1.0])], consume=False)[0].tolist()
    [0.5, 1.5]
    """
    rule._s4tf_elementwise = True
    return rule


def is_elementwise(optimizer) -> bool:
    """Whether ``optimizer``'s rule is marked :func:`elementwise`."""
    return getattr(type(optimizer).update_parameter, "_s4tf_elementwise", False)


def _contiguous_host(x) -> bool:
    return type(x) is np.ndarray and x.flags.c_contiguous


def run_chunked(rule, param, grad, state: dict, constants) -> None:
    """``rule(param, grad, state, constants)``, in flat chunks where the arrays allow.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.optimizers.blocks import run_chunked
    >>> sizes = []
    >>> def rule(p, g, s, c):
    ...     sizes.append(p.size)
    ...     p -= g
    >>> param = np.ones(100_000, np.float32)
    >>> run_chunked(rule, param, np.ones_like(param), {}, {})
    >>> sizes, float(param.sum())
    ([65536, 34464], 0.0)
    """
    chunk = CHUNK_BYTES // param.itemsize
    if (param.size <= chunk or not _contiguous_host(param) or not _contiguous_host(grad)
            or not all(_contiguous_host(a) for a in state.values())):
        rule(param, grad, state, constants)
        return
    param, grad = param.reshape(-1), grad.reshape(-1)
    state = {name: a.reshape(-1) for name, a in state.items()}
    for start in range(0, param.size, chunk):
        stop = start + chunk
        rule(param[start:stop], grad[start:stop],
             {name: a[start:stop] for name, a in state.items()}, constants)


def packable(param, grad) -> bool:
    """Whether a parameter written in place may join a :class:`Pack`."""
    return param.size <= SMALL_SIZE and _contiguous_host(param) and _contiguous_host(grad)


class Pack:
    """The slots of small parameters of one dtype, one flat buffer per slot name.

    Made for the parameters ``indices`` (their places in the model) from their
    shapes and current slots (``{name: Tensor}`` each, copied in); :attr:`slots`
    are the same slots as tensors over views of the buffers, which the
    optimizer keeps as its state while they stay its state (a
    ``load_state_dict`` or a copying update replaces them, and a new pack is
    made).

    Examples
    --------
    >>> import numpy as np, s4tf
    >>> from s4tf.optimizers.blocks import Pack
    >>> slots = [{"m": s4tf.Tensor([1.0, 2.0])}, {"m": s4tf.Tensor([3.0])}]
    >>> pack = Pack([0, 1], [(2,), (1,)], np.float32, slots)
    >>> params = [np.zeros(2, np.float32), np.zeros(1, np.float32)]
    >>> def rule(p, g, s, c):
    ...     p += s["m"] + g
    >>> pack.run(rule, params, [np.ones(2, np.float32), np.ones(1, np.float32)], {})
    >>> [p.tolist() for p in params], pack.slots[1]["m"].tolist()
    ([[2.0, 3.0], [4.0]], [3.0])
    """

    def __init__(self, indices: list[int], shapes: list[tuple], dtype, slots: list[dict]) -> None:
        self.indices = list(indices)
        offsets = np.cumsum([0, *(math.prod(shape) for shape in shapes)]).tolist()
        self.slots = [{} for _ in slots]
        self._buffers = {}
        for name, first in slots[0].items():
            buffer = self._buffers[name] = np.empty(offsets[-1], dtype)
            for j, shape in enumerate(shapes):
                view = buffer[offsets[j]:offsets[j + 1]].reshape(shape)
                view[...] = slots[j][name]._data
                self.slots[j][name] = Tensor._wrap(view, first._backend)
        # Parameters [start, stop) make one block: at most PACK_BYTES of each array.
        limit = PACK_BYTES // np.dtype(dtype).itemsize
        self._blocks = []
        start = 0
        while start < len(shapes):
            stop = start + 1
            while stop < len(shapes) and offsets[stop + 1] - offsets[start] <= limit:
                stop += 1
            ends = [at - offsets[start] for at in offsets[start:stop + 1]]
            self._blocks.append((start, stop, offsets[start], offsets[stop], ends))
            start = stop

    def run(self, rule, params: list, grads: list, constants) -> None:
        """The rule once per block of ``params`` (written back in place) and their slots."""
        for start, stop, begin, end, ends in self._blocks:
            block = params[start:stop]
            param = np.concatenate(block, axis=None)  # flat copies, joined
            rule(param, np.concatenate(grads[start:stop], axis=None),
                 {name: b[begin:end] for name, b in self._buffers.items()}, constants)
            for p, a, b in zip(block, ends, ends[1:], strict=False):
                p.flat = param[a:b]  # C order, as the contiguous parameter lies in memory
