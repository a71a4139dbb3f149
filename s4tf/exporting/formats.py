"""The two artifact formats: StableHLO through ``jax.export``, ONNX through jax2onnx.

Each writer takes the pure JAX function over the flattened leaves
(:func:`s4tf.interop.as_jax_function`) and the leaf specs
(:mod:`.signature`), and writes one file. The packages are imported here, when
an export asks for them, so ``import s4tf`` never imports JAX or ONNX; a
missing one raises an ``ImportError`` that names the extra to install.
"""

from __future__ import annotations

import importlib

from .onnx_rewrites import rewritten
from .signature import BATCH

__all__ = ["FORMATS", "abstract_inputs", "require", "write_onnx", "write_stablehlo"]

# What each format needs, and the extra of pyproject.toml that brings it.
FORMATS = {"stablehlo": ("jax",), "onnx": ("jax", "jax2onnx", "onnx")}
EXTRA = "export"


def require(format: str) -> None:
    """Import what ``format`` needs, or raise an ``ImportError`` naming the extra.

    Examples
    --------
    >>> from s4tf.exporting.formats import require
    >>> require("stablehlo")
    """
    for package in FORMATS[format]:
        try:
            importlib.import_module(package)
        except ImportError as error:
            raise ImportError(
                f"s4tf.export(format={format!r}) needs the package {package!r}, which is not "
                f"installed: pip install 's4tf[{EXTRA}]' (JAX, jax2onnx, onnx and onnxruntime)."
            ) from error


def abstract_inputs(specs) -> list:
    """``jax.ShapeDtypeStruct`` per spec; every ``"batch"`` axis is one shared symbol.

    Examples
    --------
    >>> from s4tf.exporting import LeafSpec
    >>> from s4tf.exporting.formats import abstract_inputs
    >>> [str(a.shape) for a in abstract_inputs([LeafSpec("x", ("batch", 3), "float32")])]
    ['(batch, 3)']
    """
    import jax
    from jax import export

    (batch,) = export.symbolic_shape(BATCH)
    return [jax.ShapeDtypeStruct(tuple(batch if d == BATCH else d for d in spec.shape),
                                 spec.dtype) for spec in specs]


def write_stablehlo(jfn, specs, path: str) -> tuple:
    """Serialize ``jax.export`` of ``jfn`` at ``specs`` to ``path``; return its output avals.

    The file is what ``jax.export.deserialize`` reads back, in any process
    with JAX: the calling convention (leaves in plain tuples) and the
    symbolic batch axis are stored in it.

    Examples
    --------
    >>> import os, tempfile, jax, numpy as np
    >>> from s4tf.exporting import LeafSpec
    >>> from s4tf.exporting.formats import write_stablehlo
    >>> path = os.path.join(tempfile.mkdtemp(), "double.stablehlo")
    >>> _ = write_stablehlo(lambda x: [x * 2], [LeafSpec("x", ("batch",), "float32")], path)
    >>> exported = jax.export.deserialize(bytearray(open(path, "rb").read()))
    >>> exported.call(np.ones(3, np.float32))[0].tolist()
    [2.0, 2.0, 2.0]
    """
    import jax
    from jax import export

    exported = export.export(jax.jit(jfn))(*abstract_inputs(specs))
    with open(path, "wb") as file:
        file.write(exported.serialize())
    return exported.out_avals


def write_onnx(jfn, specs, output_names, path: str) -> tuple:
    """Convert ``jfn`` at ``specs`` to an ONNX model at ``path`` with jax2onnx.

    Inputs are named by the specs (``model.conv1.filter``, ``x``) and outputs
    by ``output_names``; the batch axis is the ONNX dimension parameter
    ``batch``. Returns the output avals.

    Examples
    --------
    >>> import os, tempfile, numpy as np, onnxruntime
    >>> from s4tf.exporting import LeafSpec
    >>> from s4tf.exporting.formats import write_onnx
    >>> path = os.path.join(tempfile.mkdtemp(), "double.onnx")
    >>> _ = write_onnx(lambda x: [x * 2], [LeafSpec("x", ("batch",), "float32")], ["y"], path)
    >>> session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    >>> session.run(["y"], {"x": np.ones(3, np.float32)})[0].tolist()
    [2.0, 2.0, 2.0]
    """
    import jax
    from jax2onnx import to_onnx

    inputs = abstract_inputs(specs)
    out_avals = tuple(jax.eval_shape(jfn, *inputs))
    to_onnx(rewritten(jfn), inputs, model_name="s4tf_export", return_mode="file", output_path=path,
            input_names=[spec.name for spec in specs], output_names=list(output_names))
    return out_avals
