"""mkdocs hooks for the documentation site (``hooks:`` in ``mkdocs.yml``).

s4tf's docstrings use Sphinx roles (:func:`gradient`, :class:`Layer`), which
mkdocstrings renders as the role's name followed by inline code. Drop the role
name so the reader sees just the code.
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):(?=<code>)")


def on_page_content(html: str, **kwargs) -> str:
    return _ROLE.sub("", html)
