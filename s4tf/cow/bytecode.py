"""A symbolic run of straight-line bytecode: what each stack item holds, and where a result goes.

The call-site reader (:mod:`.callsite`) runs the instructions before an entry
point's call on a :class:`Stack` of records, one per stack item: a
:class:`Name`, a :class:`Const`, an :class:`Attr` (``receiver.name``), a
:class:`Subscr` (``container[key]``), a :class:`Method` loaded for a call, or
a :class:`Marker` (a call's result, the NULL beside a callable, the result
being followed); ``None`` for anything it does not know. The record that the
call passes as the model gives the :class:`Verdict` (its ``verdict`` method):
a name or a call's result may be consumed; an attribute or an item only when
the same statement stores the result back into that very place
(:func:`stored_back`, within :data:`STORE_WINDOW` instructions).
"""

from __future__ import annotations

import dataclasses
import dis
import sys

__all__ = ["CALL", "NULL", "RESULT", "STORE_WINDOW", "Attr", "CALLS", "Const", "Marker", "Method",
           "Name", "Stack", "Subscr", "Verdict", "instructions", "is_target", "show"]


class Verdict:
    """Whether a call site may consume the model, and how the model was passed."""

    __slots__ = ("consume", "passed")

    def __init__(self, consume: bool, passed: str) -> None:
        self.consume, self.passed = consume, passed

    def __repr__(self) -> str:
        return f"Verdict(consume={self.consume}, passed={self.passed!r})"


# What the symbolic run knows of each stack item: one of the records below, or None
# for anything it does not know.


@dataclasses.dataclass(frozen=True, slots=True)
class Name:
    """A variable's value: ``family`` is ``"fast"`` (a local), ``"name"``, ``"global"`` or ``"deref"``."""

    family: str
    name: str

    def verdict(self, instructions, index) -> Verdict:
        # The count proves the name is the only holder; a stale name raises loudly.
        return Verdict(True, f"as the name {self.name!r}")

    def show(self) -> str:
        return str(self.name)


@dataclasses.dataclass(frozen=True, slots=True)
class Const:
    """A constant (its type is kept: ``0``, ``0.0`` and ``False`` are different keys)."""

    type: type
    value: object

    def verdict(self, instructions, index) -> Verdict:
        return _UNKNOWN_EXPRESSION

    def show(self) -> str:
        return repr(self.value)


@dataclasses.dataclass(frozen=True, slots=True)
class Attr:
    """``receiver.name``."""

    name: str
    receiver: object

    def verdict(self, instructions, index) -> Verdict:
        return _place_verdict(self, instructions, index)

    def show(self) -> str:
        return f"{show(self.receiver)}.{self.name}"

    def stores_back(self, items, ins) -> bool:
        """Whether ``ins`` stores the result (under ``items``' top) into this place."""
        return (ins.opname == "STORE_ATTR" and len(items) >= 2 and items[-2] == RESULT
                and items[-1] == self.receiver and ins.argval == self.name)


@dataclasses.dataclass(frozen=True, slots=True)
class Subscr:
    """``container[key]``."""

    container: object
    key: object

    def verdict(self, instructions, index) -> Verdict:
        return _place_verdict(self, instructions, index)

    def show(self) -> str:
        return f"{show(self.container)}[{show(self.key)}]"

    def stores_back(self, items, ins) -> bool:
        """Whether ``ins`` stores the result (under ``items``' top) into this place."""
        return (ins.opname == "STORE_SUBSCR" and len(items) >= 3 and items[-3] == RESULT
                and items[-2] == self.container and items[-1] == self.key)


@dataclasses.dataclass(frozen=True, slots=True)
class Method:
    """A method ``name`` loaded from ``receiver`` for a call (the callee, never the model)."""

    name: str
    receiver: object

    def verdict(self, instructions, index) -> Verdict:
        return _UNKNOWN_EXPRESSION

    def show(self) -> str:
        return "(...)"


@dataclasses.dataclass(frozen=True, slots=True)
class Marker:
    """A stack item without parts: a call's result, the NULL beside a callable, or the
    result of the update call being followed."""

    what: str

    def verdict(self, instructions, index) -> Verdict:
        if self is CALL:
            return Verdict(True, "as the result of a call")  # a temporary nobody else can reach
        return _UNKNOWN_EXPRESSION

    def show(self) -> str:
        return "(...)"


NULL = Marker("null")
CALL = Marker("call")
RESULT = Marker("result")
_UNKNOWN_EXPRESSION = Verdict(False, "as an expression the call-site reader does not understand")
# Instructions read after the update's call to find the store of its result. Storing
# back into a place built of names, constants, attributes and items loads that place's
# receiver and key first, a few instructions per part; a statement that has not stored
# the result after this many is no such store, and copies.
STORE_WINDOW = 32

