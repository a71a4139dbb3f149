"""Model summaries: each layer called, its output shape and its parameter count."""

from __future__ import annotations

import sys
import threading

from . import dtypes as _dtypes
from . import hooks
from .creation import zeros
from .layers.layer import Sequential
from .learning_phase import inference
from .tensor import Tensor
from .tree import join_path, tree_children, tree_leaves

__all__ = ["parameter_count", "summary"]


def parameter_count(model) -> int:
    """The number of trainable scalars in ``model`` (its differentiable leaves).

    Running statistics (State cells) and ``no_derivative`` fields do not count.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.parameter_count(s4tf.layers.Dense(400, 120))
    48120
    """
    return sum(leaf.size if isinstance(leaf, Tensor) else 1
               for leaf in tree_leaves(model, differentiable=True))


def _names(value, prefix, out):
    """Map ``id(layer)`` to its field path inside the model (``blocks[0].conv``)."""
    kind, children = tree_children(value)
    if kind == "node":
        out.setdefault(id(value), prefix or type(value).__name__)
    if kind == "cell":
        return out  # running statistics hold no layers
    for key, child, _ in children:
        if kind == "node":
            label = join_path(prefix, key)
        else:
            label = f"{prefix}[{key!r}]" if kind == "dict" else f"{prefix}[{key}]"
        _names(child, label, out)
    return out


def _describe_output(output) -> str:
    if isinstance(output, Tensor):
        return str(output.shape)
    kind, children = tree_children(output)
    if kind in ("list", "tuple"):
        shapes = {_describe_output(o) for _, o, _ in children}
        if len(shapes) == 1:
            return f"{len(output)} x {shapes.pop()}"
        return "[" + ", ".join(_describe_output(o) for _, o, _ in children) + "]"
    if kind == "node":
        return ", ".join(f"{name}={_describe_output(child)}" for name, child, _ in children)
    return type(output).__name__


def _non_trainable_count(model) -> int:
    """Scalars in tensors that differentiation does not see: State cells (running statistics)
    and tensors in ``no_derivative`` fields. Python numbers there are hyperparameters, not values."""
    def tensor_size(leaves):
        return sum(leaf.size for leaf in leaves if isinstance(leaf, Tensor))

    return tensor_size(tree_leaves(model)) - tensor_size(tree_leaves(model, differentiable=True))


def _shown_rows(records, model, max_depth):
    """``(record, indent)`` for each recorded call shown at ``max_depth``.

    A call's level is 1 for the model's direct children, plus one for each
    enclosing layer that is not a :class:`~s4tf.layers.Sequential` (a
    Sequential only groups its items, so they count as its own level). Calls
    deeper than ``max_depth`` are left out: their enclosing block's row
    already shows its output and every parameter inside it.
    """
    rows, ancestors = [], []  # ancestors: (call depth, layer) of the calls enclosing this one
    for entry in records:
        while ancestors and ancestors[-1][0] >= entry["depth"]:
            ancestors.pop()
        layer = entry["layer"]
        ancestors_below_model = [a for _, a in ancestors if a is not model]
        if layer is not model:
            level = 1 + sum(not isinstance(a, Sequential) for a in ancestors_below_model)
            if max_depth is None or level <= max_depth:
                rows.append((entry, len(ancestors_below_model)))
        ancestors.append((entry["depth"], layer))
    return rows


def summary(model, input_shape, dtype=_dtypes.float32, file=None, max_depth: int | None = 1) -> None:
    """Print the layers ``model`` calls on a zero input of ``input_shape``.

    Each row shows the layer's field path and type (nested layers indented),
    the shape of its output and its trainable parameter count. By default
    (``max_depth=1``) the rows are the model's direct children, so a block
    (a ResNet bottleneck, a dense block) is one row holding all its
    parameters; items of a :class:`~s4tf.layers.Sequential` count as the
    Sequential's own level. ``max_depth=2`` opens blocks one level, ``None``
    lists every layer. The totals come last: trainable parameters,
    non-trainable values (BatchNorm running statistics and other tensors
    differentiation does not see) and their sum (Keras's convention;
    :func:`parameter_count` is the trainable count). The model runs once, in
    the inference phase, so nothing changes.

    Parameters
    ----------
    model : Layer
    input_shape : tuple of ints
        The full input shape, batch axis included, e.g. ``(1, 28, 28, 1)``.
    dtype : DType, default float32
        The input's dtype (``s4tf.int32`` for models starting with an Embedding).
    file : text stream, default sys.stdout
    max_depth : int or None, default 1
        The deepest level listed (1: the model's direct children); None for all.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import layers
    >>> model = layers.Sequential(layers.Dense(4, 3), layers.BatchNorm(3), layers.Dense(3, 2))
    >>> s4tf.summary(model, (1, 4))
    Layer                  Output shape  Params
    ===========================================
    layers[0] (Dense)      (1, 3)            15
    layers[1] (BatchNorm)  (1, 3)             6
    layers[2] (Dense)      (1, 2)             8
    ===========================================
    Trainable parameters: 29
    Non-trainable parameters: 6
    Total parameters: 35
    """
    if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 1):
        raise ValueError(f"summary: max_depth must be an int >= 1 or None (every layer); "
                         f"received max_depth={max_depth!r}.")
    file = sys.stdout if file is None else file
    names = _names(model, "", {})
    if hooks.installed("summary"):
        raise RuntimeError("summary() cannot run inside another summary() of the same thread.")
    recorder = _LayerCalls()
    listener = hooks.Listener("summary", around_layer_call=recorder,
                              thread=threading.get_ident())
    with hooks.listening(listener), inference():
        model(zeros(tuple(input_shape), dtype=dtype))
    records = recorder.records
    rows = []
    for entry, indent in _shown_rows(records, model, max_depth):
        layer = entry["layer"]
        label = "  " * indent + f"{names.get(id(layer), '?')} ({type(layer).__name__})"
        rows.append((label, _describe_output(entry["output"]), parameter_count(layer)))
    width = max([len("Layer")] + [len(r[0]) for r in rows]) + 2
    shape_width = max([len("Output shape")] + [len(r[1]) for r in rows]) + 2
    count_width = max([len("Params")] + [len(f"{r[2]:,}") for r in rows])
    lines = [f"{'Layer':<{width}}{'Output shape':<{shape_width}}{'Params':>{count_width}}"]
    rule = "=" * len(lines[0])
    lines.append(rule)
    lines += [f"{label:<{width}}{shape:<{shape_width}}{count:>{count_width},}"
              for label, shape, count in rows]
    trainable, non_trainable = parameter_count(model), _non_trainable_count(model)
    lines += [rule, f"Trainable parameters: {trainable:,}",
              f"Non-trainable parameters: {non_trainable:,}",
              f"Total parameters: {trainable + non_trainable:,}"]
    print("\n".join(lines), file=file)


class _LayerCalls:
    """The layers a model calls, in order, with their depth and output (a hook listener)."""

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.depth = 0
        self.current = None

    def __call__(self, layer, call, args, kwargs):
        # A subclass's __call__ calling super().__call__ is one layer call, not two.
        if self.current is layer:
            return call(layer, *args, **kwargs)
        entry = {"layer": layer, "depth": self.depth, "output": None}
        self.records.append(entry)
        outer = (self.depth, self.current)
        self.depth, self.current = outer[0] + 1, layer
        try:
            out = call(layer, *args, **kwargs)
        finally:
            self.depth, self.current = outer
        entry["output"] = out
        return out
