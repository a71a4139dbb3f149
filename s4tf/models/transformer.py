"""A causal Transformer language model in GPT-2's layout."""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import layers
from .. import random as _random
from ..activations import gelu
from ..differentiable import no_derivative
from ..dtypes import int32 as _int32
from ..layers import Layer
from ..layers.layer import check_input_shape
from ..learning_phase import inference
from ..ops import matmul, reshape, transpose
from ..ops.attention import scaled_dot_product_attention
from ..ops.shapes import shape_of
from ..tensor import Tensor, from_numpy

__all__ = ["CausalSelfAttention", "TransformerBlock", "TransformerLM"]

# GPT-2's published sizes (Radford et al. 2019, Table 2; Hugging Face configs).
_GPT2_SIZES = {
    "small": {"width": 768, "depth": 12, "heads": 12},
    "medium": {"width": 1024, "depth": 24, "heads": 16},
    "large": {"width": 1280, "depth": 36, "heads": 20},
    "xl": {"width": 1600, "depth": 48, "heads": 25},
}
_GPT2_VOCABULARY = 50257
_GPT2_CONTEXT = 1024


def _normal(stddev: float):
    """A ``(shape, dtype) -> Tensor`` initializer drawing N(0, stddev^2), as GPT-2."""
    return functools.partial(_random.normal, stddev=stddev)


class CausalSelfAttention(Layer):
    """GPT-2's masked self-attention with one fused query/key/value projection.

    ``qkv`` maps ``width`` features to ``3 * width`` (queries, keys, values in
    that order, each split into ``heads`` consecutive groups: Hugging Face's
    ``attn.c_attn``); ``projection`` maps the joined heads back
    (``attn.c_proj``). Position ``i`` attends to positions ``<= i`` with
    ``softmax(q k^T / sqrt(width / heads))``.

    Parameters
    ----------
    width, heads : int
        Features per position and attention heads (``heads`` divides ``width``).
    dropout : float, default 0.0
        On the attention probabilities and on the output, in training only.
    depth : int, default 1
        Blocks in the whole model: ``projection`` starts as N(0, (0.02 /
        sqrt(2 depth))^2), as GPT-2.

    Examples
    --------
    >>> import s4tf
    >>> attention = s4tf.models.CausalSelfAttention(width=8, heads=2)
    >>> attention(s4tf.ones([1, 5, 8])).shape
    (1, 5, 8)
    """

    qkv: layers.Dense
    projection: layers.Dense
    attention_dropout: layers.Dropout
    residual_dropout: layers.Dropout
    heads: int = no_derivative()

    def __init__(self, width: int, heads: int, dropout: float = 0.0, depth: int = 1):
        if width % heads:
            raise ValueError(f"CausalSelfAttention: width={width} is not divisible by "
                             f"heads={heads}; each head takes width / heads features.")
        self.qkv = layers.Dense(width, 3 * width, weight_initializer=_normal(0.02))
        # GPT-2 scales the initial weights of each residual branch's last
        # projection by 1/sqrt(2 * depth), so the residual stream's variance
        # does not grow with depth.
        self.projection = layers.Dense(width, width,
                                       weight_initializer=_normal(0.02 / math.sqrt(2 * depth)))
        self.attention_dropout = layers.Dropout(dropout)
        self.residual_dropout = layers.Dropout(dropout)
        self.heads = heads

    def __call__(self, x):
        width = shape_of(self.projection.weight)[0]
        check_input_shape(self, x, (None, None, width),
                          "The input must be (batch, length, width) features.")
        batch, length, _ = shape_of(x)
        head_size = width // self.heads

        # (batch, length, [q k v], heads, head_size) -> ([q k v], batch, heads, length,
        # head_size): one transpose for the three instead of one each.
        packed = transpose(reshape(self.qkv(x), (batch, length, 3, self.heads, head_size)),
                           (2, 0, 3, 1, 4))
        q, k, v = packed[0], packed[1], packed[2]
        attended = scaled_dot_product_attention(q, k, v, causal=True,
                                                dropout=self.attention_dropout)
        joined = reshape(transpose(attended, (0, 2, 1, 3)), (batch, length, width))
        return self.residual_dropout(self.projection(joined))