_NO_STACK_EFFECT = frozenset({
    "NOP", "CACHE", "EXTENDED_ARG", "RESUME", "RESUME_CHECK", "PRECALL", "NOT_TAKEN",
    "COPY_FREE_VARS", "MAKE_CELL",
})
_NAME_LOADS = {
    "LOAD_FAST": "fast", "LOAD_FAST_CHECK": "fast", "LOAD_FAST_BORROW": "fast",
    "LOAD_NAME": "name", "LOAD_GLOBAL": "global", "LOAD_DEREF": "deref",
    "LOAD_CLASSDEREF": "deref",
}
_PAIR_LOADS = frozenset({"LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"})
_POPS = frozenset({"POP_TOP", "STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"})
# How many items each call instruction pops (then it pushes the result).
CALLS = {
    "CALL_FUNCTION": 1, "CALL_METHOD": 2, "CALL_FUNCTION_KW": 2, "CALL": 2, "CALL_KW": 3,
}
# Instructions that pop some items and push exactly one value: pops = 1 - effect.
_ONE_RESULT_PREFIXES = ("BINARY_", "UNARY_", "INPLACE_", "BUILD_", "FORMAT_")
_ONE_RESULT = frozenset({
    "COMPARE_OP", "IS_OP", "CONTAINS_OP", "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE",
    "LIST_TO_TUPLE", "CALL_INTRINSIC_1", "CALL_INTRINSIC_2", "CONVERT_VALUE", "TO_BOOL",
    "LIST_EXTEND", "LIST_APPEND", "SET_ADD", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE",
    "MAP_ADD", "CALL_FUNCTION_EX", "LOAD_CONST", "LOAD_SMALL_INT", "IMPORT_NAME",
})
_METHOD_FLAG_ATTR = sys.version_info >= (3, 12)  # LOAD_ATTR's low bit: a method load
_NULL_FLAG_GLOBAL = sys.version_info >= (3, 11)  # LOAD_GLOBAL's low bit: push NULL too
_NULL_FIRST = sys.version_info < (3, 13)  # NULL below the callable (3.11, 3.12) or above


class Stack:
    """The items a run of straight-line instructions leaves, over an unknown bottom."""

    def __init__(self, code, items=()) -> None:
        self.code = code
        self.items = list(items)
        self.kwnames: tuple = ()

    def pop(self, n: int = 1) -> list:
        items = self.items
        taken = items[len(items) - n:] if n <= len(items) else [None] * (n - len(items)) + items
        del items[max(0, len(items) - n):]
        return taken

    def push(self, *items) -> None:
        self.items.extend(items)

    def run(self, ins) -> None:
        """Apply one instruction."""
        name, arg, value = ins.opname, ins.arg, ins.argval
        if name in _NO_STACK_EFFECT:
            return
        if name in _NAME_LOADS:
            desc = Name(_NAME_LOADS[name], value)
            if name == "LOAD_GLOBAL" and _NULL_FLAG_GLOBAL and arg & 1:
                self.push(*((NULL, desc) if _NULL_FIRST else (desc, NULL)))
            else:
                self.push(desc)
        elif name in _PAIR_LOADS:
            self.push(*(Name("fast", n) for n in value))
        elif name in ("LOAD_CONST", "LOAD_SMALL_INT"):
            self.push(Const(type(value), value))
        elif name == "KW_NAMES":
            self.kwnames = self.code.co_consts[arg]
        elif name == "PUSH_NULL":
            self.push(NULL)
        elif name == "LOAD_METHOD" or (name == "LOAD_ATTR" and _METHOD_FLAG_ATTR and arg & 1):
            (receiver,) = self.pop()
            self.push(Method(value, receiver), receiver)
        elif name == "LOAD_ATTR":
            (receiver,) = self.pop()
            self.push(Attr(value, receiver))
        elif name == "BINARY_SUBSCR" or (name == "BINARY_OP" and ins.argrepr == "[]"):
            container, key = self.pop(2)
            self.push(Subscr(container, key))
        elif name in _POPS:
            self.pop()
        elif name in CALLS:
            self.pop(CALLS[name] + arg)
            self.push(CALL)
            self.kwnames = ()
        elif (name in _ONE_RESULT or name.startswith(_ONE_RESULT_PREFIXES)) and _effect(ins) <= 1:
            self.pop(1 - _effect(ins))
            self.push(None)
        else:
            # Unknown structure: keep only the depth, forget every description.
            self.items = [None] * max(0, len(self.items) + _effect(ins))


def _effect(ins) -> int:
    arg = ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None
    return dis.stack_effect(ins.opcode, arg, jump=False)


def instructions(code) -> list:
    return [ins for ins in dis.get_instructions(code) if ins.opname != "CACHE"]


def is_target(ins) -> bool:
    return bool(ins.is_jump_target)


def _place_verdict(model, instructions, index: int) -> Verdict:
    """The verdict for a model passed as an attribute or an item: consumed only if the
    result is stored back into that very place."""
    shown = model.show()
    if _pure(model) and stored_back(instructions, index, model):
        return Verdict(True, f"as {shown}, with the result stored back there")
    return Verdict(False, f"as {shown}, which keeps the old model (the result is not "
                          "stored back into it)")


def _pure(desc) -> bool:
    """Whether ``desc`` names one place: names, constants, attributes and items of those."""
    kind = type(desc)
    if kind in (Name, Const):
        return True
    if kind is Attr:
        return _pure(desc.receiver)
    if kind is Subscr:
        return _pure(desc.container) and _pure(desc.key)
    return False


def stored_back(instructions, index: int, model) -> bool:
    """Whether the call's result is stored into the place ``model`` (an Attr or a Subscr)
    was loaded from."""
    stack = Stack(None, [RESULT])
    for ins in instructions[index + 1:index + 1 + STORE_WINDOW]:
        if is_target(ins):
            return False
        if ins.opname in ("STORE_ATTR", "STORE_SUBSCR"):
            return model.stores_back(stack.items, ins)
        stack.run(ins)
        if RESULT not in stack.items:
            return False
    return False


def show(desc) -> str:
    """Source-like text for a stack item (for messages)."""
    return "..." if desc is None else desc.show()
