"""GPT-2 weights in Hugging Face's safetensors layout, to and from :class:`TransformerLM`.

Hugging Face's ``GPT2Model`` keeps its projections in ``Conv1D`` modules whose
``weight`` is ``(in, out)``, the layout of :class:`s4tf.layers.Dense`, and its
attention input projection fused (``c_attn``: queries, keys, values side by
side), as :class:`~s4tf.models.CausalSelfAttention` does; so loading is a
renaming with no transposes or splits. The names:

==============================  ==========================================
Hugging Face (``transformer.``  s4tf ``TransformerLM`` field
prefix optional)
==============================  ==========================================
``wte.weight``                  ``token_embedding.embeddings``
``wpe.weight``                  ``position_embedding.embeddings``
``h.{i}.ln_1.weight/bias``      ``blocks[i].attention_norm.scale/offset``
``h.{i}.attn.c_attn.*``         ``blocks[i].attention.qkv.weight/bias``
``h.{i}.attn.c_proj.*``         ``blocks[i].attention.projection.*``
``h.{i}.ln_2.weight/bias``      ``blocks[i].mlp_norm.scale/offset``
``h.{i}.mlp.c_fc.*``            ``blocks[i].mlp.fc.*``
``h.{i}.mlp.c_proj.*``          ``blocks[i].mlp.projection.*``
``ln_f.weight/bias``            ``final_norm.scale/offset``
``lm_head.weight`` (optional)   tied: must equal ``wte.weight``
==============================  ==========================================

The attention buffers ``h.{i}.attn.bias`` and ``h.{i}.attn.masked_bias`` (the
causal mask) are not weights and are ignored.
"""

from __future__ import annotations

import json
import math
import os
import stat

import numpy as np

from ..checkpoint.files import file_kind, read_arrays, restore
from ..checkpoint.key_report import as_float_weights, mismatch_lines
from ..checkpoint.structure import CheckpointError
from .transformer import _GPT2_SIZES, TransformerLM

__all__ = ["gpt2_state_dict", "load_gpt2"]

_TOP = {
    "wte.weight": "token_embedding.embeddings",
    "wpe.weight": "position_embedding.embeddings",
    "ln_f.weight": "final_norm.scale",
    "ln_f.bias": "final_norm.offset",
}
_BLOCK = {
    "ln_1.weight": "attention_norm.scale",
    "ln_1.bias": "attention_norm.offset",
    "attn.c_attn.weight": "attention.qkv.weight",
    "attn.c_attn.bias": "attention.qkv.bias",
    "attn.c_proj.weight": "attention.projection.weight",
    "attn.c_proj.bias": "attention.projection.bias",
    "ln_2.weight": "mlp_norm.scale",
    "ln_2.bias": "mlp_norm.offset",
    "mlp.c_fc.weight": "mlp.fc.weight",
    "mlp.c_fc.bias": "mlp.fc.bias",
    "mlp.c_proj.weight": "mlp.projection.weight",
    "mlp.c_proj.bias": "mlp.projection.bias",
}
_BUFFERS = ("attn.bias", "attn.masked_bias")
_PREFIX = "transformer."


def _names(depth: int) -> dict:
    """Hugging Face key -> s4tf dotted field path, for ``depth`` blocks."""
    names = dict(_TOP)
    for i in range(depth):
        names.update({f"h.{i}.{hf}": f"blocks.{i}.{ours}" for hf, ours in _BLOCK.items()})
    return names


def gpt2_state_dict(model: TransformerLM) -> dict:
    """``model``'s weights as NumPy arrays under Hugging Face GPT-2 names.

    The inverse of :func:`load_gpt2`: ``safetensors.numpy.save_file(
    gpt2_state_dict(model), "model.safetensors", metadata={"format": "pt"})``
    writes a file that :func:`load_gpt2` loads back and that Hugging Face's
    ``GPT2LMHeadModel.from_pretrained`` reads from the same folder as a
    matching ``config.json`` (``n_embd``, ``n_layer``, ``n_head``,
    ``n_positions``, ``vocab_size``).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.models.gpt2_weights import gpt2_state_dict
    >>> lm = s4tf.models.TransformerLM(vocab_size=7, context=4, width=8, depth=1, heads=2)
    >>> gpt2_state_dict(lm)["h.0.attn.c_attn.weight"].shape
    (8, 24)
    """
    return {hf: np.ascontiguousarray(_lookup(model, ours).numpy())
            for hf, ours in _names(len(model.blocks)).items()}


