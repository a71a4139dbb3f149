"""On-device personalisation of a spline by backtracking line search (S4TF paper, 5.1.3).

A global spline is fitted to aggregated data, then fine-tuned on the few
observations of one user, as Swift for TensorFlow did on a Pixel 3 phone. The
model is a Differentiable dataclass holding a list of Python floats: no tensors
anywhere, so every derivative is taken of plain float arithmetic.

    python examples/spline_personalization.py             # offline, ~10 s on 2 cores
    python examples/spline_personalization.py --smoke     # a few iterations
    python examples/spline_personalization.py --export exported/   # and run it without s4tf

Prints the user's held-out error before and after personalisation and saves the
personalised spline with ``s4tf.save`` (reload it with ``s4tf.load(path)``).

``--export DIR`` is the paper's on-device path: the global spline is handed to
the device as a tensor, and one personalisation step (gradient descent on the
user's data, model in, model and loss out) and the prediction are exported
with :func:`s4tf.export` (StableHLO, or ONNX with ``--export-format onnx``).
A separate process that never imports s4tf, only JAX or onnxruntime, then
runs the step on the user's data and predicts the held-out points; its
numbers are compared with the same steps run by s4tf.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

import numpy as np
from tqdm import tqdm

import s4tf


class Spline(s4tf.Differentiable):
    """A uniform Catmull-Rom spline on [0, 1] through ``control_points``.

    Examples
    --------
    >>> spline = Spline(control_points=[0.0, 1.0, 0.0])
    >>> spline(0.5)
    1.0
    """

    control_points: list

    def __call__(self, x: float):
        points = self.control_points
        segments = len(points) - 1
        position = min(max(x, 0.0), 1.0) * segments
        i = min(int(position), segments - 1)
        t = position - i
        p0, p1 = points[max(i - 1, 0)], points[i]
        p2, p3 = points[i + 1], points[min(i + 2, segments)]
        return 0.5 * (2 * p1 + (p2 - p0) * t + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t * t
                      + (3 * p1 - p0 - 3 * p2 + p3) * t * t * t)


class DeviceSpline(s4tf.Differentiable):
    """The same spline with its control points in one Tensor, evaluated on a batch of ``x``.

    What runs on the device: vectorised, so a whole batch of the user's
    observations is one call, and made of tensor ops only, so it exports.

    Examples
    --------
    >>> spline = DeviceSpline(control_points=s4tf.Tensor([0.0, 1.0, 0.0]))
    >>> spline(s4tf.Tensor([0.5, 0.0])).tolist()
    [1.0, 0.0]
    """

    control_points: s4tf.Tensor

    def __call__(self, x: s4tf.Tensor) -> s4tf.Tensor:
        points = self.control_points
        segments = points.shape[0] - 1
        position = s4tf.clip(x, 0.0, 1.0) * float(segments)
        start = s4tf.clip(s4tf.floor(position), 0.0, float(segments - 1))
        t = position - start
        i = start.astype(s4tf.int32)
        p0 = s4tf.gather(points, s4tf.maximum(i - 1, 0))
        p1, p2 = s4tf.gather(points, i), s4tf.gather(points, i + 1)
        p3 = s4tf.gather(points, s4tf.minimum(i + 2, segments))
        return 0.5 * (2 * p1 + (p2 - p0) * t + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t * t
                      + (3 * p1 - p0 - 3 * p2 + p3) * t * t * t)


def global_curve(x: float) -> float:
    """What the aggregated population data follow (hour of day -> engagement, say)."""
    return 0.5 + 0.3 * math.sin(2 * math.pi * x)


def user_curve(x: float) -> float:
    """One user's own curve: the population's, shifted later and with an evening peak."""
    return 0.45 + 0.3 * math.sin(2 * math.pi * (x - 0.08)) + 0.25 * math.exp(-((x - 0.8) / 0.07) ** 2)


def observations(curve, count: int, noise: float, rng: random.Random) -> list:
    return [(x, curve(x) + rng.gauss(0.0, noise)) for x in (rng.random() for _ in range(count))]


def mean_squared_error(spline: Spline, data) -> float:
    total = 0.0
    for x, y in data:
        error = spline(x) - y
        total = total + error * error
    return total / len(data)


def backtracking_line_search(spline: Spline, loss_fn, iterations: int, description: str,
                             progress: bool = True, shrink: float = 0.5,
                             sufficient_decrease: float = 1e-4) -> Spline:
    """Minimise ``loss_fn`` by gradient descent whose step obeys the Armijo condition.

    Each iteration takes one gradient and halves a trial step until the loss
    falls by at least ``sufficient_decrease * step * |gradient|^2``; the step
    then grows again for the next iteration, so it adapts to the curvature.
    """
    step = 1.0
    bar = tqdm(range(iterations), desc=description, disable=not progress)
    for _ in bar:
        loss, gradient = s4tf.value_with_gradient(spline, of=loss_fn)
        squared_norm = gradient.squared_norm()
        if squared_norm == 0.0:
            break
        while True:
            # consume=False: the current spline must survive a rejected trial step.
            candidate = spline.moved(along=gradient * -step, consume=False)
            if loss_fn(candidate) <= loss - sufficient_decrease * step * squared_norm:
                break
            step *= shrink
            if step < 1e-12:
                return spline
        spline, step = candidate, step * 2.0
        bar.set_postfix(loss=f"{loss:.5f}", step=f"{step:.3g}")
    return spline


def personalisation_step(anchor: s4tf.Tensor, learning_rate: float):
    """``step(spline, x, y) -> (spline, loss)``: one gradient step on a batch of the user's data.

    The loss is :func:`main`'s personal loss (squared error plus the pull
    towards ``anchor``, the global spline's points) on tensors.
    """

    def step(spline: DeviceSpline, x: s4tf.Tensor, y: s4tf.Tensor):
        def loss_fn(s):
            drift = s4tf.square(s.control_points - anchor).sum()
            return s4tf.square(s(x) - y).mean() + 1e-3 * drift

        loss, gradient = s4tf.value_with_gradient(spline, of=loss_fn)
        return spline.moved(along=gradient * -learning_rate), loss

    return step


# The device's side: only NumPy and JAX (or onnxruntime), never s4tf. It takes the
# artifacts' flattened leaves (here one tensor per argument) and prints JSON.
_RUN_ON_DEVICE = r"""
import json, sys
import numpy as np
fmt, step_path, predict_path, data_path, steps = sys.argv[1:6]
data = np.load(data_path)
if fmt == "stablehlo":
    from jax import export
    def load(path):
        with open(path, "rb") as file:
            exported = export.deserialize(bytearray(file.read()))
        return lambda *leaves: [np.asarray(r) for r in exported.call(*leaves)]
