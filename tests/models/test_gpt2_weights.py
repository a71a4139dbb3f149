"""Loading GPT-2 weights in Hugging Face's safetensors layout into TransformerLM."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from safetensors.numpy import save_file

import s4tf
from s4tf.checkpoint import CheckpointError
from s4tf.models import TransformerLM, load_gpt2
from s4tf.models.gpt2_weights import gpt2_state_dict

TOKENS = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]], dtype=np.int32)


def random_model(depth=2, heads=2):
    s4tf.random.seed(0)
    model = TransformerLM(vocab_size=11, context=6, width=8, depth=depth, heads=heads)
    # Non-trivial LayerNorm weights and biases, so a swapped scale/offset shows.
    rng = np.random.default_rng(1)
    return s4tf.tree_map(lambda t: s4tf.Tensor(rng.normal(size=t.shape).astype(np.float32)),
                         model, differentiable=True)


def write(path, arrays, config=None):
    save_file(arrays, str(path))
    if config is not None:
        (path.parent / "config.json").write_text(json.dumps(config))
    return path


def test_round_trip_through_the_hugging_face_layout(tmp_path):
    model = random_model()
    arrays = gpt2_state_dict(model)
    assert arrays["h.1.attn.c_attn.weight"].shape == (8, 24)
    assert arrays["h.0.mlp.c_proj.weight"].shape == (32, 8)
    # What GPT2LMHeadModel.save_pretrained writes: a "transformer." prefix, the
    # tied lm_head and the attention-mask buffers.
    saved = {"transformer." + key: value for key, value in arrays.items()}
    saved["lm_head.weight"] = arrays["wte.weight"]
    saved["transformer.h.0.attn.bias"] = np.tril(np.ones((1, 1, 6, 6), dtype=np.float32))
    saved["transformer.h.0.attn.masked_bias"] = np.array(-1e4, dtype=np.float32)
    path = write(tmp_path / "model.safetensors", saved)
    loaded = s4tf.models.load_gpt2(path, heads=2)
    assert loaded.blocks[0].attention.heads == 2 and len(loaded.blocks) == 2
    np.testing.assert_array_equal(loaded(s4tf.Tensor(TOKENS)).numpy(),
                                  model(s4tf.Tensor(TOKENS)).numpy())


def test_heads_and_epsilon_come_from_config_json(tmp_path):
    model = random_model(heads=4)
    path = write(tmp_path / "model.safetensors", gpt2_state_dict(model),
                 {"n_head": 4, "layer_norm_epsilon": 1e-6, "activation_function": "gelu_new"})
    loaded = load_gpt2(path)
    assert loaded.blocks[1].attention.heads == 4
    assert loaded.final_norm.epsilon == 1e-6


def test_heads_that_cannot_be_inferred_are_asked_for(tmp_path):
    path = write(tmp_path / "model.safetensors", gpt2_state_dict(random_model()))
    with pytest.raises(CheckpointError, match="pass heads="):
        load_gpt2(path)


def test_keys_that_do_not_fit_are_all_listed(tmp_path):
    arrays = gpt2_state_dict(random_model())
    del arrays["h.1.ln_2.bias"]
    arrays["h.0.attn.c_attn.weight"] = np.zeros((8, 8), dtype=np.float32)
    arrays["h.0.attn.rotary.weight"] = np.zeros((2,), dtype=np.float32)
    path = write(tmp_path / "model.safetensors", arrays)
    with pytest.raises(CheckpointError) as error:
        load_gpt2(path, heads=2)
    message = str(error.value)
    assert "missing keys (the model needs them, the file lacks them): h.1.ln_2.bias" in message
    assert "unexpected keys (in the file, no place in the model): h.0.attn.rotary.weight" in message
    assert "h.0.attn.c_attn.weight: file has (8, 8), expected (8, 24)" in message


def test_an_untied_output_layer_is_rejected(tmp_path):
    arrays = gpt2_state_dict(random_model())
    arrays["lm_head.weight"] = arrays["wte.weight"] + 1.0
    path = write(tmp_path / "model.safetensors", arrays)
    with pytest.raises(CheckpointError, match="lm_head.weight differs from wte.weight"):
        load_gpt2(path, heads=2)


def test_a_file_without_gpt2_embeddings_is_rejected(tmp_path):
    path = write(tmp_path / "model.safetensors", {"conv1.weight": np.zeros((2, 2), np.float32)})
    with pytest.raises(CheckpointError, match="no 'wte.weight'.*conv1.weight"):
        load_gpt2(path, heads=2)


def test_a_variant_gpt2_config_is_rejected(tmp_path):
    path = write(tmp_path / "model.safetensors", gpt2_state_dict(random_model()),
                 {"n_head": 2, "activation_function": "relu"})
    with pytest.raises(CheckpointError, match="activation_function='relu'"):
        load_gpt2(path)


def test_half_precision_weights_load_as_float32(tmp_path):
    model = random_model()
    arrays = {k: v.astype(np.float16) for k, v in gpt2_state_dict(model).items()}
    loaded = load_gpt2(write(tmp_path / "model.safetensors", arrays), heads=2)
    assert loaded.blocks[0].attention.qkv.weight.dtype == s4tf.float32
    np.testing.assert_allclose(loaded(s4tf.Tensor(TOKENS)).numpy(),
                               model(s4tf.Tensor(TOKENS)).numpy(), atol=0.05, rtol=0.05)


def _hugging_face_gpt2():
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed; the comparison with Hugging Face's "
                        "GPT2LMHeadModel needs torch and transformers (pip install -e "
                        "'.[reference]')")
    try:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel
    except Exception as error:  # ImportError, or a broken torch/torchvision install
        pytest.skip(f"transformers with torch is not importable here ({type(error).__name__}: "
                    f"{str(error).splitlines()[0] if str(error) else ''})")
    return torch, GPT2Config, GPT2LMHeadModel


def test_logits_match_hugging_face_gpt2(tmp_path):
    torch, GPT2Config, GPT2LMHeadModel = _hugging_face_gpt2()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=37, n_positions=16, n_embd=32, n_layer=2, n_head=4,
                        bos_token_id=0, eos_token_id=0)
    reference = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for parameter in reference.parameters():  # LayerNorms start at 1 and 0: vary them
            parameter.normal_(0.0, 0.3)
    reference.save_pretrained(tmp_path, safe_serialization=True)
    model = load_gpt2(tmp_path / "model.safetensors")
    assert model.blocks[0].attention.heads == 4
    tokens = np.random.default_rng(0).integers(0, 37, size=(2, 11))
    with torch.no_grad():
        expected = reference(torch.tensor(tokens)).logits.numpy()
    got = model(s4tf.Tensor(tokens.astype(np.int32))).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
