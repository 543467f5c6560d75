"""Where a GRPO step's rollouts come from: the step's tasks, preferences, sampled and guided episodes
(`StepRollouts`), played now by the policy being trained (`SyncRollouts`) or ahead of the trainer by an
older policy (`orchestra_jax.async_grpo.AsyncRollouts`, ``grpo.max_staleness`` k > 0).

Both sources answer the GRPO loop the same way: ``start(step, params)`` before the first step,
``collect(s, params)`` -> (sampled, trajectories in group order, RolloutStats, rollout seconds, the step whose
policy rolled them out), ``updated(s, params)`` after the update of step s, ``restored(s, params)`` after a
guard restore to resume at step s, and ``close()``.

The data order: tasks, env seeds and sampler PRNG of step s derive from (seed, s) only (`step_seed`), the
preferences from ``default_rng([seed, s, 17])`` (paper Sec. 3.3), so a resumed run repeats them.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from orchestra_jax.batch import to_batch
from orchestra_jax.policy import guide, make_envs
from orchestra_jax.rollout import Trajectory, collect_rollouts, guided_rollouts
from orchestra_jax.train_config import TrainConfig
from orchestra_jax.train_step import gather_params, split_micro

__all__ = ["step_seed", "StepRollouts", "SyncRollouts", "behaviour_logp"]


def step_seed(seed: int, step: int) -> int:
    """The data order: tasks, env seeds and sampler PRNG of `step` derive from (seed, step) only; an int in
    [0, 2^30)."""
    return int(np.random.default_rng([seed, step]).integers(0, 2**30))


def behaviour_logp(trajs: list[Trajectory], params: Any, logp_fn: Callable[[Any, Any], Any],
                   place: Callable[[dict[str, np.ndarray]], Any], unit: int, pad_multiple: int,
                   micro_batches: int) -> None:
    """Fill each trajectory's sampler_logp with the log-probs of `params` (`logp_fn`, the jitted pi_old forward
    at the sampling temperature) on its loss tokens (0 elsewhere), micro-batched as the update: rows padded to
    a multiple of `unit`, tokens to a multiple of `pad_multiple`, `place` puts the [M, b, T] batch on devices."""
    rows = -(-len(trajs) // unit) * unit
    batch = to_batch(trajs, multiple=pad_multiple)
    data = {k: np.zeros((rows,) + batch[k].shape[1:], batch[k].dtype) for k in ("tokens", "attention_mask", "loss_mask")}
    for k in data:
        data[k][:len(trajs)] = batch[k]
    lp = gather_params(logp_fn(params, place(split_micro(data, micro_batches))))[0]
    lp = lp.reshape(rows, -1)
    for t, row in zip(trajs, lp):
        t.sampler_logp = [float(x) if m > 0 else 0.0 for x, m in zip(row[:len(t)], t.loss_mask)]


class StepRollouts:
    """The rollouts of one GRPO step: ``roll(s, sampler, params, envs)``.

    Args:
      cfg: the run's config (its seed, ``env``, ``rollout`` and the guides' ``sft.state_kind``).
      tok: the run's `orchestra_jax.tokenizer.ChatTokenizer`.
      envs: env set 0 (tasks_per_step x rollouts_per_task envs).
      executor: the tool-worker pool shared by every env step.
      policy_logp: ``policy_logp(trajectories, params)`` fills the guided episodes' sampler_logp with the log-probs
        of `params` (`behaviour_logp` bound to the run's forward and placement).
    """

    def __init__(self, cfg: TrainConfig, tok: Any, envs: list[Any], executor: Any,
                 policy_logp: Callable[[list[Trajectory], Any], None]):
        self.cfg = cfg
        self.tok = tok
        self.executor = executor
        self.policy_logp = policy_logp
        self.env_wrapper: Callable[[Any], Any] | None = None  # applied to the env sets made later (`env_set`)
        self._env_sets = [envs]

    def wrap(self, wrapper: Callable[[Any], Any]) -> list[Any]:
        """Wrap env set 0 and every set made later with `wrapper` (a benchmark's
        `orchestra_gym.wrappers.SleepLatency`); returns the wrapped set 0."""
        self.env_wrapper = wrapper
        self._env_sets = [[wrapper(e) for e in envs] for envs in self._env_sets]
        return self._env_sets[0]

    def env_set(self, j: int) -> list[Any]:
        """The j-th set of the run's environments (tasks_per_step x rollouts_per_task envs; set 0 is the run's
        own), made on first use with `make_envs`. Rollouts ahead of the trainer roll several steps out at
        once, each on its own set."""
        while len(self._env_sets) <= j:
            envs = make_envs(self.cfg, len(self._env_sets[0]))
            self._env_sets.append([self.env_wrapper(e) for e in envs] if self.env_wrapper else envs)
        return self._env_sets[j]

    def __call__(self, s: int, sampler: Any, params: Any, envs: list[Any]
                 ) -> tuple[list[Trajectory], list[Trajectory], Any]:
        """The rollouts of GRPO step `s` by the policy `params` (loaded in `sampler`) on `envs` (one env set):
        the step's tasks and preferences (drawn from (seed, s), paper Sec. 3.3), rollouts_per_task -
        len(guide_experts) sampled episodes per task (`orchestra_jax.rollout.collect_rollouts`) and the guided
        ones (`with_guided`, their behaviour log-probs from `params`). Returns (sampled, all trajectories in
        group order, RolloutStats)."""
        cfg = self.cfg
        pref_rng = np.random.default_rng([cfg.seed, s, 17])  # the tasks' preferences (paper Sec. 3.3)
        options = [cfg.reset_options(preference=cfg.sample_preference(pref_rng))
                   for _ in range(cfg.rollout.tasks_per_step)]
        sampled_per_task = cfg.rollout.rollouts_per_task - len(cfg.rollout.guide_experts)
        sampled, stats = collect_rollouts(
            sampler, self.tok, envs[:cfg.rollout.tasks_per_step * sampled_per_task], options,
            rollouts_per_task=sampled_per_task, seed=step_seed(cfg.seed, s),
            max_new_tokens=cfg.rollout.max_new_tokens, max_seq_len=cfg.rollout.max_seq_len, temperature=cfg.rollout.temperature,
            max_turns=cfg.env.max_turns, executor=self.executor, overlap_tools=cfg.rollout.overlap_tools,
            engine=cfg.rollout.engine, slots=cfg.rollout.slots,
        )
        trajs = self.with_guided(sampled, options, params, step_seed(cfg.seed, s), envs)
        return sampled, trajs, stats

    def with_guided(self, sampled: list[Trajectory], options: list[dict[str, Any]], params: Any,
                    seed: int, envs: list[Any] | None = None) -> list[Trajectory]:
        """A step's groups with their guided rollouts (``rollout.guide_experts``): group i is its sampled
        rollouts, then one `orchestra_jax.rollout.guided_rollouts` episode per guide expert on the same task
        under the same preference and env seed, on `envs` (default env set 0) after the sampled rows' envs.
        The guided episodes' sampler_logp are the log-probs of `params` (the policy that rolled the step out)
        at the sampling temperature (they enter the loss as its samples). Returns `sampled` itself when no
        guide is configured."""
        cfg = self.cfg
        k = len(cfg.rollout.guide_experts)
        if not k:
            return sampled
        gs = cfg.rollout.rollouts_per_task - k
        n = len(options)
        opts = [dict(o, task_id=sampled[i * gs].task_id) for i, o in enumerate(options)]
        envs = self._env_sets[0] if envs is None else envs
        guided = guided_rollouts(envs[n * gs:n * cfg.rollout.rollouts_per_task], self.tok,
                                 [guide(cfg, e) for e in cfg.rollout.guide_experts], opts, seed=seed,
                                 max_turns=cfg.env.max_turns, max_seq_len=cfg.rollout.max_seq_len, executor=self.executor)
        self.policy_logp(guided, params)
        return [t for i in range(n) for t in sampled[i * gs:(i + 1) * gs] + guided[i * k:(i + 1) * k]]


class SyncRollouts:
    """Every step rolled out when the trainer asks for it, by the policy being trained (``grpo.max_staleness``
    0: the synchronous GRPO of the paper).

    Args:
      roll: the step's rollouts (`StepRollouts`).
      sampler: ``sampler(params)`` -> the run's `orchestra_jax.sampler.Sampler` with `params` loaded.
    """

    def __init__(self, roll: StepRollouts, sampler: Callable[[Any], Any]):
        self.roll = roll
        self.sampler = sampler

    def start(self, step: int, params: Any) -> None:
        """Nothing to roll out ahead."""

    def collect(self, s: int, params: Any) -> tuple[list[Trajectory], list[Trajectory], Any, float, int]:
        """Step s's rollouts by `params` on env set 0: (sampled, trajectories, RolloutStats, seconds, s)."""
        t0 = time.time()
        sampled, trajs, stats = self.roll(s, self.sampler(params), params, self.roll.env_set(0))
        return sampled, trajs, stats, time.time() - t0, s

    def updated(self, s: int, params: Any) -> None:
        """Nothing rolls out while the trainer trains."""

    def restored(self, s: int, params: Any) -> None:
        """Nothing was rolled out ahead with the policy given up."""

    def close(self) -> None:
        """Nothing runs in the background."""
