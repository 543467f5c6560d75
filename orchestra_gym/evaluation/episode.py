"""One played episode: `play_episode` (the one whole-episode loop of the project) and `env_seed` (the one
seed scheme of batched episodes).

`play_episode(env, agent, seed, options)` resets the env, lets the agent act until the env ends the episode
(or a step reports an infrastructure failure), and returns the `EpisodeResult`: the record of one played
episode that the eval runner (`orchestra_gym.evaluation.runner.run_episodes`), the trainer's baselines and
every benchmark keep. Loops that need per-turn control (the trainer's batched rollouts, which step many envs
between sampler calls) drive ``env.step`` themselves.
"""

from __future__ import annotations

import threading
from typing import Any

import gymnasium as gym

from orchestra_gym.errors import OrchestraError
from orchestra_gym.agents import Agent
from orchestra_gym.evaluation.infra import infra_error_of
from orchestra_gym.evaluation.records import EpisodeResult

__all__ = ["play_episode", "env_seed", "EpisodeAbandoned", "SEED_STRIDE"]

#: Episodes per base seed in `env_seed`: episode i of a batch with base seed s resets with s * SEED_STRIDE + i.
SEED_STRIDE = 1000


def env_seed(base: int, index: int) -> int:
    """The env seed of episode (or group) `index` of a batch whose base seed is `base`:
    ``base * 1000 + index`` (`SEED_STRIDE`). The trainer's rollouts reset group i of a step with
    ``env_seed(step seed, i)`` (its guided rollouts too, so they see the same draws), and its baselines
    replay the env seeds of `orchestra_jax` evaluation chunks with it.

    Raises:
        ValueError: `index` outside [0, 1000) (it would reach the next base seed's episodes).
    """
    if not 0 <= int(index) < SEED_STRIDE:
        raise ValueError(f"episode index {index} must be in [0, {SEED_STRIDE}) for env_seed")
    return int(base) * SEED_STRIDE + int(index)


class EpisodeAbandoned(OrchestraError):
    """`play_episode` was asked to stop (its ``stop`` event set) between two steps; the episode is dropped."""


def play_episode(env: gym.Env, agent: Agent, seed: int | None, options: dict[str, Any] | None = None, *,
                 trial: int = 0, keep_messages: bool = False, stop: threading.Event | None = None) -> EpisodeResult:
    """Play one episode: ``env.reset(seed=seed, options=options)``, ``agent.reset(env, observation, info)``, then
    ``env.step(agent.act(observation, info))`` until terminated or truncated (the env's own turn and error
    limits end every episode), or until a step reports an infrastructure failure (`infra_error_of`), which
    stops it there.

    Args:
        env: an orchestra env (or `orchestra_gym.serving.client.RemoteEnv`), possibly wrapped.
        agent: ``reset`` / ``act`` (`orchestra_gym.agents.Agent`).
        seed: the reset seed; options: the reset options (task_id, preference, tools...).
        trial: recorded in the result (pass^k trials).
        keep_messages: keep the transcript (``env.unwrapped.messages`` as dicts) in the result.
        stop: an event checked before each step; set: `EpisodeAbandoned`.

    Returns:
        `EpisodeResult`: task id, trial, seed, the final ``info``, steps taken, messages (or None), the
        infrastructure error (or None).

    Raises:
        EpisodeAbandoned: `stop` was set. Whatever the env or the agent raise (the runner retries
        `orchestra_gym.evaluation.runner.INFRA_EXCEPTIONS`).
    """
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(env, obs, info)
    steps, done, infra = 0, False, None
    while not done and infra is None:
        if stop is not None and stop.is_set():
            raise EpisodeAbandoned
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        steps += 1
        done = terminated or truncated
        infra = infra_error_of(info)
    u = env.unwrapped
    messages = [m.to_dict() for m in u.messages] if keep_messages else None
    task_id = u.task.id if u.task is not None else None
    return EpisodeResult(task_id, trial, seed, info, steps, messages, infra)