def _lookup(model, dotted: str):
    """The value at a dotted field path; digits index lists (``blocks.3.mlp``)."""
    value = model
    for part in dotted.split("."):
        value = value[int(part)] if part.isdigit() else getattr(value, part)
    return value


def load_gpt2(path, heads: int | None = None, dropout: float = 0.0) -> TransformerLM:
    """A :class:`TransformerLM` holding the GPT-2 weights of a Hugging Face safetensors file.

    The sizes come from the tensors' shapes: vocabulary and width from
    ``wte.weight``, context from ``wpe.weight``, depth from the ``h.{i}``
    blocks. The head count is not visible in any shape, so it comes from
    ``heads=``, else from the ``n_head`` of a ``config.json`` beside the file
    (as Hugging Face saves it), else from the published GPT-2 size with the
    same width and depth (small, medium, large, xl); otherwise loading stops
    and asks for ``heads=``. LayerNorm epsilon comes from the config's
    ``layer_norm_epsilon`` (default 1e-5). Weights in float16 or float64 are
    converted to float32; integer and bool weights, and float64 values beyond
    float32's range, are refused. Only safetensors files are read: a
    ``pytorch_model.bin`` is a pickle and can run code when loaded.

    Parameters
    ----------
    path : str or os.PathLike
        The ``model.safetensors`` file (keys as in the table of
        :mod:`s4tf.models.gpt2_weights`, optionally prefixed ``transformer.``).
    heads : int, optional
        Attention heads; see above.
    dropout : float, default 0.0
        The model's dropout (used in training only).

    Raises
    ------
    s4tf.checkpoint.CheckpointError (a ValueError)
        If keys are missing, unexpected or mis-shaped (all are listed, in
        the file's names), if ``lm_head.weight`` differs from ``wte.weight``
        (an untied output layer), or if the config describes a variant
        TransformerLM does not compute. A ``config.json`` that is not a
        regular file of at most 1 MiB holding a JSON object, or whose
        ``n_head``, ``layer_norm_epsilon``, ``activation_function`` or
        ``scale_attn_*`` field has the wrong type or value, is refused by
        name and field.
    ValueError
        If ``heads`` is not a positive int.

    Examples
    --------
    >>> import s4tf, numpy as np, tempfile, os
    >>> from safetensors.numpy import save_file
    >>> from s4tf.models.gpt2_weights import gpt2_state_dict, load_gpt2
    >>> lm = s4tf.models.TransformerLM(vocab_size=7, context=4, width=8, depth=2, heads=2)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    >>> save_file({"transformer." + k: v for k, v in gpt2_state_dict(lm).items()}, path)
    >>> load_gpt2(path, heads=2).blocks[1].attention.heads
    2
    """
    path = os.fspath(path)
    arrays, _ = read_arrays(path, written_by="Hugging Face's save_pretrained "
                            "(safe_serialization=True) or safetensors.numpy.save_file")
    arrays = _without_prefix(arrays)
    if "wte.weight" not in arrays or "wpe.weight" not in arrays:
        raise CheckpointError(
            f"{path!r} is not a GPT-2 checkpoint in Hugging Face's layout: it has no "
            f"'wte.weight' / 'wpe.weight' (found keys: {_preview(arrays)})."
        )
    vocab_size, width = arrays["wte.weight"].shape
    context = arrays["wpe.weight"].shape[0]
    depth = 1 + max((int(key.split(".")[1]) for key in arrays
                     if key.startswith("h.") and key.split(".")[1].isdigit()), default=-1)
    config = _config_beside(path, heads_given=heads is not None)
    heads = _heads(heads, config, width, depth, path)
    epsilon = float(config.get("layer_norm_epsilon", 1e-5))
    names = _names(depth)
    cast = _check_keys(arrays, names, vocab_size, context, width, depth, path)
    model = TransformerLM(vocab_size=int(vocab_size), context=int(context), width=int(width),
                          depth=depth, heads=heads, dropout=dropout, epsilon=epsilon)
    ours = {names[hf]: np.ascontiguousarray(array) for hf, array in cast.items()}
    return restore(None, ours, model, path)


