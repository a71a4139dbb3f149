"""The generative and language models save and load back without ``like=``."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf import models

CASES = {
    "Autoencoder": (lambda: models.Autoencoder(20, (8,), 2), lambda: s4tf.random.uniform([2, 20])),
    "Autoencoder2D": (lambda: models.Autoencoder2D(8), lambda: s4tf.random.uniform([2, 8, 8, 1])),
    "GAN": (lambda: models.GAN(4, 9), lambda: s4tf.random.normal([2, 4])),
    "DCGAN": (lambda: models.DCGAN(4, 4), lambda: s4tf.random.normal([2, 4])),
    "NeuMF": (lambda: models.NeuMF(5, 4), lambda: s4tf.Tensor([[1, 2], [4, 0]])),
    "TransformerLM": (lambda: models.TransformerLM(7, 4, 8, 1, 2), lambda: s4tf.Tensor([[1, 2]])),
    "VAE": (lambda: models.VAE(6, 4, 2), lambda: s4tf.random.uniform([2, 6])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_save_and_load_without_like(name, tmp_path):
    build, make_input = CASES[name]
    s4tf.random.seed(0)
    model, x = build(), make_input()
    if name == "GAN" or name == "DCGAN":
        with s4tf.training():  # move the BatchNorm statistics away from their start
            model(x)
    s4tf.save(model, tmp_path / "model.safetensors")
    loaded = s4tf.load(tmp_path / "model.safetensors")
    assert type(loaded) is type(model)

    def run(m):
        out = m(x, seed=0) if name == "VAE" else m(x)
        return (out.logits if name == "VAE" else out).numpy()

    np.testing.assert_array_equal(run(loaded), run(model))
