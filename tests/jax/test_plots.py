"""issue 37: what a newcomer reads of a training run -- the summary's turn count and tool mix, and the
numbers training.png / tool_mix.png draw (smoothed beside raw, held-out points, fixed-rule baselines, no
aggregate ``call_expert`` bar). Plot data, not pixels."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import pytest

import orchestra_gym  # noqa: F401  (registers the envs)
from orchestra_gym.agents import make_agent
from orchestra_jax.plots import smooth, tool_mix_plot_data, training_plot_data, write_plots
from orchestra_jax.rollout import Trajectory
from orchestra_jax.evaluation import episode_summary, mix_names, tool_mix_summary

MIX = {"call_expert": 1.0, "expert-1": 0.25, "expert-2": 0.25, "expert-3": 0.5, "get_order": 2.0, "cancel": 1.5}


def _episode(agent: str, seed: int, first=None):
    """An episode of the training setting (expert_scope="turn", call_expert only), with its final info."""
    env = gym.make("ToolOrchestra-ToolScale-v0", expert_scope="turn", max_errors=1, max_turns=6,
                   system_prompt="compact")
    opts = {"tools": ["call_expert"], "preference": {"outcome": 1.0, "cost": 0.5, "latency": 0.0}}
    obs, info = env.reset(seed=seed, options=opts)
    a = make_agent(agent, seed)
    a.reset(env, obs, info)
    steps = 0
    while True:
        action = first if (first is not None and steps == 0) else a.act(obs, info)
        obs, _, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            return env, info, steps


def test_turns_per_episode_counts_the_env_turns_and_the_policy_turns_apart():
    env, info, steps = _episode("expert-2", 5)
    assert steps == 1 and info["turn"] > 1  # one policy turn; the expert's actions are env turns
    t = Trajectory([], [], [], info, turns=steps)
    s = episode_summary([t, t])
    assert s["policy_turns_per_episode"] == 1.0
    assert s["turns_per_episode"] == info["turn"] > 1.0


def test_valid_call_rate_sees_an_argument_error():
    _, info, steps = _episode("expert-2", 5, first={"name": "call_expert", "arguments": {"model": "expert-2"}})
    assert info["argument_error_turns"] == 1.0 and info["parse_errors"] == 0.0
    bad = Trajectory([], [], [], info, turns=steps)
    _, good_info, good_steps = _episode("expert-2", 5)
    good = Trajectory([], [], [], good_info, turns=good_steps)
    s = episode_summary([bad, good])
    assert s["valid_format_rate"] == 1.0  # parsing only (what the training guard reads) is unchanged
    assert s["valid_call_rate"] == pytest.approx(1.0 - 1.0 / (steps + good_steps))
    assert s["argument_error_turns"] == 0.5


def test_tool_mix_summary_lists_experts_and_domain_calls_without_the_aggregate():
    env, _, _ = _episode("expert-1", 0)
    models, aggregates = mix_names(env)
    assert (models, aggregates) == (["expert-1", "expert-2", "expert-3"], ["call_expert"])
    out = tool_mix_summary(MIX, models, aggregates)
    assert out == {"expert-1": 0.25, "expert-2": 0.25, "expert-3": 0.5, "domain_calls": 3.5}


def _run_dir(tmp_path, rewards):
    (tmp_path / "metrics.jsonl").write_text("\n".join(
        [json.dumps({"phase": "sft", "step": 1, "nll": 2.0})]
        + [json.dumps({"phase": "grpo", "step": i + 1, "reward_mean": r, "success_rate": r / 2,
                       "mean_cost_usd": 0.01, "mean_latency_s": 20.0}) for i, r in enumerate(rewards)]) + "\n")
    return tmp_path


def test_training_plot_data_has_smoothed_held_out_and_baselines(tmp_path):
    rewards = [float(i % 2) for i in range(20)]  # 0, 1, 0, 1, ...: raw noise, smoothed 0.5
    run = _run_dir(tmp_path, rewards)
    initial = {"success_rate": 0.6, "mean_cost_usd": 0.02, "mean_latency_s": 30.0}
    final = {"success_rate": 0.8, "mean_cost_usd": 0.01, "mean_latency_s": 25.0}
    baselines = {"expert-1": {"success_rate": 0.9, "mean_cost_usd": 0.04, "mean_latency_s": 80.0},
                 "expert-3": {"success_rate": 0.5, "mean_cost_usd": 0.002, "mean_latency_s": 9.0}}
    d = training_plot_data(run, initial, final, baselines)
    assert d["steps"] == list(range(1, 21)) and d["window"] == 2
    reward, success, cost, latency = d["panels"]
    assert reward["raw"] == rewards and reward["smoothed"][1:] == [0.5] * 19
    assert reward["held_out"] == [] and reward["baselines"] == {}
    assert success["held_out"] == [(0, 0.6), (20, 0.8)]
    assert success["baselines"] == {"expert-1": 0.9, "expert-3": 0.5}
    assert cost["baselines"] == {"expert-1": 0.04, "expert-3": 0.002} and latency["held_out"] == [(0, 30.0), (20, 25.0)]
    mix = tool_mix_plot_data({"tool_mix": tool_mix_summary(MIX, ["expert-1", "expert-2", "expert-3"], ["call_expert"])},
                             {"tool_mix": {"expert-1": 0.0, "expert-2": 0.1, "expert-3": 0.9, "domain_calls": 4.0,
                                           "call_expert": 1.0}})
    assert mix == {"keys": ["expert-1", "expert-2", "expert-3"], "before": [0.25, 0.25, 0.5], "after": [0.0, 0.1, 0.9],
                   "domain_calls": (3.5, 4.0)}
    files = write_plots(run, {**initial, "tool_mix": MIX}, {**final, "tool_mix": MIX}, baselines)
    assert files == ["plots/training.png", "plots/tool_mix.png"] and all((run / f).stat().st_size > 0 for f in files)


def test_smooth():
    assert smooth([1.0, 3.0, 5.0, float("nan"), 7.0], 2) == [1.0, 2.0, 4.0, 5.0, 7.0]
    assert math.isnan(smooth([float("nan")], 3)[0])
