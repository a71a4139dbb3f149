"""The shapes s4tf's layers need their tensors to have, checked when a file rebuilds a layer.

``s4tf.load`` without ``like=`` takes every tensor's shape from the file, and
a layer checks its input, not its parameters: a ``Dense`` whose bias only
broadcasts (shape ``(1,)``) or whose weight is transposed would load and
compute something else, or fail far from the cause. :data:`SHAPES` describes
each library layer's tensors with named sizes: a name used twice must be the
same size, ``"in*multiplier"`` is the product of two named sizes, an int is
that size; a product whose factors no axis names alone (``"4*hidden"``) or a
sum (``"in+hidden"``) is a size of its own. A layer is known by its qualified class name (as the file records
it), so this module imports no layer; a subclass is held to its base's shapes.
"""

from __future__ import annotations

from ..differentiable import State
from ..tensor import Tensor
from .errors import CheckpointError

__all__ = ["SHAPES", "check_shapes"]

_LAYERS = "s4tf.layers."
_CONV = ("in", "out")  # a filter's channel axes, after its window's
_TRANSPOSED = ("out", "in")
_NORM = {"offset": ("features",), "scale": ("features",)}
_GRU = {f"{gate}_{part}": shape for gate in ("update", "reset", "output")
        for part, shape in (("kernel", ("in", "hidden")),
                            ("recurrent_kernel", ("hidden", "hidden")),
                            ("bias", ("hidden",)), ("recurrent_bias", ("hidden",)))}


def _windowed(channels: tuple, window: tuple) -> dict:
    """A convolution's shapes: ``filter`` ``(*window, *channels)``, ``bias`` ``(out,)``."""
    return {"filter": window + channels, "bias": ("out",)}


# Qualified class name -> {tensor field: its shape in named sizes}. A field
# left out, or holding None (a layer built with use_bias=False), is not checked.
SHAPES: dict[str, dict[str, tuple]] = {
    _LAYERS + "dense.Dense": {"weight": ("in", "out"), "bias": ("out",)},
    _LAYERS + "embedding.Embedding": {"embeddings": ("vocabulary", "width")},
    _LAYERS + "convolutional.Conv1D": _windowed(_CONV, ("width",)),
    _LAYERS + "convolutional.Conv2D": _windowed(_CONV, ("height", "width")),
    _LAYERS + "convolutional.Conv3D": _windowed(_CONV, ("depth", "height", "width")),
    _LAYERS + "transposed.TransposedConv1D": _windowed(_TRANSPOSED, ("width",)),
    _LAYERS + "transposed.TransposedConv2D": _windowed(_TRANSPOSED, ("height", "width")),
    _LAYERS + "transposed.TransposedConv3D": _windowed(_TRANSPOSED, ("depth", "height", "width")),
    _LAYERS + "convolutional.DepthwiseConv2D": {
        "filter": ("height", "width", "in", "multiplier"), "bias": ("in*multiplier",)},
    _LAYERS + "convolutional.SeparableConv1D": {
        "depthwise_filter": ("width", "in", "multiplier"),
        "pointwise_filter": (1, "in*multiplier", "out"), "bias": ("out",)},
    _LAYERS + "convolutional.SeparableConv2D": {
        "depthwise_filter": ("height", "width", "in", "multiplier"),
        "pointwise_filter": (1, 1, "in*multiplier", "out"), "bias": ("out",)},
    _LAYERS + "normalization.BatchNorm": {
        **_NORM, "running_mean": ("features",), "running_variance": ("features",)},
    _LAYERS + "normalization.LayerNorm": _NORM,
    _LAYERS + "normalization.GroupNorm": _NORM,
    _LAYERS + "normalization.InstanceNorm": _NORM,
    # A recurrent cell's weight rows are the input's and the hidden state's features.
    _LAYERS + "recurrent.SimpleRNNCell": {"weight": ("in+hidden", "hidden"), "bias": ("hidden",)},
    _LAYERS + "recurrent.LSTMCell": {"fused_weight": ("in+hidden", "4*hidden"),
                                     "fused_bias": ("4*hidden",)},
    _LAYERS + "recurrent.GRUCell": _GRU,
    _LAYERS + "attention.MultiHeadAttention": {
        "query_weight": ("query", "heads*head"), "key_weight": ("key", "heads*head"),
        "value_weight": ("value", "heads*head"), "output_weight": ("heads*head", "out"),
        "query_bias": ("heads*head",), "key_bias": ("heads*head",),
        "value_bias": ("heads*head",), "output_bias": ("out",)},
}


