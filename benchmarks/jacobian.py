"""The Jacobian of a 256 -> 256 MLP on naive: ``s4tf.jacobian`` vs row-by-row loops of pullbacks.

The network is ``Dense(256, 256, tanh) -> Dense(256, 256)`` on one float32
example of 256 features; the Jacobian is taken with respect to the input,
256 x 256. ``s4tf.jacobian`` (reverse mode) runs the network once and its
pullback once, vmapped over the 256 one-hot cotangents, so the backward pass
is a few 256 x 256 matrix products. Two loops a user without ``jacobian`` or
``vmap`` writes, one row per output element (the one-hot rows are made before
timing), rows stacked at the end:

- ``loop_one_pullback``: the network runs once and the same pullback is
  called 256 times (the strongest loop: only backward passes repeat);
- ``loop_of_pullbacks``: ``s4tf.pullback(x, of=model)(row)`` per row, a
  forward and a backward pass each.

Forward mode (``mode="forward"``, the differential vmapped over one-hot
tangents) is timed against the first loop too.

Rounds alternate the sides so both see the same machine load; each round's
ratio is the loop's time per Jacobian over ``jacobian``'s (higher is better;
the issue's target is >= 20). Time is this process's CPU time by default
(``--clock wall`` for wall-clock): with one BLAS thread (``--threads 1``, the
default here) CPU time is the work done, and on a shared machine it does not
count the time another process held the core. Prints JSON; no asserts on
time (the Jacobians are checked equal first).

    python benchmarks/jacobian.py [--steps 20] [--rounds 5] [--threads 1] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from side_by_side import blas_threads

if not any(arg.startswith("--threads") for arg in sys.argv):
    sys.argv += ["--threads", "1"]
THREADS = blas_threads(sys.argv)

import numpy as np  # noqa: E402  (after the BLAS thread setting)

import s4tf  # noqa: E402
from s4tf import layers  # noqa: E402

WIDTH = 256


def _network():
    s4tf.random.seed(0)
    return layers.Sequential(
        layers.Dense(WIDTH, WIDTH, activation=s4tf.tanh),
        layers.Dense(WIDTH, WIDTH),
    )


def _loop_one_pullback(model, x, rows):
    """One forward pass, then its pullback called once per output element."""
    _, pb = s4tf.value_with_pullback(x, of=model)
    return s4tf.stack([pb(row) for row in rows])


def _loop_of_pullbacks(model, x, rows):
    """A fresh pullback (forward and backward pass) per output element."""
    return s4tf.stack([s4tf.pullback(x, of=model)(row) for row in rows])


def _seconds(fn, steps, clock):
    start = clock()
    for _ in range(steps):
        fn()
    return (clock() - start) / steps


def _rounds(mine, loop, steps, rounds, clock):
    """Alternating rounds: milliseconds per Jacobian on each side and the ratios loop / mine."""
    for fn in (mine, loop):  # warm up
        _seconds(fn, 2, clock)
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(_seconds(mine, steps, clock))
        theirs.append(_seconds(loop, steps, clock))
    ratios = [t / o for o, t in zip(ours, theirs, strict=True)]
    return {
        "jacobian_ms": [round(o * 1e3, 3) for o in ours],
        "loop_ms": [round(t * 1e3, 3) for t in theirs],
        "ratio_median": round(statistics.median(ratios), 2),
        "ratio_range": [round(min(ratios), 2), round(max(ratios), 2)],
    }


def run(steps: int, rounds: int, clock_name: str) -> dict:
    clock = time.process_time if clock_name == "cpu" else time.perf_counter
    model = _network()
    rng = np.random.default_rng(0)
    x = s4tf.Tensor(rng.standard_normal(WIDTH).astype(np.float32))
    rows = [s4tf.Tensor(row) for row in np.eye(WIDTH, dtype=np.float32)]
    loop = _loop_one_pullback(model, x, rows).numpy()
    # The same matrix four ways before anything is timed.
    np.testing.assert_allclose(_loop_of_pullbacks(model, x, rows).numpy(), loop)
    np.testing.assert_allclose(s4tf.jacobian(x, of=model).numpy(), loop, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s4tf.jacobian(x, of=model, mode="forward").numpy(), loop,
                               rtol=1e-4, atol=1e-5)

    def reverse():
        return s4tf.jacobian(x, of=model).numpy()

    def forward():
        return s4tf.jacobian(x, of=model, mode="forward").numpy()

    def one_pullback():
        return _loop_one_pullback(model, x, rows).numpy()

    def pullbacks():
        return _loop_of_pullbacks(model, x, rows).numpy()

    return {
        "network": f"Dense({WIDTH}, {WIDTH}, tanh) -> Dense({WIDTH}, {WIDTH}), one example",
        "jacobian_shape": [WIDTH, WIDTH], "dtype": "float32", "backend": "naive",
        "blas_threads": THREADS, "clock": clock_name, "steps_per_round": steps,
        "target_ratio": 20,
        "reverse_vs_loop_one_pullback": _rounds(reverse, one_pullback, steps, rounds, clock),
        "reverse_vs_loop_of_pullbacks": _rounds(reverse, pullbacks, steps, rounds, clock),
        "forward_vs_loop_one_pullback": _rounds(forward, one_pullback, steps, rounds, clock),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="Jacobians per side and round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--threads", default="1", help="BLAS threads for both sides (default 1)")
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                        help="process CPU time (default) or wall-clock time")
    args = parser.parse_args()
    print(json.dumps(run(args.steps, args.rounds, args.clock), indent=2))


if __name__ == "__main__":
    main()