def _without_prefix(arrays: dict) -> dict:
    # GPT2LMHeadModel saves "transformer.wte.weight", GPT2Model "wte.weight".
    return {key[len(_PREFIX):] if key.startswith(_PREFIX) else key: array
            for key, array in arrays.items()}


def _preview(arrays: dict, count: int = 8) -> str:
    keys = sorted(arrays)
    more = f", ... ({len(keys) - count} more)" if len(keys) > count else ""
    return ", ".join(keys[:count]) + more


# The fields of config.json the loader reads: (what each must be, its JSON
# types, a test of its value). bool is excluded from the numbers, as JSON has
# true/false apart from numbers.
_SETTINGS = {
    "n_head": ("a positive int", (int,), lambda v: v > 0),
    "layer_norm_epsilon": ("a positive number", (int, float),
                           lambda v: math.isfinite(v) and v > 0),
    "activation_function": ("a str", (str,), lambda v: True),
    "scale_attn_by_inverse_layer_idx": ("true or false", (bool,), lambda v: True),
    "scale_attn_weights": ("true or false", (bool,), lambda v: True),
}
# Hugging Face's GPT-2 config.json is about 1 KiB; one much larger is not one,
# and reading it whole could exhaust memory.
_CONFIG_LIMIT = 1 << 20
_CONFIG_FIX = "fix or remove config.json (Hugging Face's save_pretrained writes it)"


def _config_beside(path: str, heads_given: bool) -> dict:
    """The checked settings of the ``config.json`` beside ``path``; ``{}`` when there is none."""
    config_path = os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")
    if not os.path.lexists(config_path):
        return {}
    text = _read_config(config_path)
    try:
        config = json.loads(text)
    except (ValueError, RecursionError) as error:  # JSONDecodeError, UnicodeDecodeError
        raise CheckpointError(f"{config_path!r} is not valid JSON ({error}); "
                              f"{_CONFIG_FIX}.") from None
    if not isinstance(config, dict):
        raise CheckpointError(
            f"{config_path!r} holds a JSON {_json_type(config)}, not an object of GPT-2 settings "
            f'(like {{"n_head": 12, "layer_norm_epsilon": 1e-05}}); {_CONFIG_FIX}.')
    for name, (must_be, types, fits) in _SETTINGS.items():
        if name not in config or (name == "n_head" and heads_given):
            continue
        value = config[name]
        right_type = isinstance(value, types) and (bool in types or not isinstance(value, bool))
        if right_type and fits(value):
            continue
        raise CheckpointError(
            f"{config_path!r}: the field {name!r} is {value!r}"
            + ("" if right_type else f" ({_article(type(value).__name__)})")
            + f"; it must be {must_be}: {_CONFIG_FIX}"
            + (", or pass heads= to load_gpt2." if name == "n_head" else ".")
        )
    unsupported = []
    if config.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        unsupported.append(f"activation_function={config['activation_function']!r} "
                           "(TransformerLM uses gelu, tanh approximation: 'gelu_new')")
    if config.get("scale_attn_by_inverse_layer_idx", False):
        unsupported.append("scale_attn_by_inverse_layer_idx=true")
    if not config.get("scale_attn_weights", True):
        unsupported.append("scale_attn_weights=false")
    if unsupported:
        raise CheckpointError(f"{config_path!r} describes a GPT-2 variant TransformerLM does not "
                              f"compute: {'; '.join(unsupported)}.")
    return config


