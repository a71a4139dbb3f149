"""The Differentiable Programming Manifesto's first examples, in s4tf.

A perceptron learns the AND gate with `value_with_gradient` over a user-defined
Differentiable dataclass, and the podcast speed model learns per-category and
per-section multipliers held in dicts, through Python control flow.

    python examples/perceptron.py
"""

from __future__ import annotations

import argparse

from tqdm import tqdm

import s4tf


class Perceptron(s4tf.Differentiable):
    weight: s4tf.Tensor
    bias: float

    def __call__(self, x: s4tf.Tensor):
        return (self.weight * x).sum() + self.bias


AND_GATE = [([0.0, 0.0], 0.0), ([0.0, 1.0], 0.0), ([1.0, 0.0], 0.0), ([1.0, 1.0], 1.0)]


def train_perceptron(steps: int = 500, learning_rate: float = 0.1) -> tuple[Perceptron, float]:
    """Train on the AND gate by plain gradient descent; return the model and final loss."""
    model = Perceptron(weight=s4tf.random.uniform([2], -1.0, 1.0, seed=0), bias=0.0)
    data = [(s4tf.Tensor(x), y) for x, y in AND_GATE]

    def loss_fn(m: Perceptron):
        loss = 0.0
        for x, y in data:
            error = y - m(x)
            loss = loss + error * error / 2
        return loss

    loss = None
    for _ in tqdm(range(steps), desc="perceptron (AND gate)"):
        loss, grad = s4tf.value_with_gradient(model, of=loss_fn)
        model = model.moved(along=grad * -learning_rate)
    return model, float(loss)


class PodcastSpeedModel(s4tf.Differentiable):
    min_speed: float
    max_speed: float
    category_multipliers: dict
    section_multipliers: dict

    def prediction(self, category: str, section: str):
        speed = self.category_multipliers[category] * self.section_multipliers[section]
        if speed < self.min_speed:
            return self.min_speed
        if speed > self.max_speed:
            return self.max_speed
        return speed


OBSERVATIONS = [
    ("comedy", "body", 1.0), ("comedy", "advertisement", 2.0), ("news", "body", 1.5),
    ("news", "introduction", 1.8), ("news", "advertisement", 2.0), ("comedy", "conclusion", 1.2),
]


def mean_error(model: PodcastSpeedModel, observations=OBSERVATIONS):
    error = 0.0
    for category, section, user_speed in observations:
        error = error + abs(model.prediction(category, section) - user_speed)
    return error / len(observations)


def train_podcast(steps: int = 1000, learning_rate: float = 0.01) -> tuple[PodcastSpeedModel, float]:
    """Gradient descent on the podcast model, as in the Manifesto; returns the final error."""
    model = PodcastSpeedModel(
        min_speed=0.5, max_speed=3.0,
        category_multipliers={"comedy": 1.0, "news": 1.0},
        section_multipliers={"advertisement": 1.0, "introduction": 1.0, "body": 1.0, "conclusion": 1.0},
    )
    for _ in tqdm(range(steps), desc="podcast speed model"):
        grad = s4tf.gradient(model, of=mean_error)
        model = model.moved(along=grad * -learning_rate)
    return model, float(mean_error(model))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    perceptron, loss = train_perceptron(args.steps)
    print(f"perceptron: loss {loss:.4f}, weight {perceptron.weight.tolist()}, bias {perceptron.bias:.3f}")
    podcast, error = train_podcast(2 * args.steps)
    print(f"podcast model: mean error {error:.4f}")


if __name__ == "__main__":
    main()
