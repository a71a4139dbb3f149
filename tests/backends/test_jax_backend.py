"""The eager jax backend (``s4tf/backends/jax/``): what must hold however it is first loaded."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("jax")


def test_its_array_type_is_the_concrete_array_even_when_first_imported_inside_a_trace():
    # s4tf.export traces a model under JAX; a model that names the jax backend loads
    # it there, and the class-level type(jnp.zeros(())) was then a tracer's type: every
    # later concrete array failed the backend's own type check (found by running
    # tests/exporting before the op suite). A fresh interpreter, so the import is first.
    program = textwrap.dedent("""
        import jax, jax.numpy as jnp

        @jax.jit
        def f(x):
            from s4tf.backends.jax.backend import JaxBackend
            return x

        f(jnp.ones(2))
        from s4tf.backends.jax.backend import JaxBackend
        import s4tf
        with s4tf.backend("jax"):
            t = s4tf.ones([2]) * 2.0
        assert JaxBackend.array_type is type(jnp.zeros(())), JaxBackend.array_type
        assert isinstance(t._data, JaxBackend.array_type)
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]
