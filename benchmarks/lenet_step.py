"""LeNet-5 training steps at batch 128 with SGD and Adam: s4tf naive/xla, plain JAX, PyTorch.

One run, side by side, as JSON (benchmarks/README.md: performance claims live here,
never as timing assertions in tests). The same LeNet-5 (the paper's Figure 6:
conv 5x5x6 "same" + ReLU, avg-pool 2, conv 5x5x16 + ReLU, avg-pool 2, dense
400-120-84-10) with softmax cross-entropy and plain SGD, float32, NHWC:

* ``s4tf_naive``: the eager NumPy backend;
* ``s4tf_xla``: the lazy tensor, ``s4tf.barrier()`` after each update, plus the
  Python time per step spent tracing (recording ops) and hashing the graph;
* ``jax``: a hand-written ``jax.jit`` step with donated parameters (the XLA
  limit on this machine);
* ``torch``: PyTorch eager, when ``torch`` is importable.

Those update with ``model.moved(along=grads * -LR)``. The ``*_opt_sgd`` and
``*_opt_adam`` variants train through ``optimizers.SGD`` / ``optimizers.Adam``
and ``model = opt.update(model, grads)`` (on xla the update joins the step's
graph), next to ``jax_adam``, a hand-written jitted Adam with S4TF's rule.

Usage: ``python benchmarks/lenet_step.py [--steps 30] [--batch 128]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import s4tf

LR = 0.05
ADAM_LR = 1e-3


class LeNet(s4tf.Differentiable):
    conv1: s4tf.Tensor
    bias1: s4tf.Tensor
    conv2: s4tf.Tensor
    bias2: s4tf.Tensor
    fc1: s4tf.Tensor
    b3: s4tf.Tensor
    fc2: s4tf.Tensor
    b4: s4tf.Tensor
    fc3: s4tf.Tensor
    b5: s4tf.Tensor

    def __call__(self, x):
        relu = lambda t: s4tf.maximum(t, 0.0)  # noqa: E731
        x = relu(s4tf.nn.conv2d(x, self.conv1, padding="same") + self.bias1)
        x = s4tf.nn.avg_pool2d(x, pool_size=2, strides=2)
        x = relu(s4tf.nn.conv2d(x, self.conv2, padding="valid") + self.bias2)
        x = s4tf.nn.avg_pool2d(x, pool_size=2, strides=2)
        x = x.reshape(x.shape[0], -1)
        x = relu(x @ self.fc1 + self.b3)
        x = relu(x @ self.fc2 + self.b4)
        return x @ self.fc3 + self.b5


SHAPES = {
    "conv1": (5, 5, 1, 6), "bias1": (6,), "conv2": (5, 5, 6, 16), "bias2": (16,),
    "fc1": (400, 120), "b3": (120,), "fc2": (120, 84), "b4": (84,), "fc3": (84, 10), "b5": (10,),
}


def initial_weights(seed=0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in SHAPES.items():
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        scale = np.sqrt(2.0 / fan_in) if len(shape) > 1 else 0.0
        out[name] = (rng.normal(size=shape) * scale).astype(np.float32)
    return out


def batch(n, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.uniform(size=(n, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, size=n)
    return images, np.eye(10, dtype=np.float32)[labels]


def _timed(step, state, steps, warmup, finish):
    for _ in range(warmup):
        state = step(state)
    finish(state)
    start = time.perf_counter()
    for _ in range(steps):
        state = step(state)
    finish(state)
    return time.perf_counter() - start, state


def run_s4tf(backend, images, labels, steps, warmup, optimizer=None):
    """``optimizer``: None (``moved(along=)``), ``"sgd"`` or ``"adam"`` (``opt.update``)."""
    with s4tf.backend(backend):
        model = LeNet(**{k: s4tf.Tensor(v) for k, v in initial_weights().items()})
        x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
    opt = None
    if optimizer == "sgd":
        opt = s4tf.optimizers.SGD(model, learning_rate=LR)
    elif optimizer == "adam":
        opt = s4tf.optimizers.Adam(model, learning_rate=ADAM_LR)

    def loss_fn(m):
        return -(s4tf.log_softmax(m(x)) * y).sum(axis=1).mean()

    traced, loss, start = 0.0, None, time.perf_counter()
    if backend == "xla":
        s4tf.xla.reset_metrics()
    # The loop keeps no reference to the old model or the gradients at the barrier
    # (the usual `model = update(model, grads)`), so the lazy backend can donate
    # the old parameters' buffers to XLA.
    for i in range(warmup + steps):
        if i == warmup:
            float(loss)
            start = time.perf_counter()
        begin = time.perf_counter()
        loss, grads = s4tf.value_with_gradient(model, of=loss_fn)
        if opt is None:
            model = model.moved(along=grads * -LR)
        else:
            model = opt.update(model, grads)
        del grads
        traced += time.perf_counter() - begin
        s4tf.barrier()
    float(loss)
    seconds = time.perf_counter() - start
    result = {"examples_per_s": steps * len(images) / seconds, "ms_per_step": 1e3 * seconds / steps,
              "final_loss": float(loss)}
    if backend == "xla":
        m = s4tf.xla.metrics()
        total = steps + warmup
        result["python_trace_ms_per_step"] = 1e3 * traced / total
        result["graph_hash_ms_per_step"] = 1e3 * m["graph_time"] / total
        result["metrics"] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items()}
    return result


def jax_forward(p, x):
    """LeNet-5 in plain JAX over the parameters of SHAPES (NHWC, full float32 precision)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    highest = lax.Precision.HIGHEST
    dims = ("NHWC", "HWIO", "NHWC")

    x = jax.nn.relu(lax.conv_general_dilated(x, p["conv1"], (1, 1), "SAME", dimension_numbers=dims,
                                             precision=highest) + p["bias1"])
    x = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
    x = jax.nn.relu(lax.conv_general_dilated(x, p["conv2"], (1, 1), "VALID", dimension_numbers=dims,
                                             precision=highest) + p["bias2"])
    x = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
    x = x.reshape(x.shape[0], -1)
    x = jax.nn.relu(jnp.dot(x, p["fc1"], precision=highest) + p["b3"])
    x = jax.nn.relu(jnp.dot(x, p["fc2"], precision=highest) + p["b4"])
    return jnp.dot(x, p["fc3"], precision=highest) + p["b5"]


