"""Every training script in examples/ runs one tiny epoch and its checkpoint loads back."""

import importlib.util
import math
import pathlib
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


def test_resnet_smoke_run_trains_and_its_checkpoint_reloads_without_like(tmp_path):
    example = load_example("resnet_cifar")
    output = tmp_path / "resnet.safetensors"
    accuracy = example.main(["--smoke", "--backend", "naive", "--output", str(output), "--no-progress"])
    assert 0.0 <= accuracy <= 1.0
    reloaded = s4tf.load(str(output))
    assert isinstance(reloaded, s4tf.models.ResNet)
    assert s4tf.parameter_count(reloaded) == s4tf.parameter_count(
        s4tf.models.ResNet(depth=20, classes=8, stem="cifar"))


@pytest.mark.parametrize("kind, model_class", [("dense", "Autoencoder"), ("2d", "Autoencoder2D")])
def test_autoencoder_smoke_run_reconstructs_and_reloads(tmp_path, kind, model_class):
    example = load_example("autoencoder_digits")
    output, image = tmp_path / "autoencoder.safetensors", tmp_path / "autoencoder.png"
    error = example.main(["--smoke", "--kind", kind, "--output", str(output),
                          "--image", str(image), "--no-progress"])
    assert 0.0 < error < 0.5      # mean squared error per pixel, pixels in [0, 1]
    reloaded = s4tf.load(str(output))
    assert type(reloaded) is getattr(s4tf.models, model_class)
    assert image.stat().st_size > 0


@pytest.mark.parametrize("backend_name", ["naive", "xla"])
def test_vae_smoke_run_reports_a_negative_elbo_and_reloads(tmp_path, backend_name):
    pytest.importorskip("jax") if backend_name == "xla" else None
    example = load_example("vae_digits")
    output, image = tmp_path / "vae.safetensors", tmp_path / "vae.png"
    with s4tf.backend(backend_name):
        score = example.main(["--smoke", "--output", str(output), "--image", str(image),
                              "--no-progress"])
    # Above the 8x8 digits' floor (their pixels' own entropy, ~13.3 nats), below what
    # an untrained decoder costs (64 pixels at ~0.7 nats and more).
    assert 13.0 < score < 80.0
    reloaded = s4tf.load(str(output))
    assert isinstance(reloaded, s4tf.models.VAE)
    assert reloaded.mean_head.weight.shape == (128, 8)
    assert image.stat().st_size > 0


@pytest.mark.parametrize("kind, model_class", [("gan", "GAN"), ("dcgan", "DCGAN")])
def test_gan_smoke_run_scores_samples_and_reloads(tmp_path, kind, model_class):
    example = load_example("gan_digits")
    output, image = tmp_path / "gan.safetensors", tmp_path / "gan.png"
    quality = example.main(["--smoke", "--kind", kind, "--output", str(output),
                            "--image", str(image), "--no-progress"])
    assert quality > 0.5          # a ratio to real digits' distance: a few steps are not real
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
    assert 0.0 < bits < math.log2(len(vocabulary)) + 1.0
    printed = capsys.readouterr().out
    assert "Sample (temperature 0.8, top-k 10, seed 0):\nShall I compare thee" in printed
    reloaded = s4tf.load(str(output))
    assert isinstance(reloaded, s4tf.models.TransformerLM)
    assert reloaded.token_embedding.embeddings.shape == (len(vocabulary), 16)


def test_neumf_smoke_run_ranks_and_reloads(tmp_path):
    example = load_example("neumf_movielens")
    output = tmp_path / "neumf.safetensors"
    hr = example.main(["--smoke", "--output", str(output), "--no-progress"])
    assert 0.0 <= hr <= 1.0
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
