"""Every skipped test is listed at the end of a run; under CI only GPU tests may skip.

Not a test module: ``tests/conftest.py`` calls :func:`register` from its
``pytest_configure``. A skip hides a comparison that did not happen (a
reference package that failed to import, a backend left out), so each run
ends with a "skipped tests" section naming every skipped test and its reason,
and when the ``CI`` environment variable is set (CI runs with ``CI=true``)
the run fails if any skipped test is not marked ``@pytest.mark.gpu``: CI
installs every extra a test needs (``pip install -e ".[dev,xla,reference]"``)
and has no GPU, so GPU tests are the only ones that may skip there. A whole
module skipped while it is imported (``pytest.importorskip`` at the top) has
no markers yet and is never a GPU skip: a GPU test module skips inside its
tests or a fixture instead.
"""

from __future__ import annotations

import os

import pytest

GPU_MARKER = "gpu"
_FALSE = ("", "0", "false", "no")


def register(config) -> None:
    """Install the listing on this pytest run (one per run, so nested runs keep their own)."""
    config.pluginmanager.register(SkipListing(), "s4tf-skip-listing")


def ci_is_set() -> bool:
    """Whether this run is CI's: ``CI`` set to anything but empty, 0, false or no."""
    return os.environ.get("CI", "").strip().lower() not in _FALSE


class SkipListing:
    """Records each skip (test or collected module) and reports them at the end of the run."""

    def __init__(self):
        self.skips: list[tuple[str, str, bool]] = []   # (node id, reason, marked gpu)

    def _record(self, report, gpu: bool) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):   # an xfail is not a skip
            self.skips.append((report.nodeid, _reason(report), gpu))

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        self._record(report, GPU_MARKER in report.keywords)

    @pytest.hookimpl
    def pytest_collectreport(self, report):
        self._record(report, False)

    def refused(self) -> list[tuple[str, str]]:
        """The skips CI does not accept: every one without the ``gpu`` marker."""
        return [(node, reason) for node, reason, gpu in self.skips if not gpu]

    @pytest.hookimpl
    def pytest_sessionfinish(self, session):
        if ci_is_set() and self.refused() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter):
        if not self.skips:
            return
        write = terminalreporter.write_line
        terminalreporter.section(f"skipped tests ({len(self.skips)})")
        for node, reason, gpu in self.skips:
            write(f"{node}{' [gpu]' if gpu else ''}: {reason}")
        refused = self.refused()
        if ci_is_set() and refused:
            terminalreporter.section("skips refused under CI", red=True, bold=True)
            write(f"CI is set, and {len(refused)} skipped test(s) are not marked "
                  f"@pytest.mark.{GPU_MARKER}; only GPU tests may skip in CI. Install what "
                  "they need (pip install -e \".[dev,xla,reference]\") or make them run, "
                  "and the run passes:", red=True)
            for node, reason in refused:
                write(f"  {node}: {reason}", red=True)


def _reason(report) -> str:
    """The reason a skip gave (``pytest.skip(reason)``, a skipif's ``reason=``)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        message = longrepr[2]
    else:
        message = str(longrepr)
    return message.removeprefix("Skipped: ")
