"""Copy-on-write knows models only through the tree's registry: no module of s4tf/cow
imports the Differentiable classes or the optimizers (their entry points call down into it)."""

from pathlib import Path

from import_graph import imported_modules

import s4tf

COW = Path(s4tf.__file__).parent / "cow"
ABOVE = tuple(f"s4tf.{name}" for name in (
    "differentiable", "optimizers", "layers", "models", "checkpoint", "training_loop", "summary"))


def test_cow_imports_no_model_class_and_no_optimizer():
    for path in sorted(COW.glob("*.py")):
        upward = {name for name in imported_modules(path) if name.startswith(ABOVE)}
        assert not upward, f"cow/{path.name} imports {sorted(upward)}"
