"""benchmarks/device/run.sh on CPU with the tiny config: one JSON line with the device bench's keys and
sane values (no timing thresholds)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def result():
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHON=sys.executable, PYTHONPATH=str(REPO))
    env.pop("XLA_FLAGS", None)
    cmd = ["bash", str(REPO / "benchmarks/device/run.sh"), "--config", "tiny", "--batches", "1,2", "--prompt", "16",
           "--steps", "8", "--chunk", "4", "--seq", "64", "--train-steps", "1", "--bandwidth-bytes", str(1 << 22)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [x for x in res.stdout.splitlines() if x.strip()]
    assert len(lines) == 1, res.stdout[-2000:]  # exactly one JSON line on stdout
    return json.loads(lines[0])


def test_header_and_device_tables(result):
    from orchestra_jax.config import ModelConfig

    c = ModelConfig.from_preset("tiny")
    assert result["config"] == "tiny" and result["dtype"] == "bfloat16" and result["platform"] == "cpu"
    assert result["num_params"] == c.num_params()
    assert result["param_bytes"] == 2 * c.num_params()  # bfloat16 weights
    assert result["bandwidth_source"] == "measured" and result["bandwidth_Bps"] > 0  # CPU is not in the table
    assert result["peak_flops"] is None  # no bf16 peak for a CPU: MFU is null
    assert result["n_devices"] >= 1 and result["wall_s"] > 0


def test_decode_rows_and_hbm_bound(result):
    c_kv = 2 * 2 * 2 * 16 * 2  # K and V x L=2 x K=2 x H=16 x bf16 bytes per token per row
    assert [d["batch"] for d in result["decode"]] == [1, 2]
    for d in result["decode"]:
        assert d["tokens"] == d["batch"] * d["steps"] == d["batch"] * 8  # no EOS: every row runs every step
        assert d["kv_len"] == 16 + 4 * 4 + 8  # bucketed prompt + two warm-up calls of 2 chunks + timed steps
        assert d["bytes_per_step"] == result["param_bytes"] + d["batch"] * d["kv_len"] * c_kv
        assert d["seconds"] > 0 and d["tokens_per_s"] > 0
        assert d["bound_tokens_per_s"] == pytest.approx(d["batch"] * result["bandwidth_Bps"] / d["bytes_per_step"])
        assert d["fraction_of_bound"] == pytest.approx(d["tokens_per_s"] / d["bound_tokens_per_s"])


def test_train_step_flops(result):
    from orchestra_jax.config import ModelConfig

    c = ModelConfig.from_preset("tiny")
    t = result["train"]
    assert t["layers"] == t["full_layers"] == 2 and t["rows"] == 1 and t["seq"] == t["tokens"] == 64
    n_matmul = c.num_params() - c.vocab_size * c.hidden_size
    assert t["flops_per_step"] == 6 * n_matmul * 64 + 6 * 2 * 4 * 16 * 64 ** 2
    assert t["step_s"] > 0 and t["flops_per_s"] == pytest.approx(t["flops_per_step"] / t["step_s"], rel=1e-3)
    assert t["mfu"] is None and t["oom_retries"] == 0
    assert math.isfinite(t["loss"])  # a finite GRPO loss


def test_device_table_lookup():
    from orchestra_jax import devices as bd

    assert bd.device_specs("NVIDIA H100 80GB HBM3") == (3.35e12, 989e12)
    assert bd.device_specs("NVIDIA H200") == (4.8e12, 989e12)
    assert bd.device_specs("cpu") == (None, None)
