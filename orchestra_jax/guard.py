"""The training guard: GRPO must not fall into a state without learning signal and stay there.

Why (issue 13: the main job collapsed at GRPO step 14 and never recovered): GRPO learns only from the
turns it keeps. Turns that are not valid tool calls and trajectories cut at the token limit get loss
mask 0 (ToolOrchestra Sec. 3.2's filter), so once the policy writes mostly invalid turns nothing in
the loss pushes it back: the state is absorbing. The guard watches each step's rollouts and acts
before that state is reached for good:

* a step is *unhealthy* when the rollouts' valid tool-call rate falls below `min_valid_format`, the
  share of rollouts cut at the token limit rises above `max_cut_rate`, the share of rollouts kept by
  the filters falls below `min_kept_rollouts`, or the policy's mean token entropy leaves
  ``[min_entropy, max_entropy]``;
* after `patience` unhealthy steps in a row it *restores* the newest checkpoint that was written at a
  healthy step and still exists, and multiplies the learning rate by `lr_factor` (the trainer
  rebuilds its optimizer and re-jits its step; the data order continues forward);
* after `max_restores` restores, or when no healthy checkpoint is left, it *stops* the run with a
  message naming the cause and the fix (`TrainingStopped`).

Every decision is a `GuardEvent`, which the trainer logs as a JSONL record of phase "guard". The guard
is plain Python over the step's host metrics (no JAX), identical on every host, so it is tested
without a model; its state (`state_dict`) travels in the checkpoint metadata so a resumed run
continues it. Its thresholds are the ``guard`` section of the run's config
(`orchestra_jax.train_sections.GuardConfig`, re-exported here).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterable, Literal

from orchestra_gym.errors import OrchestraError
from orchestra_jax.train_sections import GuardConfig  # the guard's config section, with the others

__all__ = ["GuardConfig", "GuardEvent", "TrainingGuard", "TrainingStopped"]


class TrainingStopped(OrchestraError, RuntimeError):
    """A run stopped on purpose (the guard gave up, or an update was not finite). The message is one
    line naming the step, the cause, the latest good checkpoint and the fix; `orchestra train` prints
    it and exits with code 1."""


@dataclasses.dataclass(frozen=True)
class GuardEvent:
    """One decision of the guard.

    action: "ok" (healthy, or unhealthy within patience), "restore" (restore `restore_step`, learning
        rate scaled to `lr_scale` x the configured one) or "stop" (end the run; `message` says why and
        how to fix it).
    step: the GRPO step just observed. reasons: why the step is unhealthy (empty when healthy).
    """

    action: Literal["ok", "restore", "stop"]
    step: int
    reasons: tuple[str, ...] = ()
    restore_step: int | None = None
    lr_scale: float = 1.0
    message: str = ""

    def to_record(self) -> dict[str, Any]:
        """The JSONL record of the event (phase "guard")."""
        return {"phase": "guard", "step": self.step, "action": self.action, "reasons": list(self.reasons),
                "restore_step": self.restore_step, "lr_scale": self.lr_scale, "message": self.message}


class TrainingGuard:
    """Watches GRPO steps and decides when to restore or stop (see the module docstring).

    In the loop: after each step ``event = guard.observe(step, metrics, available=checkpointed_steps)``;
    after a checkpoint of the state after `step` is written, ``guard.checkpointed(step)``; act on
    ``event.action``. The warm start is checkpoint 0, healthy by definition.
    """

    def __init__(self, config: GuardConfig | None = None):
        self.config = config or GuardConfig()
        self.bad_streak = 0
        self.restores = 0
        self.lr_scale = 1.0
        self._unhealthy: set[int] = set()
        self._good_checkpoints: list[int] = []

    def reasons(self, metrics: dict[str, Any]) -> tuple[str, ...]:
        """Why a step with these metrics is unhealthy (empty: healthy). Missing metrics are not judged.

        Reads ``valid_format_rate`` (share of valid turns), ``cut`` and ``episodes`` (cut rollouts),
        ``rollouts_kept`` and ``rollouts_total`` (the filters) and ``entropy`` (nats; absent on a
        skipped step)."""
        c = self.config
        out = []
        vf = metrics.get("valid_format_rate")
        if vf is not None and float(vf) < c.min_valid_format:
            out.append(f"valid tool-call format {float(vf):.2f} < {c.min_valid_format:g}")
        if metrics.get("episodes"):
            cut = float(metrics.get("cut", 0)) / float(metrics["episodes"])
            if cut > c.max_cut_rate:
                out.append(f"cut rollouts {cut:.2f} > {c.max_cut_rate:g}")
        if metrics.get("rollouts_total"):
            kept = float(metrics.get("rollouts_kept", 0)) / float(metrics["rollouts_total"])
            if kept < c.min_kept_rollouts:
                out.append(f"kept rollouts {kept:.2f} < {c.min_kept_rollouts:g}")
        ent = metrics.get("entropy")
        if ent is not None and math.isfinite(float(ent)):
            if float(ent) < c.min_entropy:
                out.append(f"entropy {float(ent):.3f} < {c.min_entropy:g} nats")
            elif c.max_entropy > 0 and float(ent) > c.max_entropy:
                out.append(f"entropy {float(ent):.3f} > {c.max_entropy:g} nats")
        return tuple(out)

    def observe(self, step: int, metrics: dict[str, Any], *,
                available: Iterable[int] | Callable[[], Iterable[int]] | None = None) -> GuardEvent:
        """Judge GRPO step `step` from its rollout and update metrics; returns what to do.

        available: the checkpoint steps that exist now (a checkpoint rotated away by keep_checkpoints
        is no restore target), or a function returning them, called only when the guard acts (the
        trainer then waits for pending asynchronous saves); None trusts every checkpoint recorded by
        `checkpointed`."""
        why = self.reasons(metrics)
        if not why:
            self.bad_streak = 0
            return GuardEvent("ok", step, lr_scale=self.lr_scale)
        self._unhealthy.add(step)
        self.bad_streak += 1
        if self.bad_streak < self.config.patience:
            return GuardEvent("ok", step, why, lr_scale=self.lr_scale)
        cause = "; ".join(why)
        if callable(available):
            available = available()
        targets = self._good_checkpoints if available is None else [
            s for s in self._good_checkpoints if s in set(available)]
        if self.restores >= self.config.max_restores or not targets:
            where = ("no checkpoint written at a healthy step is left" if not targets
                     else f"{self.restores} restore(s) with the learning rate scaled to {self.lr_scale:g} did not help")
            return GuardEvent(
                "stop", step, why, lr_scale=self.lr_scale,
                message=(f"GRPO stopped by the training guard at step {step}: {cause} for {self.bad_streak} steps "
                         f"in a row, and {where}. Fix: lower optimizer.learning_rate, raise grpo.loss.kl_coef, or lengthen the warm "
                         "start (sft.steps); the guard's thresholds are the guard.* config keys."))
        self.restores += 1
        self.lr_scale *= self.config.lr_factor
        self.bad_streak = 0
        target = targets[-1]
        return GuardEvent("restore", step, why, restore_step=target, lr_scale=self.lr_scale,
                          message=(f"step {step}: {cause}; restoring the checkpoint of step {target} with the "
                                   f"learning rate scaled to {self.lr_scale:g} (restore {self.restores} of "
                                   f"{self.config.max_restores})"))

    def checkpointed(self, step: int) -> None:
        """Record that a checkpoint of the state after `step` was written (a restore target if that step
        was healthy)."""
        if step not in self._unhealthy and step not in self._good_checkpoints:
            self._good_checkpoints.append(step)

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs (JSON-able; stored in the checkpoint's metadata)."""
        return {"restores": self.restores, "lr_scale": self.lr_scale, "bad_streak": self.bad_streak,
                "good_checkpoints": list(self._good_checkpoints), "unhealthy": sorted(self._unhealthy)}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Continue from a `state_dict` (a missing key keeps the fresh guard's value)."""
        self.restores = int(d.get("restores", 0))
        self.lr_scale = float(d.get("lr_scale", 1.0))
        self.bad_streak = int(d.get("bad_streak", 0))
        self._good_checkpoints = [int(s) for s in d.get("good_checkpoints", [])]
        self._unhealthy = {int(s) for s in d.get("unhealthy", [])}
