"""On-device personalisation of a spline by backtracking line search (S4TF paper, 5.1.3).

A global spline is fitted to aggregated data, then fine-tuned on the few
observations of one user, as Swift for TensorFlow did on a Pixel 3 phone. The
model is a Differentiable dataclass holding a list of Python floats: no tensors
anywhere, so every derivative is taken of plain float arithmetic.

    python examples/spline_personalization.py             # offline, ~10 s on 2 cores
    python examples/spline_personalization.py --smoke     # a few iterations

Prints the user's held-out error before and after personalisation and saves the
personalised spline with ``s4tf.save`` (reload it with ``s4tf.load(path)``).
"""

from __future__ import annotations

import argparse
import math
import random
import time

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
    return errors


if __name__ == "__main__":
    main()
