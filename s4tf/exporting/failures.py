"""Naming the s4tf op behind an export failure.

An export fails in two places: while JAX traces ``fn`` (an op that cannot
take a symbolic batch axis, say) or while jax2onnx lowers a JAX primitive
ONNX has no rule for. In both the person needs the s4tf op and their own
line, not JAX's internals. Kernels are methods named after their primitive
(``backends/**/*kernels.py``) and ops functions named after themselves (``ops/``), so the
op is the outermost kernel on the failing call stack, or, when no kernel
ran yet (a shape check refused), the outermost op: on the error's own
traceback while tracing, on the failing equation's recorded source while
lowering.
"""

from __future__ import annotations

import os
import traceback

__all__ = ["ExportError", "failing_op"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_KERNELS = os.path.join(_PACKAGE, "backends") + os.sep
_OPS = os.path.join(_PACKAGE, "ops") + os.sep
# Tensor's operators are generic wrappers ("method") around the ops they call.
_WRAPPERS = os.path.join(_OPS, "tensor_methods.py")


class ExportError(ValueError):
    """``s4tf.export`` could not express ``fn`` in the format asked for.

    The message names the s4tf op, the user's line that called it and what the
    exporter said; ``op`` holds the op's name (None when no op is to blame).

    Examples
    --------
    >>> from s4tf.exporting import ExportError
    >>> str(ExportError("cannot export", op="cumsum")), ExportError("x", op="cumsum").op
    ('cannot export', 'cumsum')
    """

    def __init__(self, message: str, op: str | None = None) -> None:
        super().__init__(message)
        self.op = op


def _frames_of_equation(tb) -> list | None:
    """``(file, function, line)`` of the equation being lowered when ``tb`` was raised,
    outermost first; None if no frame of ``tb`` holds one."""
    for frame, _ in reversed(list(traceback.walk_tb(tb))):
        eqn = frame.f_locals.get("eqn")
        source = getattr(getattr(eqn, "source_info", None), "traceback", None)
        if source is not None:
            # JAX keeps a compact traceback, innermost frame first.
            return [(f.file_name, f.function_name, f.line_num) for f in reversed(source.frames)]
    return None


def _frames_of_error(tb) -> list:
    return [(f.filename, f.name, f.lineno) for f in traceback.extract_tb(tb)]


def _is_library(path: str) -> bool:
    return path.startswith(_PACKAGE + os.sep) or f"{os.sep}site-packages{os.sep}" in path \
        or f"{os.sep}jax{os.sep}" in path or path.startswith("<frozen")


def failing_op(error: BaseException) -> tuple[str | None, str | None]:
    """``(op, user_line)`` behind ``error``: the s4tf op or kernel that was running and the
    ``file:line`` of the innermost frame outside s4tf and the libraries below it.

    Examples
    --------
    >>> failing_op(ValueError("raised outside any kernel"))
    (None, None)
    """
    frames = _frames_of_equation(error.__traceback__) or _frames_of_error(error.__traceback__)
    # JAX records qualified names (JaxNNKernels.conv); Python's traceback plain ones.
    named = [(path, name.rpartition(".")[2]) for path, name, _ in frames]
    public = [(path, name) for path, name in named if not name.startswith(("_", "<"))]
    # The kernel that was running is the primitive; before any kernel ran, the op that
    # refused (a shape check).
    op = next((name for path, name in public
               if path.startswith(_KERNELS) and path.endswith("kernels.py")), None) or next(
        (name for path, name in public if path.startswith(_OPS) and path != _WRAPPERS), None)
    user = [f"{path}:{line}" for path, _, line in frames if not _is_library(path)]
    return op, (user[-1] if user else None)
