"""examples/resnet_cifar.py --precision: trains under the policy, keeps float32 weights."""

from test_examples import load_example

import s4tf


def test_precision_flag_trains_under_the_policy(tmp_path, monkeypatch):
    # mixed_float16 also takes the loss-scaling path; mixed_bfloat16 differs only in the name.
    precision = "mixed_float16"
    example = load_example("resnet_cifar")
    seen = []
    original = s4tf.TrainingLoop.fit

    def fit(loop, model, epochs, **kwargs):
        seen.append((s4tf.precision.get_policy().name, type(loop.optimizer).__name__))
        return original(loop, model, epochs, **kwargs)

    monkeypatch.setattr(s4tf.TrainingLoop, "fit", fit)
    accuracy = example.main(["--smoke", "--depth", "8", "--backend", "naive", "--no-progress",
                             "--precision", precision, "--output",
                             str(tmp_path / "model.safetensors")])
    assert seen == [(precision, "LossScale")]
    assert s4tf.precision.get_policy().name == "float32"  # restored after the run
    assert 0.0 <= accuracy <= 1.0
    reloaded = s4tf.load(str(tmp_path / "model.safetensors"))
    assert reloaded.conv1.filter.dtype == s4tf.float32  # master weights saved as float32


def test_precision_flag_is_checked():
    example = load_example("resnet_cifar")
    assert example.parse_arguments(["--smoke"]).precision == "float32"
    assert example.parse_arguments(["--precision", "mixed_bfloat16"]).precision == "mixed_bfloat16"
