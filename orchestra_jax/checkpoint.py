"""Checkpoints of the train state with orbax (asynchronous, keep N, atomic, resharding on restore),
verified on restore.

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

Integrity. `Checkpointer.save` refuses a state with a non-finite floating-point value
(`NonFiniteStateError`, nothing written, no older checkpoint rotated away) and stores, in ``meta``
under ``"_orchestra_integrity"``, a digest of every array: two 32-bit position-weighted sums of the
array's bit pattern, computed on device (`state_digest`; a checksum against accidental damage such
as a partly overwritten, truncated or deleted file, not a cryptographic hash against tampering). It
depends only on the logical array, so it survives resharding. `Checkpointer.restore` checks what it
read: every floating value finite and every digest equal (leaves restored into another dtype are
not compared); a step that cannot be read at all (tensorstore ``DATA_LOSS``, a missing file, a
truncated manifest) is damaged too. With ``step=None`` a damaged step is skipped with a one-line
warning naming it and the newest intact step is restored; when none is intact, or an explicitly
requested step is damaged, `CheckpointError` says which steps and why. Checkpoints written before
digests existed restore with the finiteness check only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from orchestra_gym.errors import OrchestraError

__all__ = ["Checkpointer", "CheckpointError", "NonFiniteStateError", "abstract_like", "state_digest",
           "INTEGRITY_KEY", "phase_dir", "latest", "restore_params", "PHASES"]

log = logging.getLogger(__name__)

PHASES = ("grpo", "sft")  # the phases of a run, newest first
INTEGRITY_KEY = "_orchestra_integrity"  # reserved key of the saved meta (removed again by `restore`)
_DIGEST_VERSION = 1


class CheckpointError(OrchestraError, RuntimeError):
    """A checkpoint that cannot be used: unreadable, digest mismatch or non-finite values; the message
    names the step(s), the folder and the reason."""


class NonFiniteStateError(CheckpointError, ValueError):
    """`Checkpointer.save` was given a state holding NaN or inf (nothing was written)."""


def abstract_like(tree: Any, sharding: Any | None = None) -> Any:
    """`jax.ShapeDtypeStruct` tree of `tree` (keeping each leaf's sharding, or using `sharding`)."""

    def one(x):
        s = sharding if sharding is not None else getattr(x, "sharding", None)
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s)

    return jax.tree.map(one, tree)


# ---------------------------------------------------------------------------------------- digests


def _words(x: jax.Array) -> jax.Array | None:
    """The array's bit pattern as a flat uint32 vector (None for dtypes without one, e.g. int4)."""
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    if x.dtype == jnp.bool_:
        x = x.astype(jnp.uint8)
    unsigned = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32}
    size = np.dtype(x.dtype).itemsize if np.dtype(x.dtype).kind != "V" else 0
    if size in unsigned and not jnp.issubdtype(x.dtype, jnp.complexfloating):
        return jax.lax.bitcast_convert_type(x, unsigned[size]).astype(jnp.uint32).reshape(-1)
    if size == 8 and not jnp.issubdtype(x.dtype, jnp.complexfloating):
        return jax.lax.bitcast_convert_type(x, jnp.uint32).reshape(-1)
    return None


def _leaf_digest(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(sum1, sum2, all finite) of one array: uint32, uint32, bool scalars."""
    finite = jnp.all(jnp.isfinite(x)) if jnp.issubdtype(x.dtype, jnp.inexact) else jnp.array(True)
    w = _words(x)
    if w is None:
        return jnp.uint32(0), jnp.uint32(0), finite
    i = jnp.arange(w.shape[0], dtype=jnp.uint32)
    m1 = (i * jnp.uint32(0x9E3779B1) + jnp.uint32(0x85EBCA77)) | jnp.uint32(1)
    m2 = (i * jnp.uint32(0xC2B2AE3D) + jnp.uint32(0x27D4EB2F)) | jnp.uint32(1)
    s1 = jnp.sum(w * m1, dtype=jnp.uint32)
    s2 = jnp.sum((w ^ (w >> jnp.uint32(16))) * m2, dtype=jnp.uint32)
    return s1, s2, finite


# one compiled digest per (shape, dtype, sharding): leaves of one state may live on different devices
_leaf_digest_jit = jax.jit(_leaf_digest)


def state_digest(state: Any) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Per-array digests of a pytree of arrays, and the paths of arrays holding NaN or inf.

    Args:
        state: a pytree of `jax.Array` / numpy arrays (any sharding; computed where they live).

    Returns:
        (digests, non_finite): ``digests[path] = {"digest": 16 hex digits, "dtype": str, "shape":
        list[int]}`` keyed by ``jax.tree_util.keystr`` paths; ``non_finite``: the paths of
        floating-point arrays with a NaN or inf, in tree order.
    """
    leaves, _ = jax.tree_util.tree_flatten_with_path(state)
    arrays = [jnp.asarray(x) if not isinstance(x, jax.Array) else x for _, x in leaves]
    # one leaf at a time: a sharded leaf's digest is a collective, and on XLA:CPU's fake devices several
    # collectives in flight at once can starve each other's rendezvous (the run aborts)
    sums = [jax.device_get(_leaf_digest_jit(x)) for x in arrays]
    digests, non_finite = {}, []
    for (path, _), x, (s1, s2, finite) in zip(leaves, arrays, sums):
        key = jax.tree_util.keystr(path)
        digests[key] = {"digest": f"{int(s1):08x}{int(s2):08x}", "dtype": str(x.dtype), "shape": list(x.shape)}
        if not bool(finite):
            non_finite.append(key)
    return digests, non_finite


def _short(e: BaseException) -> str:
    """One line of an exception (tensorstore's DATA_LOSS dumps run to many lines)."""
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(e).__name__}: {first[:200]}{'...' if len(first) > 200 or len(text) > 1 else ''}"


