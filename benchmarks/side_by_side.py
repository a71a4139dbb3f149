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

import os
import statistics
import time

__all__ = ["blas_threads", "compare"]


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


def _medians(sides: dict, steps: int) -> dict:
    times = {name: [] for name in sides}
    for _ in range(steps):
        for name, step in sides.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def compare(mine, peer, *, steps: int, runs: int, warmup: int = 2) -> dict:
    """Runs of ``mine()`` and ``peer()`` taking turns; ratios of throughput, mine / peer.

    Each run times ``steps`` steps of each side; the result holds every run's
    median milliseconds per step and ratio (above 1: ``mine`` is faster), and
    ``ratio_range``, the smallest and largest ratio over the runs.
    """
    sides = {"mine": mine, "peer": peer}
    _medians(sides, warmup)
    results = []
    for _ in range(runs):
        medians = _medians(sides, steps)
        results.append({"s4tf_ms_per_step": round(1e3 * medians["mine"], 2),
                        "peer_ms_per_step": round(1e3 * medians["peer"], 2),
                        "ratio": round(medians["peer"] / medians["mine"], 3)})
    ratios = [run["ratio"] for run in results]
    return {"runs": results, "ratio_range": [min(ratios), max(ratios)]}
