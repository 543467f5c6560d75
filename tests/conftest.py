"""Shared pytest setup: paths to the real data in ../shared/data (read, never copied)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ORCHESTRA_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data` (or $ORCHESTRA_SHARED_DATA); skips when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent (set ORCHESTRA_SHARED_DATA to the data folder)")
    return SHARED_DATA