def run_jax(images, labels, steps, warmup, adam=False):
    import jax
    import jax.numpy as jnp

    forward = jax_forward

    def loss_fn(p, x, y):
        return -(jax.nn.log_softmax(forward(p, x)) * y).sum(axis=1).mean()

    @jax.jit
    def _step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - LR * b, p, g), loss

    def _adam_step(state, t, x, y):
        # S4TF's Adam: epsilon outside the bias correction; t is traced (no recompiles).
        p, m, v = state
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        b1, b2, eps = 0.9, 0.999, 1e-8
        m = jax.tree_util.tree_map(lambda a, b: b1 * a + (1 - b1) * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: b2 * a + (1 - b2) * b * b, v, g)
        size = ADAM_LR * jnp.sqrt(1 - b2**t) / (1 - b1**t)
        p = jax.tree_util.tree_map(lambda a, mi, vi: a - size * mi / (jnp.sqrt(vi) + eps), p, m, v)
        return (p, m, v), loss

    params = {k: jnp.asarray(v) for k, v in initial_weights().items()}
    x, y = jnp.asarray(images), jnp.asarray(labels)
    if adam:
        adam_fn = jax.jit(_adam_step, donate_argnums=0)
        first, second = ({k: jnp.zeros_like(v) for k, v in params.items()} for _ in range(2))
        state = ((params, first, second), None, 0)

        def step(s):
            (new_state, loss), t = adam_fn(s[0], jnp.float32(s[2] + 1), x, y), s[2] + 1
            return new_state, loss, t

        seconds, (_, loss, _) = _timed(step, state, steps, warmup, lambda s: float(s[1]))
    else:
        step_fn = jax.jit(_step, donate_argnums=0)
        seconds, (params, loss) = _timed(lambda s: step_fn(s[0], x, y), (params, None), steps,
                                         warmup, lambda s: float(s[1]))
    return {"examples_per_s": steps * len(images) / seconds, "ms_per_step": 1e3 * seconds / steps,
            "final_loss": float(loss)}


