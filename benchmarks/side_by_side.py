"""Shared by the benchmarks that time s4tf and a peer in one process, taking turns.

Both sides of a comparison must use the same number of BLAS threads:
:func:`blas_threads` applies ``--threads N`` to ``OPENBLAS_NUM_THREADS``
*before* NumPy is imported (OpenBLAS reads it once, when it loads), so a script
calls it first, before its other imports. :func:`compare` then runs the sides'
step functions in turns, step by step, so both see the same background load on
a shared machine, and reports each run's median step times and their
throughput ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

__all__ = ["arguments", "blas_threads", "compare"]


def blas_threads(argv) -> str:
    """Set ``OPENBLAS_NUM_THREADS`` from ``--threads N`` in ``argv``; return the setting in force.

    Call it before NumPy is imported. Without ``--threads``, the environment's
    setting (or OpenBLAS's default, one thread per core) stays.
    """
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            os.environ["OPENBLAS_NUM_THREADS"] = argv[i + 1]
        elif arg.startswith("--threads="):
            os.environ["OPENBLAS_NUM_THREADS"] = arg.partition("=")[2]
    return os.environ.get("OPENBLAS_NUM_THREADS", "OpenBLAS default (one per core)")


def arguments(description: str, *, batch: int, steps: int, threads: str):
    """The command line shared by these benchmarks: batch, steps per run, runs, threads."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--batch", type=int, default=batch)
    parser.add_argument("--steps", type=int, default=steps, help="timed steps per side and run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", default=None, help=threads)
    return parser.parse_args()


def _medians(sides: dict, steps: int) -> dict:
    times = {name: [] for name in sides}
    for _ in range(steps):
        for name, step in sides.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def compare(mine, peer=None, *, steps: int, runs: int, warmup: int = 2) -> dict:
    """Runs of ``mine()`` and ``peer()`` taking turns; ratios of throughput, mine / peer.

    Each run times ``steps`` steps of each side; the result holds every run's
    median milliseconds per step and ratio (above 1: ``mine`` is faster), and
    ``ratio_range``, the smallest and largest ratio over the runs. Without a
    peer, ``mine`` runs alone and the runs hold its times only.
    """
    sides = {"mine": mine} if peer is None else {"mine": mine, "peer": peer}
    _medians(sides, warmup)
    results = []
    for _ in range(runs):
        medians = _medians(sides, steps)
        run = {"s4tf_ms_per_step": round(1e3 * medians["mine"], 2)}
        if peer is not None:
            run.update(peer_ms_per_step=round(1e3 * medians["peer"], 2),
                       ratio=round(medians["peer"] / medians["mine"], 3))
        results.append(run)
    if peer is None:
        return {"runs": results}
    ratios = [run["ratio"] for run in results]
    return {"runs": results, "ratio_range": [min(ratios), max(ratios)]}