else:
    import onnxruntime
    def load(path):
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda *leaves: session.run(None, dict(zip(names, leaves)))
step, predict = load(step_path), load(predict_path)
points, losses = data["points"], []
for _ in range(int(steps)):
    points, loss = step(points, data["x"], data["y"])
    losses.append(float(loss))
prediction = predict(points, data["held_out_x"])[0]
print(json.dumps({"points": points.tolist(), "last_loss": losses[-1],
                  "held_out_error": float(np.mean((prediction - data["held_out_y"]) ** 2)),
                  "s4tf_imported": "s4tf" in sys.modules}))
"""


def export_and_run_on_device(anchor_points: list, user_training, user_held_out, steps: int,
                             directory: str, export_format: str) -> dict:
    """Export the personalisation step and the prediction, run them without s4tf, compare.

    Returns the held-out error on the device and by s4tf after ``steps``
    steps, and the largest difference between their control points.
    """
    os.makedirs(directory, exist_ok=True)
    anchor = s4tf.Tensor(anchor_points)
    spline = DeviceSpline(control_points=anchor)
    x, y = (s4tf.Tensor([pair[i] for pair in user_training]) for i in (0, 1))
    held_x, held_y = ([pair[i] for pair in user_held_out] for i in (0, 1))
    step = personalisation_step(anchor, learning_rate=0.5)
    suffix = ".stablehlo" if export_format == "stablehlo" else ".onnx"
    step_path = os.path.join(directory, "personalise" + suffix)
    predict_path = os.path.join(directory, "predict" + suffix)
    s4tf.export(step, spline, x, y, path=step_path, format=export_format)
    s4tf.export(lambda spline, x: spline(x), spline, x, path=predict_path,
                format=export_format)

    data_path = os.path.join(directory, "user_data.npz")
    np.savez(data_path, points=anchor.numpy(), x=x.numpy(), y=y.numpy(),
             held_out_x=np.asarray(held_x, np.float32), held_out_y=np.asarray(held_y, np.float32))
    done = subprocess.run([sys.executable, "-I", "-c", _RUN_ON_DEVICE, export_format, step_path,
                           predict_path, data_path, str(steps)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"running the exported step without s4tf failed:\n{done.stderr}")
    device = json.loads(done.stdout)

    # The same steps in s4tf, for comparison.
    for _ in range(steps):
        spline, _ = step(spline, x, y)
    s4tf_error = float(s4tf.square(spline(s4tf.Tensor(held_x)) - s4tf.Tensor(held_y)).mean())
    difference = float(np.abs(np.asarray(device["points"]) - spline.control_points.numpy()).max())
    return {"device_held_out_error": device["held_out_error"], "s4tf_held_out_error": s4tf_error,
            "largest_point_difference": difference, "device_imported_s4tf": device["s4tf_imported"]}


def parse_arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=150,
                        help="line-search iterations for the global fit and for the user's")
    parser.add_argument("--control-points", type=int, default=12)
    parser.add_argument("--backend", default=None, choices=("naive", "xla"),
                        help="accepted for symmetry with the other examples: "
                             "floats never touch a tensor backend")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="spline.safetensors",
                        help="where to save the personalised spline")
    parser.add_argument("--smoke", action="store_true", help="a few iterations, for tests")
    parser.add_argument("--export", metavar="DIR", default=None,
                        help="export the personalisation step to DIR and run it without s4tf")
    parser.add_argument("--export-format", default="stablehlo", choices=("stablehlo", "onnx"))
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    arguments = parser.parse_args(argv)
    if arguments.smoke:
        arguments.epochs = min(arguments.epochs, 3)
    return arguments


def main(argv=None) -> dict:
    """Fit globally, personalise, report; returns the user's held-out errors."""
    arguments = parse_arguments(argv)
    if arguments.backend:
        s4tf.set_backend(arguments.backend)
    rng = random.Random(arguments.seed)
    population = observations(global_curve, 400, 0.05, rng)
    user_training = observations(user_curve, 40, 0.02, rng)
    user_held_out = observations(user_curve, 200, 0.0, rng)
    progress = not arguments.no_progress

    start = time.perf_counter()
    flat = Spline(control_points=[0.5] * arguments.control_points)
    global_spline = backtracking_line_search(
        flat, lambda s: mean_squared_error(s, population), arguments.epochs,
        "global spline", progress)
    anchor = global_spline.control_points

    def personal_loss(spline: Spline):
        # A pull towards the global spline keeps sparse regions of the user's data sane.
        drift = 0.0
        for mine, theirs in zip(spline.control_points, anchor, strict=True):
            drift = drift + (mine - theirs) ** 2
        return mean_squared_error(spline, user_training) + 1e-3 * drift

    personal = backtracking_line_search(
        s4tf.replace(global_spline, control_points=list(anchor)), personal_loss,
        arguments.epochs, "on-device fine-tuning", progress)
    seconds = time.perf_counter() - start

    errors = {"global": mean_squared_error(global_spline, user_held_out),
              "personalised": mean_squared_error(personal, user_held_out)}
    print(f"User's held-out mean squared error: {errors['global']:.5f} with the global spline, "
          f"{errors['personalised']:.5f} personalised ({seconds:.1f} s)")
    s4tf.save(personal, arguments.output)
    reloaded = s4tf.load(arguments.output)
    print(f"Saved the personalised spline to {arguments.output} "
          f"(reloaded: {mean_squared_error(reloaded, user_held_out):.5f})")
    if arguments.export:
        exported = export_and_run_on_device(anchor, user_training, user_held_out, arguments.epochs,
                                            arguments.export, arguments.export_format)
        print(f"Exported ({arguments.export_format}) personalisation, run without s4tf for "
              f"{arguments.epochs} steps: held-out error {exported['device_held_out_error']:.5f} "
              f"(s4tf: {exported['s4tf_held_out_error']:.5f}; control points differ by at most "
              f"{exported['largest_point_difference']:.2g})")
        errors["exported"] = exported
    return errors


if __name__ == "__main__":
    main()
