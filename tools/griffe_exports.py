"""A griffe extension for the documentation site: a module's members are its ``__all__``.

The site inspects the imported package (``force_inspection`` in ``mkdocs.yml``)
because some public functions get their docstrings at import time (the
convolution and pooling factories of ``s4tf.nn``). Inspection also lists every
name a module merely imports (``Tensor`` in most of them); the package's
``__all__`` lists are what is public, so everything else is dropped here.
"""

from __future__ import annotations

import griffe


class ExportsOnly(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        _keep_exports(pkg)


def _keep_exports(module: griffe.Module) -> None:
    exports = module.exports
    for name, member in list(module.members.items()):
        # Checking an alias's kind would resolve it (and fail for names bound at
        # import time), so aliases are judged by name alone.
        if not member.is_alias and member.is_module:
            _keep_exports(member)
        elif exports is not None and name not in exports:
            del module.members[name]
