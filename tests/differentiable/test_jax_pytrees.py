"""The JAX import hook (s4tf/differentiable/jax_pytrees.py): Differentiable classes become
JAX pytrees, whether defined before or after ``import jax``, without s4tf importing JAX."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import s4tf

pytest.importorskip("jax")

ROOT = Path(s4tf.__file__).parent.parent

PROGRAM = textwrap.dedent("""
    import sys
    import s4tf
    assert "jax" not in sys.modules, "importing s4tf imported JAX"

    class Before(s4tf.Differentiable):
        w: s4tf.Tensor
        label: str = s4tf.no_derivative(default="b")

    import jax

    class After(s4tf.Differentiable):
        inner: Before
        scale: float

    value = After(Before(s4tf.ones([2])), 2.0)
    leaves, treedef = jax.tree_util.tree_flatten(value)
    # Tensors flatten to JAX arrays; static fields (the label) are structure, not leaves.
    assert [type(x).__name__ for x in leaves] == ["ArrayImpl", "float"], leaves
    doubled = jax.tree_util.tree_map(lambda x: x * 2, value)
    assert type(doubled) is After and type(doubled.inner) is Before
    assert doubled.inner.w.tolist() == [2.0, 2.0] and doubled.inner.label == "b"
    assert doubled.scale == 4.0
    # Registering and flattening set nothing of JAX up (no 64-bit mode) until an s4tf op
    # runs on a tracer and loads the jax backend.
    assert not jax.config.jax_enable_x64
    print("ok")
""")


def test_classes_defined_before_and_after_importing_jax_are_pytrees():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]
