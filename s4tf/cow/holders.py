"""``S4TF_DEBUG=1``: say which holder forced a copying update of a large model.

Only runs when debugging and a large model was copied, since asking the garbage
collector for referrers walks every tracked object.
"""

from __future__ import annotations

import gc
import os
import sys
import types

__all__ = ["debug_enabled", "describe_holders", "report_copy"]

LARGE_MODEL_BYTES = 1 << 20


def debug_enabled() -> bool:
    """Whether ``S4TF_DEBUG`` asks for diagnostics (any value but empty or ``0``)."""
    return os.environ.get("S4TF_DEBUG", "").strip() not in ("", "0")


def _describe(holder, target, ignore: set[int]) -> str | None:
    if isinstance(holder, types.FrameType):
        names = [n for n, v in holder.f_locals.items() if v is target]
        code = holder.f_code
        return (f"local variable(s) {', '.join(map(repr, names)) or '?'} of {code.co_name}() "
                f"at {code.co_filename}:{holder.f_lineno}")
    if type(holder) is dict:
        keys = [k for k, v in holder.items() if v is target]
        if "__name__" in holder and "__builtins__" in holder:
            return f"module-level name(s) {', '.join(map(repr, keys))} in {holder['__name__']}"
        for owner in gc.get_referrers(holder):
            if id(owner) not in ignore and getattr(owner, "__dict__", None) is holder:
                return f"attribute(s) {', '.join(map(repr, keys))} of a {type(owner).__name__}"
        return f"a dict (key(s) {', '.join(map(repr, keys))})"
    if type(holder) is list:
        return f"a list of {len(holder)} item(s)"
    if type(holder) is types.CellType:
        return "a closure (a function that captured it)"
    if hasattr(holder, "base") and getattr(holder, "base", None) is target:
        return "a NumPy view of its storage (e.g. from Tensor.numpy())"
    return f"a {type(holder).__name__}"


def describe_holders(target, ignore=(), own=()) -> list[str]:
    """Human descriptions of the objects that refer to ``target``, except ``own`` ids."""
    skip = {id(x) for x in ignore} | {id(sys._getframe()), id(sys._getframe(1))} | set(own)
    out = []
    for holder in gc.get_referrers(target):
        if id(holder) in skip:
            continue
        text = _describe(holder, target, skip)
        if text:
            out.append(text)
    return out


def report_copy(what: str, nbytes: int, blocker, location: str, ignore=(), own=(),
                reason: str | None = None) -> None:
    """Print (to stderr) that ``what`` copied a large model, and who forced it.

    ``own`` holds the ids of the model's own objects (not reported as holders);
    ``reason`` replaces the holder search when the copy was asked for.
    """
    if nbytes < LARGE_MODEL_BYTES:
        return
    if reason is None:
        if blocker is None:
            return
        held_by = describe_holders(blocker, ignore, own) or [
            "an object the garbage collector cannot see (for a storage: most likely a NumPy "
            "view from Tensor.numpy())"]
        reason = (f"a {type(blocker).__name__} on the path to them is also held by "
                  + "; ".join(held_by)
                  + ". Drop that reference (or rebind: model = opt.update(model, grads)) to "
                  "update in place")
    print(f"[s4tf] {what} at {location} copied {nbytes / 2**20:.1f} MiB of parameters instead "
          f"of updating in place: {reason}.", file=sys.stderr)
