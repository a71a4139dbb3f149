"""A run lists every skipped test with its reason; with CI set, only GPU tests may skip."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

TESTS = pathlib.Path(__file__).parent

RUNS = """
import pytest

def test_runs():
    pass

@pytest.mark.xfail(reason="a known failure, not a skip")
def test_known_failure():
    assert False
"""
GPU_SKIP = """
@pytest.mark.gpu
def test_on_a_gpu():
    pytest.skip("needs real CuPy")
"""
OTHER_SKIP = """
def test_without_its_reference():
    pytest.skip("the reference package is not installed")
"""
CASES = RUNS + GPU_SKIP + OTHER_SKIP


def run(tmp_path, files: dict[str, str], ci: str | None) -> subprocess.CompletedProcess:
    """pytest over ``files`` in ``tmp_path``, with this suite's skip listing installed."""
    (tmp_path / "conftest.py").write_text(
        "import skip_listing\n\n\ndef pytest_configure(config):\n"
        "    skip_listing.register(config)\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: needs a GPU\n")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def skipped_section(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "skipped tests (" in line)
    return [line for line in lines[start + 1:] if line.startswith("test_")]


def test_every_skip_is_listed_with_its_reason(tmp_path):
    result = run(tmp_path, {"test_cases.py": CASES}, "false")
    assert result.returncode == 0, result.stdout
    assert skipped_section(result.stdout) == [
        "test_cases.py::test_on_a_gpu [gpu]: needs real CuPy",
        "test_cases.py::test_without_its_reference: the reference package is not installed",
    ]
    assert "refused" not in result.stdout


def test_under_ci_a_skip_that_is_not_a_gpu_test_fails_the_run(tmp_path):
    result = run(tmp_path, {"test_cases.py": CASES}, "true")
    assert result.returncode == 1, result.stdout
    refused = result.stdout.split("skips refused under CI")[1]
    assert "1 skipped test(s) are not marked @pytest.mark.gpu" in refused
    assert "test_cases.py::test_without_its_reference: the reference package" in refused
    assert "test_on_a_gpu" not in refused


def test_under_ci_gpu_skips_alone_pass(tmp_path):
    result = run(tmp_path, {"test_cases.py": RUNS + GPU_SKIP}, "true")
    assert result.returncode == 0, result.stdout
    assert skipped_section(result.stdout) == ["test_cases.py::test_on_a_gpu [gpu]: needs real CuPy"]


def test_under_ci_a_module_skipped_at_import_fails_the_run(tmp_path):
    module = 'import pytest\n\npytest.importorskip("no_such_package_here")\n\n\ndef test_x():\n    pass\n'
    result = run(tmp_path, {"test_cases.py": "def test_runs():\n    pass\n",
                            "test_missing.py": module}, "1")
    assert result.returncode == 1, result.stdout
    assert skipped_section(result.stdout) == [
        "test_missing.py: could not import 'no_such_package_here': No module named "
        "'no_such_package_here'"]
