"""Time of one Adam update on the naive backend, in place, vs a hand-written NumPy reference.

The reference is the same arithmetic as ``optimizers.Adam``'s rule, written
with ``out=`` ufuncs over the same parameter, gradient and moment arrays, with
its scratch buffers allocated once outside the timed loop: what the update
would cost with no framework around it. ``model = opt.update(model, grads)``
runs on the sole owner of the model, so it writes in place (checked). Models:
the real ResNet-56 (CIFAR; ~0.86 M parameters in ~170 tensors), a 4-layer
1024-wide MLP (~4.2 M in 8 tensors) and one tensor of 4 M elements. The
rounds alternate s4tf and the reference and are timed in process CPU time (a
shared machine's other processes do not count); the ratio s4tf / reference
(lower is faster; target <= 1.2) is given as min, median and max over the
rounds. Prints JSON; no asserts.

    python benchmarks/adam_update.py [--rounds 7] [--seconds 0.5]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np

import s4tf
from s4tf import optimizers


class Dense(s4tf.Differentiable):
    weight: s4tf.Tensor
    bias: s4tf.Tensor


class Stack(s4tf.Differentiable):
    layers: list


class One(s4tf.Differentiable):
    weight: s4tf.Tensor


def models(rng) -> dict:
    def tensor(*shape):
        return s4tf.Tensor(rng.standard_normal(shape).astype(np.float32))

    return {
        "resnet56": lambda: s4tf.models.ResNet(depth=56, classes=10, stem="cifar"),
        "mlp_4x1024": lambda: Stack([Dense(tensor(1024, 1024), tensor(1024)) for _ in range(4)]),
        "one_tensor_4M": lambda: One(tensor(2048, 2048)),
    }


def random_gradients(model, rng):
    leaves, treedef = s4tf.tree_flatten(model, differentiable=True)
    return treedef.tangent_unflatten(
        [s4tf.Tensor(rng.standard_normal(leaf.shape).astype(np.float32) * 1e-2) for leaf in leaves])


def reference_adam(params, grads, firsts, seconds, scratches, step, lr=1e-3, beta1=0.9,
                   beta2=0.999, epsilon=1e-8):
    """S4TF's Adam on NumPy arrays, in place, with preallocated scratch buffers."""
    step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
    for p, g, m, v, s in zip(params, grads, firsts, seconds, scratches, strict=True):
        np.multiply(g, 1 - beta1, out=s)
        m *= beta1
        m += s
        np.multiply(g, g, out=s)
        s *= 1 - beta2
        v *= beta2
        v += s
        np.sqrt(v, out=s)
        s += epsilon
        np.divide(m, s, out=s)
        s *= step_size
        p -= s


def measure(build, rng, rounds: int, seconds: float) -> dict:
    model = build()
    grads = random_gradients(model, rng)
    opt = optimizers.Adam(model)
    model = opt.update(model, grads)  # warm-up: the moments exist now
    # Copies for the reference; ids, not references, for the in-place check (a
    # reference kept here would make the update copy).
    params = [np.array(leaf._data) for leaf in s4tf.tree_leaves(model, differentiable=True)]
    storage = [id(leaf._data) for leaf in s4tf.tree_leaves(model, differentiable=True)]
    grad_arrays = [g._data for g in s4tf.tree_leaves(grads, differentiable=True)]
    firsts = [np.zeros_like(p) for p in params]
    seconds_ = [np.zeros_like(p) for p in params]
    scratches = [np.empty_like(p) for p in params]
    reference_adam(params, grad_arrays, firsts, seconds_, scratches, 1)

    # Enough updates per round for `seconds` of s4tf time.
    start = time.process_time()
    model = opt.update(model, grads)
    count = max(1, round(seconds / (time.process_time() - start)))
    s4tf_times, reference_times = [], []
    step = 2
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(count):
            model = opt.update(model, grads)
        s4tf_times.append((time.process_time() - start) / count)
        start = time.process_time()
        for _ in range(count):
            step += 1
            reference_adam(params, grad_arrays, firsts, seconds_, scratches, step)
        reference_times.append((time.process_time() - start) / count)
    in_place = [id(leaf._data) for leaf in s4tf.tree_leaves(model, differentiable=True)] == storage
    ratios = sorted(s / r for s, r in zip(s4tf_times, reference_times, strict=True))
    return {
        "parameters": sum(p.size for p in params), "tensors": len(params),
        "updates_per_round": count, "in_place": in_place,
        "s4tf_us": round(1e6 * min(s4tf_times), 1),
        "reference_us": round(1e6 * min(reference_times), 1),
        "ratio_min": round(ratios[0], 3), "ratio_median": round(statistics.median(ratios), 3),
        "ratio_max": round(ratios[-1], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.5, help="s4tf time per round")
    parser.add_argument("--models", nargs="*", default=None)
    args = parser.parse_args()
    s4tf.set_backend("naive")
    rng = np.random.default_rng(0)
    builders = models(rng)
    results = {name: measure(build, rng, args.rounds, args.seconds)
               for name, build in builders.items() if args.models is None or name in args.models}
    results["target_ratio"] = 1.2
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
