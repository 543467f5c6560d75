"""The pool preset (issue 34 item 4): training over offered subsets of an expert pool, guides by stated rule,
baselines on the offered experts, and the policy rows of `orchestra_gym.evaluation.pools` on a tiny run."""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import gymnasium as gym  # noqa: E402
import pytest  # noqa: E402

import orchestra_gym  # noqa: E402,F401
from orchestra_gym.agents.rules import StatedRuleAgent  # noqa: E402
from orchestra_jax import train  # noqa: E402
from orchestra_jax.policy import RuleGuide, guide, make_envs  # noqa: E402
from orchestra_jax.train_config import TrainConfig  # noqa: E402

from orchestra_gym.evaluation import pools as pb  # noqa: E402
from orchestra_jax.agents import load_policy_agent  # noqa: E402

TINY = {
    "model.overrides": {"vocab_size": 512, "hidden_size": 32, "intermediate_size": 64, "num_layers": 1,
                        "num_heads": 2, "num_kv_heads": 1, "head_dim": 16, "tie_word_embeddings": True},
    "rollout.tasks_per_step": 2, "rollout.rollouts_per_task": 4, "optimizer.micro_batches": 2, "max_steps": 1,
    "sft.steps": 40, "sft.batch_size": 4, "sft.tasks": 16, "evaluation.tasks": 4, "rollout.max_new_tokens": 40,
    "checkpoint.every": 1000, "rollout.tool_workers": 2, "checkpoint.async_save": False, "progress_bar": False,
}


def test_pool_preset_is_the_bench_setting_and_holds_out_experts_schedule_and_preferences():
    cfg = TrainConfig.preset("tiny-toolscale-pool")
    kw = cfg.make_env_kwargs()
    bench = pb.env_kwargs("tradeoffs", "default")
    assert {k: v for k, v in kw.items() if k != "preference"} == bench  # the policy is measured in its own setting
    assert kw["held_out_experts"] == "exclude" and "deepinfra" not in kw["pricing_schedules"]
    assert pb.SETTINGS["unseen-pricing"]["pricing_schedules"] == ["deepinfra"]
    # the pools module states the tradeoffs setting's numbers; the preset must agree with them
    tradeoffs = pb.pool_setting("tradeoffs")
    assert (cfg.env.max_turns, dict(cfg.env.preference)) == (tradeoffs["max_turns"], tradeoffs["default"]) == (
        12, {"outcome": 1.0, "cost": 0.25, "latency": 0.25})
    assert {k: dict(v) for k, v in cfg.env.eval_preferences.items()} == tradeoffs["held_out"]
    train_vecs = [tuple(sorted(p.items())) for p in cfg.env.train_preferences]
    assert not any(tuple(sorted(p.items())) in train_vecs for p in cfg.env.eval_preferences.values())
    assert set(cfg.env.eval_preferences) == {"accuracy first", "cost first", "latency first"}
    assert cfg.rollout.guide_experts == ["most-accurate", "cheapest", "fastest"]
    # the default preset is untouched by the pool preset
    assert "expert_pool" not in TrainConfig.preset("tiny-toolscale").env.kwargs


def test_rule_guides_pin_the_rule_pick_of_each_offer():
    cfg = TrainConfig.preset("tiny-toolscale-pool")
    env = make_envs(cfg, 1)[0]
    for seed, offer in ((0, ["qwen3-8b", "gpt-5", "llama-3.3-70b", "gpt-5-mini"]), (1, ["qwen3-32b", "qwen2.5-math-7b", "gpt-5"])):
        obs, info = env.reset(seed=seed, options={**cfg.reset_options(), "experts": offer})
        for rule in ("most-accurate", "cheapest", "fastest"):
            g = guide(cfg, rule)
            assert isinstance(g, RuleGuide)
            g.reset(env, obs, info)
            ref = StatedRuleAgent(rule)
            ref.reset(env, obs, info)
            text = g.act(obs, info)
            assert f'"expert": "{ref.expert}"' in text and ref.expert in offer
            assert text.startswith("<think>Request kind: ")  # the warm start's thought (sft.state_kind)
    assert guide(cfg, "expert-1").expert_weights == {"expert-1": 1.0}  # names still pin a named expert


@pytest.fixture(scope="module")
def pool_run(tmp_path_factory):
    cfg = TrainConfig.preset("tiny-toolscale-pool").replace(**TINY)
    out = tmp_path_factory.mktemp("pool_run")
    summary = train.run_training(cfg, out)
    return out, cfg, summary


def test_a_pool_run_trains_with_rule_guides_and_is_measured_by_the_pool_bench(pool_run):
    out, cfg, summary = pool_run
    assert summary["steps"] == 1 and summary["config"] == "tiny-toolscale-pool"
    m = pb.orchestration("tradeoffs", 3, router_tasks=20, agent=load_policy_agent(out), checkpoint=out)
    assert m["policy_note"] is None
    for name in pb.SETTINGS:
        pol = m["settings"][name]["policy"]
        assert set(pol) >= {"success", "cost_c", "hull_gap", "dominated_by", "valid_format"}
        assert 0.0 <= pol["success"] <= 1.0 and 0.0 <= pol["valid_format"] <= 1.0
    for p in ("accuracy first", "cost first", "latency first"):
        a = m["adherence"][p]
        assert a["subject"] == "policy" and set(a) >= {"passed", "margin", "stderr", "vs_default", "valid_format"}
    # a run over another pool (or none) gets no policy row, with the reason
    assert pb.policy_note("tradeoffs", out) is None
    assert "trained over expert_pool='tradeoffs'" in pb.policy_note("specialists", out)


def test_pool_run_baselines_are_the_stated_rules(pool_run):
    out, cfg, summary = pool_run
    names = ["most-accurate", "cheapest", "fastest", "random-offered", "cascade"]
    assert all((out / f"baseline_{n}.json").exists() for n in names)
    import json

    b = {n: json.loads((out / f"baseline_{n}.json").read_text()) for n in names}
    assert all(0.0 <= v["success_rate"] <= 1.0 and v["episodes"] == cfg.evaluation.tasks for v in b.values())
    assert b["cheapest"]["mean_cost_usd"] <= b["most-accurate"]["mean_cost_usd"]
