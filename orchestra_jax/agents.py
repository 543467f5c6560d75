"""A trained orchestrator checkpoint as an `orchestra_gym.agents` agent (``reset`` / ``act``).

`load_policy_agent(run_dir)` rebuilds the policy of an `orchestra train` run from what the run wrote:
``train_config.json`` (the `TrainConfig`), ``tokenizer.json`` (or the offline Qwen3 tokenizer; both
through `orchestra_jax.policy`, as the run built them) and the parameters of the newest orbax
checkpoint under ``checkpoints/grpo`` (else ``checkpoints/sft``), read with `orchestra_jax.checkpoint`'s
public `latest` / `restore_params` (no optimizer is built). The agent then plays any
Gymnasium loop (`orchestra eval`-style scripts, `benchmarks/bench_agents.py --checkpoint DIR`) the way
`orchestra_jax.rollout.collect_rollouts` plays during training: the same ChatML blocks tokenized on their
own, the sampler's KV cache carried across turns (earlier turns are never re-rendered), the assistant text
decoded without its EOS. One episode at a time (batch 1).

The policy only knows the environment it was trained on: `PolicyAgent.env_id`, `env_kwargs` and
`reset_options` (tools exposed, preference) say how to make and reset that environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from orchestra_gym.errors import ResetNeeded
from orchestra_jax.model import Qwen3
from orchestra_jax.evaluation import play_tasks
from orchestra_jax.policy import make_envs, run_setting
from orchestra_jax.rollout import env_reply_ids
from orchestra_jax.runs import load_run
from orchestra_jax.sampler import Sampler
from orchestra_jax.tokenizer import ChatTokenizer

__all__ = ["PolicyAgent", "load_policy_agent", "evaluate_run", "policy_agent_factory"]


class PolicyAgent:
    """An orchestrator policy acting in an orchestra_gym env (the `orchestra_gym.agents.Agent` protocol).

    Args:
      model: the `orchestra_jax.model.Qwen3` policy (weights as trained).
      tokenizer: the run's `orchestra_jax.tokenizer.ChatTokenizer`.
      max_new_tokens: tokens per assistant turn (the run's ``max_new_tokens``).
      max_seq_len: tokens per episode (prompt + all turns); the sampler's cache holds this many plus
        the padding of its length buckets.
      temperature: 0 = greedy (default); > 0 samples with PRNG keys from (seed, episode seed, turn): the
        episode seed is the one the env was reset with (``env.unwrapped.np_random_seed``), so an episode's
        text depends only on its own seed, never on the episodes played before it (a resumed
        ``orchestra eval`` equals the uninterrupted run); an env reset without a seed falls back on the
        agent's episode count.
      top_k, top_p: keep the k most likely ids (0 = off) / the nucleus of mass p (1 = off) when sampling.
      seed: sampling seed.
      env_id, env_kwargs, reset_options: the training environment (informational; see the module doc).

    `act` returns the policy's text for the turn (a tool call when the policy writes one; anything else
    is the env's parse error and penalty, as in training). When the episode outgrows `max_seq_len`
    the agent returns an empty action, which the env counts as a format error. A turn cut by
    `max_new_tokens` (no EOS; training ends such an episode) is sent as is, and ``<|im_end|>`` is fed
    before the next environment block.
    """

    name = "trained"

    def __init__(self, model: Qwen3, tokenizer: ChatTokenizer, *, max_new_tokens: int, max_seq_len: int,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0, env_id: str = "",
                 env_kwargs: dict[str, Any] | None = None, reset_options: dict[str, Any] | None = None):
        if max_new_tokens < 1 or max_seq_len <= max_new_tokens:
            raise ValueError(f"need 1 <= max_new_tokens < max_seq_len, got {max_new_tokens} and {max_seq_len}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
        if top_k < 0 or not 0 < top_p <= 1:
            raise ValueError(f"top_k must be >= 0 (0 = off) and top_p in (0, 1] (1 = off); got {top_k}, {top_p}")
        self.tok = tokenizer
        self.max_new_tokens = int(max_new_tokens)
        self.max_seq_len = int(max_seq_len)
        self.temperature = float(temperature)
        self.top_k = int(top_k)
        self.top_p = float(top_p)
        self.seed = int(seed)
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.reset_options = dict(reset_options or {})
        self.sampler = Sampler(model, eos_ids=tokenizer.eos_ids, max_cache_len=2 * self.max_seq_len,
                               pad_id=tokenizer.pad_id)
        self.episodes = 0
        self._state = None
        self._episode_key = 0
        self._length = 0
        self._turn = 0
        self._open = False

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        """Start an episode: tokenize the env's first messages (system prompt, user) and prefill."""
        prompt = self.tok.encode(self.tok.render_messages(info.get("new_messages", [])))
        if len(prompt) + self.max_new_tokens > self.max_seq_len:
            raise ValueError(f"the env's prompt has {len(prompt)} tokens; with max_new_tokens={self.max_new_tokens} "
                             f"it exceeds max_seq_len={self.max_seq_len} (was the policy trained on this env?)")
        self._state = self.sampler.prefill([prompt])
        self._length = len(prompt)
        self._turn = 0
        self._open = False
        self.episodes += 1
        seed = getattr(getattr(env, "unwrapped", env), "np_random_seed", None)
        self._episode_key = int(seed) if isinstance(seed, int) and seed >= 0 else self.episodes

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """The next assistant turn's text (the env's new messages since the last turn are fed first).

        Raises: `orchestra_gym.errors.ResetNeeded` (Gymnasium's) before `reset`."""
        if self._state is None:
            raise ResetNeeded("PolicyAgent.act called before reset: call reset(env, observation, info) first")
        if self._turn > 0:
            env_ids = env_reply_ids(self.tok, info)
            if self._open:  # the last turn hit max_new_tokens without EOS: close it so the chat stays ChatML
                env_ids = [self.tok.im_end_id] + env_ids
            if self._length + len(env_ids) + self.max_new_tokens > self.max_seq_len:
                return ""
            self._state = self.sampler.extend(self._state, [env_ids])
            self._length += len(env_ids)
        rng = int(np.random.default_rng([self.seed, self._episode_key, self._turn]).integers(0, 2**31))
        self._state, out = self.sampler.generate(self._state, max_new_tokens=self.max_new_tokens,
                                                 temperature=self.temperature, top_k=self.top_k, top_p=self.top_p,
                                                 rng=rng, active=[True])
        ids = list(out.tokens[0])
        self._length += len(ids)
        self._turn += 1
        finished = bool(ids) and ids[-1] in self.tok.eos_ids
        self._open = not finished
        return self.tok.decode(ids[:-1] if finished else ids)


def load_policy_agent(run_dir: str | Path, *, phase: str | None = None, step: int | None = None,
                      temperature: float | None = None, seed: int = 0) -> PolicyAgent:
    """A `PolicyAgent` from an `orchestra train` output folder.

    Args:
      run_dir: the run's ``--output-dir`` (holds train_config.json, the tokenizer, checkpoints/).
      phase: "grpo" or "sft"; default: grpo when it has a checkpoint, else sft.
      step: checkpoint step (default: the newest finalized one).
      temperature: sampling temperature (default: the run's ``evaluation.temperature``); top-k / top-p are the
        run's ``evaluation.top_k`` / ``evaluation.top_p``.
      seed: sampling seed.

    Raises:
      FileNotFoundError: no train_config.json or no finalized checkpoint (the message names the folder).
      ValueError: an unknown phase.
    """
    cfg, tok, model = load_run(run_dir, phase, step)
    setting = run_setting(cfg)
    return PolicyAgent(
        model, tok, max_new_tokens=cfg.rollout.max_new_tokens, max_seq_len=cfg.rollout.max_seq_len,
        temperature=cfg.evaluation.temperature if temperature is None else temperature, top_k=cfg.evaluation.top_k,
        top_p=cfg.evaluation.top_p, seed=seed, env_id=setting.env_id,
        env_kwargs=setting.env_kwargs, reset_options=setting.reset_options,
    )


def evaluate_run(run_dir: str | Path, task_ids: list[Any], *, preference: dict[str, Any] | None = None,
                 phase: str | None = None, step: int | None = None, temperature: float | None = None,
                 batch: int = 32) -> list[Any]:
    """The trained policy of a run on `task_ids`, one rollout each, batched `batch` episodes at a time
    through the trainer's own evaluation path (`orchestra_jax.evaluation.play_tasks`: the same sampler,
    rendering and env setting as training; much faster than `PolicyAgent`'s one episode at a time).

    Args:
      run_dir, phase, step: as `load_policy_agent`.
      task_ids: the tasks (ToolScale: generator seeds; `orchestra_jax.evaluation.held_out_tasks(n)` are the
        run's own held-out evaluation tasks).
      preference: the preference vector of every episode (default: the run's).
      temperature: default the run's evaluation.temperature.

    Returns:
      One `orchestra_jax.rollout.Trajectory` per task (``.info`` is the episode's last info), in order.

    Raises: as `load_policy_agent`.
    """
    from concurrent.futures import ThreadPoolExecutor

    cfg, tok, model = load_run(run_dir, phase, step)
    sampler = Sampler(model, eos_ids=tok.eos_ids, max_cache_len=3 * cfg.rollout.max_seq_len, pad_id=tok.pad_id)
    envs = make_envs(cfg, min(batch, max(len(task_ids), 1)))
    with ThreadPoolExecutor(max_workers=cfg.rollout.tool_workers) as pool:
        return play_tasks(sampler, tok, envs, cfg, list(task_ids), preference, temperature=temperature,
                          executor=pool)


def policy_agent_factory(run_dir: str, seed: int = 0, models: Any = None) -> Any:
    """The ``policy:<run dir>`` agent spec of `orchestra eval`: an `orchestra_gym.agents.AgentFactory`
    holding one `load_policy_agent(run_dir, seed=seed)` agent (the run's ``evaluation.temperature``) for every
    episode, with the run's setting (``env_id``, ``env_kwargs``, ``reset_options``) as the default the CLI
    plays in, as ``benchmarks/bench_agents.py --checkpoint`` does. `models` is unused (the policy is local).
    A run folder without ``orchestra_setting.json`` (trained before runs wrote it) gets it here, so that
    ``orchestra eval --setting-of RUN_DIR`` can read it.

    Raises:
      FileNotFoundError / ValueError: as `load_policy_agent`.
    """
    from orchestra_gym.agents import AgentFactory
    from orchestra_gym.setting import SETTING_FILE, Setting

    agent = load_policy_agent(run_dir, seed=seed)
    if not (Path(run_dir) / SETTING_FILE).exists():
        Setting(agent.env_id, dict(agent.env_kwargs), dict(agent.reset_options)).write(run_dir)
    return AgentFactory(f"policy:{run_dir}", lambda i: agent, env_id=agent.env_id, env_kwargs=dict(agent.env_kwargs),
                        reset_options=dict(agent.reset_options))
