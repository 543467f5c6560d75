"""Checkpoints of the train state with orbax (asynchronous, keep N, atomic, resharding on restore).

Layout: ``<dir>/<step>/state`` (the pytree: params, optimizer state, step, reference params) and
``<dir>/<step>/meta`` (JSON: config name, seed, anything the loop needs to resume its data order).
Orbax writes each step into a temporary folder and renames it when complete (its atomic finalize), so a
run killed during a save leaves no folder that `latest_step` would choose; `CheckpointManager` only
lists finalized steps.

Restore takes a *target* pytree (arrays or `jax.ShapeDtypeStruct` with `.sharding`): the saved arrays
are read straight into the target's shardings, so a checkpoint written on a 2-device fsdp mesh restores
onto 1 device or a tp mesh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

__all__ = ["Checkpointer", "abstract_like"]


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

    def wait(self) -> None:
        """Block until pending asynchronous saves are finalized."""
        self._mgr.wait_until_finished()

    def close(self) -> None:
        self._mgr.wait_until_finished()
        self._mgr.close()
