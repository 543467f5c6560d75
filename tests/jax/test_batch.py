"""Tests of orchestra_jax.batch: trajectories -> the GRPO batch (rewards, filters, advantages, padding)."""

from __future__ import annotations

import numpy as np
import pytest

from orchestra_jax import batch as batch_mod
from orchestra_jax.rollout import Trajectory
from orchestra_jax.train_config import TrainConfig

NAMES = ["calls/expert-1", "calls/expert-2", "outcome", "-cost_usd", "-latency_s"]


def _traj(n_tokens: int, calls: tuple[float, float], solved: bool, cost: float, terminated: bool = True,
          answered: "bool | None" = None) -> Trajectory:
    vec = [*calls, float(solved), -cost, -1.0]
    info = {"reward_vector": vec, "reward_vector_names": NAMES, "solved": solved, "outcome": float(solved)}
    if answered is not None:
        info["answered"] = answered
    return Trajectory(tokens=list(range(1, n_tokens + 1)), loss_mask=[0.0, 0.0] + [1.0] * (n_tokens - 2),
                      sampler_logp=[0.0, 0.0] + [-0.5] * (n_tokens - 2), terminated=terminated,
                      truncated=not terminated, info=info)


def test_preference_vector_follows_the_reward_vector_names():
    p = batch_mod.preference_vector({"outcome": 1.0, "cost": 0.5, "latency": 0.0, "tools": {"expert-2": 0.5}}, NAMES)
    np.testing.assert_array_equal(p, [0.0, 0.5, 1.0, 0.5, 0.0])


def test_grpo_batch_rewards_filters_advantages_and_masks():
    cfg = TrainConfig.preset("tiny-toolscale", rollout={"rollouts_per_task": 4}, optimizer={"pad_multiple": 16})
    group_a = [_traj(5, (1, 0), True, 0.01), _traj(6, (0, 1), True, 0.02), _traj(7, (1, 0), False, 0.01),
               _traj(5, (0, 1), True, 0.03, terminated=False)]  # no final answer: out of the loss
    group_b = [_traj(4, (1, 0), False, 0.01) for _ in range(4)]  # all unsolved: reward std 0, dropped
    trajs = group_a + group_b
    pref = batch_mod.preference_vector(cfg.env.preference, NAMES)
    batch, stats = batch_mod.grpo_batch(trajs, cfg, pref)

    rewards = batch_mod.group_rewards(trajs, 4, pref)
    assert rewards[0, 2] == 0.0 and (rewards[1] == 0.0).all()  # unsolved rollouts get R = 0
    assert stats["reward_mean"] == pytest.approx(float(rewards.mean()))
    assert (stats["groups_total"], stats["groups_low_std"], stats["rollouts_no_answer"]) == (2, 1, 1)
    assert stats["rollouts_kept"] == 3
    assert batch["tokens"].shape == (8, 16) and batch["advantages"].shape == (8,)
    r = rewards[0]
    adv = np.clip((r - r.mean()) / (r.std(ddof=1) + cfg.grpo.adv_eps), -3, 3)
    np.testing.assert_allclose(batch["advantages"][:3], adv[:3], rtol=1e-6)
    assert (batch["advantages"][3:] == 0).all()
    kept = batch["loss_mask"].sum(axis=1)
    np.testing.assert_array_equal(kept, [3, 4, 5, 0, 0, 0, 0, 0])  # filtered rollouts leave the loss
    np.testing.assert_array_equal(batch["attention_mask"].sum(axis=1), [5, 6, 7, 5, 4, 4, 4, 4])

    outcome, _ = batch_mod.grpo_batch(trajs, cfg, None)  # no preference vector: the outcome is the reward
    np.testing.assert_array_equal(outcome["loss_mask"].sum(axis=1), [3, 4, 5, 0, 0, 0, 0, 0])


def test_advantages_of_groups_under_their_own_preferences_are_std_scaled():
    cfg = TrainConfig.preset("tiny-toolscale", rollout={"rollouts_per_task": 4}, optimizer={"pad_multiple": 16})
    group = [_traj(5, (1, 0), True, 0.01), _traj(6, (0, 1), True, 0.02), _traj(7, (1, 0), False, 0.01),
             _traj(5, (0, 1), True, 0.03)]
    pref = np.stack([batch_mod.preference_vector({"outcome": 1.0, "cost": c, "latency": 0.0}, NAMES)
                     for c in (0.5, 10.0)])
    trajs = group + group  # the same episodes under two preferences
    raw = batch_mod.group_rewards(trajs, 4, pref)
    paper, _ = batch_mod.grpo_batch(trajs, cfg, pref)
    r = raw[1]
    np.testing.assert_allclose(paper["advantages"][4:], np.clip((r - r.mean()) / (r.std(ddof=1) + 1e-6), -3, 3),
                               rtol=1e-6)


def test_group_rewards_take_one_preference_per_group():
    """Preferences sampled per task (paper Sec. 3.3): group i is scored with its own vector [N, K]."""
    group = [_traj(5, (1, 0), True, 0.01), _traj(5, (0, 1), True, 0.03), _traj(5, (1, 0), False, 0.01)]
    trajs = group + group
    cost_first = batch_mod.preference_vector({"outcome": 1.0, "cost": 2.0}, NAMES)
    outcome_only = batch_mod.preference_vector({"outcome": 1.0}, NAMES)
    both = batch_mod.group_rewards(trajs, 3, np.stack([cost_first, outcome_only]))
    np.testing.assert_allclose(both[0], batch_mod.group_rewards(group, 3, cost_first)[0])
    np.testing.assert_allclose(both[1], batch_mod.group_rewards(group, 3, outcome_only)[0])
    # the cheaper solved rollout wins under cost first (1 + 2 * 1 vs 1 + 0); a tie under outcome only
    np.testing.assert_allclose(both, [[3.0, 1.0, 0.0], [1.0, 1.0, 0.0]])


def test_a_graded_turn_limit_failure_stays_in_the_loss_a_malformed_end_does_not():
    cfg = TrainConfig.preset("tiny-toolscale", rollout={"rollouts_per_task": 4}, optimizer={"pad_multiple": 16})
    group = [_traj(5, (1, 0), True, 0.05),
             _traj(5, (0, 1), False, 0.01, terminated=False, answered=True),   # ran out of turns: graded 0
             _traj(5, (0, 1), False, 0.01, terminated=False, answered=False),  # too many malformed turns
             _traj(5, (0, 1), True, 0.01)]
    cut = _traj(5, (0, 1), False, 0.0, answered=True)
    cut.cut = True
    assert [t.answered for t in group] == [True, True, False, True] and not cut.answered
    pref = batch_mod.preference_vector(cfg.env.preference, NAMES)
    batch, stats = batch_mod.grpo_batch(group, cfg, pref)
    assert (stats["rollouts_no_answer"], stats["rollouts_kept"]) == (1, 3)
    assert batch["loss_mask"][1].sum() == 3 and batch["loss_mask"][2].sum() == 0
    assert batch["advantages"][1] < 0 < batch["advantages"][3]  # the failure is pushed down, the cheap success up
