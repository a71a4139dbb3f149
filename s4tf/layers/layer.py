"""The Layer base class, Sequential and Function.

A layer is a :class:`s4tf.Differentiable` (a frozen dataclass) with a
``__call__`` differentiable with respect to the layer and its input, as S4TF's
``Layer`` protocol with ``callAsFunction``. The base class also wraps each
subclass's ``__call__`` so that a listener of :mod:`s4tf.hooks`
(``around_layer_call``, installed by :func:`s4tf.summary`) sees every layer a
model actually calls, in order; nobody listens otherwise.
"""

from __future__ import annotations

import functools
import typing

from .. import hooks, precision
from ..autodiff.remat import remat_call
from ..differentiable import Differentiable, no_derivative
from ..ops.elementwise import cast
from ..ops.shapes import shape_of
from ..ops.tracer import is_float_like
from ..tensor import Tensor

__all__ = ["Function", "Layer", "Sequential", "check_input_shape", "compute_dtype"]


def compute_dtype(layer):
    """The dtype ``layer`` computes in: that of its first floating tensor field, or None.

    Layers without tensors of their own (pools, ``Sequential``, a model made of
    sub-layers) have none; their sub-layers decide.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.layers.layer import compute_dtype
    >>> compute_dtype(s4tf.layers.Dense(2, 3, dtype=s4tf.bfloat16)), compute_dtype(s4tf.layers.Flatten())
    (bfloat16, None)
    """
    for value in layer.__dict__.values():
        if isinstance(value, Tensor):
            dtype = value.dtype
            if dtype.is_floating:
                return dtype
    return None


def _needs_cast(value, dtype) -> bool:
    """Whether argument ``value`` is a floating tensor of another dtype than ``dtype``.

    Python numbers, also differentiated ones, stay weakly typed: they take the
    layer's dtype where they meet its tensors.
    """
    if not isinstance(value, Tensor):
        return False
    have = value.dtype
    return (have is not dtype and have.is_floating and have != dtype
            and not (value._traced and is_float_like(value)))


def _in_dtype(args, dtype):
    """``args`` with floating tensors cast to ``dtype`` (differentiable: cotangents go
    back to each input in its own dtype)."""
    return tuple(cast(a, dtype=dtype) if _needs_cast(a, dtype) else a for a in args)


def _in_low_precision(layer, low):
    """A copy of ``layer`` whose tensor fields of the policy's variable dtype are cast to ``low``.

    The casts are differentiable: the parameters' cotangents come back in their
    own dtype (float32 master weights). Sub-layers are left alone; their own
    calls cast them.
    """
    variable = precision.get_policy().variable_dtype
    state = dict(layer.__dict__)
    for name, value in state.items():
        if isinstance(value, Tensor) and value.dtype == variable:
            state[name] = cast(value, dtype=low)
    copy = object.__new__(type(layer))
    copy.__dict__.update(state)
    return copy


def _lowered(out, dtype):
    """``out`` (a tensor, or a tuple or list of them) with float32 tensors cast to ``dtype``."""
    if isinstance(out, tuple | list):
        return type(out)(_lowered(o, dtype) for o in out)
    if isinstance(out, Tensor) and out.dtype == "float32":
        return cast(out, dtype=dtype)
    return out


def _wrap_call(call):
    @functools.wraps(call)
    def __call__(self, *args, **kwargs):
        # Layers compute in their own dtype, as in Keras: a float64 input to a float32
        # layer gives float32, a bfloat16 layer stays bfloat16. One place for every layer.
        dtype = compute_dtype(self)
        computing, back_to = self, None
        if dtype is not None:
            low = precision.low_compute_dtype
            if low is not None and dtype == precision.get_policy().variable_dtype:
                if getattr(self, "_float32_under_mixed_precision", False):
                    back_to = low  # normalization: float32 statistics, a low-precision output
                else:
                    # A mixed precision policy: float32 master weights, low-precision compute.
                    computing, dtype = _in_low_precision(self, low), low
            for a in args:
                # Tested inline: usually every argument has the layer's dtype already
                # (DTypes are shared objects), and nothing is cast.
                if isinstance(a, Tensor) and a.dtype is not dtype and _needs_cast(a, dtype):
                    args = _in_dtype(args, dtype)
                    break
        around = hooks.around_layer_call
        if around is None:
            out = call(computing, *args, **kwargs)
        elif computing is not self:
            # The listener (s4tf.summary) names layers by identity: it sees the layer itself.
            def run(_layer, *a, **k):
                return call(computing, *a, **k)

            out = around(self, run, args, kwargs)
        else:
            out = around(self, call, args, kwargs)  # s4tf.summary lists the layers called
        return out if back_to is None else _lowered(out, back_to)

    __call__._s4tf_wrapped = True
    return __call__


