"""The documentation site: its s4tf code runs, and it builds with ``mkdocs build --strict``.

Every fenced ``python`` block under ``docs/`` carries a marker on the line
before it: ``<!-- test -->`` (run by :func:`test_page_code_runs`, all of a
page's blocks in order in one namespace, so a block may use what an earlier one
defined; ``<!-- test needs=jax -->`` skips the page without that package) or
``<!-- no-test: why -->`` (code for another library, shown for comparison).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import pathlib
import re
import subprocess
import sys
import types
import warnings

import pytest

import s4tf
from s4tf.checkpoint import callables

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
MARKER = re.compile(r"^\s*<!-- (?:(?P<test>test)(?: needs=(?P<needs>[\w,]+))?|no-test: .+) -->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>[^`]*)$")


def python_blocks(path: pathlib.Path) -> list[dict]:
    """The fenced python blocks of a page: line, code, marker (None when missing), needs."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, start = fence["indent"], i
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            i += 1
        body = [line[len(indent):] for line in lines[start + 1:i]]
        i += 1
        if fence["info"].split()[:1] != ["python"]:
            continue
        marker = MARKER.match(lines[start - 1]) if start else None
        blocks.append({
            "line": start + 1,
            "code": "\n".join(body),
            "marker": marker,
            "test": bool(marker and marker["test"]),
            "needs": (marker["needs"] or "").split(",") if marker and marker["needs"] else [],
        })
    return blocks


TESTED = [page for page in PAGES if any(block["test"] for block in python_blocks(page))]


def page_id(page: pathlib.Path) -> str:
    return str(page.relative_to(DOCS))


def test_every_python_block_says_whether_it_is_tested():
    unmarked = [f"{page_id(page)}:{block['line']}" for page in PAGES
                for block in python_blocks(page) if block["marker"] is None]
    assert not unmarked, ("python blocks without a '<!-- test -->' or '<!-- no-test: why -->' "
                          f"line before them: {unmarked}")


def test_the_guides_have_tested_code():
    names = {page_id(page) for page in TESTED}
    for guide in ["index.md", "guides/getting-started.md", "guides/from-pytorch.md",
                  "guides/from-keras.md", "guides/from-jax.md", "guides/value-semantics.md",
                  "guides/backends.md", "guides/custom-derivatives.md", "guides/checkpoints.md",
                  "guides/model-zoo.md", "guides/data-parallel.md", "guides/jax-interop.md"]:
        assert guide in names, f"{guide} has no tested s4tf code"


@pytest.mark.parametrize("page", TESTED, ids=[page_id(p) for p in TESTED])
def test_page_code_runs(page, tmp_path, monkeypatch):
    blocks = [block for block in python_blocks(page) if block["test"]]
    for package in {name for block in blocks for name in block["needs"]}:
        pytest.importorskip(package, reason=f"{page_id(page)} needs {package}")
    monkeypatch.chdir(tmp_path)   # pages may write files (checkpoints)
    monkeypatch.setattr(callables, "_registered", {})   # and register functions for them
    backend, state = s4tf.get_backend(), s4tf.random.get_state()
    # The page runs as a module of its own, as a reader's script would.
    module = types.ModuleType("s4tf_docs_page")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    try:
        with warnings.catch_warnings():
            for block in blocks:
                # dont_inherit: this file's `from __future__ import annotations` stays here.
                code = compile(block["code"], f"{page}:{block['line']}", "exec", dont_inherit=True)
                exec(code, module.__dict__)
    finally:
        s4tf.barrier()
        s4tf.set_backend(backend)
        s4tf.random.set_state(state)


def test_site_builds_strict(tmp_path):
    for module in ["mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers"]:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"building the site needs {module} (pip install -e '.[dev]')")
    result = subprocess.run(
        # Not --quiet: it hides the warnings that --strict counts, and the build passes.
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},   # quiet a theme notice
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    assert (tmp_path / "site" / "api" / "layers" / "index.html").exists()


def _mkdocs_hooks():
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "tools" / "mkdocs_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks


def test_every_primitive_is_in_the_generated_ops_table():
    """The API page's table of primitives is generated from them (tools/mkdocs_hooks.py)."""
    from s4tf.ops.primitive import Primitive

    hooks = _mkdocs_hooks()
    source = (DOCS / "api" / "tensor.md").read_text()
    assert hooks.PRIMITIVES_TABLE in source, "docs/api/tensor.md lost its generated table"
    page = hooks.on_page_markdown(source)
    primitives = {name: getattr(s4tf.ops, name) for name in s4tf.ops.__all__
                  if isinstance(getattr(s4tf.ops, name), Primitive)}
    assert "exp" in primitives and "scatter_add" in primitives
    missing = []
    for name, op in primitives.items():
        path = "s4tf" if getattr(s4tf, name, None) is op else "s4tf.ops"
        summary = op.__doc__.strip().splitlines()[0]
        if f"| `{path}.{name}{inspect.signature(op)}` | {summary} |" not in page:
            missing.append(name)
    assert not missing, f"the generated table of docs/api/tensor.md does not describe {missing}"
