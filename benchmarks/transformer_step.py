"""A GPT-2-style TransformerLM training step: s4tf naive/xla, plain JAX, PyTorch eager.

One run, side by side, as JSON (benchmarks/README.md: performance claims live
here, never as timing assertions in tests). The model is
``s4tf.models.TransformerLM`` (vocabulary 512, width 256, depth 4, 4 heads,
context 128; pre-LayerNorm blocks, fused QKV causal attention, 4x MLP with
tanh GELU, logits tied to the token embedding), trained on random tokens with
softmax cross-entropy against the next token and plain SGD, float32:

* ``s4tf_naive``: the eager NumPy backend;
* ``s4tf_xla``: the lazy tensor, ``s4tf.barrier()`` after each update, plus the
  Python time per step spent tracing (recording ops);
* ``s4tf_captured``: the same step under ``s4tf.xla.compile``: after the
  capture and its checks, calls replay the compiled program without tracing;
* ``jax``: a hand-written ``jax.jit`` step with donated parameters, batch and
  position axes folded into one before each matmul (the XLA limit here);
* ``torch``: the same network in PyTorch eager (``tests/models/torch_twins.py``'s
  GPT-2 architecture, rewritten here so benchmarks never import tests), when
  ``torch`` is importable.

All sides start from the same weights (those of the s4tf model), so their first
losses agree; ``final_loss`` is a sanity check, not a timing.

Usage: ``python benchmarks/transformer_step.py [--steps 10] [--batch 16]``.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

import s4tf

LR = 0.01
VOCABULARY, WIDTH, DEPTH, HEADS, CONTEXT = 512, 256, 4, 4, 128


def tokens(batch, seed=0):
    """Random token ids ``(batch, CONTEXT + 1)``: inputs are ``[:, :-1]``, targets ``[:, 1:]``."""
    return np.random.default_rng(seed).integers(0, VOCABULARY, size=(batch, CONTEXT + 1),
                                                dtype=np.int32)


def initial_model(backend="naive"):
    s4tf.random.seed(0)
    with s4tf.backend(backend):
        return s4tf.models.TransformerLM(vocab_size=VOCABULARY, context=CONTEXT, width=WIDTH,
                                         depth=DEPTH, heads=HEADS)


def initial_weights() -> dict:
    """The s4tf model's parameters as NumPy arrays, in a flat dict (Dense weights are (in, out))."""
    model = initial_model()
    w = {"wte": model.token_embedding.embeddings.numpy(),
         "wpe": model.position_embedding.embeddings.numpy(),
         "ln_f_g": model.final_norm.scale.numpy(), "ln_f_b": model.final_norm.offset.numpy()}
    for i, block in enumerate(model.blocks):
        for name, layer in (("ln_1", block.attention_norm), ("ln_2", block.mlp_norm)):
            w[f"{i}.{name}_g"], w[f"{i}.{name}_b"] = layer.scale.numpy(), layer.offset.numpy()
        for name, dense in (("attn", block.attention.qkv), ("attn_proj", block.attention.projection),
                            ("fc", block.mlp.fc), ("fc_proj", block.mlp.projection)):
            w[f"{i}.{name}_w"], w[f"{i}.{name}_b"] = dense.weight.numpy(), dense.bias.numpy()
    return w


def run_s4tf_captured(data, steps, warmup):
    with s4tf.backend("xla"):
        model = initial_model("xla")
        x, y = s4tf.Tensor(data[:, :-1]), s4tf.Tensor(data[:, 1:])

    @s4tf.xla.compile
    def step(m):
        loss, grads = s4tf.value_with_gradient(
            m, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=y))
        return m.moved(along=grads * -LR), loss

    # The first calls capture and verify (they run the body); later ones replay.
    seconds, (_, loss) = _timed(lambda s: step(s[0]), (model, None), steps, warmup,
                                lambda s: float(s[1]))
    return {"examples_per_s": steps * len(data) / seconds, "ms_per_step": 1e3 * seconds / steps,
            "final_loss": float(loss), "body_runs": step.body_runs}


