"""The memory plan on the tiny config, 8 fake CPU devices (a subprocess: XLA_FLAGS before jax)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(r'''
    import json
    import jax
    from orchestra_jax import memory_plan as mp, sharding as sh
    from orchestra_jax.config import ModelConfig

    assert jax.device_count() == 8
    c = ModelConfig.from_preset("tiny", param_dtype="float32", compute_dtype="bfloat16")
    out = {"num_params": c.num_params()}
    for name, fsdp, tp in (("fsdp", 8, 1), ("fsdp_tp", 4, 2)):
        mesh = sh.make_mesh(data=1, fsdp=fsdp, tp=tp)
        out[name] = {"train": mp.train_step_memory(c, mesh, rows=fsdp, seq=64),
                     "decode": mp.decode_step_memory(c, mesh, rows=8, cache_len=128, chunk=4)}
    out["fsdp"]["train_remat"] = mp.train_step_memory(c.replace(remat=True), sh.make_mesh(data=1, fsdp=8),
                                                      rows=8, seq=64)
    out["kv_total"] = mp.kv_cache_bytes(c, 8, 128)
    print("RESULT" + json.dumps(out))
''')


@pytest.fixture(scope="module")
def plan():
    env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu",
               PYTHONPATH=str(REPO))
    res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    line = next(x for x in res.stdout.splitlines() if x.startswith("RESULT"))
    return json.loads(line[len("RESULT"):])


@pytest.mark.parametrize("layout,shards", [("fsdp", 8), ("fsdp_tp", 8)])
def test_param_and_optimizer_bytes_match_the_analytic_count(plan, layout, shards):
    tr = plan[layout]["train"]
    ideal = plan["num_params"] * 4 / shards  # float32 master weights, fully sharded
    # the norm weights ([L, D] "norm", [L, H] "head_dim") are replicated: a few percent on the tiny model
    assert ideal <= tr["params"] <= 1.05 * ideal
    assert tr["ref_params"] == tr["params"]
    assert abs(tr["opt_state"] - 2 * tr["params"]) <= 16  # AdamW mu + nu (+ int32 counts)
    # XLA's arguments are exactly the sharded inputs: params + AdamW + reference + batch + step
    resident = tr["params"] + tr["opt_state"] + tr["ref_params"] + tr["batch"]
    assert abs(tr["compiled"]["argument"] - resident) <= 64
    # the state is donated: outputs alias the inputs' state
    assert tr["compiled"]["alias"] >= tr["params"] + tr["opt_state"]
    assert tr["compiled"]["temp"] > 0 and tr["compiled"]["peak"] > tr["compiled"]["argument"]


def test_kv_cache_is_split_over_the_eight_devices(plan):
    # 2 x L x rows x tokens x K x H x 2 bytes (bf16): rows over fsdp, KV heads over tp
    assert plan["kv_total"] == 2 * 2 * 8 * 128 * 2 * 16 * 2
    for layout in ("fsdp", "fsdp_tp"):
        d = plan[layout]["decode"]
        assert d["kv_cache"] == plan["kv_total"] // 8
        assert d["compiled"]["argument"] >= d["params"] + d["kv_cache"]
        assert d["compiled"]["alias"] >= d["kv_cache"]  # the cache is donated


def test_layouts_and_remat_compile_with_the_same_resident_state(plan):
    assert plan["fsdp_tp"]["train"]["batch"] == plan["fsdp"]["train"]["batch"]  # 1 row/device x 64 tokens, x4 arrays
    remat = plan["fsdp"]["train_remat"]
    assert remat["remat"] and not plan["fsdp"]["train"]["remat"]
    assert remat["compiled"]["argument"] == plan["fsdp"]["train"]["compiled"]["argument"]
    assert remat["compiled"]["temp"] > 0


def test_max_rollout_rows_fills_the_room_beside_the_train_state(plan):
    from orchestra_jax import memory_plan as mp

    tr, d = plan["fsdp"]["train"], plan["fsdp"]["decode"]
    resident = mp.resident_train_bytes(tr)
    assert resident == tr["params"] + tr["opt_state"] + tr["ref_params"]
    per_row = (d["compiled"]["peak"] - d["params"]) / d["rows"]
    assert per_row >= d["kv_cache"] / d["rows"] > 0  # at least the row's KV cache
    hbm = resident + 100.5 * per_row
    assert mp.max_rollout_rows(hbm, tr, d) == 100
    assert mp.max_rollout_rows(hbm, tr, d, multiple=8) == 96  # whole row shards only
    rows = mp.max_rollout_rows(hbm, tr, d, multiple=8)
    assert resident + rows * per_row <= hbm < resident + (rows + 8) * per_row
    assert mp.max_rollout_rows(resident * 0.5, tr, d) == 0  # no room: the train state alone overflows
