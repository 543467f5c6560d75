"""The smollm2-toolscale-pool preset's code path (issue 51 item 4) on a tiny random model: warm start and GRPO
with only the top layer trained, the table offer and preferences in words. 40 warm-start steps at the tiny preset's
learning rate and an untied LM head (trained with the top layer), so that the policy ends its turns (a GRPO step whose sampled turns are all cut at max_new_tokens has
no reward layout to build a batch with: orchestra_jax.rollout._assemble)."""

from __future__ import annotations

import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

from orchestra_jax import train  # noqa: E402
from orchestra_jax.train_config import TrainConfig  # noqa: E402

TINY = {
    "model.hf_checkpoint": "", "model.tokenizer": "toolscale-bpe", "model.preset": "tiny",
    "model.overrides": {"vocab_size": 512, "hidden_size": 32, "intermediate_size": 64, "num_layers": 2,
                        "num_heads": 2, "num_kv_heads": 1, "head_dim": 16, "tie_word_embeddings": False, "remat": True},
    "model.trainable": "top:1",
    "rollout.tasks_per_step": 2, "rollout.rollouts_per_task": 4, "optimizer.micro_batches": 2, "max_steps": 1,
    "sft.steps": 40, "sft.batch_size": 4, "sft.tasks": 16, "sft.learning_rate": 1e-2, "evaluation.tasks": 2,
    "checkpoint.every": 1000, "rollout.tool_workers": 1, "checkpoint.async_save": False, "progress_bar": False,
}


def test_preset_holds_out_what_the_pool_preset_holds_out_and_trains_a_part():
    cfg = TrainConfig.preset("smollm2-toolscale-pool")
    pool = TrainConfig.preset("tiny-toolscale-pool")
    kw, pool_kw = cfg.make_env_kwargs(), pool.make_env_kwargs()
    assert kw["offer_format"] == "table" and kw["preference_form"] == "text"
    assert {k: v for k, v in kw.items() if k not in ("offer_format", "preference_form")} == pool_kw
    assert kw["held_out_experts"] == "exclude" and "deepinfra" not in kw["pricing_schedules"]
    assert cfg.env.eval_preferences == pool.env.eval_preferences
    assert cfg.model.hf_checkpoint == "smollm2-135m-instruct" and cfg.model.tokenizer == "checkpoint"
    assert cfg.model.trainable == "top:4" and cfg.sft.steps > 0 and cfg.max_steps > 0
    # the main job's presets keep training everything
    assert TrainConfig.preset("tiny-toolscale").model.trainable == "all"


def test_preset_code_path_runs_sft_and_grpo_on_a_tiny_model(tmp_path):
    cfg = TrainConfig.preset("smollm2-toolscale-pool").replace(**TINY)
    summary = train.run_training(cfg, tmp_path)
    assert summary["steps"] == 1 and summary["config"] == "smollm2-toolscale-pool"
    logs = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    sft = [r for r in logs if r.get("phase") == "sft"]
    assert len(sft) == 40 and all(np.isfinite(r["nll"]) and r["grad_norm"] > 0 for r in sft)
    assert any(r.get("phase") == "grpo" for r in logs)