class Layer(Differentiable):
    """Base class of neural-network layers: a differentiable value you can call.

    Subclasses declare typed fields (hyperparameters with
    :func:`s4tf.no_derivative`), build them in ``__init__`` and define
    ``__call__(input)``, which differentiation sees through with respect to
    both the layer and the input.

    A layer computes in its own dtype (that of its first floating tensor
    field): floating tensor arguments of ``__call__`` are cast to it first, so
    a float64 input to a float32 layer gives float32 (as in Keras), and the
    input's gradient comes back in the input's dtype. Under a mixed
    precision policy (:mod:`s4tf.precision`) a layer with float32 parameters
    computes in the policy's low dtype instead: its float32 tensor fields and
    its floating inputs are cast to it, and gradients come back float32.
    Normalization layers (class attribute ``_float32_under_mixed_precision``)
    compute in float32 instead, their statistics needing its precision, and
    return the low dtype.

    Examples
    --------
    >>> import s4tf
    >>> class Scale(s4tf.Layer):
    ...     factor: s4tf.Tensor
    ...     def __call__(self, x):
    ...         return x * self.factor
    >>> layer = Scale(s4tf.Tensor([2.0]))
    >>> layer(s4tf.Tensor([3.0])).tolist()
    [6.0]
    >>> s4tf.gradient(layer, of=lambda m: m(s4tf.Tensor([3.0])).sum()).factor.tolist()
    [3.0]
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        call = cls.__dict__.get("__call__")
        if call is not None and not getattr(call, "_s4tf_wrapped", False):
            cls.__call__ = _wrap_call(call)

    def __call__(self, input):
        raise TypeError(
            f"{type(self).__name__} does not define __call__; a Layer subclass must define "
            "__call__(self, input) returning its output."
        )


def _format_shape(expected) -> str:
    parts = ["..." if d is Ellipsis else ("?" if d is None else str(d)) for d in expected]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def check_input_shape(layer, x, expected, hint: str = "") -> None:
    """Raise ``ValueError`` unless ``x``'s shape matches ``expected``.

    ``expected`` is a tuple of ints, ``None`` (any size) and at most one
    leading ``...`` (any number of leading axes).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.layers.layer import check_input_shape
    >>> check_input_shape(s4tf.layers.Flatten(), s4tf.zeros([2, 3]), (None, 3))
    """
    shape = shape_of(x)
    dims = tuple(expected)
    if dims and dims[0] is Ellipsis:
        tail = dims[1:]
        ok = len(shape) >= len(tail) and all(
            d is None or d == n for d, n in zip(tail, shape[len(shape) - len(tail):], strict=True)
        )
    else:
        ok = len(shape) == len(dims) and all(d is None or d == n for d, n in zip(dims, shape, strict=True))
    if not ok:
        raise ValueError(
            f"{type(layer).__name__}: expected an input of shape {_format_shape(dims)}, got "
            f"shape {shape}. {hint or 'Reshape the input or build the layer for this shape.'}"
        )


class Sequential(Layer):
    """Layers applied one after another: ``Sequential(a, b, c)(x) == c(b(a(x)))``.

    Parameters
    ----------
    *layers : Layer or callable
        The layers, in order (or one list of them).
    checkpoint : bool, default False
        Rematerialise each layer (:func:`s4tf.remat`): reverse mode keeps only
        the layers' inputs and recomputes each layer's intermediates in the
        backward pass. Gradients are identical; memory between the passes
        shrinks, for one more forward pass of time.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import layers
    >>> model = layers.Sequential(layers.Dense(3, 4, activation=s4tf.relu), layers.Dense(4, 2))
    >>> model(s4tf.ones([5, 3])).shape
    (5, 2)
    >>> deep = layers.Sequential(model.layers, checkpoint=True)
    >>> x = s4tf.ones([5, 3])
    >>> g = s4tf.gradient(deep, of=lambda m: m(x).sum())
    >>> g.layers[0].weight.tolist() == s4tf.gradient(model, of=lambda m: m(x).sum()).layers[0].weight.tolist()
    True
    """

    layers: list
    checkpoint: bool = no_derivative(default=False)

    def __init__(self, *layers, checkpoint: bool = False):
        if not isinstance(checkpoint, bool):
            raise TypeError(
                f"Sequential: checkpoint must be True or False, got {checkpoint!r}."
            )
        self.checkpoint = checkpoint
        if len(layers) == 1 and isinstance(layers[0], list | tuple):
            layers = tuple(layers[0])
        for i, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(
                    f"Sequential: item {i} is a {type(layer).__name__}, not a layer; pass "
                    "layers (or wrap a function with layers.Function(fn))."
                )
        self.layers = list(layers)

    def __call__(self, input):
        if self.checkpoint:
            for layer in self.layers:
                input = remat_call(layer, input)
            return input
        for layer in self.layers:
            input = layer(input)
        return input


class Function(Layer):
    """A layer made from a function without parameters (S4TF's ``Function``).

    Examples
    --------
    >>> import s4tf
    >>> double = s4tf.layers.Function(lambda x: x * 2)
    >>> double(s4tf.Tensor([1.0])).tolist()
    [2.0]
    """

    fn: typing.Callable = no_derivative()

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"Function: expected a callable, got {type(fn).__name__}.")
        self.fn = fn

    def __call__(self, input):
        return self.fn(input)
