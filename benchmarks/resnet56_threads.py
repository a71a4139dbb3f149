"""ResNet-56 step on naive: kernel threads (S4TF_THREADS) x OpenBLAS threads, next to PyTorch eager.

One process, interleaved (benchmarks/README.md: performance claims live here).
The naive convolutions run their im2col chunks on a thread pool of
``S4TF_THREADS`` threads (read at every call, so one process can switch it);
OpenBLAS's own threads are switched with its ``openblas_set_num_threads``
(through ctypes on the library NumPy bundles). While the pool has several
threads the package itself holds OpenBLAS at one thread inside every
convolution, so ``kernels2_blas1`` and ``kernels2_blas2`` differ only in the
other GEMMs. ``default`` is what a user gets who sets nothing: ``S4TF_THREADS``
unset, OpenBLAS at every core. Each round runs one step of every
combination, each followed by one PyTorch eager step at PyTorch's default
threads, so every side sees the same load. Prints JSON: the median
milliseconds per step of each combination and of PyTorch, and each
combination's throughput ratio s4tf / PyTorch (above 1: s4tf is faster).
Without PyTorch, or without a bundled OpenBLAS to switch, the script says so.

Run: ``python benchmarks/resnet56_threads.py [--batch 16] [--rounds 5]`` (and
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python ...`` for the machine's
own OpenBLAS kernels).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import resnet56_naive  # noqa: E402
import zoo_step  # noqa: E402

from s4tf.backends import blas_threads, kernel_pool  # noqa: E402


def _openblas_threads_setter():
    """NumPy's OpenBLAS ``set_num_threads`` (the package's own lookup), or ``None`` with the reason."""
    functions = blas_threads.openblas_functions()
    if functions is None:
        return None, "no OpenBLAS that NumPy calls could be found to switch threads on"
    return functions[1], None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    images, labels = zoo_step.random_batch(args.batch, resnet56_naive.SPEC["size"])
    mine = resnet56_naive.S4TFStep(images, labels)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    setter, why = _openblas_threads_setter()
    blas = [1, cores] if setter is not None else [None]
    configs = {f"kernels{k}_blas{b or 'default'}": (k, b) for b in blas for k in (1, cores)}
    configs["default"] = (None, cores if setter is not None else None)
    report = {"benchmark": "resnet56_naive_threads", "batch": args.batch, "rounds": args.rounds,
              "cpus": cores, "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
              "load": os.getloadavg()[0]}
    if why:
        report["blas_threads"] = why
    try:
        import torch
    except ImportError as error:
        torch, report["peer"] = None, f"skipped: PyTorch is not installed ({error})"
    peer = resnet56_naive.TorchStep(torch, images, labels) if torch else None
    if torch:
        report["peer"] = f"PyTorch {torch.__version__} eager, {torch.get_num_threads()} threads"

    def timed(step):
        start = time.perf_counter()
        step()
        return time.perf_counter() - start

    def ours(config):
        kernels, blas_threads = configs[config]
        if kernels is None:
            os.environ.pop(kernel_pool.THREADS_VARIABLE, None)
        else:
            os.environ[kernel_pool.THREADS_VARIABLE] = str(kernels)
        if blas_threads is not None:
            setter(ctypes.c_int(blas_threads))
        return timed(mine)

    times = {name: [] for name in configs}
    peer_times = []
    for config in configs:  # warm-up
        ours(config)
        if peer:
            timed(peer)
    for _ in range(args.rounds):
        for config in configs:
            times[config].append(ours(config))
            if peer:
                peer_times.append(timed(peer))
    medians = {name: statistics.median(values) for name, values in times.items()}
    report["ms_per_step"] = {name: round(1e3 * value, 1) for name, value in medians.items()}
    if peer:
        torch_median = statistics.median(peer_times)
        report["ms_per_step"]["torch"] = round(1e3 * torch_median, 1)
        report["ratio"] = {name: round(torch_median / value, 3) for name, value in medians.items()}
    report["load_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
