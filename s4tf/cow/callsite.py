"""Reading the call site: how the model reached an update, and where the result goes.

Reference counts say how many holders a model has, not which. ``model =
opt.update(model, g)`` and ``m = opt.update(models[0], g)`` both show one
holder besides the argument, but consuming is right only for the first: a
rebound name never shows the old model again, while the list would keep a
consumed value. The caller's frame is running the call instruction at
``f_lasti``, so a symbolic run of the instructions before it tells how the
argument was loaded, and the instructions after it tell where the result is
stored. The update may consume its argument when it was loaded by

- a plain name (local, module, global or closure variable): the count then
  proves the name is the only holder, and a stale name raises loudly;
- a call (a temporary nobody else can reach);
- an attribute or an item (``self.model``, ``models[i]``) whose result is
  stored back into that very place by the same statement.

Anything else, including every shape this reading does not understand, copies.
The symbolic run (:mod:`.bytecode`) describes each stack item by a record;
the record the call passes as the model gives the verdict (its ``verdict``
method). The verdict depends only on the code and the instruction, so it is cached per
``(code object, f_lasti)``.
"""

from __future__ import annotations

from . import bytecode
from .bytecode import CALLS, NULL, Attr, Const, Method, Name, Stack, Verdict, is_target

__all__ = ["MOVED", "MOVED_METHOD", "UPDATE", "Entry", "Verdict", "may_consume", "verdict"]


class Entry:
    """How a call site passes an entry point its model.

    Attributes
    ----------
    callee : str
        The attribute or name the call site uses for the entry point
        (``opt.update``, ``s4tf.moved``); a call through another name copies.
    params : tuple of str
        The required parameters after the bound object, in order.
    receiver : bool
        Whether the model is the object the method is bound to
        (``value.moved(along=)``) rather than the first parameter.
    """

    __slots__ = ("callee", "params", "receiver")

    def __init__(self, callee: str, params: tuple[str, ...], receiver: bool) -> None:
        self.callee, self.params, self.receiver = callee, params, receiver

    def __repr__(self) -> str:
        return f"Entry({self.callee!r}, {self.params!r}, receiver={self.receiver})"


UPDATE = Entry("update", ("model", "grads"), receiver=False)
MOVED = Entry("moved", ("value", "along"), receiver=False)
MOVED_METHOD = Entry("moved", ("along",), receiver=True)
# Keywords an entry point accepts besides its parameters.
_OPTIONAL = frozenset({"consume"})


def may_consume(caller, entry: Entry) -> bool:
    """Whether the call ``caller`` is running may consume the model it passes.

    ``caller`` is the frame that called the entry point ``entry``.

    Examples
    --------
    >>> import sys
    >>> from s4tf.cow import callsite
    >>> def moved(value, along):
    ...     return callsite.may_consume(sys._getframe(1), callsite.MOVED)
    >>> models, x = [object()], object()
    >>> moved(x, None), moved(models[0], None)
    (True, False)
    """
    return verdict(caller.f_code, caller.f_lasti, entry).consume


_cache: dict[tuple[int, int, int], tuple[object, Verdict]] = {}
_CACHE_LIMIT = 4096  # notebooks make a new code object per run of a cell


def verdict(code, lasti: int, entry: Entry) -> Verdict:
    """The :class:`Verdict` for the call at ``lasti`` in ``code`` (cached)."""
    key = (id(code), lasti, id(entry))
    hit = _cache.get(key)
    if hit is not None and hit[0] is code:
        return hit[1]
    try:
        found = _read(code, lasti, entry)
    except Exception:  # noqa: BLE001 - bytecode this reading does not know: copy
        found = Verdict(False, "in a call this interpreter's bytecode reader does not understand")
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[key] = (code, found)  # the code object is kept so its id stays unique
    return found


def _read(code, lasti: int, entry: Entry) -> Verdict:
    instructions = bytecode.instructions(code)
    index = max((i for i, ins in enumerate(instructions) if ins.offset <= lasti), default=None)
    if index is None or instructions[index].opname not in CALLS:
        return Verdict(False, "through a call the call-site reader does not recognise")
    # Straight-line code only: start where the last jump lands before the call.
    start = max((i for i in range(index + 1) if is_target(instructions[i])), default=0)
    stack = Stack(code)
    for ins in instructions[start:index]:
        stack.run(ins)
    model = _model_argument(stack, instructions[index], entry)
    if model is None:
        return Verdict(False, "in a call shape the call-site reader does not understand")
    return model.verdict(instructions, index)


def _model_argument(stack: Stack, call, entry: Entry):
    """The description of the model the call passes, or None if unsure."""
    argc, name = call.arg, call.opname
    if name in ("CALL_FUNCTION_KW", "CALL_KW"):
        (names,) = stack.pop()
        if type(names) is not Const or names.type is not tuple:
            return None
        kwnames = names.value
    else:
        kwnames = stack.kwnames
    args = stack.pop(argc)
    below = stack.pop(1 if name in ("CALL_FUNCTION", "CALL_FUNCTION_KW") else 2)
    if name in ("CALL_FUNCTION", "CALL_FUNCTION_KW"):
        callee = below[-1]
    elif type(below[0]) is Method:
        callee = below[0]
    elif below[1] == NULL:
        callee = below[0]
    elif below[0] == NULL:
        callee = below[1]
    else:
        return None
    if type(callee) not in (Name, Attr, Method) or callee.name != entry.callee:
        return None
    positional = len(args) - len(kwnames)
    keywords = dict(zip(kwnames, args[positional:], strict=True))
    # The bound form only: every parameter given once, nothing unknown.
    if positional > len(entry.params) or set(keywords) - set(entry.params) - _OPTIONAL:
        return None
    if any(p not in keywords for p in entry.params[positional:]):
        return None
    if any(p in keywords for p in entry.params[:positional]):
        return None
    if entry.receiver:
        return callee.receiver if type(callee) in (Attr, Method) else None
    return args[0] if positional else keywords[entry.params[0]]