class MLP(Layer):
    """GPT-2's position-wise feed-forward net: ``width -> 4 width -> width`` with gelu.

    ``fc`` is Hugging Face's ``mlp.c_fc`` and ``projection`` its ``mlp.c_proj``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.models.transformer.MLP(width=4)(s4tf.ones([1, 3, 4])).shape
    (1, 3, 4)
    """

    fc: layers.Dense
    projection: layers.Dense
    dropout: layers.Dropout

    def __init__(self, width: int, dropout: float = 0.0, depth: int = 1):
        self.fc = layers.Dense(width, 4 * width, activation=gelu, weight_initializer=_normal(0.02))
        self.projection = layers.Dense(4 * width, width,
                                       weight_initializer=_normal(0.02 / math.sqrt(2 * depth)))
        self.dropout = layers.Dropout(dropout)

    def __call__(self, x):
        return self.dropout(self.projection(self.fc(x)))


class TransformerBlock(Layer):
    """One pre-LayerNorm GPT-2 block: ``x + attention(ln_1(x))``, then ``+ mlp(ln_2(.))``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.models.TransformerBlock(width=8, heads=2)(s4tf.ones([2, 3, 8])).shape
    (2, 3, 8)
    """

    attention_norm: layers.LayerNorm
    attention: CausalSelfAttention
    mlp_norm: layers.LayerNorm
    mlp: MLP

    def __init__(self, width: int, heads: int, dropout: float = 0.0, depth: int = 1,
                 epsilon: float = 1e-5):
        self.attention_norm = layers.LayerNorm(width, epsilon=epsilon)
        self.attention = CausalSelfAttention(width, heads, dropout=dropout, depth=depth)
        self.mlp_norm = layers.LayerNorm(width, epsilon=epsilon)
        self.mlp = MLP(width, dropout=dropout, depth=depth)

    def __call__(self, x):
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class TransformerLM(Layer):
    """A causal Transformer language model with GPT-2's layout (Radford et al. 2019).

    Token embeddings plus learned position embeddings, ``depth`` pre-LayerNorm
    blocks (fused-QKV causal self-attention over ``heads`` heads and a 4x MLP
    with gelu, tanh approximation), a final LayerNorm, and an output projection
    tied to the token embedding (``logits = h @ token_embedding.embeddings^T``).
    LayerNorm epsilon is 1e-5 and weights start as N(0, 0.02) (residual
    projections scaled by ``1/sqrt(2 depth)``), as GPT-2. It matches Hugging
    Face's ``GPT2LMHeadModel`` (load its weights with
    :func:`s4tf.models.load_gpt2`) and swift-models' ``TransformerLM``.

    Parameters
    ----------
    vocab_size : int
        Number of token ids; inputs are int tensors with values in ``[0, vocab_size)``.
    context : int
        Longest sequence (number of learned positions).
    width : int
        Features per position (GPT-2's ``n_embd``).
    depth : int
        Number of blocks (``n_layer``).
    heads : int
        Attention heads (``n_head``); must divide ``width``.
    dropout : float, default 0.0
        Dropout on the embeddings, the attention probabilities and each residual
        branch, in training only (GPT-2 trained with 0.1).
    epsilon : float, default 1e-5
        LayerNorm epsilon.

    Notes
    -----
    Call it on int token ids ``(batch, length)`` with ``length <= context``; it
    returns logits ``(batch, length, vocab_size)`` where position ``t`` predicts
    token ``t + 1`` from tokens ``<= t`` only. Train with
    ``s4tf.softmax_cross_entropy(logits=model(x), labels=y)`` where ``y`` is
    ``x`` shifted left by one; sample with :meth:`generate`.

    Parameter count: ``vocab*width + context*width + depth*(12 width^2 +
    13 width) + 2 width`` (see :meth:`parameter_count_for`); GPT-2 small:
    124,439,808.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.random.seed(0)
    >>> lm = s4tf.models.TransformerLM(vocab_size=11, context=8, width=16, depth=2, heads=4)
    >>> lm(s4tf.Tensor([[1, 2, 3]])).shape
    (1, 3, 11)
    >>> s4tf.parameter_count(lm) == s4tf.models.TransformerLM.parameter_count_for(
    ...     vocab_size=11, context=8, width=16, depth=2)
    True
    >>> lm.generate([1, 2], steps=4, seed=0).shape
    (6,)
    """

    token_embedding: layers.Embedding
    position_embedding: layers.Embedding
    embedding_dropout: layers.Dropout
    blocks: list[TransformerBlock]
    final_norm: layers.LayerNorm

    def __init__(self, vocab_size: int, context: int, width: int, depth: int, heads: int,
                 dropout: float = 0.0, epsilon: float = 1e-5):
        for name, value in (("vocab_size", vocab_size), ("context", context), ("width", width),
                            ("depth", depth), ("heads", heads)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"TransformerLM: {name} must be a positive int; received "
                                 f"{name}={value!r}.")
        if width % heads:
            raise ValueError(f"TransformerLM: width={width} is not divisible by heads={heads}; "
                             "each head takes width / heads features.")
        self.token_embedding = layers.Embedding(vocab_size, width,
                                                embeddings_initializer=_normal(0.02))
        self.position_embedding = layers.Embedding(context, width,
                                                   embeddings_initializer=_normal(0.01))
        self.embedding_dropout = layers.Dropout(dropout)
        self.blocks = [TransformerBlock(width, heads, dropout=dropout, depth=depth,
                                        epsilon=epsilon) for _ in range(depth)]
        self.final_norm = layers.LayerNorm(width, epsilon=epsilon)

    @classmethod
    def gpt2(cls, size: str = "small", dropout: float = 0.0) -> TransformerLM:
        """GPT-2 of a published size, randomly initialised.

        ``"small"`` (width 768, depth 12, heads 12: 124,439,808 parameters),
        ``"medium"`` (1024/24/16: 354,823,168), ``"large"`` (1280/36/20:
        774,030,080) or ``"xl"`` (1600/48/25: 1,557,611,200); all with
        vocabulary 50257 and context 1024. In float32 these take 0.5, 1.4,
        3.1 and 6.2 GB. To know a size's count without building it, use
        ``parameter_count_for(**TransformerLM.gpt2_config(size))``.

        Examples
        --------
        >>> import s4tf
        >>> s4tf.models.TransformerLM.gpt2_config("small")["width"]
        768
        """
        return cls(**cls.gpt2_config(size), dropout=dropout)

    @staticmethod
    def gpt2_config(size: str = "small") -> dict:
        """The constructor keywords of GPT-2 ``size`` (``"small"``, ... ``"xl"``).

        Examples
        --------
        >>> import s4tf
        >>> sorted(s4tf.models.TransformerLM.gpt2_config("xl").items())
        [('context', 1024), ('depth', 48), ('heads', 25), ('vocab_size', 50257), ('width', 1600)]
        """
        if size not in _GPT2_SIZES:
            raise ValueError(f"TransformerLM.gpt2: size must be one of {sorted(_GPT2_SIZES)}; "
                             f"received size={size!r}.")
        return {"vocab_size": _GPT2_VOCABULARY, "context": _GPT2_CONTEXT, **_GPT2_SIZES[size]}

    @staticmethod
    def parameter_count_for(vocab_size: int, context: int, width: int, depth: int,
                            heads: int | None = None) -> int:
        """Trainable scalars of ``TransformerLM(...)`` with these sizes, without building it.

        Per block: two LayerNorms (``4 width``), the fused QKV projection
        (``3 width^2 + 3 width``), the attention output (``width^2 + width``)
        and the MLP (``8 width^2 + 5 width``); plus both embeddings and the
        final LayerNorm. The output projection is tied, so it adds nothing.
        ``heads`` does not change the count (accepted so that a config dict
        can be passed whole).

        Examples
        --------
        >>> import s4tf
        >>> s4tf.models.TransformerLM.parameter_count_for(
        ...     **s4tf.models.TransformerLM.gpt2_config("small"))
        124439808
        """
        block = 12 * width * width + 13 * width
        return vocab_size * width + context * width + depth * block + 2 * width

    @property
    def context(self) -> int:
        """The longest sequence the model takes (its number of learned positions)."""
        return shape_of(self.position_embedding.embeddings)[0]

    def __call__(self, tokens):
        if not isinstance(tokens, Tensor):
            tokens = Tensor(tokens)
        check_input_shape(self, tokens, (None, None),
                          "Pass int token ids of shape (batch, length).")
        length = shape_of(tokens)[1]
        if length > self.context:
            raise ValueError(
                f"TransformerLM: a sequence of {length} tokens is longer than the model's "
                f"context of {self.context} positions; pass at most the last {self.context} "
                "tokens (generate() does this for you)."
            )
        # On the model's backend, whatever the current default backend is.
        positions = from_numpy(np.arange(length, dtype=np.int32), _int32,
                               like=self.position_embedding.embeddings)
        h = self.embedding_dropout(self.token_embedding(tokens) + self.position_embedding(positions))
        for block in self.blocks:
            h = block(h)
        h = self.final_norm(h)
        batch, _, width = shape_of(h)
        flat = matmul(reshape(h, (batch * length, width)),
                      transpose(self.token_embedding.embeddings))
        return reshape(flat, (batch, length, shape_of(flat)[1]))

    def generate(self, prompt, steps: int, temperature: float = 1.0, top_k: int | None = None,
                 seed: int | None = None) -> Tensor:
        """Extend ``prompt`` by ``steps`` sampled tokens (in inference mode).

        Each step runs the model on the last ``context`` tokens and draws the
        next token from ``softmax(logits / temperature)`` of the last position,
        restricted to the ``top_k`` most likely tokens when given.
        ``temperature=0`` picks the most likely token (greedy). Draws use
        NumPy's generator for ``seed`` (or the global ``s4tf.random`` stream),
        so a seed gives the same text on every backend. There is no key/value
        cache: each step recomputes the window, which is fine for the small
        models trained on a CPU (on ``xla`` each new length compiles once).

        Parameters
        ----------
        prompt : list of int, array or Tensor
            Token ids of shape ``(length,)`` or ``(batch, length)``, ``length >= 1``.
        steps : int
            Number of tokens to add.
        temperature : float, default 1.0
        top_k : int, optional
        seed : int, optional

        Returns
        -------
        Tensor
            int32 ids of shape ``prompt.shape[:-1] + (length + steps,)``: the
            prompt followed by the new tokens.

        Examples
        --------
        >>> import s4tf
        >>> lm = s4tf.models.TransformerLM(vocab_size=5, context=4, width=8, depth=1, heads=2)
        >>> out = lm.generate([[0, 1]], steps=6, top_k=2, seed=3)
        >>> out.shape, out[0, :2].tolist()
        ((1, 8), [0, 1])
        """
        ids = np.asarray(prompt.numpy() if isinstance(prompt, Tensor) else prompt)
        if ids.ndim not in (1, 2) or ids.shape[-1] < 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"TransformerLM.generate: prompt must be int token ids of shape "
                             f"(length,) or (batch, length) with length >= 1; received shape "
                             f"{ids.shape} of {ids.dtype}.")
        if temperature < 0:
            raise ValueError(f"TransformerLM.generate: temperature must be >= 0; received "
                             f"temperature={temperature}.")
        vocab = shape_of(self.token_embedding.embeddings)[0]
        if top_k is not None and not 1 <= top_k <= vocab:
            raise ValueError(f"TransformerLM.generate: top_k must lie in [1, {vocab}]; received "
                             f"top_k={top_k}.")
        rng = _random.generator(seed)
        tokens = np.atleast_2d(ids).astype(np.int32)
        embeddings = self.token_embedding.embeddings
        with inference():
            for _ in range(steps):
                window = from_numpy(tokens[:, -self.context:], _int32, like=embeddings)
                logits = self(window).numpy()[:, -1, :].astype(np.float64)
                tokens = np.concatenate([tokens, _sample(logits, temperature, top_k, rng)], axis=1)
        out = tokens if ids.ndim == 2 else tokens[0]
        return from_numpy(np.ascontiguousarray(out), _int32, like=embeddings)


def _sample(logits: np.ndarray, temperature: float, top_k: int | None, rng) -> np.ndarray:
    """One token id per row of ``logits`` ``(batch, vocab)``, as a ``(batch, 1)`` array."""
    if top_k is not None:
        # Everything below the k-th largest logit of its row is excluded.
        kth = np.sort(logits, axis=-1)[:, -top_k][:, None]
        logits = np.where(logits < kth, -np.inf, logits)
    if temperature == 0:
        return np.argmax(logits, axis=-1).astype(np.int32)[:, None]
    scaled = logits / temperature
    probabilities = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return np.array([[rng.choice(len(row), p=row)] for row in probabilities], dtype=np.int32)
