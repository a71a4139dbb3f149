"""A small MLP's training gradient inside AD: s4tf naive vs PyTorch autograd.

The model is three 64-wide ``Dense`` layers (relu, tanh, linear) on one
float32 example of 64 features; one step is the mean squared error and its
gradient with respect to the whole model, ``s4tf.value_with_gradient(model,
of=loss)``, against ``torch.autograd.grad`` of the same loss with respect to
the same six parameters (PyTorch runs on one thread, as NumPy's small matmuls
do). At batch 1 the arithmetic is tiny, so the step measures the per-op cost
of tracing and of the backward pass.

Rounds alternate the two (s4tf, then PyTorch, then s4tf, ...) so both see the
same machine load; each round's ratio is PyTorch's time per step over s4tf's
(the ratio of throughputs, s4tf / PyTorch: higher is better, 1.0 is parity).
Time is this process's CPU time (``time.process_time``): both sides run on one
thread, and on a shared machine CPU time does not count the time another
process held the core, which wall-clock time does (``--clock wall`` for it).
Prints JSON; PyTorch missing gives ``"skipped"`` with the reason.

    python benchmarks/mlp_ad.py [--steps 300] [--rounds 7] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import s4tf
from s4tf import layers

WIDTH = 64


def _s4tf_step(model, x, y):
    def loss(m):
        d = m(x) - y
        return (d * d).mean()

    return lambda: s4tf.value_with_gradient(model, of=loss)


def _torch_step(torch, model, x, y):
    params = [p for dense in model.layers for p in (dense.weight, dense.bias)]
    w = [torch.tensor(np.array(p.numpy()), requires_grad=True) for p in params]
    tx, ty = torch.tensor(np.array(x.numpy())), torch.tensor(np.array(y.numpy()))

    def step():
        h = torch.relu(tx @ w[0] + w[1])
        h = torch.tanh(h @ w[2] + w[3])
        d = h @ w[4] + w[5] - ty
        loss = (d * d).mean()
        return loss, torch.autograd.grad(loss, w)

    return step


def _seconds_per_step(step, steps: int, clock) -> float:
    start = clock()
    for _ in range(steps):
        step()
    return (clock() - start) / steps


def run(steps: int, rounds: int, clock_name: str = "cpu") -> dict:
    clock = time.process_time if clock_name == "cpu" else time.perf_counter
    s4tf.random.seed(0)
    model = layers.Sequential(
        layers.Dense(WIDTH, WIDTH, activation=s4tf.relu),
        layers.Dense(WIDTH, WIDTH, activation=s4tf.tanh),
        layers.Dense(WIDTH, WIDTH),
    )
    rng = np.random.default_rng(0)
    x = s4tf.Tensor(rng.standard_normal((1, WIDTH)).astype(np.float32))
    y = s4tf.Tensor(rng.standard_normal((1, WIDTH)).astype(np.float32))
    s4tf_step = _s4tf_step(model, x, y)
    result = {"model": "Dense(64, 64, relu) -> Dense(64, 64, tanh) -> Dense(64, 64), MSE",
              "batch": 1, "dtype": "float32", "backend": "naive", "steps_per_round": steps,
              "clock": clock_name}
    try:
        import torch
    except ImportError as error:
        result["skipped"] = f"PyTorch is not installed ({error}); nothing to compare against"
        result["s4tf_us_per_step"] = _seconds_per_step(s4tf_step, steps, clock) * 1e6
        return result
    torch.set_num_threads(1)
    torch_step = _torch_step(torch, model, x, y)
    ours, theirs = s4tf_step(), torch_step()
    # Same numbers before timing anything: the two steps compute the same thing.
    np.testing.assert_allclose(float(ours[0]), float(theirs[0].detach()), rtol=1e-4)
    np.testing.assert_allclose(ours[1].layers[0].weight.numpy(), theirs[1][0].numpy(),
                               rtol=1e-3, atol=1e-5)
    for step in (s4tf_step, torch_step):  # warm up
        _seconds_per_step(step, max(steps // 10, 1), clock)
    s4tf_times, torch_times = [], []
    for _ in range(rounds):
        s4tf_times.append(_seconds_per_step(s4tf_step, steps, clock))
        torch_times.append(_seconds_per_step(torch_step, steps, clock))
    ratios = [t / s for s, t in zip(s4tf_times, torch_times, strict=True)]
    result.update({
        "torch": torch.__version__,
        "s4tf_us_per_step": [round(s * 1e6, 1) for s in s4tf_times],
        "torch_us_per_step": [round(t * 1e6, 1) for t in torch_times],
        "ratio_per_round": [round(r, 3) for r in ratios],
        "ratio_median": round(statistics.median(ratios), 3),
        "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
        "target": 1.0,
    })
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="steps per timing round")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds")
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                        help="process CPU time (default) or wall-clock time")
    args = parser.parse_args()
    print(json.dumps(run(args.steps, args.rounds, args.clock), indent=2))


if __name__ == "__main__":
    main()
