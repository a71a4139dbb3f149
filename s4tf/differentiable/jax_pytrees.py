"""Registering Differentiable classes as JAX pytrees, without importing JAX.

Every Differentiable class is registered with ``jax.tree_util`` so that JAX's
tree functions see models as the structures they are. Importing JAX takes a
second or more, so s4tf never imports it just for this: a class defined while
JAX is not loaded waits in a list, and an import hook registers the waiting
classes right after the program's own ``import jax``.
"""

from __future__ import annotations

import importlib.machinery
import sys

from ..tree import node_type

__all__ = ["register", "register_pending"]

_PENDING: list = []


def register(cls) -> None:
    """Register ``cls`` (already registered with :mod:`s4tf.tree`) with JAX, now or once
    JAX is imported."""
    jax = sys.modules.get("jax")
    if jax is None:
        _PENDING.append(cls)
        return
    _register_with(jax, cls)


def _register_with(jax, cls):
    # One level of s4tf.tree's decomposition: every field is a child, static ones too.
    node = node_type(cls)

    def flatten(value):
        return node.children(value), None

    def unflatten(_, children):
        return node.build(dict(zip(node.fields, children, strict=True)))

    try:
        jax.tree_util.register_pytree_node(cls, flatten, unflatten)
    except ValueError:
        pass  # already registered (a class redefined in a notebook cell)


def register_pending() -> None:
    """Register every class defined before JAX was imported (JAX must be loaded)."""
    jax = sys.modules["jax"]
    while _PENDING:
        _register_with(jax, _PENDING.pop())


class _JaxImportHook:
    """Registers pending classes right after ``import jax``, without importing it first:
    the first time JAX is imported, this finder wraps its loader."""

    def find_spec(self, name, path=None, target=None):
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _JaxImportHook)]
            register_pending()

        loader.exec_module = exec_module
        return spec


if "jax" not in sys.modules:
    sys.meta_path.insert(0, _JaxImportHook())
