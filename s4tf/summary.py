"""Model summaries: each layer called, its output shape and its parameter count."""

from __future__ import annotations

import sys

from . import dtypes as _dtypes
from .creation import zeros
from .differentiable import Differentiable
from .layers import layer as _layer_module
from .learning_phase import inference
from .tensor import Tensor
from .tree import tree_leaves

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
    """Map ``id(layer)`` to its dotted field path inside the model."""
    if isinstance(value, Differentiable):
        out.setdefault(id(value), prefix or type(value).__name__)
        for name in type(value)._s4tf_all_fields:
            _names(value.__dict__.get(name), f"{prefix}.{name}" if prefix else name, out)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _names(item, f"{prefix}[{i}]", out)
    elif isinstance(value, dict):
        for key, item in value.items():
            _names(item, f"{prefix}[{key!r}]", out)
    return out


def _describe_output(output) -> str:
    if isinstance(output, Tensor):
        return str(output.shape)
    if isinstance(output, list | tuple):
        shapes = {_describe_output(o) for o in output}
        if len(shapes) == 1:
            return f"{len(output)} x {shapes.pop()}"
        return "[" + ", ".join(_describe_output(o) for o in output) + "]"
    if isinstance(output, Differentiable):
        fields = type(output)._s4tf_all_fields
        return ", ".join(f"{n}={_describe_output(output.__dict__.get(n))}" for n in fields)
    return type(output).__name__


def summary(model, input_shape, dtype=_dtypes.float32, file=None) -> None:
    """Print every layer ``model`` calls on a zero input of ``input_shape``.

    Each row shows the layer's field path and type (nested layers indented),
    the shape of its output and its parameter count; the total comes last.
    The model runs once, in the inference phase, so nothing changes.

    Parameters
    ----------
    model : Layer
    input_shape : tuple of ints
        The full input shape, batch axis included, e.g. ``(1, 28, 28, 1)``.
    dtype : DType, default float32
        The input's dtype (``s4tf.int32`` for models starting with an Embedding).
    file : text stream, default sys.stdout

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import layers
    >>> s4tf.summary(layers.Sequential(layers.Dense(4, 3), layers.Dense(3, 2)), (1, 4))
    Layer              Output shape  Params
    =======================================
    layers[0] (Dense)  (1, 3)            15
    layers[1] (Dense)  (1, 2)             8
    =======================================
    Total parameters: 23
    """
    file = sys.stdout if file is None else file
    names = _names(model, "", {})
    probe = _layer_module._probe
    if getattr(probe, "records", None) is not None:
        raise RuntimeError("summary() cannot run inside another summary() of the same thread.")
    probe.records, probe.depth, probe.current = [], 0, None
    try:
        with inference():
            model(zeros(tuple(input_shape), dtype=dtype))
        records = probe.records
    finally:
        probe.records, probe.depth, probe.current = None, 0, None
    rows = []
    for entry in records:
        layer = entry["layer"]
        if layer is model:
            continue
        depth = entry["depth"] - (1 if records and records[0]["layer"] is model else 0)
        label = "  " * depth + f"{names.get(id(layer), '?')} ({type(layer).__name__})"
        rows.append((label, _describe_output(entry["output"]), parameter_count(layer)))
    width = max([len("Layer")] + [len(r[0]) for r in rows]) + 2
    shape_width = max([len("Output shape")] + [len(r[1]) for r in rows]) + 2
    count_width = max([len("Params")] + [len(f"{r[2]:,}") for r in rows])
    lines = [f"{'Layer':<{width}}{'Output shape':<{shape_width}}{'Params':>{count_width}}"]
    rule = "=" * len(lines[0])
    lines.append(rule)
    lines += [f"{label:<{width}}{shape:<{shape_width}}{count:>{count_width},}"
              for label, shape, count in rows]
    lines += [rule, f"Total parameters: {parameter_count(model):,}"]
    print("\n".join(lines), file=file)
