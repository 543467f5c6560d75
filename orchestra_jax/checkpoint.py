"""Checkpoints of the train state with orbax (asynchronous, keep N, atomic, resharding on restore).

Layout: ``<dir>/<step>/state`` (the pytree: params, optimizer state, step, reference params) and
``<dir>/<step>/meta`` (JSON: config name, seed, anything the loop needs to resume its data order).
Orbax writes each step into a temporary folder and renames it when complete (its atomic finalize), so a
run killed during a save leaves no folder that `latest_step` would choose; `CheckpointManager` only
lists finalized steps.

A run directory (`orchestra train --output-dir DIR`) keeps one folder per phase,
``DIR/checkpoints/{sft,grpo}`` (`phase_dir`); `latest(DIR)` finds the newest finalized checkpoint and
`restore_params(DIR, phase, step, params)` reads only the policy's parameters of a saved train state
(no optimizer is built: `orchestra_jax.agents.load_policy_agent`, export).

Restore takes a *target* pytree (arrays or `jax.ShapeDtypeStruct` with `.sharding`): the saved arrays
are read straight into the target's shardings, so a checkpoint written on a 2-device fsdp mesh restores
onto 1 device or a tp mesh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import jax
import orbax.checkpoint as ocp

__all__ = ["Checkpointer", "abstract_like", "phase_dir", "latest", "restore_params", "PHASES"]

PHASES = ("grpo", "sft")  # the phases of a run, newest first


def abstract_like(tree: Any, sharding: Any | None = None) -> Any:
    """`jax.ShapeDtypeStruct` tree of `tree` (keeping each leaf's sharding, or using `sharding`)."""

    def one(x):
        s = sharding if sharding is not None else getattr(x, "sharding", None)
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s)

    return jax.tree.map(one, tree)


class Checkpointer:
    """Thin wrapper over `orbax.checkpoint.CheckpointManager` for one run directory.

    Args:
      directory: checkpoint root (created).
      keep: checkpoints kept (older ones deleted after a newer one is finalized).
      async_save: write in a background thread (the train loop continues; `wait` blocks).
    """

    def __init__(self, directory: str | Path, *, keep: int = 3, async_save: bool = True):
        self.directory = Path(directory).resolve()
        self.directory.mkdir(parents=True, exist_ok=True)
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep, create=True, enable_async_checkpointing=async_save, cleanup_tmp_directories=True
        )
        self._mgr = ocp.CheckpointManager(self.directory, options=options, item_names=("state", "meta"))

    def save(self, step: int, state: Any, meta: dict[str, Any], *, force: bool = True) -> bool:
        """Start saving `state` (a pytree of arrays) and `meta` (JSON-able) as `step`."""
        return self._mgr.save(
            int(step), args=ocp.args.Composite(state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta)),
            force=force,
        )

    def latest_step(self) -> int | None:
        """The newest *finalized* step, or None."""
        self._mgr.reload()
        return self._mgr.latest_step()

    def all_steps(self) -> list[int]:
        self._mgr.reload()
        return list(self._mgr.all_steps())

    def restore(self, step: int | None, target: Any) -> tuple[Any, dict[str, Any]]:
        """Restore `step` (None = latest) into the structure and shardings of `target`.

        Returns: (state, meta). Raises FileNotFoundError when there is no finalized checkpoint.
        """
        step = self.latest_step() if step is None else int(step)
        if step is None:
            raise FileNotFoundError(f"no finalized checkpoint in {self.directory}")
        abstract = abstract_like(target)
        out = self._mgr.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore())
        )
        return out["state"], dict(out["meta"])

    def restore_params(self, step: int | None, params: Any) -> tuple[Any, dict[str, Any]]:
        """Restore only the ``params`` of a saved `orchestra_jax.train_step.TrainState` (step None = latest)
        into the structure and shardings of `params`; the optimizer state is not read.

        Returns: (params, meta). Raises FileNotFoundError when there is no finalized checkpoint.
        """
        step = self.latest_step() if step is None else int(step)
        if step is None:
            raise FileNotFoundError(f"no finalized checkpoint in {self.directory}")
        target = {"params": abstract_like(params)}
        restore_args = jax.tree.map(lambda x: ocp.ArrayRestoreArgs(sharding=x.sharding), target)
        out = self._mgr.restore(step, args=ocp.args.Composite(
            state=ocp.args.PyTreeRestore(item=target, restore_args=restore_args, partial_restore=True),
            meta=ocp.args.JsonRestore()))
        return out["state"]["params"], dict(out["meta"])

    def wait(self) -> None:
        """Block until pending asynchronous saves are finalized."""
        self._mgr.wait_until_finished()

    def close(self) -> None:
        self._mgr.wait_until_finished()
        self._mgr.close()


def phase_dir(run_dir: str | Path, phase: str) -> Path:
    """The checkpoint folder of a run's phase: ``run_dir/checkpoints/<phase>``.

    Raises: ValueError for a phase not in `PHASES`.
    """
    if phase not in PHASES:
        raise ValueError(f"phase={phase!r}: use one of {PHASES}")
    return Path(run_dir) / "checkpoints" / phase


def latest(run_dir: str | Path, phases: Sequence[str] = PHASES) -> tuple[str, int] | None:
    """(phase, step) of the newest finalized checkpoint of the first phase in `phases` that has one;
    None when none has. Creates no folder.

    Raises: ValueError for a phase not in `PHASES`.
    """
    for phase in phases:
        directory = phase_dir(run_dir, phase)
        if directory.is_dir():
            ck = Checkpointer(directory, async_save=False)
            try:
                step = ck.latest_step()
            finally:
                ck.close()
            if step is not None:
                return phase, step
    return None


def restore_params(run_dir: str | Path, phase: str, step: int | None, params: Any) -> tuple[Any, dict[str, Any]]:
    """The policy parameters saved by a run's `phase` at `step` (None = latest), restored into the
    structure and shardings of `params` (e.g. ``nnx.split(model, nnx.Param)[1]``); returns (params, meta).

    Raises: FileNotFoundError (no finalized checkpoint), ValueError (unknown phase).
    """
    ck = Checkpointer(phase_dir(run_dir, phase), async_save=False)
    try:
        return ck.restore_params(step, params)
    finally:
        ck.close()
