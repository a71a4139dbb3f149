"""Fixtures of the data set tests: an isolated cache and a fake network."""

from __future__ import annotations

import pytest
from dataset_files import FakeNetwork

from s4tf.datasets import download


@pytest.fixture
def network(monkeypatch) -> FakeNetwork:
    """No real network: every download goes through a FakeNetwork."""
    fake = FakeNetwork()
    monkeypatch.setattr(download, "_open_url", fake)
    return fake


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    # A test that forgets root= must never touch (or download into) the real cache.
    monkeypatch.setenv("S4TF_DATA_DIR", str(tmp_path / "cache"))


@pytest.fixture(autouse=True)
def _no_real_network(monkeypatch):
    def refuse(url):
        raise AssertionError(f"a test tried to reach the network: {url}")

    monkeypatch.setattr(download, "_open_url", refuse)
