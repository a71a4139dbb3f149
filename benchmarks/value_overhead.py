"""Per-call cost of working with whole values: updates, moves, tangent arithmetic, flattening.

The model is 4 blocks of an 8x8 weight and an 8-vector bias (8 tensors), small
enough that the time is the library's walk over the structure, not arithmetic.
Each row times one call and divides by a peer doing the same work:

- ``sgd_update``: ``model = opt.update(model, grads)`` (copy-on-write, in place)
  vs ``torch.optim.SGD.step()`` on the same parameters;
- ``moved``: ``model = model.moved(along=grads)`` vs ``p.add_(g)`` per tensor
  under ``torch.no_grad()``;
- ``tangent_add``: ``grads + grads`` vs ``jax.tree_util.tree_map(operator.add, ...)``
  over the same structure of NumPy arrays;
- ``tree_flatten``: ``s4tf.tree_flatten(model)`` vs ``jax.tree_util.tree_flatten``.

Times are CPU time of this process (``time.process_time``), the least of
several repeats, so other work on a busy machine disturbs them less. A peer
that is not installed is skipped with the reason. Prints JSON; no asserts.

    python benchmarks/value_overhead.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import operator
import time
import timeit

import numpy as np

import s4tf
from s4tf import optimizers

BLOCKS = 4


class Block(s4tf.Differentiable):
    weight: s4tf.Tensor
    bias: s4tf.Tensor


class Model(s4tf.Differentiable):
    blocks: list


def _per_call(fn, number: int) -> float:
    return min(timeit.Timer(fn, timer=time.process_time).repeat(number=number, repeat=7)) / number


def _arrays(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32)
            for _ in range(BLOCKS) for shape in ((8, 8), (8,))]


def _model(arrays) -> Model:
    return Model([Block(s4tf.Tensor(w), s4tf.Tensor(b)) for w, b in zip(arrays[::2], arrays[1::2],
                                                                         strict=True)])


def _tangent(arrays):
    return Model.TangentVector(blocks=[
        Block.TangentVector(weight=s4tf.Tensor(w), bias=s4tf.Tensor(b))
        for w, b in zip(arrays[::2], arrays[1::2], strict=True)])


def s4tf_rows(number: int) -> dict:
    model, grads = _model(_arrays(0)), _tangent(_arrays(1))
    opt = optimizers.SGD(model, learning_rate=1e-6)
    state = {"model": model}

    def update():
        state["model"] = opt.update(state["model"], grads)

    def move():
        state["model"] = state["model"].moved(along=grads)

    del model  # the rows keep the only reference, so updates run in place
    return {"sgd_update": _per_call(update, number), "moved": _per_call(move, number),
            "tangent_add": _per_call(lambda: grads + grads, number),
            "tree_flatten": _per_call(lambda: s4tf.tree_flatten(state["model"]), number)}


def torch_rows(number: int) -> dict:
    import torch

    params = [torch.nn.Parameter(torch.from_numpy(a)) for a in _arrays(0)]
    for p, g in zip(params, _arrays(1), strict=True):
        p.grad = torch.from_numpy(g)
    opt = torch.optim.SGD(params, lr=1e-6)

    def move():
        with torch.no_grad():
            for p in params:
                p.add_(p.grad)

    return {"sgd_update": _per_call(opt.step, number), "moved": _per_call(move, number)}


def jax_rows(number: int) -> dict:
    import jax

    tree = {"blocks": [{"weight": w, "bias": b} for w, b in
                       zip(_arrays(1)[::2], _arrays(1)[1::2], strict=True)]}
    return {"tangent_add": _per_call(lambda: jax.tree_util.tree_map(operator.add, tree, tree),
                                     number),
            "tree_flatten": _per_call(lambda: jax.tree_util.tree_flatten(tree), number)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000, help="calls per timing")
    args = parser.parse_args()
    ours = s4tf_rows(args.number)
    peers, skipped = {}, {}
    for name, rows in (("torch", torch_rows), ("jax", jax_rows)):
        if importlib.util.find_spec(name) is None:
            skipped[name] = f"{name} is not installed"
        else:
            peers[name] = rows(args.number)
    results = {}
    for row, seconds in ours.items():
        entry = {"s4tf_us": round(seconds * 1e6, 2)}
        for peer, times in peers.items():
            if row in times:
                entry[f"{peer}_us"] = round(times[row] * 1e6, 2)
                entry[f"ratio_s4tf_over_{peer}"] = round(seconds / times[row], 2)
        results[row] = entry
    print(json.dumps({"rows": results, "skipped": skipped}, indent=2))


if __name__ == "__main__":
    main()
