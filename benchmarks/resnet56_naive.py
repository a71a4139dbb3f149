"""ResNet-56 training step on the naive backend next to PyTorch eager, the same architecture.

One process, side by side, as JSON (benchmarks/README.md: performance claims live
here, never as timing assertions in tests). ``s4tf.models.ResNet(depth=56,
classes=10, stem="cifar")`` against its PyTorch twin from ``zoo_step.py``
(He et al. 2016, section 4.2: 3x3 convolutions without biases, BatchNorm,
1x1 projection shortcuts), both in training mode (batch statistics), float32,
softmax cross-entropy, SGD with momentum 0.9, on one random batch of 32x32x3
images (batch 16 by default).

The two steps take turns (:mod:`side_by_side`), so both see the same
background load; each run reports the median step time of each side and the
throughput ratio (s4tf / PyTorch; above 1 means s4tf is faster), and
``ratio_range`` the spread over ``--runs``. Without PyTorch the script says so
and measures s4tf alone.

Threads: ``--threads N`` sets both NumPy's OpenBLAS (``OPENBLAS_NUM_THREADS``,
before NumPy loads) and PyTorch's intra-op threads (``torch.set_num_threads``);
without it PyTorch takes the OpenBLAS setting in force, or its own default.

Run: ``python benchmarks/resnet56_naive.py [--batch 16] [--steps 5] [--runs 3] [--threads 1]``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import arguments, blas_threads, compare  # noqa: E402

BLAS_THREADS = blas_threads(sys.argv)

import json  # noqa: E402  (OPENBLAS_NUM_THREADS must be set before NumPy loads)

import numpy as np  # noqa: E402
import zoo_step  # noqa: E402

import s4tf  # noqa: E402

SPEC = zoo_step.MODELS["resnet56"]


class S4TFStep:
    """One SGD-with-momentum step of ``s4tf.models.ResNet(depth=56)`` on the naive backend."""

    def __init__(self, images, labels) -> None:
        with s4tf.backend("naive"):
            s4tf.random.seed(0)
            self.model = zoo_step.s4tf_model(SPEC)
            self.x, self.y = s4tf.Tensor(images), s4tf.Tensor(labels)
        self.optimizer = s4tf.optimizers.SGD(self.model, learning_rate=zoo_step.LEARNING_RATE,
                                             momentum=zoo_step.MOMENTUM)

    def __call__(self) -> float:
        with s4tf.training():
            loss, grads = s4tf.value_with_gradient(
                self.model,
                of=lambda m: s4tf.softmax_cross_entropy(logits=m(self.x), labels=self.y))
            self.model = self.optimizer.update(self.model, grads)
        return float(loss)


class TorchStep:
    """The same step in PyTorch eager (``zoo_step.torch_model``), NCHW."""

    def __init__(self, torch, images, labels) -> None:
        torch.manual_seed(0)
        self.torch = torch
        self.model = zoo_step.torch_model(SPEC).train()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=zoo_step.LEARNING_RATE,
                                         momentum=zoo_step.MOMENTUM)
        self.x = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()
        self.y = torch.from_numpy(labels).long()

    def __call__(self) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.torch.nn.functional.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())


def main() -> None:
    args = arguments(__doc__.splitlines()[0], batch=16, steps=5,
                     threads="OPENBLAS_NUM_THREADS and PyTorch threads (set before NumPy loads)")
    images, labels = zoo_step.random_batch(args.batch, SPEC["size"])
    mine = S4TFStep(images, labels)
    report = {"benchmark": "resnet56_naive_step", "batch": args.batch,
              "image_size": SPEC["size"], "steps_per_run": args.steps,
              "openblas_threads": BLAS_THREADS, "numpy": np.__version__}
    try:
        import torch
    except ImportError as error:
        report["peer"] = f"skipped: PyTorch is not installed ({error})"
        report.update(compare(mine, steps=args.steps, runs=args.runs))
        print(json.dumps(report, indent=2))
        return
    threads = args.threads or os.environ.get("OPENBLAS_NUM_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    peer = TorchStep(torch, images, labels)
    report.update(peer=f"PyTorch {torch.__version__} eager, {torch.get_num_threads()} threads",
                  first_loss={"s4tf": round(mine(), 4), "torch": round(peer(), 4)})
    report.update(compare(mine, peer, steps=args.steps, runs=args.runs))
    report["ratio_means"] = "examples/s of s4tf naive / examples/s of PyTorch eager"
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
