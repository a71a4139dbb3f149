"""Loading GPT-2 weights in Hugging Face's safetensors layout into TransformerLM."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time

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


def numpy_gpt2_attention(x, arrays, block: int, heads: int):
    """Hugging Face's ``GPT2Attention.forward`` in NumPy, on the file's own tensors.

    ``c_attn`` is a Conv1D, ``x @ weight + bias`` with ``weight`` ``(width,
    3 * width)``; its output splits into query, key and value along the last
    axis (``.split(width, dim=2)``), each into ``heads`` consecutive groups.
    """
    batch, length, width = x.shape
    size = width // heads
    fused = x @ arrays[f"h.{block}.attn.c_attn.weight"] + arrays[f"h.{block}.attn.c_attn.bias"]
    q, k, v = (t.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)
               for t in np.split(fused, 3, axis=-1))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(size)
    scores = np.where(np.tril(np.ones((length, length), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    joined = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
    return joined @ arrays[f"h.{block}.attn.c_proj.weight"] + arrays[f"h.{block}.attn.c_proj.bias"]


def test_c_attn_splits_into_queries_keys_values_as_hugging_face_does(tmp_path):
    # The file is written from random tensors of the Hugging Face names and
    # shapes, not by gpt2_state_dict, so that a loader and a writer that agree
    # on a wrong column order (keys before queries, heads interleaved) fail.
    rng = np.random.default_rng(7)
    shapes = {key: value.shape for key, value in gpt2_state_dict(random_model(heads=2)).items()}
    arrays = {key: rng.normal(size=shape).astype(np.float32) for key, shape in shapes.items()}
    model = load_gpt2(write(tmp_path / "model.safetensors", arrays), heads=2)
    x = rng.normal(size=(2, 5, 8)).astype(np.float32)
    for block in (0, 1):
        want = numpy_gpt2_attention(x.astype(np.float64), arrays, block, heads=2)
        got = model.blocks[block].attention(s4tf.Tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


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


def with_raw_config(tmp_path, text: str):
    path = write(tmp_path / "model.safetensors", gpt2_state_dict(random_model()))
    (tmp_path / "config.json").write_text(text)
    return path, str(tmp_path / "config.json")


@pytest.mark.parametrize("text, complaint", [
    ('{"n_head": 2,', "is not valid JSON (Expecting property name enclosed in double quotes: "
                      "line 1 column 14 (char 13))"),
    ("\xff\xfe", "is not valid JSON"),
    ("[2, 1e-5]", "holds a JSON list, not an object of GPT-2 settings"),
    ('"n_head"', "holds a JSON string, not an object of GPT-2 settings"),
    ('{"n_head": 0}', "field 'n_head' is 0; it must be a positive int"),
    ('{"n_head": -2}', "field 'n_head' is -2; it must be a positive int"),
    ('{"n_head": "2"}', "field 'n_head' is '2' (a str); it must be a positive int"),
    ('{"n_head": 2.0}', "field 'n_head' is 2.0 (a float); it must be a positive int"),
    ('{"n_head": true}', "field 'n_head' is True (a bool); it must be a positive int"),
    ('{"n_head": 2, "layer_norm_epsilon": "1e-5"}',
     "field 'layer_norm_epsilon' is '1e-5' (a str); it must be a positive number"),
    ('{"n_head": 2, "layer_norm_epsilon": -1}',
     "field 'layer_norm_epsilon' is -1; it must be a positive number"),
    ('{"n_head": 2, "layer_norm_epsilon": NaN}',
     "field 'layer_norm_epsilon' is nan; it must be a positive number"),
    ('{"n_head": 2, "activation_function": 7}',
     "field 'activation_function' is 7 (an int); it must be a str"),
    ('{"n_head": 2, "scale_attn_weights": "false"}',
     "field 'scale_attn_weights' is 'false' (a str); it must be true or false"),
])
def test_a_bad_config_json_names_the_file_and_the_field(tmp_path, text, complaint):
    path, config = with_raw_config(tmp_path, text)
    with pytest.raises(CheckpointError) as error:
        load_gpt2(path)
    message = str(error.value)
    assert repr(config) in message and complaint in message
    assert "fix or remove config.json" in message  # the way out


def test_heads_given_to_the_loader_need_no_n_head_and_must_be_positive(tmp_path):
    path, _ = with_raw_config(tmp_path, '{"n_head": "two"}')
    assert load_gpt2(path, heads=2).blocks[0].attention.heads == 2  # config's n_head unused
    for heads in (0, -2, 2.0, "2", True):
        with pytest.raises(ValueError, match=rf"heads must be a positive int; received heads="
                                             rf"{heads!r}"):
            load_gpt2(path, heads=heads)


def test_a_dangling_config_json_link_is_named(tmp_path):
    path = write(tmp_path / "model.safetensors", gpt2_state_dict(random_model()))
    (tmp_path / "config.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(CheckpointError, match=r"config\.json' cannot be opened \(No such file"):
        load_gpt2(path, heads=2)


def test_an_oversized_config_json_is_refused_without_reading_it_whole(tmp_path):
    path, config = with_raw_config(tmp_path, '{"n_head": 2, "pad": "' + "x" * (2 << 20) + '"}')
    with pytest.raises(CheckpointError, match=r"config\.json' is 2\.0 MiB; a GPT-2 config is a "
                                              r"few KiB"):
        load_gpt2(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_a_fifo_config_json_is_refused_at_once(tmp_path):
    path = write(tmp_path / "model.safetensors", gpt2_state_dict(random_model()))
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    # Reading the FIFO would wait for a writer forever; this writer turns such a
    # hang into a slow failure instead of a stuck suite.
    rescue = subprocess.Popen(["sh", "-c", f"sleep 3; echo '{{}}' > '{fifo}'"],
                              start_new_session=True)
    try:
        start = time.monotonic()
        with pytest.raises(CheckpointError, match=r"config\.json' is a FIFO \(named pipe\), "
                                                  r"not a file"):
            load_gpt2(path, heads=2)
        assert time.monotonic() - start < 1.0
    finally:
        os.killpg(rescue.pid, signal.SIGKILL)
        rescue.wait()


def test_half_precision_weights_load_as_float32(tmp_path):
    model = random_model()
    arrays = {k: v.astype(np.float16) for k, v in gpt2_state_dict(model).items()}
    loaded = load_gpt2(write(tmp_path / "model.safetensors", arrays), heads=2)
    assert loaded.blocks[0].attention.qkv.weight.dtype == s4tf.float32
    np.testing.assert_allclose(loaded(s4tf.Tensor(TOKENS)).numpy(),
                               model(s4tf.Tensor(TOKENS)).numpy(), atol=0.05, rtol=0.05)


def test_weights_that_are_not_floating_point_or_overflow_float32_are_refused(tmp_path):
    arrays = {k: v.astype(np.float64) for k, v in gpt2_state_dict(random_model()).items()}
    arrays["h.0.mlp.c_fc.weight"][0, 0] = -1e39  # finite in float64, -inf in float32
    arrays["h.1.ln_1.bias"] = arrays["h.1.ln_1.bias"].astype(np.int32)
    path = write(tmp_path / "model.safetensors", arrays)
    with pytest.raises(CheckpointError) as error:
        load_gpt2(path, heads=2)
    message = str(error.value)
    assert str(path) in message
    assert "keys that are not floating point: h.1.ln_1.bias: int32" in message
    assert ("values too large for the model's dtype (they would become inf): h.0.mlp.c_fc.weight: "
            "float64 up to 1e+39, float32 holds up to 3.4e+38") in message
    assert "model.float()" in message and "export it again" in message


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
