"""Time the gradient of ``sum(v[i] for i in idx)`` at n = 10**6 for growing k.

s4tf's indexing pullback adds each read's cotangent into one buffer (O(n + k));
the dense formulation materialises every read's cotangent as an n-vector
(O(n * k)), as a purely functional pullback would. Prints JSON; no asserts.

    python benchmarks/subscript_pullback.py [--n 1000000] [--ks 100 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import s4tf


def _dense_read(v, i: int):
    """``v[i]`` whose pullback returns ``zeros(n)`` with ``g`` at ``i`` (a dense cotangent)."""
    def vjp(t, i=i):
        def pullback(g):
            dense = np.zeros(t.shape, dtype=np.float32)
            dense[i] = float(g)
            return s4tf.Tensor(dense)

        return t[i], pullback

    return s4tf.differentiable(lambda t: t[i], vjp=vjp)(v)


def _time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(n: int, ks, repeats: int, dense_max_k: int) -> dict:
    rng = np.random.default_rng(0)
    v = s4tf.Tensor(rng.standard_normal(n).astype(np.float32))
    results = {"n": n, "repeats": repeats, "s4tf_seconds": {}, "dense_seconds": {},
               "dense_over_s4tf": {}}
    for k in ks:
        idx = [int(i) for i in rng.integers(0, n, k)]
        inout = lambda t, idx=idx: sum(t[i] for i in idx)
        results["s4tf_seconds"][k] = _time(lambda f=inout: s4tf.gradient(v, of=f).numpy(), repeats)
        if k <= dense_max_k:
            dense = lambda t, idx=idx: sum(_dense_read(t, i) for i in idx)
            results["dense_seconds"][k] = _time(lambda f=dense: s4tf.gradient(v, of=f).numpy(), 1)
            results["dense_over_s4tf"][k] = results["dense_seconds"][k] / results["s4tf_seconds"][k]
    # Per read: constant for s4tf (tracing cost only, independent of n); ~n for dense.
    results["s4tf_seconds_per_read"] = {k: t / k for k, t in results["s4tf_seconds"].items()}
    results["dense_seconds_per_read"] = {k: t / k for k, t in results["dense_seconds"].items()}
    ks_done = sorted(results["s4tf_seconds"])
    first, last = ks_done[0], ks_done[-1]
    results["s4tf_growth_first_to_last_k"] = results["s4tf_seconds"][last] / results["s4tf_seconds"][first]
    results["k_growth"] = last / first
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--ks", type=int, nargs="+", default=[10**2, 10**3, 10**4])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dense-max-k", type=int, default=10**4,
                        help="skip the dense formulation above this k (it is O(n * k))")
    args = parser.parse_args()
    print(json.dumps(run(args.n, args.ks, args.repeats, args.dense_max_k), indent=2))


if __name__ == "__main__":
    main()
