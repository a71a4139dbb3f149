"""Exported artifacts run without s4tf and give s4tf's numbers.

LeNet, a ResNet-20 and the GPT-2 zoo model (tiny sizes) are exported as an
inference function and as a whole training step (model, momentum slots, batch
-> new model, new slots, loss), in both formats. One subprocess that never
imports s4tf (``artifact_runner.py``: it refuses the import and checks
``sys.modules``) runs every artifact at a batch size other than the example's,
so the batch axis is exercised too; its outputs are compared with s4tf's own,
computed on the naive backend.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import s4tf

pytest.importorskip("jax")
pytest.importorskip("jax2onnx")
pytest.importorskip("onnxruntime")

RUNNER = pathlib.Path(__file__).with_name("artifact_runner.py")
EXAMPLE_BATCH, RUN_BATCH = 2, 3
FORMATS = ("stablehlo", "onnx")


def _lenet(rng):
    model = s4tf.models.LeNet()
    return model, lambda n: (rng.standard_normal((n, 28, 28, 1)).astype(np.float32),
                             rng.integers(0, 10, n).astype(np.int32))


def _resnet20(rng):
    model = s4tf.models.ResNet(depth=20, classes=10, stem="cifar", width=4)
    return model, lambda n: (rng.standard_normal((n, 8, 8, 3)).astype(np.float32),
                             rng.integers(0, 10, n).astype(np.int32))


def _gpt2(rng):
    model = s4tf.models.TransformerLM(vocab_size=11, context=8, width=16, depth=2, heads=4)

    def batch(n):
        tokens = rng.integers(0, 11, (n, 7)).astype(np.int32)
        return tokens, np.roll(tokens, -1, axis=1)

    return model, batch


MODELS = {"lenet": _lenet, "resnet20": _resnet20, "gpt2": _gpt2}


def loss_of(model, x, y):
    logits = model(x)
    if logits.ndim == 3:  # a language model: one prediction per position
        logits, y = logits.reshape([-1, logits.shape[-1]]), y.reshape([-1])
    return s4tf.softmax_cross_entropy(logits=logits, labels=y)


def train_step(model, velocity, x, y):
    """SGD with momentum: what an optimizer does, with its slots passed in and out."""
    loss, grads = s4tf.value_with_gradient(model, of=lambda m: loss_of(m, x, y))
    velocity = velocity * 0.9 + grads
    return model.moved(along=velocity * -0.05), velocity, loss


def _leaves_as_numpy(value) -> list:
    """The tensor leaves: an artifact's inputs and outputs (floats are its constants)."""
    return [leaf.numpy() for leaf in s4tf.tree_leaves(value) if isinstance(leaf, s4tf.Tensor)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Export every model both ways in both formats, run all artifacts in one subprocess.

    Returns ``{(model, kind, format): (outputs outside s4tf, s4tf's outputs, artifact)}``.
    """
    directory = tmp_path_factory.mktemp("artifacts")
    rng = np.random.default_rng(0)
    jobs, expected = [], {}
    s4tf.random.seed(0)
    with s4tf.backend("naive"):
        for name, make in MODELS.items():
            model, batch = make(rng)
            x, y = (s4tf.Tensor(a) for a in batch(EXAMPLE_BATCH))
            with s4tf.training():
                velocity = s4tf.gradient(model, of=lambda m, x=x, y=y: loss_of(m, x, y)) * 0.0
            run_x, run_y = batch(RUN_BATCH)
            cases = {
                "inference": (lambda x, model=model: model(x), (x,), (run_x,)),
                "training": (train_step, (model, velocity, x, y),
                             (model, velocity, run_x, run_y)),
            }
            for kind, (fn, example, run_args) in cases.items():
                # Inference in the inference phase (BatchNorm's running statistics), a
                # training step in the training phase (batch statistics, updated state).
                phase = s4tf.training if kind == "training" else s4tf.inference
                run_args = tuple(s4tf.Tensor(a) if isinstance(a, np.ndarray) else a
                                 for a in run_args)
                inputs = _leaves_as_numpy(run_args)
                with phase():
                    # s4tf's numbers first: exporting must not disturb the model it traces.
                    reference = _leaves_as_numpy(fn(*run_args))
                inputs_path = directory / f"{name}-{kind}-inputs.npz"
                np.savez(inputs_path, **{f"arg_{i}": a for i, a in enumerate(inputs)})
                for format in FORMATS:
                    path = directory / f"{name}-{kind}.{format}"
                    try:
                        with phase():
                            artifact = s4tf.export(fn, *example, path=str(path), format=format)
                    except s4tf.exporting.ExportError as error:
                        expected[name, kind, format] = error  # reported by its own test
                        continue
                    outputs = directory / f"{name}-{kind}-{format}-outputs.npz"
                    jobs.append({"format": format, "artifact": str(path),
                                 "inputs": str(inputs_path), "outputs": str(outputs)})
                    expected[name, kind, format] = (outputs, reference, artifact)
    jobs_path = directory / "jobs.json"
    jobs_path.write_text(json.dumps(jobs))
    # -I: no PYTHONPATH, no user site, no current directory: s4tf is not even on the path
    # unless installed, and the runner refuses to import it either way.
    done = subprocess.run([sys.executable, "-I", str(RUNNER), str(jobs_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"jobs": len(jobs), "s4tf_loaded": False}
    results = {}
    for key, case in expected.items():
        if isinstance(case, Exception):
            results[key] = case
            continue
        outputs, reference, artifact = case
        with np.load(outputs) as archive:
            results[key] = ([archive[f"out_{i}"] for i in range(len(archive.files))],
                            reference, artifact)
    return results


CASES = [(m, k, f) for m in MODELS for k in ("inference", "training") for f in FORMATS]


@pytest.mark.parametrize("model,kind,format", CASES, ids=["-".join(c) for c in CASES])
def test_artifact_outside_s4tf_matches_s4tf(runs, model, kind, format):
    if isinstance(runs[model, kind, format], Exception):
        raise runs[model, kind, format]
    outside, reference, artifact = runs[model, kind, format]
    assert len(outside) == len(reference) == len(artifact.outputs)
    for spec, got, want in zip(artifact.outputs, outside, reference, strict=True):
        assert got.shape == want.shape, (spec.name, got.shape, want.shape)
        assert got.dtype == want.dtype, (spec.name, got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5, err_msg=spec.name)


@pytest.mark.parametrize("model", list(MODELS))
def test_the_batch_axis_is_symbolic_and_only_the_batch(runs, model):
    _, _, artifact = runs[model, "training", "stablehlo"]
    batch_inputs = [spec.name for spec in artifact.inputs if "batch" in spec.shape]
    assert batch_inputs == ["x", "y"]
    assert artifact.outputs[-1].name == "output.2" and artifact.outputs[-1].shape == ()
