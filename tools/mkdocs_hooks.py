"""mkdocs hooks for the documentation site (``hooks:`` in ``mkdocs.yml``).

s4tf's docstrings use Sphinx roles (:func:`gradient`, :class:`Layer`), which
mkdocstrings renders as the role's name followed by inline code. Drop the role
name so the reader sees just the code.

A page's ``<!-- primitives table -->`` line becomes the table of the primitives
``s4tf.ops`` exports, read from the primitives themselves (name, signature, the
first line of the docstring, whether rules make it differentiable), so adding a
primitive adds its row.
"""

from __future__ import annotations

import inspect
import re

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):(?=<code>)")
_MARKDOWN_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`([^`]+)`")
PRIMITIVES_TABLE = "<!-- primitives table -->"


def on_page_markdown(markdown: str, **kwargs) -> str:
    if PRIMITIVES_TABLE not in markdown:
        return markdown
    return markdown.replace(PRIMITIVES_TABLE, primitives_table())


def on_page_content(html: str, **kwargs) -> str:
    return _ROLE.sub("", html)


def primitives_table() -> str:
    """The Markdown table of the primitives of ``s4tf.ops``, by name."""
    import s4tf
    import s4tf.ops
    from s4tf.ops.primitive import Primitive

    rows = ["| function | computes | derivative |", "|---|---|---|"]
    for name in sorted(s4tf.ops.__all__):
        op = getattr(s4tf.ops, name)
        if not isinstance(op, Primitive):
            continue
        # The shortest public path: s4tf.exp where the top level exports it.
        path = "s4tf" if getattr(s4tf, name, None) is op else "s4tf.ops"
        summary = _MARKDOWN_ROLE.sub(r"`\1`", (op.__doc__ or "").strip().splitlines()[0])
        derivative = "reverse and forward" if op.vjp is not None and op.jvp is not None else "none"
        rows.append(f"| `{path}.{name}{inspect.signature(op)}` | {summary} | {derivative} |")
    return "\n".join(rows)
