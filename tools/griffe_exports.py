"""A griffe extension for the documentation site: a module's members are its ``__all__``.

The site inspects the imported package (``force_inspection`` in ``mkdocs.yml``)
because some public functions get their docstrings at import time (the
convolution and pooling factories of ``s4tf.nn``). Inspection also lists every
name a module merely imports (``Tensor`` in most of them); the package's
``__all__`` lists are what is public, so everything else is dropped here.

A primitive (:class:`s4tf.ops.primitive.Primitive`) is a callable object that
griffe, like pydoc, reads as a method descriptor; it is shown as the function it is.
"""

from __future__ import annotations

import griffe


class ExportsOnly(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        _keep_exports(pkg)

    def on_function_instance(self, *, node, func: griffe.Function, **kwargs) -> None:
        from s4tf.ops.primitive import Primitive

        if isinstance(getattr(node, "obj", None), Primitive):
            func.labels.discard("method descriptor")


def _keep_exports(module: griffe.Module) -> None:
    exports = module.exports
    for name, member in list(module.members.items()):
        # Checking an alias's kind would resolve it (and fail for names bound at
        # import time), so aliases are judged by name alone.
        if not member.is_alias and member.is_module:
            _keep_exports(member)
        elif exports is not None and name not in exports:
            del module.members[name]
