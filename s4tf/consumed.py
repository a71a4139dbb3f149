"""Consumed values: what an in-place update leaves behind in the old model object.

``new = opt.update(model, grads)`` cannot be told apart from
``model = opt.update(model, grads)`` by reference counts, so an update that
writes a model's buffers in place first *consumes* the old object (Swift's
``consume``): its class is swapped for a consumed type whose every use raises
:class:`ConsumedValueError` naming the call that consumed it. A stale name
therefore fails loudly instead of showing changed numbers.
"""

from __future__ import annotations

__all__ = ["ConsumedValueError", "consume", "is_consumed"]

_WHERE = "_s4tf_consumed_by"
_TYPE_NAME = "_s4tf_consumed_type"


class ConsumedValueError(RuntimeError):
    """A value was used after an in-place update consumed it.

    ``opt.update(model, grads)`` writes ``model``'s buffers in place when nothing
    else refers to them, and turns the old ``model`` object into a consumed
    value. Use the value the update returned instead.

    Examples
    --------
    >>> import s4tf
    >>> class Line(s4tf.Differentiable):
    ...     w: s4tf.Tensor
    >>> model = Line(s4tf.ones([2]))
    >>> opt = s4tf.optimizers.SGD(model, learning_rate=0.5)
    >>> new = opt.update(model, Line.TangentVector(w=s4tf.ones([2])))
    >>> try:
    ...     model.w
    ... except s4tf.ConsumedValueError:
    ...     print("model was consumed; use new")
    model was consumed; use new
    >>> new.w.tolist()
    [0.5, 0.5]
    """


def _raise(self, *args, **kwargs):
    state = object.__getattribute__(self, "__dict__")
    raise ConsumedValueError(
        f"this {state.get(_TYPE_NAME, 'value')} was consumed by an in-place update at\n"
        f"    {state.get(_WHERE, '<unknown location>')}\n"
        "and can no longer be used: its buffers now hold the updated values. Use the value "
        "that call returned (write `model = opt.update(model, grads)`), or pass "
        "consume=False to keep the old value (the update then copies)."
    )


class _ConsumedValue:
    """The type a consumed object is switched to: every use raises."""

    __getattribute__ = _raise
    __setattr__ = _raise
    __delattr__ = _raise
    __call__ = _raise
    __repr__ = _raise
    __str__ = _raise
    __bool__ = _raise
    __len__ = _raise
    __iter__ = _raise
    __getitem__ = _raise
    __setitem__ = _raise
    __contains__ = _raise
    __eq__ = _raise
    __ne__ = _raise
    __lt__ = _raise
    __le__ = _raise
    __gt__ = _raise
    __ge__ = _raise
    __hash__ = _raise  # type: ignore[assignment]
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _raise
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __neg__ = __pow__ = _raise
    __float__ = __int__ = __index__ = __array__ = __reduce__ = __reduce_ex__ = _raise
    __getstate__ = __copy__ = __deepcopy__ = __enter__ = __exit__ = _raise


_consumed_types: dict[type, type] = {}


def _consumed_type_for(cls: type) -> type:
    """A consumed type with ``cls``'s memory layout (``__dict__`` and ``__weakref__``)."""
    found = _consumed_types.get(cls)
    if found is None:
        found = type(f"Consumed{cls.__name__}", (_ConsumedValue,), {"__module__": __name__})
        _consumed_types[cls] = found
    return found


def can_consume(value) -> bool:
    """Whether ``value``'s class can be swapped for a consumed type (plain ``__dict__`` layout)."""
    cls = type(value)
    return (
        "__dict__" in dir(cls)
        and cls.__itemsize__ == 0
        and cls.__basicsize__ == _ConsumedValue.__basicsize__
        and cls.__weakrefoffset__ == _ConsumedValue.__weakrefoffset__
    )


def consume(value, location: str) -> dict:
    """Turn ``value`` into a consumed object and return the fields it held.

    After this call every use of ``value`` raises :class:`ConsumedValueError`
    naming ``location``; the caller owns the returned field dict (the only
    remaining reference to the old fields).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.consumed import consume
    >>> class P(s4tf.Differentiable):
    ...     x: float
    >>> p = P(1.0)
    >>> consume(p, "example.py:1")
    {'x': 1.0}
    >>> try:
    ...     p.x
    ... except s4tf.ConsumedValueError as e:
    ...     print("consumed")
    consumed
    """
    cls = type(value)
    state = object.__getattribute__(value, "__dict__")
    fields = dict(state)
    state.clear()
    # Swap the class before filling in the diagnostics: object.__setattr__ would
    # otherwise go through the frozen dataclass' __setattr__.
    object.__setattr__(value, "__class__", _consumed_type_for(cls))
    state[_WHERE] = location
    state[_TYPE_NAME] = cls.__name__
    return fields


def is_consumed(value) -> bool:
    """Whether ``value`` is an object an in-place update consumed.

    Examples
    --------
    >>> from s4tf.consumed import is_consumed
    >>> is_consumed(3.0)
    False
    """
    return isinstance(type(value), type) and issubclass(type(value), _ConsumedValue)
