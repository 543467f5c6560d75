"""Trajectories -> the trainer batch: group rewards, the paper's filters and advantages, padding.

`grpo_batch(trajectories, config)` is the whole glue between a rollout and a GRPO step:
rewards per group (`group_rewards`: the paper's preference reward, `orchestra_gym.rewards.group_preference_rewards`
with the preference vector each group's env reported, ``info["preference_weights"]``; or the outcome), `grpo.filter_and_advantages` (drop groups with reward std < 0.1 and rollouts without
a final answer, `Trajectory.answered`; A = (R - mean) / (std + eps) clipped to [-3, 3]; ToolOrchestra Sec. 3.2), then the
right-padded [B, T] arrays of `to_batch` with the dropped rollouts' loss masks zeroed.

Batch keys, B rows of T tokens (`orchestra_jax.train_step` splits them into micro-batches):
  tokens int32 [B, T]; attention_mask int32 [B, T]; loss_mask float32 [B, T]; sampler_logp float32 [B, T];
  advantages float32 [B].
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from orchestra_gym.rewards import group_preference_rewards
from orchestra_jax import grpo
from orchestra_jax.rollout import Trajectory
from orchestra_jax.train_config import TrainConfig

__all__ = ["grpo_batch", "group_rewards", "to_batch", "compact_rows", "REWARD_KINDS"]

#: what a group's rollouts are rewarded with (`TrainConfig.grpo.reward`)
REWARD_KINDS = ("preference", "outcome")


def grpo_batch(trajectories: Sequence[Trajectory], config: TrainConfig) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The GRPO batch of one step's rollouts (N groups of G = config.rollout.rollouts_per_task, group-major).

    Args:
      trajectories: N x G trajectories from `orchestra_jax.rollout.collect_rollouts`.
      config: the run's `TrainConfig` (reward: `group_rewards`' kind; min_group_std, adv_eps, adv_clip,
        adv_ddof, pad_multiple).

    Returns:
      (batch: the `to_batch` arrays [B, T] with B = N x G, advantages [B], and the loss mask zeroed
      for filtered rollouts; stats: reward_mean (mean reward over the batch) and the filter counts of
      `grpo.filter_and_advantages`).
    """
    g = config.rollout.rollouts_per_task
    rewards = group_rewards(trajectories, g, config.grpo.reward)
    answered = np.array([t.answered for t in trajectories]).reshape(rewards.shape)
    guided = np.array([t.guided for t in trajectories]).reshape(rewards.shape)
    filt = grpo.filter_and_advantages(rewards, answered, min_std=config.grpo.min_group_std, eps=config.grpo.adv_eps,
                                      clip=config.grpo.adv_clip, ddof=config.grpo.adv_ddof,
                                      off_policy=guided if guided.any() else None)
    batch = to_batch(trajectories, filt.advantages.reshape(-1), multiple=config.optimizer.pad_multiple)
    batch["loss_mask"] = batch["loss_mask"] * filt.keep.reshape(-1, 1).astype(np.float32)
    return batch, {"reward_mean": float(rewards.mean()), **filt.counts}


def group_rewards(trajs: Sequence[Trajectory], rollouts_per_task: int, kind: str = "preference") -> np.ndarray:
    """Rewards [N, G] of N groups of G rollouts (group-major): the one place a group's rollouts become rewards.

    kind "preference": the paper's preference reward (ToolOrchestra Sec. 3.2,
    `orchestra_gym.rewards.group_preference_rewards`): each rollout's reward vector M
    (``info["reward_vector"]``, float [K]) min-max normalised over the group, dotted with the group's
    preference vector P as its env reported it (``info["preference_weights"]`` of the group's first
    rollout: the G rollouts share the task's options), 0 for unsolved rollouts; a group without a solved
    rollout gets 0. kind "outcome": each rollout's outcome in [0, 1].

    Every ended trajectory carries M and P (the env's end info, or for a cut one
    `orchestra_gym.env.OrchestraEnv.reward_vector_so_far` through `orchestra_jax.rollout`).

    Raises:
        ValueError: len(trajs) not a multiple of rollouts_per_task, or an unknown kind.
    """
    if kind not in REWARD_KINDS:
        raise ValueError(f"reward kind must be one of {REWARD_KINDS}, got {kind!r}")
    g = int(rollouts_per_task)
    if len(trajs) % g:
        raise ValueError(f"{len(trajs)} trajectories are not a multiple of rollouts_per_task={g}")
    n = len(trajs) // g
    out = np.zeros((n, g), np.float64)
    for i in range(n):
        grp = trajs[i * g:(i + 1) * g]
        if kind == "outcome":
            out[i] = [t.outcome for t in grp]
            continue
        solved = np.array([t.solved for t in grp], bool)
        if not solved.any():  # paper Sec. 3.2: R = 0 for unsolved rollouts
            continue
        vecs = np.stack([np.asarray(t.info["reward_vector"], np.float64) for t in grp])
        p = np.asarray(grp[0].info["preference_weights"], np.float64)
        out[i] = group_preference_rewards(vecs, solved, p)
    return out


