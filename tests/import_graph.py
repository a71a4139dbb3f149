"""What a source file of s4tf imports, read from its syntax (imports inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

import s4tf

PACKAGE = Path(s4tf.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """The absolute names of the s4tf modules (and names in them) that ``path`` imports."""
    package = path.relative_to(PACKAGE.parent).parts[:-1]  # an __init__.py's is its own
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            module = ".".join(filter(None, [base, node.module]))
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "s4tf" or name.startswith("s4tf.")}