def run_s4tf(backend, data, steps, warmup):
    with s4tf.backend(backend):
        model = initial_model(backend)
        x, y = s4tf.Tensor(data[:, :-1]), s4tf.Tensor(data[:, 1:])

    def loss_fn(m):
        return s4tf.softmax_cross_entropy(logits=m(x), labels=y)

    traced, loss, start = 0.0, None, time.perf_counter()
    # The loop keeps no reference to the old model or the gradients at the
    # barrier, so the lazy backend can donate the old parameters to XLA.
    for i in range(warmup + steps):
        if i == warmup:
            first = float(loss)
            start = time.perf_counter()
            traced = 0.0
        begin = time.perf_counter()
        loss, grads = s4tf.value_with_gradient(model, of=loss_fn)
        model = model.moved(along=grads * -LR)
        del grads
        traced += time.perf_counter() - begin
        s4tf.barrier()
    final = float(loss)
    seconds = time.perf_counter() - start
    result = {"examples_per_s": steps * len(data) / seconds, "ms_per_step": 1e3 * seconds / steps,
              "loss_after_warmup": first, "final_loss": final}
    if backend == "xla":
        result["python_trace_ms_per_step"] = 1e3 * traced / steps
    return result


def _timed(step, state, steps, warmup, finish):
    for _ in range(warmup):
        state = step(state)
    finish(state)
    start = time.perf_counter()
    for _ in range(steps):
        state = step(state)
    finish(state)
    return time.perf_counter() - start, state