def to_batch(trajs: Sequence[Trajectory], advantages: np.ndarray | None = None, *, pad_to: int | None = None,
             multiple: int = 64) -> dict[str, np.ndarray]:
    """Right-padded trainer batch ([B, T] arrays; see `orchestra_jax.train_step`).

    attention_mask comes from the lengths (1 for the first len(tokens) positions); loss_mask and
    sampler_logp are the trajectories' own, 0 in the padding. T = pad_to, or the longest trajectory
    rounded up to `multiple`, or (multiple=0) to a power of two (few distinct shapes, few compilations).
    The pad id written is 0.

    Raises: ValueError if a trajectory is longer than pad_to.
    """
    b = len(trajs)
    longest = max(len(t) for t in trajs)
    if pad_to is not None:
        t_len = pad_to
    elif multiple == 0:  # power-of-two buckets (>= 64): at most log2(T) shapes, so few compilations
        t_len = max(64, 1 << (longest - 1).bit_length())
    else:
        t_len = -(-longest // multiple) * multiple
    if longest > t_len:
        raise ValueError(f"a trajectory has {longest} tokens > pad_to={t_len}")
    tokens = np.zeros((b, t_len), np.int32)
    am = np.zeros((b, t_len), np.int32)
    lm = np.zeros((b, t_len), np.float32)
    slp = np.zeros((b, t_len), np.float32)
    for i, t in enumerate(trajs):
        n = len(t.tokens)
        if not (len(t.loss_mask) == len(t.sampler_logp) == n):
            raise ValueError(f"trajectory {i}: tokens/loss_mask/sampler_logp lengths differ")
        tokens[i, :n] = t.tokens
        am[i, :n] = 1
        lm[i, :n] = t.loss_mask
        slp[i, :n] = t.sampler_logp
    adv = np.zeros(b, np.float32) if advantages is None else np.asarray(advantages, np.float32).reshape(b)
    return {"tokens": tokens, "attention_mask": am, "loss_mask": lm, "sampler_logp": slp, "advantages": adv}


def compact_rows(batch: dict[str, np.ndarray], multiple: int, pad_multiple: int) -> dict[str, np.ndarray]:
    """The batch without most of its rows that have no kept token (the groups and rollouts the paper's
    filters dropped), so that the update does not run forward and backward passes over them.

    The kept rows stay in their order; rows without a kept token are added back (the first ones) until
    the row count is `multiple` x 2^k (few distinct shapes, few compilations; at most the batch's own
    row count, which is returned unchanged when no fewer rows would do). T is cut to the longest chosen
    row rounded up to `pad_multiple` (0: a power of two >= 64), as `to_batch` pads.

    The token-mean and seq-mean-token-mean losses and their gradients do not change (rows without a
    loss token add nothing to a sum or to a denominator); the dr-grpo denominator (B x max_len) does, so
    the trainer does not compact for it.

    Args:
      batch: `grpo_batch`'s numpy arrays, [B, T] and advantages [B].
      multiple: the row count's unit (ppo_mini_batches x micro_batches x data-parallel devices), >= 1.
      pad_multiple: as `TrainConfig.optimizer.pad_multiple`.
    Returns: a new dict of numpy arrays [B', T'] with B' <= B, T' <= T.
    Raises: ValueError when multiple < 1.
    """
    if multiple < 1:
        raise ValueError(f"multiple must be >= 1, got {multiple}")
    b = int(batch["advantages"].shape[0])
    kept = batch["loss_mask"].sum(axis=1) > 0
    n = int(kept.sum())
    rows = multiple
    while rows < n:
        rows *= 2
    if rows >= b:
        return batch
    filler = np.flatnonzero(~kept)[: rows - n]
    idx = np.sort(np.concatenate([np.flatnonzero(kept), filler]))
    longest = int(batch["attention_mask"][idx].sum(axis=1).max())
    t_len = (max(64, 1 << max(0, longest - 1).bit_length()) if pad_multiple == 0
             else -(-longest // pad_multiple) * pad_multiple)
    t_len = min(max(t_len, 1), batch["tokens"].shape[1])
    return {k: (v[idx] if v.ndim == 1 else v[idx, :t_len]) for k, v in batch.items()}
