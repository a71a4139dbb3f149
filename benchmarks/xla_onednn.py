"""XLA's CPU oneDNN paths on the lazy backend's training steps: faster, and exact?

XLA reads ``XLA_FLAGS`` once, when JAX starts, so each setting runs in a
process of its own, in alternating rounds (default, then each oneDNN setting,
then default again, ...) so a slow spell on this shared machine hits all
alike. Each process trains ``xla_step.py``'s s4tf steps (LeNet-5 at batch 128
with ``moved(along:)``, ResNet-56 at batch 64 with SGD + momentum) from the same
weights on the same batch, records the loss of the first steps (exactness:
compared with the default setting's, float32 tolerance) and times the next
ones. Settings:

* ``default``: no flags;
* ``onednn_custom_call``: ``--xla_cpu_experimental_onednn_custom_call=true``;
* ``onednn_fusions``: ``--xla_cpu_use_onednn=true
  --xla_cpu_experimental_onednn_fusion_type=dot,eltwise`` (oneDNN thunks for
  matmul and elementwise fusions; convolutions stay XLA's).

The JSON gives, per model and setting, the time-per-step ratios default /
setting per round (above 1: the setting is faster), their range, the largest
relative loss difference from the default setting, and the count of oneDNN
calls (``__onednn`` kernels) in the compiled step (0: the flag changed nothing).

    python benchmarks/xla_onednn.py [--models lenet,resnet56] [--rounds 3] [--steps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

SETTINGS = {
    "default": "",
    "onednn_custom_call": "--xla_cpu_experimental_onednn_custom_call=true",
    "onednn_fusions": ("--xla_cpu_use_onednn=true "
                       "--xla_cpu_experimental_onednn_fusion_type=dot,eltwise"),
}
HERE = pathlib.Path(__file__).resolve().parent


def child(model: str, steps: int, checked: int) -> dict:
    """In this process (flags already set): losses of the first steps, then time per step."""
    sys.path.insert(0, str(HERE))
    import xla_step

    import s4tf
    spec = xla_step.MODELS[model]
    run_step, read = spec["s4tf"](spec["batch"])
    losses = []
    for _ in range(checked):
        run_step()
        losses.append(read())
    start = time.perf_counter()
    for _ in range(steps):
        run_step()
    read()
    seconds = time.perf_counter() - start
    return {"ms_per_step": 1e3 * seconds / steps, "losses": losses,
            "compiles": s4tf.xla.metrics()["compiles"]}


def run_child(setting: str, model: str, steps: int, checked: int) -> dict:
    """One process with ``setting``'s flags; its compiled step's HLO is dumped to count oneDNN calls."""
    with tempfile.TemporaryDirectory() as dump:
        flags = [os.environ.get("XLA_FLAGS", ""), SETTINGS[setting], f"--xla_dump_to={dump}",
                 "--xla_dump_hlo_as_text", "--xla_dump_hlo_module_re=replay"]
        env = {**os.environ, "XLA_FLAGS": " ".join(f for f in flags if f),
               "S4TF_CACHE_DIR": ""}  # every process compiles: no cache between them
        done = subprocess.run([sys.executable, __file__, "--child", model, "--steps", str(steps),
                               "--checked", str(checked)], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1:]}
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["onednn_kernels"] = sum(path.read_text().count("__onednn")
                                       for path in pathlib.Path(dump).glob("*after_optimizations.txt"))
    return result


def compare(model: str, rounds: int, steps: int, checked: int) -> dict:
    runs = {name: [] for name in SETTINGS}
    for _ in range(rounds):
        for name in SETTINGS:
            runs[name].append(run_child(name, model, steps, checked))
    base = runs["default"]
    report = {"rounds": rounds, "steps": steps,
              "default_ms_per_step": [round(r.get("ms_per_step", float("nan")), 1) for r in base]}
    for name in SETTINGS:
        if name == "default":
            continue
        ratios, worst = [], 0.0
        for mine, ref in zip(runs[name], base, strict=True):
            if "error" in mine or "error" in ref:
                report[name] = {"error": mine.get("error") or ref.get("error")}
                break
            ratios.append(ref["ms_per_step"] / mine["ms_per_step"])
            for a, b in zip(mine["losses"], ref["losses"], strict=True):
                worst = max(worst, abs(a - b) / max(abs(b), 1e-12))
        else:
            report[name] = {
                "speed_vs_default": [round(r, 3) for r in ratios],
                "speed_range": [round(min(ratios), 3), round(max(ratios), 3)],
                "max_relative_loss_difference": worst,
                "onednn_kernels": runs[name][-1]["onednn_kernels"],
            }
    return report


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="lenet,resnet56")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--checked", type=int, default=3, help="steps whose loss is compared")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.checked)))
        return {}
    sys.path.insert(0, str(HERE))
    import xla_step

    return xla_step.each_model(args.models.split(","), lambda model: compare(
        model, args.rounds, args.steps, args.checked))


if __name__ == "__main__":
    main()
