"""Tests of orchestra_jax.batch: trajectories -> the GRPO batch (rewards, filters, advantages, padding)."""

from __future__ import annotations

import numpy as np
import pytest

from orchestra_jax import batch as batch_mod
from orchestra_jax.rollout import Trajectory
from orchestra_jax.train_config import TrainConfig

NAMES = ["calls/expert-1", "calls/expert-2", "outcome", "cost", "latency"]


def _traj(n_tokens: int, calls: tuple[float, float], solved: bool, cost: float, terminated: bool = True) -> Trajectory:
    vec = [*calls, float(solved), -cost, -1.0]
    return Trajectory(tokens=list(range(1, n_tokens + 1)), loss_mask=[0.0, 0.0] + [1.0] * (n_tokens - 2),
                      sampler_logp=[0.0, 0.0] + [-0.5] * (n_tokens - 2), terminated=terminated,
                      info={"reward_vector": vec, "reward_vector_names": NAMES, "solved": solved,
                            "outcome": float(solved)})


def test_preference_vector_follows_the_reward_vector_names():
    p = batch_mod.preference_vector({"outcome": 1.0, "cost": 0.5, "latency": 0.0, "tools": {"expert-2": 0.5}}, NAMES)
    np.testing.assert_array_equal(p, [0.0, 0.5, 1.0, 0.5, 0.0])


def test_grpo_batch_rewards_filters_advantages_and_masks():
    cfg = TrainConfig.preset("tiny-toolscale", rollouts_per_task=4, pad_multiple=16)
    group_a = [_traj(5, (1, 0), True, 0.01), _traj(6, (0, 1), True, 0.02), _traj(7, (1, 0), False, 0.01),
               _traj(5, (0, 1), True, 0.03, terminated=False)]  # no final answer: out of the loss
    group_b = [_traj(4, (1, 0), False, 0.01) for _ in range(4)]  # all unsolved: reward std 0, dropped
    trajs = group_a + group_b
    pref = batch_mod.preference_vector(cfg.preference, NAMES)
    batch, stats = batch_mod.grpo_batch(trajs, cfg, pref)

    rewards = batch_mod.group_rewards(trajs, 4, pref)
    assert rewards[0, 2] == 0.0 and (rewards[1] == 0.0).all()  # unsolved rollouts get R = 0
    assert stats["reward_mean"] == pytest.approx(float(rewards.mean()))
    assert (stats["groups_total"], stats["groups_low_std"], stats["rollouts_no_answer"]) == (2, 1, 1)
    assert stats["rollouts_kept"] == 3
    assert batch["tokens"].shape == (8, 16) and batch["advantages"].shape == (8,)
    r = rewards[0]
    adv = np.clip((r - r.mean()) / (r.std(ddof=1) + cfg.adv_eps), -3, 3)
    np.testing.assert_allclose(batch["advantages"][:3], adv[:3], rtol=1e-6)
    assert (batch["advantages"][3:] == 0).all()
    kept = batch["loss_mask"].sum(axis=1)
    np.testing.assert_array_equal(kept, [3, 4, 5, 0, 0, 0, 0, 0])  # filtered rollouts leave the loss
    np.testing.assert_array_equal(batch["attention_mask"].sum(axis=1), [5, 6, 7, 5, 4, 4, 4, 4])

    outcome, _ = batch_mod.grpo_batch(trajs, cfg, None)  # no preference vector: the outcome is the reward
    np.testing.assert_array_equal(outcome["loss_mask"].sum(axis=1), [3, 4, 5, 0, 0, 0, 0, 0])