def run_torch(images, labels, steps, warmup):
    import torch

    torch.manual_seed(0)
    w = initial_weights()
    # NHWC/HWIO -> NCHW/OIHW; fc1 rows reordered from (h, w, c) to torch's (c, h, w) flatten.
    p = {
        "conv1": torch.tensor(w["conv1"].transpose(3, 2, 0, 1)), "bias1": torch.tensor(w["bias1"]),
        "conv2": torch.tensor(w["conv2"].transpose(3, 2, 0, 1)), "bias2": torch.tensor(w["bias2"]),
        "fc1": torch.tensor(w["fc1"].reshape(5, 5, 16, 120).transpose(2, 0, 1, 3).reshape(400, 120)),
        "b3": torch.tensor(w["b3"]), "fc2": torch.tensor(w["fc2"]), "b4": torch.tensor(w["b4"]),
        "fc3": torch.tensor(w["fc3"]), "b5": torch.tensor(w["b5"]),
    }
    for t in p.values():
        t.requires_grad_(True)
    x = torch.tensor(images.transpose(0, 3, 1, 2).copy())
    y = torch.tensor(labels)
    F = torch.nn.functional
    opt = torch.optim.SGD(list(p.values()), lr=LR)

    def step(_):
        h = F.avg_pool2d(F.relu(F.conv2d(x, p["conv1"], p["bias1"], padding=2)), 2)
        h = F.avg_pool2d(F.relu(F.conv2d(h, p["conv2"], p["bias2"])), 2).flatten(1)
        h = F.relu(h @ p["fc1"] + p["b3"])
        h = F.relu(h @ p["fc2"] + p["b4"])
        loss = -(F.log_softmax(h @ p["fc3"] + p["b5"], dim=1) * y).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    seconds, loss = _timed(step, None, steps, warmup, lambda s: None)
    return {"examples_per_s": steps * len(images) / seconds, "ms_per_step": 1e3 * seconds / steps,
            "final_loss": float(loss), "torch_threads": torch.get_num_threads()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--naive-steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()
    images, labels = batch(args.batch)
    results = {"batch": args.batch, "steps": args.steps}
    results["s4tf_naive"] = run_s4tf("naive", images, labels, args.naive_steps, 1)
    results["s4tf_xla"] = run_s4tf("xla", images, labels, args.steps, args.warmup)
    results["jax"] = run_jax(images, labels, args.steps, args.warmup)
    for name in ("sgd", "adam"):
        results[f"s4tf_naive_opt_{name}"] = run_s4tf("naive", images, labels, args.naive_steps, 1,
                                                     optimizer=name)
        results[f"s4tf_xla_opt_{name}"] = run_s4tf("xla", images, labels, args.steps, args.warmup,
                                                   optimizer=name)
    results["jax_adam"] = run_jax(images, labels, args.steps, args.warmup, adam=True)
    try:
        results["torch"] = run_torch(images, labels, args.steps, args.warmup)
    except ImportError:
        results["torch"] = None
    jax_rate = results["jax"]["examples_per_s"]
    jax_adam_rate = results["jax_adam"]["examples_per_s"]
    results["ratios"] = {
        "s4tf_xla_vs_jax": results["s4tf_xla"]["examples_per_s"] / jax_rate,
        "s4tf_naive_vs_jax": results["s4tf_naive"]["examples_per_s"] / jax_rate,
        "s4tf_xla_opt_sgd_vs_jax": results["s4tf_xla_opt_sgd"]["examples_per_s"] / jax_rate,
        "s4tf_naive_opt_sgd_vs_jax": results["s4tf_naive_opt_sgd"]["examples_per_s"] / jax_rate,
        "s4tf_xla_opt_adam_vs_jax_adam": (
            results["s4tf_xla_opt_adam"]["examples_per_s"] / jax_adam_rate),
        "s4tf_naive_opt_adam_vs_jax_adam": (
            results["s4tf_naive_opt_adam"]["examples_per_s"] / jax_adam_rate),
        "s4tf_xla_opt_sgd_vs_s4tf_xla_moved": (
            results["s4tf_xla_opt_sgd"]["examples_per_s"] / results["s4tf_xla"]["examples_per_s"]),
    }
    if results["torch"]:
        results["ratios"]["s4tf_xla_vs_torch"] = (
            results["s4tf_xla"]["examples_per_s"] / results["torch"]["examples_per_s"])
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
