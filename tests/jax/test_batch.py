"""Tests of orchestra_jax.batch: trajectories -> the GRPO batch (rewards, filters, advantages, padding)."""

from __future__ import annotations

import numpy as np
import pytest

from orchestra_gym.rewards import RewardLayout
from orchestra_jax import batch as batch_mod
from orchestra_jax.rollout import Trajectory
from orchestra_jax.train_config import TrainConfig

NAMES = ["calls/expert-1", "calls/expert-2", "outcome", "-cost_usd", "-latency_s"]


def _weights(preference: dict) -> list[float]:
    """P aligned with NAMES, as an env reports it (``info["preference_weights"]``)."""
    return [float(w) for w in RewardLayout.from_names(NAMES).preference_weights(preference)]


def _traj(n_tokens: int, calls: tuple[float, float], solved: bool, cost: float, terminated: bool = True,
          answered: "bool | None" = None, preference: "dict | None" = None) -> Trajectory:
    vec = [*calls, float(solved), -cost, -1.0]
    pref = preference if preference is not None else TrainConfig.preset("tiny-toolscale").env.preference
    info = {"reward_vector": vec, "reward_vector_names": NAMES, "solved": solved, "outcome": float(solved),
            "preference_weights": _weights(pref)}
    if answered is not None:
        info["answered"] = answered
    return Trajectory(tokens=list(range(1, n_tokens + 1)), loss_mask=[0.0, 0.0] + [1.0] * (n_tokens - 2),
                      sampler_logp=[0.0, 0.0] + [-0.5] * (n_tokens - 2), terminated=terminated,
                      truncated=not terminated, info=info)


def test_preference_weights_follow_the_reward_vector_names():
    p = _weights({"outcome": 1.0, "cost": 0.5, "latency": 0.0, "tools": {"expert-2": 0.5}})
    np.testing.assert_array_equal(p, [0.0, 0.5, 1.0, 0.5, 0.0])


def test_grpo_batch_rewards_filters_advantages_and_masks():
    cfg = TrainConfig.preset("tiny-toolscale", rollout={"rollouts_per_task": 4}, optimizer={"pad_multiple": 16})
    group_a = [_traj(5, (1, 0), True, 0.01), _traj(6, (0, 1), True, 0.02), _traj(7, (1, 0), False, 0.01),
               _traj(5, (0, 1), True, 0.03, terminated=False)]  # no final answer: out of the loss
    group_b = [_traj(4, (1, 0), False, 0.01) for _ in range(4)]  # all unsolved: reward std 0, dropped
    trajs = group_a + group_b
    batch, stats = batch_mod.grpo_batch(trajs, cfg)

    rewards = batch_mod.group_rewards(trajs, 4)
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

    outcome, _ = batch_mod.grpo_batch(trajs, cfg.replace(grpo={"reward": "outcome"}))  # the outcome is the reward
    np.testing.assert_array_equal(outcome["loss_mask"].sum(axis=1), [3, 4, 5, 0, 0, 0, 0, 0])


def test_advantages_of_groups_under_their_own_preferences_are_std_scaled():
    cfg = TrainConfig.preset("tiny-toolscale", rollout={"rollouts_per_task": 4}, optimizer={"pad_multiple": 16})
    def group(cost: float) -> list[Trajectory]:
        p = {"outcome": 1.0, "cost": cost, "latency": 0.0}
        return [_traj(5, (1, 0), True, 0.01, preference=p), _traj(6, (0, 1), True, 0.02, preference=p),
                _traj(7, (1, 0), False, 0.01, preference=p), _traj(5, (0, 1), True, 0.03, preference=p)]

    trajs = group(0.5) + group(10.0)  # the same episodes under two preferences
    raw = batch_mod.group_rewards(trajs, 4)
    paper, _ = batch_mod.grpo_batch(trajs, cfg)
    r = raw[1]
    np.testing.assert_allclose(paper["advantages"][4:], np.clip((r - r.mean()) / (r.std(ddof=1) + 1e-6), -3, 3),
                               rtol=1e-6)


def test_group_rewards_take_one_preference_per_group():
    """Preferences sampled per task (paper Sec. 3.3): group i is scored with its own vector [N, K]."""
    def group(p: dict) -> list[Trajectory]:
        return [_traj(5, (1, 0), True, 0.01, preference=p), _traj(5, (0, 1), True, 0.03, preference=p),
                _traj(5, (1, 0), False, 0.01, preference=p)]

    cost_first, outcome_only = {"outcome": 1.0, "cost": 2.0}, {"outcome": 1.0}
    both = batch_mod.group_rewards(group(cost_first) + group(outcome_only), 3)
    np.testing.assert_allclose(both[0], batch_mod.group_rewards(group(cost_first), 3)[0])
    np.testing.assert_allclose(both[1], batch_mod.group_rewards(group(outcome_only), 3)[0])
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
    batch, stats = batch_mod.grpo_batch(group, cfg)
    assert (stats["rollouts_no_answer"], stats["rollouts_kept"]) == (1, 3)
    assert batch["loss_mask"][1].sum() == 3 and batch["loss_mask"][2].sum() == 0
    assert batch["advantages"][1] < 0 < batch["advantages"][3]  # the failure is pushed down, the cheap success up


def test_group_rewards_kind_is_checked():
    with pytest.raises(ValueError, match="reward kind must be one of"):
        batch_mod.group_rewards([_traj(5, (1, 0), True, 0.01)], 1, "preferences")
