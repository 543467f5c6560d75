"""`orchestra_gym.evaluation.play_episode` (the one whole-episode loop) and `env_seed` (the one seed scheme)."""

from __future__ import annotations

import threading

import gymnasium as gym
import pytest

import orchestra_gym  # noqa: F401
from orchestra_gym.agents import make_agent
from orchestra_gym.evaluation import EpisodeAbandoned, env_seed, play_episode, run_episodes

TOOLSCALE = "ToolOrchestra-ToolScale-v0"


def test_play_episode_is_the_runners_episode():
    env = gym.make(TOOLSCALE)
    mine = [play_episode(env, make_agent("cascade", seed=i), 40 + i, {"tools": ["call_expert"]}, trial=0) for i in range(4)]
    runner = run_episodes(lambda: gym.make(TOOLSCALE), lambda s: make_agent("cascade", seed=s - 40), 4, seed=40,
                          options={"tools": ["call_expert"]}, progress=False)
    assert [r.seed for r in mine] == [r.seed for r in runner] == [40, 41, 42, 43]
    for a, b in zip(mine, runner):
        assert (a.task_id, a.steps, a.info["outcome"], a.info["episode_cost_usd"]) == (
            b.task_id, b.steps, b.info["outcome"], b.info["episode_cost_usd"])
        assert a.steps == a.info["turn"] >= 1 and a.infra_error is None and a.messages is None
    kept = play_episode(env, make_agent("oracle"), 7, keep_messages=True)
    assert kept.solved and kept.messages[0]["role"] == "system" and kept.task_id == env.unwrapped.task.id


def test_play_episode_stops_between_steps_when_asked():
    stop = threading.Event()
    stop.set()
    with pytest.raises(EpisodeAbandoned):
        play_episode(gym.make(TOOLSCALE), make_agent("oracle"), 0, stop=stop)


def test_env_seed_is_the_rollouts_scheme():
    assert env_seed(7, 3) == 7003 and env_seed(0, 0) == 0 and env_seed(2**30, 999) == 2**30 * 1000 + 999
    for bad in (-1, 1000):
        with pytest.raises(ValueError, match="must be in"):
            env_seed(5, bad)
