"""Every training script in examples/ runs one tiny epoch and its checkpoint loads back."""

import importlib.util
import math
import pathlib
import re
import sys

import numpy as np
import pytest

import s4tf

_EXAMPLES = pathlib.Path(__file__).parents[2] / "examples"


def load_example(name: str):
    """Import ``examples/<name>.py`` as a module (its classes must be importable for load)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", _EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining classes
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("backend_name", ["naive", "xla"])
def test_spline_personalisation_beats_the_global_spline_and_reloads(tmp_path, backend_name):
    pytest.importorskip("jax") if backend_name == "xla" else None
    example = load_example("spline_personalization")
    output = tmp_path / "spline.safetensors"
    with s4tf.backend(backend_name):
        errors = example.main(["--epochs", "25", "--output", str(output), "--no-progress"])
    # Fitting the user's own points must beat the population's curve on the user's
    # held-out points; 25 iterations already take the error down several-fold.
    assert errors["personalised"] < errors["global"] / 3
    reloaded = s4tf.load(str(output))
    assert isinstance(reloaded, example.Spline)
    assert len(reloaded.control_points) == 12


@pytest.mark.parametrize("backend_name", ["naive", "xla"])
def test_wave_physics_smoke_run_lowers_the_error_and_reloads(tmp_path, backend_name):
    pytest.importorskip("jax") if backend_name == "xla" else None
    example = load_example("wave_physics")
    output, image = tmp_path / "wave.safetensors", tmp_path / "wave.png"
    with s4tf.backend(backend_name):
        relative = example.main(["--smoke", "--epochs", "8", "--output", str(output),
                                 "--image", str(image), "--no-progress"])
    assert 0.0 < relative < 0.9   # Adam from a flat surface: the mismatch must fall
    reloaded = s4tf.load(str(output))
    assert reloaded.height.shape == (12, 12)
    assert image.stat().st_size > 0


def test_wave_simulation_conserves_a_flat_surface_and_spreads_a_bump():
    example = load_example("wave_physics")
    flat = example.simulate(s4tf.zeros([8, 8]), steps=5)
    assert float(abs(flat).max()) == 0.0
    bump = s4tf.Tensor([[1.0 if (i, j) == (4, 4) else 0.0 for j in range(9)] for i in range(9)])
    spread = example.simulate(bump, steps=3).numpy()
    assert spread[4, 4] < 1.0 and spread[4, 6] != 0.0    # energy moved outwards
    assert abs(spread - spread.T).max() < 1e-6           # symmetric source, symmetric waves


def accuracy(model, batches) -> float:
    """The fraction of ``batches``' images whose largest logit is their label."""
    right = total = 0
    for images, labels in batches:
        right += int((model(images).numpy().argmax(axis=-1) == labels.numpy()).sum())
        total += labels.shape[0]
    return right / total


def test_resnet_smoke_run_fits_its_pictures_and_its_checkpoint_reloads_without_like(tmp_path):
    pytest.importorskip("jax")
    example = load_example("resnet_cifar")
    output = tmp_path / "resnet.safetensors"
    arguments = ["--smoke", "--depth", "8", "--epochs", "12", "--backend", "xla"]
    with s4tf.backend("xla"):
        accuracy_on_validation = example.main(arguments + ["--output", str(output),
                                                           "--no-progress"])
        reloaded = s4tf.load(str(output))
        # 24 steps on 64 pictures do not generalise yet (Shapes needs thousands), but a
        # model that learns fits them: eight kinds of shape, chance is 1/8.
        data = example.load_data(example.parse_arguments(arguments))
        fitted = accuracy(reloaded, data.training)
    assert fitted > 0.4
    assert 0.0 <= accuracy_on_validation <= 1.0
    assert isinstance(reloaded, s4tf.models.ResNet)
    assert s4tf.parameter_count(reloaded) == s4tf.parameter_count(
        s4tf.models.ResNet(depth=8, classes=8, stem="cifar"))


# A few batches (--smoke) do not yet beat the mean image: short full epochs do, the
# convolutional one at batch 16.
@pytest.mark.parametrize("kind, model_class, training", [
    ("dense", "Autoencoder", ["--epochs", "2"]),
    ("2d", "Autoencoder2D", ["--epochs", "4", "--batch-size", "16"])])