def _declared(cls: type) -> tuple[str, dict] | None:
    for base in cls.__mro__:
        fields = SHAPES.get(f"{base.__module__}.{base.__qualname__}")
        if fields is not None:
            return base.__qualname__, fields
    return None


def _shape(value) -> tuple | None:
    if isinstance(value, State):  # BatchNorm's running statistics
        value = value.value
    return tuple(value.shape) if isinstance(value, Tensor) else None


def check_shapes(cls: type, fields: dict, where: str) -> None:
    """Raise :class:`CheckpointError` unless ``fields`` (name -> value) fit ``cls``'s shapes.

    Examples
    --------
    >>> import s4tf
    >>> check_shapes(s4tf.layers.Dense, {"weight": s4tf.ones([2, 3]), "bias": s4tf.ones([1])},
    ...              "fc")
    Traceback (most recent call last):
    ...
    s4tf.checkpoint.errors.CheckpointError: the checkpoint's Dense at 'fc' does not have the shapes a Dense needs: bias has shape (1,), but weight (2, 3) makes it (3,) (Dense: weight (in, out), bias (out,)). ...
    """
    declared = _declared(cls)
    if declared is None:
        return
    name, shapes = declared
    problem = _first_misfit(shapes, {f: _shape(fields.get(f)) for f in shapes})
    if problem is None:
        return
    plan = ", ".join(f"{field} ({', '.join(map(str, dims))}{',' * (len(dims) == 1)})"
                     for field, dims in shapes.items() if field in fields)
    raise CheckpointError(
        f"the checkpoint's {cls.__qualname__} at {where!r} does not have the shapes a "
        f"{name} needs: {problem} ({name}: {plan}). A bias that only broadcasts or a "
        "transposed weight computes something else. The file was edited or damaged, or "
        f"written from another version of {name}: load it with like=model built by your code "
        "to see which weights differ."
    )


def _first_misfit(shapes: dict, found: dict) -> str | None:
    """What is wrong with the first field whose shape breaks the named sizes, or None."""
    for field, dims in shapes.items():
        shape = found[field]
        if shape is not None and len(shape) != len(dims):
            return (f"{field} has shape {shape}, not {len(dims)} "
                    f"ax{'is' if len(dims) == 1 else 'es'} ({', '.join(map(str, dims))})")
    sizes: dict[str, tuple[int, str]] = {}  # name -> (size, the field that fixed it)
    # Plain names first, so that a product's factors are known wherever it stands.
    for plain in (True, False):
        for field, dims in shapes.items():
            shape = found[field]
            for axis, dim in enumerate(dims if shape is not None else ()):
                if (isinstance(dim, str) and dim.isidentifier()) != plain:
                    continue
                want, source = _size(dim, sizes)
                if want is None:
                    sizes[dim] = (shape[axis], field)
                elif shape[axis] != want:
                    expected = shape[:axis] + (want,) + shape[axis + 1:]
                    if source is None or source == field:
                        return f"{field} has shape {shape}, expected {expected}"
                    return (f"{field} has shape {shape}, but {source} {found[source]} makes it "
                            f"{expected}")
    return None


def _size(dim, sizes: dict) -> tuple[int | None, str | None]:
    """The size ``dim`` stands for and the field that fixed it; ``(None, None)`` if unknown yet.

    An int is itself; ``"a*b"`` or ``"4*a"`` is a product when its factors are
    known; any other string (a name, or a product or sum of sizes no axis
    names alone, e.g. ``"4*hidden"`` of an LSTM cell) is a name of its own.
    """
    if isinstance(dim, int):
        return dim, None
    if dim in sizes:
        return sizes[dim]
    factors = dim.split("*")
    if len(factors) == 1 or not all(f.isdigit() or f in sizes for f in factors):
        return None, None
    total, source = 1, None
    for factor in factors:
        if factor.isdigit():
            total *= int(factor)
        else:
            size, source = sizes[factor]
            total *= size
    return total, source
