"""examples/finetune_imagefolder.py: a torchvision-layout ResNet-18 file, frozen then unfrozen."""

import numpy as np
from PIL import Image
from safetensors.numpy import save_file
from test_examples import load_example

import s4tf


def resnet18_state_dict(width, classes, rng):
    """A randomly initialised torchvision ResNet-18 state dict (torchvision's names, OIHW)."""
    def bn(prefix, channels):
        return {f"{prefix}.weight": rng.uniform(0.5, 1.5, channels).astype(np.float32),
                f"{prefix}.bias": rng.normal(0, 0.1, channels).astype(np.float32),
                f"{prefix}.running_mean": np.zeros(channels, np.float32),
                f"{prefix}.running_var": np.ones(channels, np.float32),
                f"{prefix}.num_batches_tracked": np.zeros((), np.int64)}

    def conv(out, inp, k):
        return rng.normal(0, (2 / (inp * k * k)) ** 0.5, (out, inp, k, k)).astype(np.float32)

    state = {"conv1.weight": conv(width, 3, 7), **bn("bn1", width)}
    channels = width
    for stage in range(4):
        out = width * 2 ** stage
        for i in range(2):
            prefix = f"layer{stage + 1}.{i}"
            state[f"{prefix}.conv1.weight"] = conv(out, channels, 3)
            state[f"{prefix}.conv2.weight"] = conv(out, out, 3)
            state.update(bn(f"{prefix}.bn1", out) | bn(f"{prefix}.bn2", out))
            if stage > 0 and i == 0:
                state[f"{prefix}.downsample.0.weight"] = conv(out, channels, 1)
                state.update(bn(f"{prefix}.downsample.1", out))
            channels = out
    state["fc.weight"] = rng.normal(0, 0.1, (classes, channels)).astype(np.float32)
    state["fc.bias"] = np.zeros(classes, np.float32)
    return state


def make_folder(root, rng):
    """Red-ish and blue-ish pictures of two classes, in train/ and val/."""
    colours = {"red": (200, 40, 40), "blue": (40, 40, 200)}
    for split, count in (("train", 8), ("val", 4)):
        for name, colour in colours.items():
            (root / split / name).mkdir(parents=True)
            for i in range(count):
                pixels = np.clip(np.array(colour) + rng.integers(-30, 30, (40, 48, 3)), 0, 255)
                Image.fromarray(pixels.astype(np.uint8)).save(root / split / name / f"{i}.png")


def test_finetunes_a_torchvision_file_and_predicts_one_image(tmp_path, capsys):
    rng = np.random.default_rng(0)
    weights = tmp_path / "resnet18.safetensors"
    save_file(resnet18_state_dict(width=4, classes=7, rng=rng), weights)
    make_folder(tmp_path / "images", rng)
    example = load_example("finetune_imagefolder")
    output = tmp_path / "finetuned.safetensors"
    result = example.main([
        "--weights", str(weights), "--data", str(tmp_path / "images"), "--image-size", "32",
        "--batch-size", "8", "--head-epochs", "2", "--epochs", "1", "--learning-rate", "0.01",
        "--predict", str(tmp_path / "images" / "val" / "blue" / "0.png"),
        "--output", str(output), "--backend", "naive", "--no-progress"])
    printed = capsys.readouterr().out
    # Stage 1 trained only the new 2-way head: the summary counts the backbone as frozen.
    assert f"Trainable parameters: {32 * 2 + 2}" in printed
    assert len(result["head"]) == 2 and len(result["full"]) == 1
    model = result["model"]
    assert s4tf.frozen_paths(model) == [] and model.fc.weight.shape == (32, 2)
    # Trained under the default mixed_bfloat16 policy: the weights stay float32.
    assert model.fc.weight.dtype == s4tf.float32 and model.conv1.filter.dtype == s4tf.float32
    # The backbone's first filter is the file's until stage 2 trains it.
    loaded = s4tf.models.load_torchvision(
        s4tf.models.ResNet(depth=18, width=4, classes=7), weights)
    assert not np.allclose(model.conv1.filter.numpy(), loaded.conv1.filter.numpy())
    name, probability = result["prediction"]
    assert name in ("red", "blue") and 0.5 <= probability <= 1.0
    assert f"0.png: {name}" in printed
    reloaded = s4tf.load(str(output), like=model)
    np.testing.assert_array_equal(reloaded.fc.weight.numpy(), model.fc.weight.numpy())
