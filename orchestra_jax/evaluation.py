"""The trainer's evaluation: the policy and the fixed-rule baselines on held-out tasks, and the summary of a
set of played trajectories.

- `held_out_tasks(n)`: the evaluation's task ids (ToolScale generator seeds 2^31, 2^31 + 1, ...; training draws
  its tasks from seeds below 2^31).
- `play_tasks(...)`: one rollout of the policy per task, batched over the run's envs (the evaluation of the
  trainer and of `orchestra_jax.agents.evaluate_run`).
- `episode_summary(trajectories)`: success, cost, latency, valid format, tool mix (`orchestra_gym.evaluation
  .rollout_summary` plus the policy's own turn counts).
- `evaluate_policy(...)` and `play_baselines(...)`: DIR/eval_<tag>.json and DIR/baseline_<agent>.json, with
  the tool mix summarised for summary.json (`tool_mix_summary`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from orchestra_gym.agents.rules import RULE_NAMES
from orchestra_gym.evaluation import env_seed, play_episode, rollout_summary
from orchestra_jax.policy import make_envs
from orchestra_jax.rollout import Trajectory, collect_rollouts
from orchestra_jax.run_log import json_safe
from orchestra_jax.train_config import TrainConfig

__all__ = ["eval_file_name", "EVAL_TASK_BASE", "BASELINE_PREFIX", "held_out_tasks", "play_tasks", "episode_summary",
           "tool_mix_summary", "mix_names", "evaluate_policy", "play_baselines"]

EVAL_TASK_BASE = 2**31  # held-out tasks: ToolScale seeds >= 2^31 (training tasks draw seeds < 2^31)

#: the fixed rules on the training plot and in summary.json: always the same expert (`orchestra_gym.agents`)
BASELINE_PREFIX = "expert-"


def held_out_tasks(n: int) -> list[int]:
    """The first `n` held-out task ids of the evaluation (ToolScale generator seeds 2^31, 2^31 + 1, ...;
    training draws its tasks from seeds below 2^31)."""
    return [EVAL_TASK_BASE + i for i in range(n)]


def play_tasks(sampler: Any, tok: Any, envs: list[Any], cfg: TrainConfig, task_ids: list[Any],
               preference: dict[str, Any] | None = None, *, temperature: float | None = None,
               executor: Any = None) -> list[Trajectory]:
    """One rollout of the policy per task, batched over `envs` (len(envs) tasks at a time), at
    `temperature` (default: the run's evaluation.temperature; with its evaluation.top_k / top_p) under
    `preference` (default: the run's); the evaluation of `evaluate_policy` and of
    `orchestra_jax.agents.evaluate_run`. Deterministic under the run's seed: the env seeds of the chunk
    starting at task `start` are (seed + 7 + start) * 1000 + i (`collect_rollouts`)."""
    trajs: list[Trajectory] = []
    for start in range(0, len(task_ids), len(envs)):
        chunk = task_ids[start:start + len(envs)]
        out, _ = collect_rollouts(
            sampler, tok, envs[:len(chunk)], [cfg.reset_options(t, preference) for t in chunk],
            rollouts_per_task=1, seed=cfg.seed + 7 + start, max_new_tokens=cfg.rollout.max_new_tokens,
            max_seq_len=cfg.rollout.max_seq_len, temperature=cfg.evaluation.temperature if temperature is None else temperature,
            top_k=cfg.evaluation.top_k, top_p=cfg.evaluation.top_p, max_turns=cfg.env.max_turns, executor=executor,
        )
        trajs += out
    return trajs


def episode_summary(trajs: list[Trajectory]) -> dict[str, Any]:
    """success rate, cost per solved task (USD), mean cost (USD) and latency (s), valid-format rate,
    tool-call mix (calls per episode), cut and invalid counts (`orchestra_gym.evaluation.rollout_summary`),
    plus ``valid_call_rate``: the share of the policy's turns that parse as an action and whose calls fit
    their tools' schemas (1 - (invalid turns + turns with an argument error) / turns; env
    ``info["argument_error_turns"]``), beside ``valid_format_rate`` (parsing only, what the training
    guard reads), and ``argument_error_turns`` (per episode). ``turns_per_episode`` counts the env's
    turns (``info["turn"]``, what ``max_turns`` limits; an expert's extra actions in ``expert_scope="turn"``
    included), ``policy_turns_per_episode`` the policy's own generations."""
    s = rollout_summary([t.info for t in trajs], turns=[t.turns for t in trajs],
                        invalid_turns=[t.invalid_turns for t in trajs], cut=[t.cut for t in trajs])
    # turns as the env counts them (info["turn"]: what max_turns limits, and what `orchestra eval` reports
    # as mean_turns: with expert_scope="turn" one policy turn is several env turns), the policy's own apart
    s["policy_turns_per_episode"] = s["turns_per_episode"]
    s["turns_per_episode"] = sum(float(t.info.get("turn", 0.0)) for t in trajs) / max(len(trajs), 1)
    arg_turns = [float(t.info.get("argument_error_turns", 0.0)) for t in trajs]
    total_turns = sum(t.turns for t in trajs)
    s["valid_call_rate"] = 1.0 - (sum(t.invalid_turns for t in trajs) + sum(arg_turns)) / max(total_turns, 1)
    s["argument_error_turns"] = sum(arg_turns) / max(len(trajs), 1)
    return s


def tool_mix_summary(mix: dict[str, float], models: list[str], aggregates: list[str]) -> dict[str, float]:
    """A tool mix (calls per episode) as a newcomer reads it: each model's calls (the experts, in the
    env's reward-layout order) and ``domain_calls``, the calls of every other tool together (the
    policy's and those an expert made for it). The aggregate model tools (``call_expert``: the sum of
    the expert counts) are left out."""
    out = {m: float(mix.get(m, 0.0)) for m in models}
    out["domain_calls"] = float(sum(v for k, v in mix.items() if k not in out and k not in aggregates))
    return out


def eval_file_name(tag: str) -> str:
    """The file an evaluation tagged `tag` is written to: ``eval_<tag>.json`` with every run of
    characters other than letters, digits, ``.``, ``-`` and ``_`` made one ``_`` (a preference named
    ``accuracy first`` gives ``eval_final_accuracy_first.json``: no spaces in written file names)."""
    return "eval_" + re.sub(r"[^A-Za-z0-9._-]+", "_", tag) + ".json"


def mix_names(env: Any) -> tuple[list[str], list[str]]:
    """(models, aggregate model tools) of an env after a reset: its reward layout's tools and its
    ``kind="model"`` tool names."""
    d = env.unwrapped.describe()
    return list(d.reward_layout.tools), [s.name for s in d.tools if s.kind == "model"]


def _summarised(s: dict[str, Any], env: Any, path: Path) -> dict[str, Any]:
    """Write `s` (with its whole tool mix, as ``tool_mix_by_tool``) to `path`; return it with the mix
    summarised (`tool_mix_summary`, names from `env`) for summary.json."""
    models, aggregates = mix_names(env)
    full = dict(s["tool_mix"])
    s["tool_mix"] = tool_mix_summary(full, models, aggregates)
    path.write_text(json.dumps(json_safe({**s, "tool_mix_by_tool": full}), indent=1))
    return s


def evaluate_policy(sampler: Any, tok: Any, envs: list[Any], cfg: TrainConfig, n_tasks: int, tag: str,
                    run_dir: Path, preference: dict[str, Any] | None = None, *, executor: Any = None) -> dict[str, Any]:
    """Rollouts at evaluation.temperature (top_k, top_p) on `n_tasks` held-out tasks (seeds >= 2^31), one
    each, under `preference` (default: the run's); writes DIR/eval_<tag>.json and returns its
    `episode_summary` (with ``tag`` and ``preference``; the tool mix summarised)."""
    trajs = play_tasks(sampler, tok, envs, cfg, held_out_tasks(n_tasks), preference, executor=executor)
    s = episode_summary(trajs)
    s["tag"] = tag
    s["preference"] = dict(preference if preference is not None else cfg.env.preference)
    return _summarised(s, envs[0], Path(run_dir) / eval_file_name(tag))


def play_baselines(cfg: TrainConfig, n_tasks: int, run_dir: Path, envs: list[Any],
                   preference: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The fixed rules on the held-out tasks of `evaluate_policy`, in the run's setting (env kwargs, reset
    options, preference, and each task's env seed as `play_tasks` gives it over the run's `envs`, whose first
    names the tool mix's models; played on a fresh env of the run): each expert
    of the env called for every turn (``expert-<k>`` agents of `orchestra_gym.agents`), or over an expert
    pool the rules on the offered experts' stated properties and the cheapest-first cascade, one episode
    per task. Writes DIR/baseline_<agent>.json; returns agent -> its summary (as `evaluate_policy`'s:
    success_rate, mean_cost_usd (USD), mean_latency_s (s), turns_per_episode, tool_mix...)."""
    from orchestra_gym.agents import make_agent

    env = make_envs(cfg, 1)[0]
    out: dict[str, dict[str, Any]] = {}
    try:
        env.reset(seed=0, options=cfg.reset_options(held_out_tasks(1)[0], preference))
        names = ([m for m in env.unwrapped.reward_layout.tools if m.startswith(BASELINE_PREFIX)]
                 if env.unwrapped.describe().expert_pool is None else list(RULE_NAMES) + ["cascade"])
        for name in names:
            infos = []
            for i, task in enumerate(held_out_tasks(n_tasks)):
                start = i - i % len(envs)  # the env seed `play_tasks` gives task i: same draws
                infos.append(play_episode(env, make_agent(name, cfg.seed + i), env_seed(cfg.seed + 7 + start, i - start),
                                          cfg.reset_options(task, preference)).info)
            s = rollout_summary(infos)
            s.update(agent=name, tag=f"baseline_{name}",
                     preference=dict(preference if preference is not None else cfg.env.preference))
            out[name] = _summarised(s, envs[0], Path(run_dir) / f"baseline_{name}.json")
    finally:
        env.close()
    return out
