"""A training run's checkpoints as the loop sees them: one `orchestra_jax.checkpoint.Checkpointer` per phase
(DIR/checkpoints/{sft,grpo}), what each checkpoint's metadata holds, when one is due, where a phase resumes,
the stop before a checkpoint when an update is not finite (the latest good checkpoint named), and the stop
with a checkpoint at the step boundary after Ctrl-C or SIGTERM (`StopRequest`).

Metadata (JSON in each checkpoint): SFT ``{"step", "phase": "sft"}``; GRPO ``{"step", "phase": "grpo",
"initial_eval"}`` (the evaluation before GRPO, so a resumed run's summary keeps it) and, with the training
guard on, ``"guard"`` (`orchestra_jax.guard.TrainingGuard.state_dict`).
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from orchestra_jax import checkpoint
from orchestra_jax.guard import TrainingGuard, TrainingStopped
from orchestra_jax.run_log import json_safe
from orchestra_jax.train_sections import CheckpointSection

__all__ = ["phase_checkpointer", "resume", "due", "sft_meta", "grpo_meta", "stop_if_sft_not_finite",
           "stop_if_update_not_finite", "StopRequest", "TrainingInterrupted", "save_unless_saved"]


def phase_checkpointer(run_dir: Path, phase: str, section: CheckpointSection) -> checkpoint.Checkpointer:
    """The checkpointer of `phase` ("sft" or "grpo") under DIR/checkpoints/<phase> (``checkpoint.keep``
    kept, ``checkpoint.async_save``)."""
    return checkpoint.Checkpointer(checkpoint.phase_dir(run_dir, phase), keep=section.keep,
                                   async_save=section.async_save)


def resume(ck: checkpoint.Checkpointer, state: Any) -> tuple[Any, dict[str, Any] | None, int]:
    """(state, metadata, step) of the phase's latest checkpoint; (`state`, None, 0) when there is none."""
    if ck.latest_step() is None:
        return state, None, 0
    state, meta = ck.restore(None, state)
    return state, meta, int(meta["step"])


def due(step: int, section: CheckpointSection, last: int) -> bool:
    """Whether the state after `step` (1-based) is checkpointed: every ``checkpoint.every`` steps and at
    the phase's `last` step."""
    return step % section.every == 0 or step == last


def save_unless_saved(ck: checkpoint.Checkpointer, step: int, state: Any, meta: dict[str, Any]) -> None:
    """Checkpoint the state after `step` unless that step is already checkpointed (waits for the write)."""
    ck.wait()
    if step not in ck.all_steps():
        ck.save(step, state, meta)
        ck.wait()


def sft_meta(step: int) -> dict[str, Any]:
    """The metadata of the warm start's checkpoint after `step`."""
    return {"step": step, "phase": "sft"}


def grpo_meta(step: int, initial_eval: dict[str, Any] | None, guard: TrainingGuard | None) -> dict[str, Any]:
    """The metadata of the GRPO checkpoint after `step`: the initial evaluation (valid JSON) and the guard's
    state when it is on."""
    meta = {"step": step, "phase": "grpo", "initial_eval": json_safe(initial_eval)}
    if guard is not None:
        meta["guard"] = guard.state_dict()
    return meta


def stop_if_sft_not_finite(step: int, metrics: dict[str, float], ck: checkpoint.Checkpointer, run_dir: Path) -> None:
    """Stop (`TrainingStopped`, after closing `ck`) when SFT step `step`'s nll or gradient norm is not finite,
    before anything is checkpointed, naming the latest good checkpoint."""
    if np.isfinite(metrics["nll"]) and np.isfinite(metrics["grad_norm"]):
        return
    ck.wait()
    latest = ck.latest_step()
    ck.close()
    raise TrainingStopped(
        f"SFT step {step}: nll={metrics['nll']} grad_norm={metrics['grad_norm']} is not finite; no checkpoint "
        f"was written after it; the latest good checkpoint is "
        f"{'none' if latest is None else checkpoint.phase_dir(run_dir, 'sft') / str(latest)}. "
        "Fix: lower sft.learning_rate.")


def stop_if_update_not_finite(step: int, updates: list[dict[str, float]], ck: checkpoint.Checkpointer,
                              run_dir: Path) -> None:
    """Stop (`TrainingStopped`) when a GRPO update's loss or gradient norm is not finite, before anything
    is checkpointed, naming the step and the latest good checkpoint."""
    for i, m in enumerate(updates):
        bad = {k: m[k] for k in ("loss", "grad_norm") if k in m and not np.isfinite(m[k])}
        if bad:
            ck.wait()
            latest = ck.latest_step()
            where = (f"{checkpoint.phase_dir(run_dir, 'grpo') / str(latest)} (GRPO step {latest})"
                     if latest is not None else "none")
            raise TrainingStopped(
                f"GRPO step {step} (update {i + 1}): {', '.join(f'{k}={v}' for k, v in bad.items())} is not "
                f"finite; no checkpoint was written after it; the latest good checkpoint is {where}. Fix: "
                "lower optimizer.learning_rate or check the restored checkpoint's parameters.")


class TrainingInterrupted(KeyboardInterrupt):
    """The run stopped at a step boundary after Ctrl-C or SIGTERM, its state checkpointed (`StopRequest`).
    A KeyboardInterrupt, so callers that handle Ctrl-C handle it; ``signal_name`` says which signal."""

    def __init__(self, signal_name: str, phase: str, step: int):
        super().__init__(f"{signal_name}: {phase} step {step} checkpointed")
        self.signal_name, self.phase, self.step = signal_name, phase, step


class StopRequest:
    """Ctrl-C (SIGINT) and SIGTERM as a request to stop at the next step boundary with a checkpoint.

    Between `install()` and `uninstall()` (in the main thread; elsewhere signals keep their handlers) the
    first SIGINT or SIGTERM sets ``stop.requested`` to "Ctrl-C" / "SIGTERM" and says on stderr that the run
    stops after the step in progress; a second one raises KeyboardInterrupt at once (the latest checkpoint
    is then the resume point). The loops call `check(phase, step, save)` at each step boundary."""

    def __init__(self) -> None:
        self.requested: str | None = None
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        """Handle SIGINT and SIGTERM (main thread only)."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)

    def uninstall(self) -> None:
        """Give SIGINT and SIGTERM their handlers of before."""
        for sig, handler in self._old.items():
            signal.signal(sig, handler)
        self._old.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt
        self.requested = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
        print(f"\n{self.requested}: stopping after the step in progress, with a checkpoint "
              f"({'Ctrl-C' if self.requested == 'Ctrl-C' else 'the signal'} again stops at once)", file=sys.stderr)

    def check(self, phase: str, step: int, save: Any) -> None:
        """At the boundary after `step` (1-based; the state is that of `step`): when a stop was requested,
        call ``save()`` (writes the checkpoint of `step` unless it exists) and raise `TrainingInterrupted`."""
        if self.requested is not None:
            save()
            raise TrainingInterrupted(self.requested, phase, step)