def test_autoencoder_reconstructs_better_than_the_mean_image_and_reloads(tmp_path, kind,
                                                                        model_class, training):
    example = load_example("autoencoder_digits")
    output, image = tmp_path / "autoencoder.safetensors", tmp_path / "autoencoder.png"
    with s4tf.backend("naive"):
        error = example.main(["--kind", kind, *training, "--output", str(output),
                              "--image", str(image), "--no-progress"])
    # Mean squared error per pixel, pixels in [0, 1]: an autoencoder that learns beats
    # answering the mean training image (0.074) by far; a broken one does not.
    mean_image = example.mean_image_error(s4tf.datasets.Digits(batch_size=32, seed=0))
    assert 0.0 < error < 0.85 * mean_image
    reloaded = s4tf.load(str(output))
    assert type(reloaded) is getattr(s4tf.models, model_class)
    assert image.stat().st_size > 0


@pytest.mark.parametrize("backend_name", ["naive", "xla"])
def test_vae_beats_independent_pixels_and_reloads(tmp_path, backend_name):
    pytest.importorskip("jax") if backend_name == "xla" else None
    example = load_example("vae_digits")
    output, image = tmp_path / "vae.safetensors", tmp_path / "vae.png"
    with s4tf.backend(backend_name):
        score = example.main(["--epochs", "10", "--output", str(output), "--image", str(image),
                              "--no-progress"])
    # Negative ELBO in nats per digit: above the digits' floor (their pixels' own entropy,
    # ~13.3), and a nat below independent pixels at the training mean (~26.8), which a
    # VAE whose code carries nothing converges to (ten epochs reach ~25.0).
    independent, floor = example.references(example.load_data(example.parse_arguments([])))
    assert floor < score < independent - 1.0
    reloaded = s4tf.load(str(output))
    assert isinstance(reloaded, s4tf.models.VAE)
    assert reloaded.mean_head.weight.shape == (128, 8)
    assert image.stat().st_size > 0


# The dense GAN trains one whole epoch (under a second), after which its discriminator
# tells held-out digits from fresh samples (~99 %; an untrained one: ~50 %). The DCGAN takes
# ~35 s an epoch on two cores: its smoke run (3 batches) only checks that it runs.
@pytest.mark.parametrize("kind, model_class, training", [
    ("gan", "GAN", ["--epochs", "1"]), ("dcgan", "DCGAN", ["--smoke"])])
def test_gan_run_scores_samples_and_reloads(tmp_path, capsys, kind, model_class, training):
    example = load_example("gan_digits")
    output, image = tmp_path / "gan.safetensors", tmp_path / "gan.png"
    with s4tf.backend("naive"):
        quality = example.main(["--kind", kind, *training, "--output", str(output),
                                "--image", str(image), "--no-progress"])
    assert quality > 0.5          # a ratio to real digits' distance: a few steps are not real
    if kind == "gan":
        printed = re.search(r"Held-out discriminator accuracy: ([\d.]+)%", capsys.readouterr().out)
        assert float(printed.group(1)) > 80.0
    reloaded = s4tf.load(str(output))
    assert type(reloaded) is getattr(s4tf.models, model_class)
    assert image.stat().st_size > 0


def test_gan_sample_quality_is_one_for_real_digits_and_worse_for_noise():
    example = load_example("gan_digits")
    quality = example.SampleQuality(s4tf.datasets.Digits(batch_size=400, seed=0))
    real = np.concatenate([images.numpy() for images, _ in
                           s4tf.datasets.Digits(batch_size=400, seed=0).training])[:360]
    assert quality(real) == pytest.approx(1.0)
    noise = np.random.default_rng(0).uniform(size=real.shape)
    assert quality(noise) > 2.0


@pytest.mark.parametrize("backend_name", ["naive", "xla"])
def test_char_transformer_smoke_run_reports_bits_samples_and_reloads(tmp_path, backend_name,
                                                                     capsys):
    pytest.importorskip("jax") if backend_name == "xla" else None
    example = load_example("char_transformer")
    output = tmp_path / "char.safetensors"
    with s4tf.backend(backend_name):
        bits = example.main(["--smoke", "--output", str(output), "--no-progress"])
    vocabulary = example.vocabulary(example.bundled_text())
    # Below a uniform guess over the characters (what zeroed logits give) by a margin.
    assert 0.0 < bits < math.log2(len(vocabulary)) - 0.25
    printed = capsys.readouterr().out
    assert "Sample (temperature 0.8, top-k 10, seed 0):\nShall I compare thee" in printed
    reloaded = s4tf.load(str(output))
    assert isinstance(reloaded, s4tf.models.TransformerLM)
    assert reloaded.token_embedding.embeddings.shape == (len(vocabulary), 16)


