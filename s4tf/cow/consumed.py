"""Consumed values: what an in-place update leaves behind in the old model object.

``new = opt.update(model, grads)`` cannot be told apart from
``model = opt.update(model, grads)`` by reference counts, so an update that
writes a model's buffers in place first *consumes* the old object (Swift's
``consume``): its class is swapped for a consumed type whose every use raises
:class:`ConsumedValueError` naming the call that consumed it. A stale name
therefore fails loudly instead of showing changed numbers. Its ``repr`` (and
``type``, ``isinstance``, IPython's display) still work and name that call.
"""

from __future__ import annotations

__all__ = ["ConsumedValueError", "consume", "is_consumed", "restore"]

# Kept in a consumed object's emptied __dict__ for diagnostics.
_WHERE = "_s4tf_consumed_at"
_BY = "_s4tf_consumed_by"
_CLASS = "_s4tf_consumed_class"
_FIELDS = "_s4tf_consumed_fields"


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


def _diagnostics(self) -> tuple[str, str, str]:
    state = object.__getattribute__(self, "__dict__")
    cls = state.get(_CLASS)
    return (getattr(cls, "__name__", "value"), state.get(_BY, "an in-place update"),
            state.get(_WHERE, "<unknown location>"))


def _raise(self, *args, **kwargs):
    name, by, where = _diagnostics(self)
    raise ConsumedValueError(
        f"this {name} was consumed by {by} at\n"
        f"    {where}\n"
        "and can no longer be used: its buffers now hold the updated values. Use the value "
        "that call returned (write `model = opt.update(model, grads)`), or pass "
        "consume=False to keep the old value (the update then copies)."
    )


def _repr(self) -> str:
    name, by, where = _diagnostics(self)
    return f"<consumed {name}: consumed by {by} at {where}>"


def _getattribute(self, name: str):
    # Introspection keeps working (type checks, debuggers, IPython's display
    # probing); only what the live value had (its fields, its class's methods
    # and attributes) raises.
    state = object.__getattribute__(self, "__dict__")
    cls = state.get(_CLASS)
    if name == "__class__":
        return cls  # isinstance(consumed, Model) stays true
    if name in state.get(_FIELDS, ()) or hasattr(cls, name):
        _raise(self)
    raise AttributeError(
        f"{_repr(self)} has no attribute {name!r} (nor had it before it was consumed)"
    )


class _ConsumedType(type):
    """The metaclass of consumed types: class attributes come from the live class.

    Code that dispatches on ``type(value)`` (flattening, summaries, saving)
    then finds what it expects on the class (``_s4tf_all_fields``,
    ``TangentVector``) and fails at its first look inside the consumed object,
    with :class:`ConsumedValueError`.
    """

    def __getattr__(cls, name: str):
        original = type.__getattribute__(cls, "_s4tf_live_class")
        # Not the dunders: a consumed type must not pass for a dataclass (pprint
        # and dataclasses.fields would then read its fields).
        if original is None or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")
        return getattr(original, name)


class _ConsumedValue(metaclass=_ConsumedType):
    """The type a consumed object is switched to: every use of its contents raises.

    ``repr``, ``str``, ``type``, ``isinstance`` and lookups of attributes the
    value never had (as IPython's display does) work; the repr names the call
    that consumed it.
    """

    __getattribute__ = _getattribute
    __setattr__ = _raise
    __delattr__ = _raise
    __call__ = _raise
    __repr__ = _repr
    __str__ = _repr
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
    _s4tf_live_class = None


_consumed_types: dict[type, type] = {}


def _consumed_type_for(cls: type) -> type:
    """A consumed type with ``cls``'s memory layout (``__dict__`` and ``__weakref__``)."""
    found = _consumed_types.get(cls)
    if found is None:
        found = _ConsumedType(f"Consumed{cls.__name__}", (_ConsumedValue,),
                              {"__module__": __name__, "_s4tf_live_class": cls})
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


def consume(value, location: str, by: str = "an in-place update") -> dict:
    """Turn ``value`` into a consumed object and return the fields it held.

    After this call every use of ``value`` raises :class:`ConsumedValueError`
    naming ``by`` (the call, e.g. ``"SGD.update"``) and ``location``; the
    caller owns the returned field dict (the only remaining reference to the
    old fields).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.cow.consumed import consume
    >>> class P(s4tf.Differentiable):
    ...     x: float
    >>> p = P(1.0)
    >>> consume(p, "example.py:1", by="an example")
    {'x': 1.0}
    >>> p
    <consumed P: consumed by an example at example.py:1>
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
    state[_WHERE], state[_BY], state[_CLASS], state[_FIELDS] = location, by, cls, tuple(fields)
    return fields


def restore(value, new) -> None:
    """Turn the consumed ``value`` into the live value ``new`` (same class and fields).

    An in-place update interrupted by Ctrl-C finishes first and then does this,
    so that the caller's name, which the interrupted assignment never rebound,
    holds the finished update rather than a consumed value.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.cow.consumed import consume, restore
    >>> class P(s4tf.Differentiable):
    ...     x: float
    >>> p = P(1.0)
    >>> _ = consume(p, "example.py:1")
    >>> restore(p, P(2.0))
    >>> p
    P(x=2.0)
    """
    state = object.__getattribute__(value, "__dict__")
    state.clear()
    object.__setattr__(value, "__class__", type(new))
    state.update(object.__getattribute__(new, "__dict__"))


def is_consumed(value) -> bool:
    """Whether ``value`` is an object an in-place update consumed.

    Examples
    --------
    >>> from s4tf.cow.consumed import is_consumed
    >>> is_consumed(3.0)
    False
    """
    return isinstance(type(value), type) and issubclass(type(value), _ConsumedValue)
