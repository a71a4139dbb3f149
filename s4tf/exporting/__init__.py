"""Export: an s4tf function as a StableHLO or ONNX file that runs without s4tf.

:func:`export` traces the function once on JAX (through
:func:`s4tf.interop.as_jax_function`: s4tf ops run their JAX kernels on
tracers) over the flattened leaves of its arguments, and writes it with
``jax.export`` (StableHLO, serialized) or jax2onnx (ONNX). What the artifact
takes and returns is described by :class:`Artifact` and :class:`LeafSpec`;
an op the format cannot express raises :class:`ExportError` naming it.
How it is built: ``HOW_IT_WORKS.md``, "Export".

Examples
--------
>>> import os, tempfile, s4tf
>>> path = os.path.join(tempfile.mkdtemp(), "relu.onnx")
>>> s4tf.export(s4tf.relu, s4tf.ones([2, 3]), path=path, format="onnx").inputs
(LeafSpec(name='x', shape=('batch', 3), dtype='float32'),)
"""

from .exporter import Artifact, export
from .failures import ExportError
from .signature import LeafSpec

__all__ = ["Artifact", "ExportError", "LeafSpec", "export"]
