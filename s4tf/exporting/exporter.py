"""``s4tf.export``: a function of s4tf values as a file that runs without s4tf."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .failures import ExportError, failing_op
from .formats import FORMATS, require, write_onnx, write_stablehlo
from .signature import BATCH, LeafSpec, leaf_specs, tensor_paths
from .state_guard import StateGuard

__all__ = ["Artifact", "export"]


@dataclass(frozen=True)
class Artifact:
    """What :func:`s4tf.export` wrote: the file, its format, and its inputs and outputs.

    ``inputs`` and ``outputs`` are :class:`LeafSpec` tuples (name, shape,
    dtype) in the order the artifact takes and returns them: the flattened
    leaves of the arguments and of the result, in :func:`s4tf.tree_leaves`
    order. A ``"batch"`` in a shape is the symbolic leading axis.

    Examples
    --------
    >>> import os, tempfile, s4tf
    >>> path = os.path.join(tempfile.mkdtemp(), "square.stablehlo")
    >>> artifact = s4tf.export(lambda x: x * x, s4tf.ones([4, 3]), path=path)
    >>> artifact.format, artifact.inputs, artifact.outputs
    ('stablehlo', (LeafSpec(name='x', shape=('batch', 3), dtype='float32'),), \
(LeafSpec(name='output', shape=('batch', 3), dtype='float32'),))
    """

    path: str
    format: str
    inputs: tuple
    outputs: tuple


def _output_specs(names, avals) -> tuple:
    return tuple(LeafSpec(name, tuple(d if isinstance(d, int) else str(d) for d in aval.shape),
                          str(aval.dtype)) for name, aval in zip(names, avals, strict=True))


def export(fn, *example_args, path, format: str = "stablehlo",
           batch_polymorphic: bool = True) -> Artifact:
    """Write ``fn`` as an artifact that runs without s4tf: StableHLO or ONNX.

    ``fn`` is an inference function (``lambda x: model(x)``: the model's
    weights become constants of the artifact) or a whole training step taking
    and returning models, optimizer state and a batch. It is traced once on
    JAX (s4tf ops run their JAX kernels, see ``s4tf.interop``) at the shapes
    and dtypes of ``example_args``.

    The artifact takes the flattened leaves of the arguments and returns the
    flattened leaves of the result, in :func:`s4tf.tree_leaves` order, in
    plain tuples and lists, so a process that never imports s4tf calls it:

    * ``format="stablehlo"``: ``jax.export`` serialized; run it with
      ``jax.export.deserialize(open(path, "rb").read()).call(*leaves)``.
    * ``format="onnx"``: converted by jax2onnx; run it with
      ``onnxruntime.InferenceSession(path)``. Inputs are named after the
      parameters of ``fn`` and the leaves' paths (``model.conv1.filter``,
      ``x``); outputs ``output`` or ``output.<path>``.

    With ``batch_polymorphic=True`` the leading axis of the batch (every
    tensor argument of rank >= 1 outside a model or optimizer state whose
    leading size is the first one's) is symbolic: the artifact takes any
    number of examples. Python floats (hyperparameters held by a model) are
    float32 scalar inputs. Outputs equal s4tf's within float32 rounding.

    Parameters
    ----------
    fn : callable
        Takes ``example_args``' structures and returns Tensors, floats or any
        s4tf value made of them.
    *example_args
        Values with the shapes and dtypes the artifact takes.
    path : str
        The file to write (ONNX may add ``<path>.data`` beside it for large
        weights).
    format : {"stablehlo", "onnx"}
    batch_polymorphic : bool, default True

    Returns
    -------
    Artifact
        The path, format and the artifact's named inputs and outputs.

    Raises
    ------
    ImportError
        When JAX (StableHLO) or jax2onnx/onnx (ONNX) is missing: install
        ``s4tf[export]``.
    FileNotFoundError
        When the directory of ``path`` does not exist.
    s4tf.exporting.ExportError
        When the format cannot express an op of ``fn`` (the message names the
        op and the line of ``fn`` that called it), or when tracing ``fn``
        changed ``State`` that ``fn`` closes over (a BatchNorm of a model it
        closes over, called in the training phase; the cells are restored).

    Examples
    --------
    >>> import os, tempfile, numpy as np, jax, s4tf
    >>> model = s4tf.layers.Dense(3, 2)
    >>> path = os.path.join(tempfile.mkdtemp(), "dense.stablehlo")
    >>> artifact = s4tf.export(lambda x: model(x), s4tf.ones([8, 3]), path=path)
    >>> exported = jax.export.deserialize(bytearray(open(path, "rb").read()))
    >>> x = np.arange(15, dtype=np.float32).reshape(5, 3)   # any batch size
    >>> y = exported.call(x)[0]
    >>> bool(np.allclose(y, model(s4tf.Tensor(x)).numpy(), atol=1e-6))
    True
    """
    if format not in FORMATS:
        raise ValueError(f"s4tf.export: format must be one of {sorted(FORMATS)}; received "
                         f"format={format!r}.")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"s4tf.export: path must be a file path; received path={path!r}.")
    require(format)
    from ..interop import as_jax_function

    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"s4tf.export: the directory of path={path!r} does not exist; "
                                f"create {directory!r} first.")
    specs = leaf_specs(fn, example_args, batch_polymorphic)
    guard = StateGuard(fn)
    try:
        jfn, _, out_tree = as_jax_function(fn, *example_args)
        names = _output_names(out_tree)
        if format == "stablehlo":
            avals = write_stablehlo(jfn, specs, path)
        else:
            avals = write_onnx(jfn, specs, names, path)
    except Exception as error:
        changed = guard.restore()
        if changed:
            raise _state_error(changed) from error
        translated = _export_error(error, format, batch_polymorphic)
        if translated is None:
            raise  # fn's own error, raised outside every s4tf op: the person's to read as is
        raise translated from error
    changed = guard.restore()
    if changed:
        os.remove(path)
        raise _state_error(changed)
    return Artifact(path=path, format=format, inputs=tuple(specs),
                    outputs=_output_specs(names, avals))


def _output_names(out_tree) -> list[str]:
    """``output`` for a tensor result, ``output.<path>`` per tensor leaf of a structure."""
    import jax

    found: list = []

    def probe(*arrays):
        # Rebuilt around tracers: the result's structure, with no array allocated.
        found.append(tensor_paths(out_tree.unflatten(arrays)))
        return ()

    jax.eval_shape(probe, *(jax.ShapeDtypeStruct(shape, dtype) for shape, dtype
                            in zip(out_tree.shapes, out_tree.dtypes, strict=True)))
    return [f"output.{path}" if path else "output" for path in found[0]]


def _state_error(changed: list) -> ExportError:
    named = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return ExportError(
        f"s4tf.export: fn changed state it closes over ({named}), which an artifact cannot "
        "return; it is as it was. A BatchNorm's running statistics change in the training "
        "phase: export an inference function in the inference phase (the default; `with "
        "s4tf.inference():`), or pass the model as an argument and return it. An optimizer's "
        "slots change in opt.update: a training step takes the slots as an argument and "
        "returns them (the guide 'Exporting a model' shows momentum SGD written so).")


def _export_error(error: Exception, format: str, batch_polymorphic: bool) -> ExportError | None:
    """The :class:`ExportError` naming the op behind ``error``; None when no op is to blame
    and the symbolic batch is not either (an error of ``fn``'s own code)."""
    op, line = failing_op(error)
    symbolic = batch_polymorphic and BATCH in str(error)
    if op is None and not symbolic:
        return None
    where = f"the op {op!r}" if op else "an operation"
    called = f" (called from {line})" if line else ""
    hint = ""
    if symbolic:
        hint = (" The batch axis is symbolic: an op that needs its size as a number cannot be "
                "exported that way; pass batch_polymorphic=False to fix the batch size.")
    message = (f"s4tf.export(format={format!r}) cannot express {where}{called}: "
               f"{type(error).__name__}: {error}.{hint}")
    return ExportError(message, op=op)
