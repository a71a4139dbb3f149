"""``s4tf.tie``: one parameter in two places (weight tying) that stays one value through updates.

Models are values, so "the same tensor in two fields" cannot be kept by
reference: the first update would give each field its own copy (which is
what :class:`s4tf.UntiedParameterWarning` warns about). :func:`tie` instead
puts a :class:`~s4tf.layers.Shared` placeholder in the tied field (no
parameter of its own) and gives the model a subclass of its class (same
name, fields, paths and ``TangentVector``; ``isinstance`` holds) whose
``__call__`` first puts ``transform(<value at source>)`` in the placeholder's
place, then runs the class's own ``__call__``. Differentiation therefore
sees the source used twice and sums both gradients into it; optimizers see
one parameter; checkpoints store it once. The subclass is made once per
class and set of ties, with its own qualified name; a tied model's file loads
with ``s4tf.load(path, like=<a model tied the same way>)`` (without ``like=``
the file's checks refuse the placeholder in a field annotated as a tensor).
"""

from __future__ import annotations

from .checkpoint import register_callable
from .differentiable import Differentiable
from .layers import Shared
from .ops import transpose
from .tensor import Tensor
from .tree import at, get, tree_children
from .tree.registry import new_instance

__all__ = ["tie"]

# Tied layers are saved with their transform, named (the one s4tf function ties need).
register_callable("s4tf.transpose", transpose)

# (class, ties) -> the tied subclass.
_CLASSES: dict = {}


def _base(cls: type) -> type:
    return cls.__dict__.get("_s4tf_untied", cls)


def _ties(cls: type) -> tuple:
    return cls.__dict__.get("_s4tf_ties", ())


def materialized(model):
    """``model`` with every tied field holding the value it stands for (a new value)."""
    for target, source, transform in _ties(type(model)):
        model = at(model, target, Shared(source, transform).resolve(model))
    return model


def _tied_class(base: type, ties: tuple) -> type:
    cls = _CLASSES.get((base, ties))
    if cls is not None:
        return cls
    # The class's own __call__ as written: Layer wraps the tied one (dtype, listeners) with
    # the model itself as the layer called, so the materialized copy is not a second call.
    own = getattr(base.__call__, "__wrapped__", base.__call__)

    def __call__(self, *args, **kwargs):
        return own(materialized(self), *args, **kwargs)

    __call__.__doc__ = own.__doc__
    names = ",".join(f"{target}={source}" for target, source, _ in ties)
    cls = _CLASSES[(base, ties)] = type(base.__name__, (base,), {
        "__module__": base.__module__, "__qualname__": f"{base.__qualname__}.tied[{names}]",
        "__call__": __call__, "TangentVector": base.TangentVector, "_s4tf_ties": ties,
        "_s4tf_untied": base})
    return cls


def tie(model, target: str, source: str, transform=None):
    """``model`` with the value at ``target`` tied to the one at ``source``: a new value.

    ``target`` becomes a view of ``source`` through ``transform`` (e.g. a
    transpose, for a language model's output layer tied to its embedding):
    it holds a :class:`~s4tf.layers.Shared` placeholder instead of a
    parameter, and each call of the model puts ``transform(<value at
    source>)`` there first. So the two stay one value through every update,
    the source receives the sum of both uses' gradients, optimizers and
    :func:`parameter_count` see one parameter, and checkpoints store it once.
    ``target`` and ``source`` may be tensors or whole layers (then
    ``transform`` is usually None). Only a call of the whole model puts the
    view in place; read it elsewhere with ``shared.resolve(model)``.

    Parameters
    ----------
    model : Layer
        The model, called as a whole (``model(x)``).
    target, source : str
        Dotted paths (``"head.weight"``, ``"embedding.embeddings"``).
    transform : callable or None
        Applied to the source's value; the result must have the target's
        shape and dtype.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import layers
    >>> class LM(s4tf.Layer):
    ...     embedding: layers.Embedding
    ...     head: layers.Dense
    ...     def __call__(self, tokens):
    ...         return self.head(self.embedding(tokens))
    >>> lm = s4tf.tie(LM(layers.Embedding(10, 4), layers.Dense(4, 10)), "head.weight",
    ...               "embedding.embeddings", transform=s4tf.transpose)
    >>> s4tf.parameter_count(lm), lm(s4tf.Tensor([1, 2], dtype=s4tf.int32)).shape
    (50, (2, 10))
    """
    if not isinstance(model, Differentiable) or tree_children(model)[0] != "node":
        raise TypeError(f"tie() takes a model (an s4tf.Differentiable), got "
                        f"{type(model).__name__}.")
    target, source = target.rstrip("."), source.rstrip(".")
    if not target or target == source or target.startswith(source + ".") \
            or source.startswith(target + "."):
        raise ValueError(f"tie(): target {target!r} and source {source!r} must be two separate "
                         "parts of the model (neither inside the other).")
    old, shared = get(model, target), Shared(source, transform)
    new = shared.resolve(model)
    if isinstance(old, Tensor) and (not isinstance(new, Tensor) or new.shape != old.shape
                                    or new.dtype != old.dtype):
        what = (f"a {type(new).__name__}" if not isinstance(new, Tensor)
                else f"shape {new.shape} and dtype {new.dtype}")
        raise ValueError(
            f"tie(): {target!r} has shape {old.shape} and dtype {old.dtype}, but "
            f"{'transform(' + repr(source) + ')' if transform else repr(source)} gives {what}; "
            "pass a transform that maps the source onto the target (e.g. s4tf.transpose)."
        )
    cls = type(model)
    ties = tuple(t for t in _ties(cls) if t[0] != target) + ((target, source, transform),)
    tied = at(model, target, shared)
    return _with_class(tied, _tied_class(_base(cls), ties))


def _with_class(value, cls):
    return value if type(value) is cls else new_instance(cls, value.__dict__)
