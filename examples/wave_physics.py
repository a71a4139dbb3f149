"""Differentiable physics: find the initial ripple that the 2-D wave equation carries into a picture.

The wave equation u_tt = c^2 (u_xx + u_yy) is simulated on a grid with the
leapfrog scheme, the water at rest at first (zero initial velocity) and fixed
at the borders. The initial surface is a Differentiable value; reverse-mode AD
through every time step gives the gradient of the mismatch between the final
surface and a target picture (a ring and a bar drawn with pillow), and Adam
optimises the initial surface, as swift-models' shallow-water PDE example did
for the S4TF logo.

    python examples/wave_physics.py                       # offline, ~5 s on 2 cores
    python examples/wave_physics.py --backend xla         # the same, traced and compiled
    python examples/wave_physics.py --smoke               # a tiny grid, for tests

On ``--backend xla`` the 40 time steps and their pullbacks are unrolled into
one graph of ~1,300 ops, compiled once and replayed every step; XLA's CPU
compiler takes minutes over such an unrolled graph (plain ``jax.jit`` of the
same function took twice as long here), so the naive backend is the quick
choice on a CPU.

Prints the final surface's error relative to doing nothing, saves the optimised
initial condition with ``s4tf.save`` and, with ``--image``, a PNG of target,
initial condition and final surface side by side.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from PIL import Image, ImageDraw
from tqdm import tqdm

import s4tf
from s4tf import optimizers


class InitialSurface(s4tf.Differentiable):
    """The water's height at time 0 on a ``(size, size)`` grid."""

    height: s4tf.Tensor


def laplacian(u: s4tf.Tensor) -> s4tf.Tensor:
    """Five-point Laplacian (grid step 1) with the surface fixed at 0 beyond the border."""
    padded = s4tf.pad(u, [(1, 1), (1, 1)])
    return (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
            - 4.0 * u)


def simulate(initial: s4tf.Tensor, steps: int, courant: float = 0.45,
             damping: float = 0.002) -> s4tf.Tensor:
    """Leapfrog integration from rest; ``courant`` = c dt / dx (stable below 1/sqrt(2))."""
    previous, current = initial, initial
    for _ in range(steps):
        following = ((2.0 - damping) * current - (1.0 - damping) * previous
                     + courant ** 2 * laplacian(current))
        previous, current = current, following
    return current


def target_picture(size: int) -> np.ndarray:
    """A ring and a bar, drawn deterministically with pillow, heights in [0, 1]."""
    scale = 8  # draw large and shrink: smooth edges the waves can form
    image = Image.new("L", (size * scale, size * scale), 0)
    draw = ImageDraw.Draw(image)
    full = size * scale
    draw.ellipse([full * 0.18, full * 0.18, full * 0.62, full * 0.62],
                 outline=255, width=max(1, int(full * 0.07)))
    draw.rectangle([full * 0.70, full * 0.2, full * 0.80, full * 0.8], fill=255)
    small = image.resize((size, size), Image.Resampling.LANCZOS)
    return np.asarray(small, dtype=np.float32) / 255.0


def save_picture(path: str, panels) -> None:
    """Panels side by side, each rescaled to [0, 255] on its own, 8x enlarged."""
    tiles = []
    for panel in panels:
        panel = np.asarray(panel, dtype=np.float64)
        low, high = panel.min(), panel.max()
        scaled = (panel - low) / (high - low) if high > low else np.zeros_like(panel)
        tile = Image.fromarray((scaled * 255).astype(np.uint8)).resize(
            (panel.shape[1] * 8, panel.shape[0] * 8), Image.Resampling.NEAREST)
        tiles.append(tile)
    sheet = Image.new("L", (sum(t.width for t in tiles) + 8 * (len(tiles) - 1), tiles[0].height))
    x = 0
    for tile in tiles:
        sheet.paste(tile, (x, 0))
        x += tile.width + 8
    sheet.save(path)


def parse_arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=150, help="optimisation steps")
    parser.add_argument("--size", type=int, default=32, help="grid points per side")
    parser.add_argument("--time-steps", type=int, default=40)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--backend", default=None, choices=("naive", "xla"))
    parser.add_argument("--output", default="wave_initial.safetensors",
                        help="where to save the optimised initial surface")
    parser.add_argument("--image", default=None, help="write target | initial | final as a PNG")
    parser.add_argument("--smoke", action="store_true", help="a tiny grid, for tests")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    arguments = parser.parse_args(argv)
    if arguments.smoke:
        arguments.epochs, arguments.size, arguments.time_steps = min(arguments.epochs, 3), 12, 6
    return arguments


def main(argv=None) -> float:
    """Optimise the initial surface; returns the final error relative to a flat start."""
    arguments = parse_arguments(argv)
    if arguments.backend:
        s4tf.set_backend(arguments.backend)
    target = s4tf.Tensor(target_picture(arguments.size))
    steps = arguments.time_steps

    def mismatch(surface: InitialSurface):
        return ((simulate(surface.height, steps) - target) ** 2).mean()

    surface = InitialSurface(height=s4tf.zeros([arguments.size, arguments.size]))
    baseline = float(mismatch(surface))   # the flat surface stays flat: error of doing nothing
    optimizer = optimizers.Adam(surface, learning_rate=arguments.learning_rate)
    start = time.perf_counter()
    bar = tqdm(range(arguments.epochs), desc=f"wave {arguments.size}x{arguments.size}, "
               f"{steps} steps", disable=arguments.no_progress)
    for _ in bar:
        loss, gradient = s4tf.value_with_gradient(surface, of=mismatch)
        surface = optimizer.update(surface, gradient)
        s4tf.barrier()
        bar.set_postfix(loss=f"{float(loss):.5f}")
    seconds = time.perf_counter() - start

    relative = float(mismatch(surface)) / baseline
    print(f"Final surface error: {relative:.1%} of a flat start's "
          f"({arguments.epochs} steps in {seconds:.1f} s on {s4tf.get_backend()})")
    s4tf.save(surface, arguments.output)
    reloaded = s4tf.load(arguments.output)
    print(f"Saved the initial surface to {arguments.output} "
          f"(reloaded: {float(mismatch(reloaded)) / baseline:.1%})")
    if arguments.image:
        final = simulate(surface.height, steps)
        save_picture(arguments.image, [target.numpy(), surface.height.numpy(), final.numpy()])
        print(f"Wrote {arguments.image}: target | initial surface | surface after {steps} steps")
    return relative


if __name__ == "__main__":
    main()
