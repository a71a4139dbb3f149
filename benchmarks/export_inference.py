"""Exported ResNet-20 inference: onnxruntime and JAX (StableHLO) next to PyTorch eager.

The s4tf CIFAR ResNet-20 (``models.ResNet(depth=20, classes=10,
stem="cifar")``, inference phase) is exported once with ``s4tf.export`` in
both formats (batch polymorphic: one file serves every batch size) and run at
batch 1 and 64 on 32x32 images:

* ``onnx``: the ONNX file in onnxruntime (CPU), the serving peer;
* ``stablehlo``: the serialized ``jax.export`` artifact, deserialized and
  called (compiled by XLA on first call);
* ``torch``: the same architecture in PyTorch eager (``zoo_step.torch_model``,
  NCHW, ``inference_mode``), the reference.

Sides take turns step by step (``side_by_side.compare``); ``ratio`` is
throughput of the artifact / PyTorch's (above 1: the artifact is faster). The
JSON also says how far each artifact's logits are from s4tf's own (naive
backend) at batch 64. Both runtimes get the same thread count (``--threads``,
default: PyTorch's).

Usage: ``python benchmarks/export_inference.py [--steps 20] [--runs 3] [--threads N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import numpy as np
from side_by_side import compare
from zoo_step import MODELS, torch_model

import s4tf

BATCHES = (1, 64)


def _named(comparison: dict) -> dict:
    """``compare``'s runs with the sides named: the artifact is "mine", PyTorch the peer."""
    names = {"s4tf_ms_per_step": "artifact_ms_per_step", "peer_ms_per_step": "torch_ms_per_step"}
    runs = [{names.get(k, k): v for k, v in run.items()} for run in comparison["runs"]]
    return {**comparison, "runs": runs}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    arguments = parser.parse_args(argv)

    import jax
    import onnxruntime
    import torch

    threads = arguments.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    s4tf.random.seed(0)
    model = s4tf.models.ResNet(depth=20, classes=10, stem="cifar")
    rng = np.random.default_rng(0)
    images = {b: rng.uniform(size=(b, 32, 32, 3)).astype(np.float32) for b in BATCHES}

    directory = tempfile.mkdtemp()
    paths = {f: os.path.join(directory, f"resnet20.{f}") for f in ("onnx", "stablehlo")}
    for format, path in paths.items():
        s4tf.export(lambda x: model(x), s4tf.Tensor(images[1]), path=path, format=format)

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(paths["onnx"], options,
                                           providers=["CPUExecutionProvider"])
    with open(paths["stablehlo"], "rb") as file:
        exported = jax.export.deserialize(bytearray(file.read()))
    call = jax.jit(exported.call)
    twin = torch_model(MODELS["resnet20"]).eval()

    expected = model(s4tf.Tensor(images[64])).numpy()
    onnx_logits = session.run(None, {"x": images[64]})[0]
    stablehlo_logits = np.asarray(call(images[64])[0])
    result = {
        "threads": threads,
        "max_abs_difference_from_s4tf": {
            "onnx": float(np.abs(onnx_logits - expected).max()),
            "stablehlo": float(np.abs(stablehlo_logits - expected).max()),
        },
    }
    for batch in BATCHES:
        x = images[batch]
        x_torch = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()

        def run_torch(x_torch=x_torch):
            with torch.inference_mode():
                twin(x_torch)

        def run_onnx(x=x):
            session.run(None, {"x": x})

        def run_stablehlo(x=x):
            call(x)[0].block_until_ready()

        result[f"batch_{batch}"] = {
            "onnxruntime_vs_torch": _named(compare(run_onnx, run_torch, steps=arguments.steps,
                                                   runs=arguments.runs)),
            "stablehlo_vs_torch": _named(compare(run_stablehlo, run_torch, steps=arguments.steps,
                                                 runs=arguments.runs)),
        }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
