"""Bounded-staleness asynchronous GRPO (`grpo.max_staleness`, issue 36 item 3): with 0 the trainer is
bit-identical to the synchronous one of before (digests pinned on main before the change)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("orchestra_jax.model", reason="the Qwen3 policy (issue 6) is not merged yet")

from orchestra_jax import train  # noqa: E402
from tests.jax.test_train import _cfg  # noqa: E402


def test_max_staleness_0_is_the_synchronous_trainer(tmp_path):
    cfg = _cfg(tmp_path, max_steps=2, guard={"enabled": False}, **{"env.max_turns": 4, "grpo.reward": "outcome"},
               rollout={"rollouts_per_task": 4, "guide_experts": ["expert-1", "expert-2", "expert-3"], "max_new_tokens": 40})
    summary = train.run_training(cfg)
    recs = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["updates"] for r in recs if r["phase"] == "grpo"] == [0, 2]  # step 2 trains (2 mini-batches)
    assert summary["params_sha256"] == "98d4f13bd69df5adcc83efe6d65a7e2ea5d530eee90468a691ae11739739fd19"