def test_neumf_smoke_run_ranks_and_reloads(tmp_path):
    example = load_example("neumf_movielens")
    output = tmp_path / "neumf.safetensors"
    hr = example.main(["--smoke", "--output", str(output), "--no-progress"])
    # Twice a random ranking's hit ratio at 10 of 100 candidates (0.1); scores that do not
    # tell items apart rank the held-out item below its ties and score 0.
    assert 0.2 <= hr <= 1.0
    reloaded = s4tf.load(str(output))
    assert isinstance(reloaded, s4tf.models.NeuMF)
    assert reloaded.mf_user_embedding.embeddings.shape == (40, 8)


def test_neumf_reads_movielens_format_and_holds_out_each_users_latest(tmp_path):
    example = load_example("neumf_movielens")
    path = tmp_path / "ratings.dat"
    path.write_text("7::20::5::300\n7::10::3::100\n9::10::4::200\n9::30::1::50\n7::30::2::200\n")
    data = example.read_ratings(str(path))
    assert data.tolist() == [[0, 1, 300], [0, 0, 100], [1, 0, 200], [1, 2, 50], [0, 2, 200]]
    training, test = example.leave_one_out(data)
    assert test.tolist() == [1, 0]        # user 7 last saw movie 20, user 9 movie 10
    assert sorted(map(tuple, training.tolist())) == [(0, 0), (0, 2), (1, 2)]
    with pytest.raises(ValueError, match="MovieLens 1M format"):
        path.write_text("1,2,3,4\n")
        example.read_ratings(str(path))


def test_hit_ratio_counts_ties_against_the_held_out_item():
    example = load_example("neumf_movielens")
    scores = np.zeros((2, 100))
    assert example.hit_ratio(scores) == 0.0
    scores[0, 0] = 1.0                    # user 0's held-out item ranked first
    assert example.hit_ratio(scores) == 0.5


def test_char_transformer_bits_score_every_held_out_character_once_with_its_context():
    example = load_example("char_transformer")
    s4tf.random.seed(0)
    model = s4tf.models.TransformerLM(vocab_size=5, context=4, width=8, depth=1, heads=2)
    ids = np.random.default_rng(0).integers(0, 5, 23).astype(np.int32)
    # Windows of 4 inputs from position 12 and 16; the last, short one is shifted back to
    # start at 18 and scores only characters 21 and 22.
    starts = {13: 12, 14: 12, 15: 12, 16: 12, 17: 16, 18: 16, 19: 16, 20: 16, 21: 18, 22: 18}
    nats = 0.0
    for target, first in starts.items():
        log_p = s4tf.log_softmax(model(s4tf.Tensor(ids[None, first:target]))).numpy()[0, -1]
        nats -= float(log_p[ids[target]])
    expected = nats / len(starts) / math.log(2)
    assert example.bits_per_character(model, ids, 13, 4) == pytest.approx(expected, rel=1e-5)
    assert example.bits_per_character(model, ids, 13, 4, batch_size=1) == pytest.approx(
        expected, rel=1e-5)


def test_neumf_negatives_are_never_items_the_user_interacted_with():
    example = load_example("neumf_movielens")
    seen = np.zeros((3, 6), dtype=bool)
    seen[0, :5] = True                    # user 0 has one item left: 5
    seen[2, ::2] = True
    negatives = example.sample_negatives(np.random.default_rng(0), seen,
                                         np.array([0, 2, 0, 1]), 50)
    assert (negatives[[0, 2]] == 5).all()
    assert not seen[2, negatives[1]].any()


def test_lenet_main_job_one_epoch_on_digits_learns_and_reloads(tmp_path):
    example = load_example("lenet_mnist")
    output = tmp_path / "lenet.safetensors"
    accuracy = example.main(["--data", "digits", "--epochs", "1", "--output", str(output),
                             "--no-progress"])
    assert accuracy > 0.5       # ten classes: one epoch is already far above chance
    reloaded = s4tf.load(str(output))
    assert isinstance(reloaded, s4tf.models.LeNet)