def _read_config(config_path: str) -> bytes:
    # Opened without blocking, then asked what it is: a FIFO opens at once and
    # is refused instead of waiting for a writer forever, and nothing can swap
    # the file between a check and the open. Regular files only, of bounded size.
    try:
        descriptor = os.open(config_path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:  # a dangling link, no permission
        raise CheckpointError(f"{config_path!r} cannot be opened ({error.strerror}); "
                              f"{_CONFIG_FIX}.") from None
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise CheckpointError(f"{config_path!r} is {file_kind(status.st_mode)}, not a file; "
                                  f"{_CONFIG_FIX}.")
        text = file.read(_CONFIG_LIMIT + 1)
    if len(text) > _CONFIG_LIMIT:
        size = max(len(text), status.st_size)
        raise CheckpointError(f"{config_path!r} is {size / 2**20:.1f} MiB; a GPT-2 config is a "
                              f"few KiB, so this is not one: {_CONFIG_FIX}.")
    return text


def _json_type(value) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


def _article(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _heads(heads, config: dict, width: int, depth: int, path: str) -> int:
    if heads is not None and (isinstance(heads, bool) or not isinstance(heads, int) or heads < 1):
        raise ValueError(f"load_gpt2: heads must be a positive int; received heads={heads!r}.")
    if heads is None:
        heads = config.get("n_head")
    if heads is None:
        published = [sizes["heads"] for sizes in _GPT2_SIZES.values()
                     if (sizes["width"], sizes["depth"]) == (width, depth)]
        if not published:
            raise CheckpointError(
                f"{path!r}: the number of attention heads cannot be read from the weights "
                f"(width {width}, depth {depth} is not a published GPT-2 size) and there is no "
                "config.json with 'n_head' beside the file; pass heads= to the loader."
            )
        heads = published[0]
    if width % heads:
        raise CheckpointError(f"{path!r}: width {width} is not divisible by heads={heads}.")
    return int(heads)


def _check_keys(arrays: dict, names: dict, vocab_size, context, width, depth, path) -> dict:
    """The file's weights as float32 (Hugging Face names), or a CheckpointError listing misfits."""
    expected = {"wte.weight": (vocab_size, width), "wpe.weight": (context, width),
                "ln_f.weight": (width,), "ln_f.bias": (width,)}
    block_shapes = {"ln_1.weight": (width,), "ln_1.bias": (width,),
                    "attn.c_attn.weight": (width, 3 * width), "attn.c_attn.bias": (3 * width,),
                    "attn.c_proj.weight": (width, width), "attn.c_proj.bias": (width,),
                    "ln_2.weight": (width,), "ln_2.bias": (width,),
                    "mlp.c_fc.weight": (width, 4 * width), "mlp.c_fc.bias": (4 * width,),
                    "mlp.c_proj.weight": (4 * width, width), "mlp.c_proj.bias": (width,)}
    for hf in names:
        if hf.startswith("h."):
            expected[hf] = block_shapes[hf.split(".", 2)[2]]
    ignored = {key for key in arrays
               if key == "lm_head.weight" or key.endswith(_BUFFERS) and key.startswith("h.")}
    missing = sorted(set(expected) - set(arrays))
    unexpected = sorted(set(arrays) - set(expected) - ignored)
    misshaped = [f"{key}: file has {tuple(arrays[key].shape)}, expected {shape}"
                 for key, shape in sorted(expected.items())
                 if key in arrays and tuple(arrays[key].shape) != shape]
    present = sorted(set(expected) & set(arrays))
    cast, dtype_lines = as_float_weights({key: arrays[key] for key in present},
                                         dict.fromkeys(present, np.float32))
    lines = mismatch_lines(missing, unexpected, misshaped) + dtype_lines
    if "lm_head.weight" in arrays and "wte.weight" in arrays and not (
            arrays["lm_head.weight"].shape == arrays["wte.weight"].shape
            and np.array_equal(arrays["lm_head.weight"], arrays["wte.weight"])):
        lines.append("  lm_head.weight differs from wte.weight: TransformerLM ties its output "
                     "projection to the token embedding, as GPT-2 does, and cannot hold an "
                     "untied one")
    if lines:
        raise CheckpointError(
            f"{path!r} does not fit a GPT-2 TransformerLM (vocabulary {vocab_size}, context "
            f"{context}, width {width}, {depth} blocks "
            "inferred from wte/wpe and the h.{i} keys):\n" + "\n".join(lines)
        )
    return cast
