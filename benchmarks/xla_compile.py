"""First-step compile time of ResNet-56: s4tf xla next to Equinox and plain JAX, cold and warm.

Each measurement is a fresh process (what a user waits for when a script
starts), running ``zoo_step.py``'s ResNet-56 training step (batch 64, 32x32,
SGD + momentum) once, in rounds that alternate the frameworks:

* ``s4tf_cold``: s4tf xla with an empty persistent compilation cache (a new
  ``S4TF_CACHE_DIR`` each round): XLA compiles the step;
* ``s4tf_warm``: s4tf xla again on the cache that the cold run just filled,
  as a script's second run: XLA should compile nothing (JAX's cache-hit
  events are counted in ``persistent_cache_hits``);
* ``equinox`` and ``jax``: the same network in Equinox and in plain JAX
  (``zoo_step.jax_resnet``), no persistent cache.

Reported per run: the wall time of the first step (tracing, compiling,
running and reading the loss; imports and model building excluded), the
seconds of JAX's ``backend_compile_duration`` events over the whole process
(an XLA compile, or, on a persistent-cache hit, only loading the compiled
program; Equinox's count includes its model's initialisation), and the ratios
s4tf / peer of both (below 1: s4tf is faster). Prints JSON.

    python benchmarks/xla_compile.py [--rounds 2] [--batch 64]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
FRAMEWORKS = ("s4tf_cold", "s4tf_warm", "equinox", "jax")


def child(framework: str, batch: int) -> dict:
    """In this process: one ResNet-56 step of ``framework``, timed; JAX's compile events summed."""
    import jax

    durations: dict = collections.defaultdict(float)
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **_: durations.__setitem__(event, durations[event] + seconds))
    sys.path.insert(0, str(HERE))
    import zoo_step

    spec = zoo_step.MODELS["resnet56"]
    images, labels = zoo_step.random_batch(batch, spec["size"])
    result = {}
    if framework.startswith("s4tf"):
        import xla_step

        import s4tf

        run_step, read = xla_step.s4tf_resnet(batch)
        start = time.perf_counter()
        run_step()
        read()
        result["first_step_s"] = time.perf_counter() - start
        result["persistent_cache_hits"] = s4tf.xla.metrics().get("persistent_cache_hits")
    else:
        runner = {"equinox": zoo_step.run_equinox, "jax": zoo_step.run_jax}[framework]
        # warmup=1, steps=1: the runner's first_steps_s is the first step alone.
        result["first_step_s"] = runner(spec, images, labels, 1, 1)["first_steps_s"]
    result["xla_compile_or_load_s"] = durations["/jax/core/compile/backend_compile_duration"]
    return result


def run_child(framework: str, batch: int, cache: str) -> dict:
    env = {**os.environ, "S4TF_CACHE_DIR": cache if framework.startswith("s4tf") else ""}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    done = subprocess.run([sys.executable, __file__, "--child", framework, "--batch", str(batch)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.batch)))
        return {}
    sys.path.insert(0, str(HERE))
    import zoo_step

    skipped = {f: why for f in FRAMEWORKS
               if (why := zoo_step.available("s4tf_xla" if "s4tf" in f else f, "resnet56"))}
    runs: dict = {f: [] for f in FRAMEWORKS if f not in skipped}
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as cache:
            for framework in runs:  # s4tf_cold fills the cache s4tf_warm then reads
                runs[framework].append(run_child(framework, args.batch, cache))
    report: dict = {"batch": args.batch, "rounds": args.rounds, "skipped": skipped, "runs": runs}
    ratios = {}
    for mine in ("s4tf_cold", "s4tf_warm"):
        for peer in ("equinox", "jax", "s4tf_cold"):
            if mine == peer or mine not in runs or peer not in runs:
                continue
            for measure in ("first_step_s", "xla_compile_or_load_s"):
                pairs = [a[measure] / b[measure] for a, b in zip(runs[mine], runs[peer], strict=True)
                         if measure in a and measure in b and b[measure] > 0]
                if pairs:
                    ratios[f"{mine}/{peer} {measure}"] = {
                        "median": round(statistics.median(pairs), 3),
                        "range": [round(min(pairs), 3), round(max(pairs), 3)]}
    report["ratios"] = ratios
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
