"""Training-step throughput of zoo models: s4tf naive and xla next to PyTorch eager and Equinox.

One run, side by side, as JSON (benchmarks/README.md: performance claims live here,
never as timing assertions in tests). Each framework trains the same
architecture on the same random batch with SGD + momentum 0.9, float32, in
training mode (BatchNorm batch statistics):

* ``resnet20`` / ``resnet56``: the CIFAR ResNets of He et al. 2016 (s4tf
  ``models.ResNet(depth=..., classes=10, stem="cifar")``), batch 64 at 32x32;
* ``mobilenet_v2_0.5``: ``models.MobileNetV2(width_multiplier=0.5, classes=10)``
  at 64x64, batch 64 (PyTorch: ``torchvision.models.mobilenet_v2``).

Peers run when importable: ``torch`` (CPU eager; torchvision for MobileNetV2),
``equinox`` (the same networks written below, one ``jax.jit`` step with
donation) and ``jax`` (the ResNets as plain JAX functions, NHWC like s4tf, one
``jax.jit`` step with donation: what the lazy backend's compiled step is
measured against). The JSON holds examples/s per framework and the ratios of s4tf to
each peer (higher is faster for s4tf).

Usage: ``python benchmarks/zoo_step.py [--models resnet20,resnet56,mobilenet_v2_0.5]
[--frameworks s4tf_naive,s4tf_xla,torch,equinox,jax] [--steps 5] [--warmup 2] [--batch 64]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import s4tf

LEARNING_RATE, MOMENTUM = 0.01, 0.9
MODELS = {
    "resnet20": {"kind": "resnet", "depth": 20, "size": 32},
    "resnet56": {"kind": "resnet", "depth": 56, "size": 32},
    "mobilenet_v2_0.5": {"kind": "mobilenet_v2", "width": 0.5, "size": 64},
}


def random_batch(batch: int, size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(size=(batch, size, size, 3)).astype(np.float32),
            rng.integers(0, 10, size=batch).astype(np.int32))


def _per_second(seconds: float, steps: int, batch: int) -> dict:
    return {"examples_per_s": round(steps * batch / seconds, 2),
            "ms_per_step": round(1e3 * seconds / steps, 2)}


# --- s4tf -----------------------------------------------------------------------------------

def s4tf_model(spec: dict):
    if spec["kind"] == "resnet":
        return s4tf.models.ResNet(depth=spec["depth"], classes=10, stem="cifar")
    return s4tf.models.MobileNetV2(width_multiplier=spec["width"], classes=10)


def run_s4tf(backend: str, spec: dict, images, labels, steps: int, warmup: int) -> dict:
    with s4tf.backend(backend):
        s4tf.random.seed(0)
        model = s4tf_model(spec)
        x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
        opt = s4tf.optimizers.SGD(model, learning_rate=LEARNING_RATE, momentum=MOMENTUM)
        if backend == "xla":
            s4tf.xla.reset_metrics()
        loss, start, first = None, time.perf_counter(), None
        with s4tf.training():
            for i in range(warmup + steps):
                if i == warmup:
                    float(loss)
                    first = time.perf_counter() - start
                    start = time.perf_counter()
                loss, grads = s4tf.value_with_gradient(
                    model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=y))
                model = opt.update(model, grads)
                del grads
                s4tf.barrier()
            final = float(loss)
        result = _per_second(time.perf_counter() - start, steps, len(images))
        result.update(first_steps_s=round(first, 2), final_loss=round(final, 4))
        if backend == "xla":
            metrics = s4tf.xla.metrics()
            result["compiles"], result["executions"] = metrics["compiles"], metrics["executions"]
        return result


# --- PyTorch eager --------------------------------------------------------------------------

def torch_model(spec: dict):
    import torch
    from torch import nn

    if spec["kind"] == "mobilenet_v2":
        torch.library.register_fake = lambda *a, **k: (lambda f: f)  # see benchmarks/README.md
        import torchvision
        return torchvision.models.mobilenet_v2(width_mult=spec["width"], num_classes=10)

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))

    n = (spec["depth"] - 2) // 6
    layers, cin = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()], 16
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        for i in range(n):
            layers.append(Block(cin, cout, stride if i == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def run_torch(spec: dict, images, labels, steps: int, warmup: int) -> dict:
    import torch

    torch.manual_seed(0)
    model = torch_model(spec).train()
    opt = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
    x = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()
    y = torch.from_numpy(labels).long()
    loss, start, first = None, time.perf_counter(), None
    for i in range(warmup + steps):
        if i == warmup:
            first, start = time.perf_counter() - start, time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    result = _per_second(time.perf_counter() - start, steps, len(images))
    result.update(first_steps_s=round(first, 2), final_loss=round(float(loss), 4),
                  threads=torch.get_num_threads())
    return result


# --- plain JAX ------------------------------------------------------------------------------

def jax_resnet(spec: dict, seed: int = 0):
    """The CIFAR ResNet as plain JAX functions over dicts of arrays (NHWC, HWIO), float32.

    The same computation s4tf's ``models.ResNet(stem="cifar")`` records: bias-free
    3x3 convolutions padded by 1 on both sides (1x1 projections unpadded),
    BatchNorm over the batch with epsilon 1e-5 and running statistics kept at
    0.9 per step, ReLU, global average pooling and a dense classifier.
    Returns ``(forward, params, state)``; ``forward(params, state, x)`` returns
    the logits and the new running statistics.
    """
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(seed)

    def conv_params(size, cin, cout):
        scale = np.sqrt(2.0 / (size * size * cin))
        return jnp.asarray((rng.normal(size=(size, size, cin, cout)) * scale).astype(np.float32))

    def norm_params(c):
        return ({"scale": jnp.ones(c, jnp.float32), "offset": jnp.zeros(c, jnp.float32)},
                {"mean": jnp.zeros(c, jnp.float32), "variance": jnp.ones(c, jnp.float32)})

    def conv(x, w, stride):
        pad = w.shape[0] // 2
        return lax.conv_general_dilated(x, w, (stride, stride), ((pad, pad), (pad, pad)),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        precision=lax.Precision.HIGHEST)

    def batch_norm(x, p, s):
        mean = x.mean(axis=(0, 1, 2))
        centered = x - mean
        variance = (centered * centered).mean(axis=(0, 1, 2))
        new = {"mean": s["mean"] * 0.9 + mean * 0.1,
               "variance": s["variance"] * 0.9 + variance * 0.1}
        return centered * lax.rsqrt(variance + 1e-5) * p["scale"] + p["offset"], new

    n = (spec["depth"] - 2) // 6
    params, state, strides = {"stem": {"w": conv_params(3, 3, 16)}}, {}, {}
    params["stem"]["bn"], state["stem"] = norm_params(16)
    cin, names = 16, []
    for stage, cout in enumerate((16, 32, 64)):
        for i in range(n):
            name, stride = f"block{stage}_{i}", 2 if stage > 0 and i == 0 else 1
            block, block_state = {"w1": conv_params(3, cin, cout), "w2": conv_params(3, cout, cout)}, {}
            block["bn1"], block_state["bn1"] = norm_params(cout)
            block["bn2"], block_state["bn2"] = norm_params(cout)
            if stride != 1 or cin != cout:
                block["wp"] = conv_params(1, cin, cout)
                block["bnp"], block_state["bnp"] = norm_params(cout)
            params[name], state[name], strides[name] = block, block_state, stride
            names.append(name)
            cin = cout
    params["fc"] = {"w": jnp.asarray((rng.normal(size=(64, 10)) / 8).astype(np.float32)),
                    "b": jnp.zeros(10, jnp.float32)}

    def forward(params, state, x):
        new_state = {"stem": {}}
        x, new_state["stem"] = batch_norm(conv(x, params["stem"]["w"], 1), params["stem"]["bn"],
                                          state["stem"])
        x = jax.nn.relu(x)
        for name in names:
            p, s, stride, new = params[name], state[name], strides[name], {}
            y, new["bn1"] = batch_norm(conv(x, p["w1"], stride), p["bn1"], s["bn1"])
            y, new["bn2"] = batch_norm(conv(jax.nn.relu(y), p["w2"], 1), p["bn2"], s["bn2"])
            if "wp" in p:
                x, new["bnp"] = batch_norm(conv(x, p["wp"], stride), p["bnp"], s["bnp"])
            x = jax.nn.relu(x + y)
            new_state[name] = new
        logits = x.mean(axis=(1, 2)) @ params["fc"]["w"] + params["fc"]["b"]
        return logits, new_state

    return forward, params, state


def momentum_step(loss_fn):
    """``step(params, velocity, state) -> (params, velocity, state, loss)``: SGD with momentum.

    ``loss_fn(params, state)`` returns the loss and the new BatchNorm state.
    """
    import jax

    def step(params, velocity, state):
        (loss, state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, state)
        velocity = jax.tree_util.tree_map(lambda v, g: MOMENTUM * v - LEARNING_RATE * g,
                                          velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p + v, params, velocity)
        return params, velocity, state, loss

    return step


def jax_training_step(spec: dict, images, labels):
    """The plain-JAX twin's step, jitted with every buffer donated, and its first arguments.

    ``step(params, velocity, state)`` returns them updated and the loss.
    """
    import jax
    import jax.numpy as jnp

    forward, params, state = jax_resnet(spec)
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    x, y = jnp.asarray(images), jnp.asarray(labels)

    def loss_fn(params, state):
        logits, state = forward(params, state, x)
        losses = -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)
        return losses.mean(), state

    return jax.jit(momentum_step(loss_fn), donate_argnums=(0, 1, 2)), (params, velocity, state)


def timed_steps(step, arguments: tuple, batch: int, steps: int, warmup: int) -> dict:
    """Run ``*arguments, loss = step(*arguments)`` for warm-up and timed steps: the JSON row."""
    loss, start, first = None, time.perf_counter(), None
    for i in range(warmup + steps):
        if i == warmup:
            float(loss)
            first, start = time.perf_counter() - start, time.perf_counter()
        *arguments, loss = step(*arguments)
    final = float(loss)
    result = _per_second(time.perf_counter() - start, steps, batch)
    result.update(first_steps_s=round(first, 2), final_loss=round(final, 4))
    return result


def run_jax(spec: dict, images, labels, steps: int, warmup: int) -> dict:
    """The plain-JAX twin of the CIFAR ResNets: one ``jax.jit`` step, every buffer donated."""
    step, arguments = jax_training_step(spec, images, labels)
    return timed_steps(step, arguments, len(images), steps, warmup)


# --- Equinox --------------------------------------------------------------------------------

def equinox_model(spec: dict, key):
    """The same networks in Equinox (channel-first per example; BatchNorm over the vmapped batch)."""
    import equinox as eqx
    import jax

    def conv_bn(key, cin, cout, kernel, stride, groups=1):
        return (eqx.nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups,
                              use_bias=False, key=key),
                eqx.nn.BatchNorm(cout, axis_name="batch", momentum=0.9, mode="batch"))

    class ConvBN(eqx.Module):
        conv: eqx.nn.Conv2d
        norm: eqx.nn.BatchNorm
        activation: str = eqx.field(static=True)

        def __init__(self, key, cin, cout, kernel, stride, groups=1, activation="relu"):
            self.conv, self.norm = conv_bn(key, cin, cout, kernel, stride, groups)
            self.activation = activation

        def __call__(self, x, state):
            x, state = self.norm(self.conv(x), state)
            if self.activation == "relu":
                x = jax.nn.relu(x)
            elif self.activation == "relu6":
                x = jax.nn.relu6(x)
            return x, state

    class Residual(eqx.Module):
        first: ConvBN
        second: ConvBN
        shortcut: ConvBN | None

        def __init__(self, key, cin, cout, stride):
            k1, k2, k3 = jax.random.split(key, 3)
            self.first = ConvBN(k1, cin, cout, 3, stride)
            self.second = ConvBN(k2, cout, cout, 3, 1, activation="none")
            self.shortcut = (ConvBN(k3, cin, cout, 1, stride, activation="none")
                             if stride != 1 or cin != cout else None)

        def __call__(self, x, state):
            y, state = self.first(x, state)
            y, state = self.second(y, state)
            if self.shortcut is not None:
                x, state = self.shortcut(x, state)
            return jax.nn.relu(x + y), state

    class InvertedResidual(eqx.Module):
        layers: list
        use_residual: bool = eqx.field(static=True)

        def __init__(self, key, cin, cout, stride, expansion):
            keys = jax.random.split(key, 3)
            hidden = cin * expansion
            self.layers = ([ConvBN(keys[0], cin, hidden, 1, 1, activation="relu6")]
                           if expansion != 1 else [])
            self.layers += [ConvBN(keys[1], hidden, hidden, 3, stride, groups=hidden,
                                   activation="relu6"),
                            ConvBN(keys[2], hidden, cout, 1, 1, activation="none")]
            self.use_residual = stride == 1 and cin == cout

        def __call__(self, x, state):
            y = x
            for layer in self.layers:
                y, state = layer(y, state)
            return (x + y if self.use_residual else y), state

    class Network(eqx.Module):
        blocks: list
        head: eqx.nn.Linear

        def __call__(self, x, state):
            for block in self.blocks:
                x, state = block(x, state)
            return self.head(x.mean(axis=(1, 2))), state

    keys = iter(jax.random.split(key, 64))
    if spec["kind"] == "resnet":
        n = (spec["depth"] - 2) // 6
        blocks, cin = [ConvBN(next(keys), 3, 16, 3, 1)], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(n):
                blocks.append(Residual(next(keys), cin, cout, stride if i == 0 else 1))
                cin = cout
        return Network(blocks, eqx.nn.Linear(64, 10, key=next(keys)))

    def divisible(v, divisor=8):
        rounded = max(divisor, int(v + divisor / 2) // divisor * divisor)
        return rounded + divisor if rounded < 0.9 * v else rounded

    width = spec["width"]
    cin = divisible(32 * width)
    blocks = [ConvBN(next(keys), 3, cin, 3, 2, activation="relu6")]
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        cout = divisible(c * width)
        for i in range(n):
            blocks.append(InvertedResidual(next(keys), cin, cout, s if i == 0 else 1, t))
            cin = cout
    last = divisible(1280 * max(1.0, width))
    blocks.append(ConvBN(next(keys), cin, last, 1, 1, activation="relu6"))
    return Network(blocks, eqx.nn.Linear(last, 10, key=next(keys)))


def equinox_model_and_state(spec: dict):
    """The Equinox network and its BatchNorm state, in float32.

    s4tf's xla backend switches JAX to 64-bit mode, in which Equinox would
    initialise float64 weights; the comparison is float32 on every side.
    """
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    pair = eqx.nn.make_with_state(equinox_model)(spec, jax.random.PRNGKey(0))
    return jax.tree_util.tree_map(
        lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, pair)


def run_equinox(spec: dict, images, labels, steps: int, warmup: int) -> dict:
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    model, state = equinox_model_and_state(spec)
    params, static = eqx.partition(model, eqx.is_inexact_array)
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    x = jnp.asarray(images).transpose(0, 3, 1, 2)
    y = jnp.asarray(labels)

    def loss_fn(params, state):
        batched = jax.vmap(eqx.combine(params, static), axis_name="batch",
                           in_axes=(0, None), out_axes=(0, None))
        logits, state = batched(x, state)
        losses = -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)
        return losses.mean(), state

    step = eqx.filter_jit(momentum_step(loss_fn), donate="all")
    return timed_steps(step, (params, velocity, state), len(images), steps, warmup)


RUNNERS = {
    "s4tf_naive": lambda *a: run_s4tf("naive", *a),
    "s4tf_xla": lambda *a: run_s4tf("xla", *a),
    "torch": run_torch,
    "equinox": run_equinox,
    "jax": run_jax,
}


def available(framework: str, model: str) -> str | None:
    """None when the framework can run, else why not."""
    module = {"torch": "torch", "equinox": "equinox", "s4tf_xla": "jax", "jax": "jax"}.get(framework)
    if framework == "jax" and MODELS[model]["kind"] != "resnet":
        return "the plain-JAX twin is written for the CIFAR ResNets only"
    if module is None:
        return None
    try:
        __import__(module)
    except ImportError as error:
        return f"not installed ({error})"
    return None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--frameworks", default=",".join(RUNNERS))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    arguments = parser.parse_args(argv)
    report = {"batch": arguments.batch, "steps": arguments.steps, "results": {}}
    for name in arguments.models.split(","):
        spec = MODELS[name]
        images, labels = random_batch(arguments.batch, spec["size"])
        results = {}
        for framework in arguments.frameworks.split(","):
            reason = available(framework, name)
            results[framework] = ({"skipped": reason} if reason else
                                  RUNNERS[framework](spec, images, labels, arguments.steps,
                                                     arguments.warmup))
        ratios = {}
        for mine in ("s4tf_naive", "s4tf_xla"):
            for peer in ("torch", "equinox", "jax"):
                a, b = results.get(mine, {}), results.get(peer, {})
                if "examples_per_s" in a and "examples_per_s" in b:
                    ratios[f"{mine}/{peer}"] = round(a["examples_per_s"] / b["examples_per_s"], 3)
        results["ratios"] = ratios
        report["results"][name] = results
        print(json.dumps({name: results}), flush=True)
    return report


if __name__ == "__main__":
    main()