class _Damaged(Exception):
    """Internal: one step failed verification (the message is the reason)."""


# ---------------------------------------------------------------------------------------- manager


class Checkpointer:
    """Thin wrapper over `orbax.checkpoint.CheckpointManager` for one run directory.

    Args:
      directory: checkpoint root (created).
      keep: checkpoints kept (older ones deleted after a newer one is finalized).
      async_save: write in a background thread (the train loop continues; `wait` blocks).

    Attributes:
      damaged_steps: steps that `restore` found damaged (a later `save` of the same step replaces it).
    """

    def __init__(self, directory: str | Path, *, keep: int = 3, async_save: bool = True):
        self.directory = Path(directory).resolve()
        self.directory.mkdir(parents=True, exist_ok=True)
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep, create=True, enable_async_checkpointing=async_save, cleanup_tmp_directories=True
        )
        self._mgr = ocp.CheckpointManager(self.directory, options=options, item_names=("state", "meta"))
        self.damaged_steps: set[int] = set()

    def save(self, step: int, state: Any, meta: dict[str, Any], *, force: bool = True) -> bool:
        """Start saving `state` (a pytree of arrays) and `meta` (JSON-able) as `step`, with digests.

        Raises:
          NonFiniteStateError: a floating-point array of `state` holds NaN or inf (the message names
            them); nothing is written and no older checkpoint is rotated away.
          ValueError: `meta` uses the reserved key ``"_orchestra_integrity"``.
        """
        if INTEGRITY_KEY in meta:
            raise ValueError(f"meta key {INTEGRITY_KEY!r} is reserved for the checkpoint digests; rename it")
        digests, non_finite = state_digest(state)
        if non_finite:
            shown = ", ".join(non_finite[:5]) + (f" and {len(non_finite) - 5} more" if len(non_finite) > 5 else "")
            raise NonFiniteStateError(
                f"refusing to save checkpoint step {int(step)} in {self.directory}: non-finite values (NaN/inf) in "
                f"{shown}; the earlier checkpoints are kept. Lower the learning rate or check the data, then resume")
        if int(step) in self.damaged_steps:  # replace the damaged copy of this step
            self._mgr.delete(int(step))
            self.damaged_steps.discard(int(step))
        full_meta = dict(meta)
        full_meta[INTEGRITY_KEY] = {"version": _DIGEST_VERSION, "leaves": digests}
        return self._mgr.save(
            int(step), args=ocp.args.Composite(state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(full_meta)),
            force=force,
        )

    def latest_step(self) -> int | None:
        """The newest *finalized* step (not yet verified: `restore` verifies), or None."""
        self._mgr.reload()
        return self._mgr.latest_step()

    def all_steps(self) -> list[int]:
        """Every finalized step, oldest first."""
        self._mgr.reload()
        return list(self._mgr.all_steps())

    def restore(self, step: int | None, target: Any) -> tuple[Any, dict[str, Any]]:
        """Restore `step` (None = the newest intact one) into the structure and shardings of `target`.

        Returns: (state, meta), meta without the reserved integrity key.

        Raises:
          FileNotFoundError: there is no finalized checkpoint.
          CheckpointError: the requested `step` is damaged, or (``step=None``) every step is; the
            message names each step and why (unreadable, digest mismatch, non-finite values).
        """
        return self._restore_with_fallback(step, lambda s: self._restore_verified(s, target))

    def restore_params(self, step: int | None, params: Any) -> tuple[Any, dict[str, Any]]:
        """Restore only the ``params`` of a saved `orchestra_jax.train_step.TrainState` (step None = the
        newest intact one) into the structure and shardings of `params`; the optimizer state is not read.
        The parameters read are verified like `restore` (finite, digests equal), with the same fallback.

        Returns: (params, meta), meta without the reserved integrity key.

        Raises:
          FileNotFoundError: there is no finalized checkpoint.
          CheckpointError: as `restore`.
        """
        return self._restore_with_fallback(step, lambda s: self._restore_verified(s, params, params_only=True))

    def _restore_with_fallback(self, step: int | None, read: Any) -> tuple[Any, dict[str, Any]]:
        """`read(step)` for the given step, or for the newest step that is intact (warning about each
        damaged one); raises as `restore`."""
        if step is not None:
            try:
                return read(int(step))
            except _Damaged as e:
                self.damaged_steps.add(int(step))
                raise CheckpointError(f"checkpoint step {int(step)} in {self.directory} is damaged: {e}") from None
        steps = sorted(self.all_steps(), reverse=True)
        if not steps:
            raise FileNotFoundError(f"no finalized checkpoint in {self.directory}")
        reasons = []
        for s in steps:
            try:
                out = read(s)
            except _Damaged as e:
                self.damaged_steps.add(s)
                reasons.append(f"step {s}: {e}")
                older = [t for t in steps if t < s]
                log.warning("checkpoint step %d in %s is damaged (%s); %s", s, self.directory, e,
                            f"trying step {older[0]}" if older else "no older checkpoint")
                continue
            return out
        raise CheckpointError(f"no intact checkpoint in {self.directory}: " + "; ".join(reasons)
                              + ". Fix: restore the folder from a backup, or start the run afresh in another folder")

    def _restore_verified(self, step: int, target: Any, params_only: bool = False) -> tuple[Any, dict[str, Any]]:
        if params_only:  # the TrainState's ``params`` field only (saved under the path ``.params``)
            abstract = {"params": abstract_like(target)}
            restore_args = jax.tree.map(lambda x: ocp.ArrayRestoreArgs(sharding=x.sharding), abstract)
            item = ocp.args.PyTreeRestore(item=abstract, restore_args=restore_args, partial_restore=True)
        else:
            item = ocp.args.StandardRestore(abstract_like(target))
        try:
            out = self._mgr.restore(step, args=ocp.args.Composite(state=item, meta=ocp.args.JsonRestore()))
        except Exception as e:  # tensorstore DATA_LOSS, missing files, bad JSON, ...
            raise _Damaged(f"cannot be read ({_short(e)})") from None
        state, meta = (out["state"]["params"] if params_only else out["state"]), dict(out["meta"] or {})
        saved = meta.pop(INTEGRITY_KEY, None)
        digests, non_finite = state_digest(state)
        if params_only:  # saved paths: ``.params...`` (a TrainState) or ``['params']...`` (a dict)
            leaves = (saved.get("leaves") or {}) if isinstance(saved, dict) else {}
            prefix = ".params" if any(k.startswith(".params") for k in leaves) else "['params']"
            digests = {prefix + k: v for k, v in digests.items()}
            non_finite = [prefix + k for k in non_finite]
        if non_finite:
            raise _Damaged(f"non-finite values (NaN/inf) in {', '.join(non_finite[:3])}")
        if isinstance(saved, dict):
            expected = saved.get("leaves") or {}
            bad = [k for k, d in digests.items() if k in expected and expected[k].get("dtype") == d["dtype"]
                   and expected[k].get("digest") != d["digest"]]
            if bad:
                raise _Damaged(f"digest mismatch in {len(bad)} array(s): {', '.join(bad[:3])}")
        return state, meta

    def wait(self) -> None:
        """Block until pending asynchronous saves are finalized."""
        self._mgr.wait_until_finished()

    def close(self) -> None:
        """Finish pending saves and release the manager."""
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

    Raises: FileNotFoundError (no finalized checkpoint), ValueError (unknown phase), CheckpointError
    (the step, or with ``step=None`` every step, is damaged: `Checkpointer.restore_params`).
    """
    ck = Checkpointer(phase_dir(run_dir, phase), async_save=False)
    try:
        return ck.restore_params(step, params)
    finally:
        ck.close()
