"""Run the copy-on-write suites on other CPython versions, side by side.

Reference-count behaviour changes between interpreter versions (CPython 3.14
borrows references to locals, for one), so the suites that depend on it run
on every CPython the package supports. For each interpreter this installs the
required packages into a private folder with the *running* pip (binary wheels
for the target version, so the target needs no pip of its own), then runs the
suites with that folder and this checkout on ``PYTHONPATH``, and prints one
JSON line per interpreter.

Usage::

    python tools/run_on_pythons.py                      # every python3.1x found
    python tools/run_on_pythons.py /path/to/python3.14  # just these
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITES = ["tests/cow", "tests/optimizers", "tests/differentiable", "tests/tree"]
PACKAGES = ["numpy", "tqdm", "pillow", "safetensors", "pytest", "hypothesis"]
# pip evaluates dependency markers for the running interpreter, not the target:
# what pytest and hypothesis need only before 3.11 must be named.
BEFORE_311 = ["exceptiongroup", "tomli"]


def discover() -> list[str]:
    """Interpreters named python3.N on PATH or under pyenv, one per version."""
    found: dict[str, str] = {}
    candidates = [shutil.which(f"python3.{n}") for n in range(10, 20)]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    for path in filter(None, candidates):
        version = _version(path)
        if version and tuple(map(int, version.split("."))) >= (3, 10):  # requires-python
            found.setdefault(version, path)
    return [found[v] for v in sorted(found, key=lambda v: tuple(map(int, v.split("."))))]


def _version(python: str) -> str | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip() or None


def install(version: str, cache: Path) -> Path:
    """The folder holding the packages for ``version`` (installed on first use)."""
    target = cache / version
    marker = target / ".complete"
    if marker.exists():
        return target
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target),
         "--python-version", version, "--only-binary=:all:", "--implementation", "cp",
         *PACKAGES, *(BEFORE_311 if tuple(map(int, version.split("."))) < (3, 11) else [])],
        check=True,
    )
    marker.touch()  # written last: a half-finished install is redone
    return target


def run(python: str, cache: Path) -> dict:
    version = _version(python)
    if version is None:
        return {"python": python, "error": "could not run this interpreter"}
    site = install(version, cache)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    proc = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUITES],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    tail = proc.stdout.strip().splitlines()[-1:] or [proc.stderr.strip()[-300:]]
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", tail[0])}
    return {"python": python, "version": version, "exit_code": proc.returncode, **counts,
            "summary": tail[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pythons", nargs="*", help="interpreters (default: discover python3.1x)")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "pythons",
                        help="where the per-version packages are installed")
    args = parser.parse_args()
    pythons = args.pythons or discover()
    if not pythons:
        sys.exit("No python3.1x interpreter found; pass their paths.")
    failed = False
    for python in pythons:
        result = run(python, args.cache)
        failed |= result.get("exit_code") != 0
        print(json.dumps(result), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
