"""Runs exported artifacts in a process that never imports s4tf (a script, not a test module).

    python -I artifact_runner.py jobs.json

``jobs.json`` lists jobs ``{"format": "stablehlo"|"onnx", "artifact": path, "inputs":
path.npz, "outputs": path.npz}``; the inputs file holds ``arg_0, arg_1, ...`` (the
flattened leaves, in order) and each job writes its results as ``out_0, out_1, ...``.
Only NumPy, JAX (StableHLO) and onnxruntime (ONNX) are used: importing s4tf here
raises, and the script checks at the end that it was never loaded, so an artifact
that needed s4tf to load or run fails the test that made it.
"""

import json
import sys

import numpy as np


class _NoS4tf:
    """A meta-path finder that refuses ``import s4tf`` (and its submodules) loudly."""

    def find_spec(self, name, path=None, target=None):
        if name == "s4tf" or name.startswith("s4tf."):
            raise ImportError(f"the artifact runner must not import s4tf (asked for {name!r})")
        return None


sys.meta_path.insert(0, _NoS4tf())


def _ordered(archive, prefix):
    return [archive[f"{prefix}_{i}"] for i in range(len(archive.files))]


def run_stablehlo(artifact, inputs):
    import jax
    from jax import export

    with open(artifact, "rb") as file:
        exported = export.deserialize(bytearray(file.read()))
    # The contract: leaves in plain tuples/lists, so this process can read the trees.
    leaves_in = jax.tree_util.tree_leaves(exported.in_tree.unflatten([0] * exported.in_tree.num_leaves))
    assert len(leaves_in) == len(inputs), (len(leaves_in), len(inputs))
    results = exported.call(*inputs)
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(results)]


def run_onnx(artifact, inputs):
    import onnxruntime

    session = onnxruntime.InferenceSession(artifact, providers=["CPUExecutionProvider"])
    names = [node.name for node in session.get_inputs()]
    assert len(names) == len(inputs), (names, len(inputs))
    return session.run(None, dict(zip(names, inputs, strict=True)))


def main(jobs_path):
    with open(jobs_path) as file:
        jobs = json.load(file)
    for job in jobs:
        with np.load(job["inputs"]) as archive:
            inputs = _ordered(archive, "arg")
        run = run_stablehlo if job["format"] == "stablehlo" else run_onnx
        results = run(job["artifact"], inputs)
        np.savez(job["outputs"], **{f"out_{i}": np.asarray(r) for i, r in enumerate(results)})
    assert "s4tf" not in sys.modules, "the artifact runner imported s4tf"
    print(json.dumps({"jobs": len(jobs), "s4tf_loaded": "s4tf" in sys.modules}))


if __name__ == "__main__":
    main(sys.argv[1])
