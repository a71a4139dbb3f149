"""conv2d forward and forward+backward time: s4tf naive next to PyTorch CPU.

Shapes are LeNet-5's two convolutions and ResNet-56's three stages, batch 128,
float32, NHWC for s4tf. PyTorch (when importable) runs the same convolution
twice, in NCHW contiguous and in channels-last memory format, and the faster of
the two is the baseline. Prints one JSON object: per shape the best times
and ``ratio_*``, time of s4tf / time of PyTorch (below 1 means s4tf is
faster), and over all shapes the geometric means of those
(``geomean_ratio_*``) and of the throughput ratios, PyTorch's time / s4tf's
(``geomean_throughput_*``, above 1 means s4tf is faster).

``--threads N`` gives both sides N threads: NumPy's OpenBLAS
(``OPENBLAS_NUM_THREADS``, set before NumPy loads) and PyTorch's intra-op
threads. Without it, PyTorch takes the OpenBLAS setting in force, or its own
default.

Run: ``python benchmarks/conv.py [--repeats N] [--threads N]``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import blas_threads  # noqa: E402

BLAS_THREADS = blas_threads(sys.argv)

import argparse  # noqa: E402  (OPENBLAS_NUM_THREADS must be set before NumPy loads)
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import s4tf  # noqa: E402

SHAPES = [  # name, input NHWC, filter HWIO, padding
    ("lenet_conv1", (128, 28, 28, 1), (5, 5, 1, 6), "same"),
    ("lenet_conv2", (128, 14, 14, 6), (5, 5, 6, 16), "valid"),
    ("resnet56_stage1", (128, 32, 32, 16), (3, 3, 16, 16), "same"),
    ("resnet56_stage2", (128, 16, 16, 32), (3, 3, 32, 32), "same"),
    ("resnet56_stage3", (128, 8, 8, 64), (3, 3, 64, 64), "same"),
]


def _interleaved(candidates, repeats):
    """Best wall-clock time of each callable, running them in turn ``repeats`` times.

    Interleaving makes every candidate see the same background load (a shared
    machine), and the minimum is the least disturbed run.
    """
    for fn in candidates.values():
        fn()  # warm-up: allocations, BLAS threads, PyTorch's kernel choice
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(repeats):
        for name, fn in candidates.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: 1e3 * t for name, t in best.items()}


def _s4tf_candidates(x, w, g, padding):
    x, w, g = (s4tf.Tensor(a) for a in (x, w, g))

    def forward():
        return s4tf.nn.conv2d(x, w, padding=padding)

    def forward_backward():
        _, pullback = s4tf.value_with_pullback(
            x, w, of=lambda x, w: s4tf.nn.conv2d(x, w, padding=padding))
        return pullback(g)

    return {"s4tf_forward": forward, "s4tf_forward_backward": forward_backward}


def _torch_candidates(torch, x, w, g, padding, channels_last):
    # NHWC/HWIO arrays to PyTorch's logical NCHW/OIHW; "same" is symmetric for odd windows.
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    tx = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(memory_format=fmt)
    tw = torch.from_numpy(w).permute(3, 2, 0, 1).contiguous(memory_format=fmt)
    tg = torch.from_numpy(g).permute(0, 3, 1, 2).contiguous(memory_format=fmt)
    pad = w.shape[0] // 2 if padding == "same" else 0
    conv = torch.nn.functional.conv2d
    tag = "torch_channels_last" if channels_last else "torch_nchw"

    def forward():
        with torch.no_grad():
            return conv(tx, tw, padding=pad)

    def forward_backward():
        a = tx.detach().requires_grad_()
        b = tw.detach().requires_grad_()
        return torch.autograd.grad(conv(a, b, padding=pad), (a, b), tg)

    return {f"{tag}_forward": forward, f"{tag}_forward_backward": forward_backward}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0,
                        help="threads of both sides: OpenBLAS and PyTorch (0: their defaults)")
    args = parser.parse_args()
    try:
        import torch
    except ImportError as error:
        torch, skipped = None, f"skipped: PyTorch is not installed ({error})"
    threads = args.threads or int(os.environ.get("OPENBLAS_NUM_THREADS", "0"))
    if torch is not None and threads:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    results = []
    for name, x_shape, w_shape, padding in SHAPES:
        x = rng.standard_normal(x_shape, dtype=np.float32)
        w = rng.standard_normal(w_shape, dtype=np.float32)
        y_shape = s4tf.nn.conv2d(s4tf.Tensor(x[:1]), s4tf.Tensor(w), padding=padding).shape
        g = rng.standard_normal((x_shape[0],) + y_shape[1:], dtype=np.float32)
        row = {"shape": name, "input": x_shape, "filter": w_shape, "padding": padding}
        candidates = _s4tf_candidates(x, w, g, padding)
        if torch is not None:
            candidates.update(_torch_candidates(torch, x, w, g, padding, False))
            candidates.update(_torch_candidates(torch, x, w, g, padding, True))
        row.update({f"{name}_ms": t for name, t in _interleaved(candidates, args.repeats).items()})
        if torch is not None:
            for kind in ("forward", "forward_backward"):
                best = min(row[f"torch_nchw_{kind}_ms"], row[f"torch_channels_last_{kind}_ms"])
                row[f"ratio_{kind}"] = row[f"s4tf_{kind}_ms"] / best
        results.append({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()})
    report = {
        "benchmark": "conv2d",
        "numpy": np.__version__,
        "torch": getattr(torch, "__version__", None),
        "torch_threads": torch.get_num_threads() if torch is not None else None,
        "openblas_threads": BLAS_THREADS,
        "peer": f"PyTorch {torch.__version__}" if torch is not None else skipped,
        "machine": platform.machine(),
        "repeats": args.repeats,
        "results": results,
    }
    if torch is not None:
        for kind in ("forward", "forward_backward"):
            mean = float(np.exp(np.mean(np.log([r[f"ratio_{kind}"] for r in results]))))
            report[f"geomean_ratio_{kind}"] = round(mean, 3)
            report[f"geomean_throughput_{kind}"] = round(1 / mean, 3)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