def jax_loss(p, tokens_in, targets):
    """TransformerLM in plain JAX; (batch, position) folded into one axis before each matmul."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    highest = lax.Precision.HIGHEST
    batch, length = tokens_in.shape
    rows = batch * length
    head = WIDTH // HEADS

    def layer_norm(h, g, b):
        mean = h.mean(-1, keepdims=True)
        centered = h - mean
        return centered * lax.rsqrt((centered * centered).mean(-1, keepdims=True) + 1e-5) * g + b

    def dense(h, w, b):
        return jnp.dot(h, w, precision=highest) + b

    h = (p["wte"][tokens_in] + p["wpe"][:length]).reshape(rows, WIDTH)
    causal = jnp.tril(jnp.ones((length, length), dtype=bool))
    for i in range(DEPTH):
        qkv = dense(layer_norm(h, p[f"{i}.ln_1_g"], p[f"{i}.ln_1_b"]), p[f"{i}.attn_w"],
                    p[f"{i}.attn_b"])
        q, k, v = (t.reshape(batch, length, HEADS, head) for t in jnp.split(qkv, 3, axis=-1))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, precision=highest) / math.sqrt(head)
        weights = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
        attended = jnp.einsum("bhqk,bkhd->bqhd", weights, v, precision=highest).reshape(rows, WIDTH)
        h = h + dense(attended, p[f"{i}.attn_proj_w"], p[f"{i}.attn_proj_b"])
        hidden = dense(layer_norm(h, p[f"{i}.ln_2_g"], p[f"{i}.ln_2_b"]), p[f"{i}.fc_w"],
                       p[f"{i}.fc_b"])
        h = h + dense(jax.nn.gelu(hidden, approximate=True), p[f"{i}.fc_proj_w"],
                      p[f"{i}.fc_proj_b"])
    logits = jnp.dot(layer_norm(h, p["ln_f_g"], p["ln_f_b"]), p["wte"].T, precision=highest)
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(log_p, targets.reshape(rows, 1), axis=1).mean()


def run_jax(data, steps, warmup):
    import jax
    import jax.numpy as jnp

    def _step(p, x, y):
        loss, g = jax.value_and_grad(jax_loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - LR * b, p, g), loss

    params = {k: jnp.asarray(v) for k, v in initial_weights().items()}
    x, y = jnp.asarray(data[:, :-1]), jnp.asarray(data[:, 1:])
    step_fn = jax.jit(_step, donate_argnums=0)
    seconds, (_, loss) = _timed(lambda s: step_fn(s[0], x, y), (params, None), steps, warmup,
                                lambda s: float(s[1]))
    return {"examples_per_s": steps * len(data) / seconds, "ms_per_step": 1e3 * seconds / steps,
            "final_loss": float(loss)}


def run_torch(data, steps, warmup):
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)

        def forward(self, h):
            batch, length, width = h.shape
            size = width // HEADS
            q, k, v = (t.view(batch, length, HEADS, size).transpose(1, 2)
                       for t in self.c_attn(h).split(width, dim=2))
            scores = q @ k.transpose(-2, -1) / math.sqrt(size)
            future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)
            weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
            return self.c_proj((weights @ v).transpose(1, 2).reshape(batch, length, width))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(WIDTH, eps=1e-5), nn.LayerNorm(WIDTH, eps=1e-5)
            self.attn = Attention()
            self.c_fc, self.c_proj = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

        def forward(self, h):
            h = h + self.attn(self.ln_1(h))
            return h + self.c_proj(F.gelu(self.c_fc(self.ln_2(h)), approximate="tanh"))

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCABULARY, WIDTH), nn.Embedding(CONTEXT, WIDTH)
            self.h = nn.ModuleList(Block() for _ in range(DEPTH))
            self.ln_f = nn.LayerNorm(WIDTH, eps=1e-5)

        def forward(self, t):
            h = self.wte(t) + self.wpe(torch.arange(t.shape[1]))
            for block in self.h:
                h = block(h)
            return self.ln_f(h) @ self.wte.weight.T

    model = GPT2()
    w = initial_weights()
    with torch.no_grad():
        model.wte.weight.copy_(torch.tensor(w["wte"]))
        model.wpe.weight.copy_(torch.tensor(w["wpe"]))
        model.ln_f.weight.copy_(torch.tensor(w["ln_f_g"]))
        model.ln_f.bias.copy_(torch.tensor(w["ln_f_b"]))
        for i, block in enumerate(model.h):
            for norm, name in ((block.ln_1, "ln_1"), (block.ln_2, "ln_2")):
                norm.weight.copy_(torch.tensor(w[f"{i}.{name}_g"]))
                norm.bias.copy_(torch.tensor(w[f"{i}.{name}_b"]))
            for linear, name in ((block.attn.c_attn, "attn"), (block.attn.c_proj, "attn_proj"),
                                 (block.c_fc, "fc"), (block.c_proj, "fc_proj")):
                linear.weight.copy_(torch.tensor(w[f"{i}.{name}_w"].T))
                linear.bias.copy_(torch.tensor(w[f"{i}.{name}_b"]))
    x = torch.tensor(data[:, :-1].astype(np.int64))
    y = torch.tensor(data[:, 1:].astype(np.int64))
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    def step(_):
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCABULARY), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    seconds, loss = _timed(step, None, steps, warmup, lambda s: None)
    return {"examples_per_s": steps * len(data) / seconds, "ms_per_step": 1e3 * seconds / steps,
            "final_loss": float(loss), "torch_threads": torch.get_num_threads()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--naive-steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--only", default="naive,xla,captured,jax,torch",
                        help="comma-separated subset of naive, xla, captured, jax, torch")
    args = parser.parse_args()
    only = set(args.only.split(","))
    data = tokens(args.batch)
    results = {"batch": args.batch, "steps": args.steps}
    if "naive" in only:
        results["s4tf_naive"] = run_s4tf("naive", data, args.naive_steps, 1)
    if "xla" in only:
        results["s4tf_xla"] = run_s4tf("xla", data, args.steps, args.warmup)
    if "captured" in only:
        results["s4tf_captured"] = run_s4tf_captured(data, args.steps, args.warmup)
    if "jax" in only:
        results["jax"] = run_jax(data, args.steps, args.warmup)
    if "torch" in only:
        try:
            results["torch"] = run_torch(data, args.steps, args.warmup)
        except ImportError as error:
            results["torch"] = {"skipped": f"torch is not importable: {error}"}
    rate = {name: results[name]["examples_per_s"] for name in ("s4tf_naive", "s4tf_xla",
                                                              "s4tf_captured", "jax", "torch")
            if name in results and "examples_per_s" in results[name]}
    results["ratios"] = {f"{a}_vs_{b}": rate[a] / rate[b]
                         for a, b in (("s4tf_xla", "torch"), ("s4tf_xla", "jax"),
                                      ("s4tf_captured", "torch"), ("s4tf_captured", "jax"),
                                      ("s4tf_naive", "torch"))
                         if a in rate and b in rate}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
