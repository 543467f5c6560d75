"""Device mesh with axes (data, fsdp, tp) and the partition rules of the Qwen3 policy.

Every parameter of `orchestra_jax.model.Qwen3` declares logical axis names next to its
definition (nnx `out_sharding` metadata); `RULES` maps each logical name to a mesh axis:

- `embed` (model width D) -> `fsdp`: weights are fully sharded over the fsdp axis (ZeRO-3 style;
  XLA all-gathers each layer's slice inside the layer scan).
- `q_heads`, `kv_heads`, `mlp`, `vocab` -> `tp`: Megatron-style tensor parallelism.
- `layers`, `head_dim`, `norm` -> replicated.
- Activations: the batch axis is split over (`data`, `fsdp`).

A dimension whose size the mesh axis does not divide (e.g. 2 KV heads on tp=4) is replicated
instead of failing, so the same rules serve tiny test models and Qwen3-8B.
Multi-host: call `initialize_distributed()` on every host first; `make_mesh()` then spans all
processes' devices (`jax.devices()` is global).
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping, Sequence

import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

AXES = ("data", "fsdp", "tp")

RULES: dict[str, str | tuple[str, ...] | None] = {
    "vocab": "tp",
    "embed": "fsdp",
    "q_heads": "tp",
    "kv_heads": "tp",
    "mlp": "tp",
    "head_dim": None,
    "layers": None,
    "norm": None,
    "batch": ("data", "fsdp"),
    "seq": None,
}


def initialize_distributed(**kwargs: Any) -> bool:
    """Start `jax.distributed` on a multi-host job (no-op on one process); True when it is running.

    Runs `jax.distributed.initialize(**kwargs)` when kwargs are given or when the usual
    coordinator variables are set: `JAX_COORDINATOR_ADDRESS` ("host:port" of process 0, read by JAX),
    `JAX_NUM_PROCESSES` and `JAX_PROCESS_ID` (integers, passed on here as `num_processes` and
    `process_id`; JAX does not read them), or `JAX_NUM_PROCESSES` > 1 alone for a cluster that JAX
    detects itself (SLURM, Open MPI, TPU pods). Must run before any other JAX call touches the devices.
    A second call is a no-op. On CPU the cross-process collectives use
    `jax_cpu_collectives_implementation` (gloo, the default in jax 0.10).

    Raises:
        ValueError: JAX_NUM_PROCESSES or JAX_PROCESS_ID is not an integer.
    """
    if jax.distributed.is_initialized():
        return True
    env = {}
    for var, key in (("JAX_NUM_PROCESSES", "num_processes"), ("JAX_PROCESS_ID", "process_id")):
        if os.environ.get(var, "").strip():
            try:
                env[key] = int(os.environ[var])
            except ValueError:
                raise ValueError(f"{var}={os.environ[var]!r}: must be an integer "
                                 f"(e.g. {var}={'2' if key == 'num_processes' else '0'})") from None
    if kwargs or os.environ.get("JAX_COORDINATOR_ADDRESS") or env.get("num_processes", 1) > 1:
        jax.distributed.initialize(**{**env, **kwargs})
        return True
    return False


def make_mesh(data: int | None = None, fsdp: int | None = None, tp: int = 1,
              devices: Sequence[jax.Device] | None = None) -> Mesh:
    """Mesh with axes ("data", "fsdp", "tp") over `devices` (default: all, every host).

    Sizes left as None are inferred: fsdp takes what data and tp leave (data defaults to 1).

    Raises:
        ValueError: the sizes do not multiply to the number of devices.
    """
    devices = list(jax.devices() if devices is None else devices)
    n = len(devices)
    data = 1 if data is None else data
    if fsdp is None:
        if n % (data * tp):
            raise ValueError(f"{n} devices are not divisible by data={data} x tp={tp}")
        fsdp = n // (data * tp)
    if data * fsdp * tp != n:
        raise ValueError(f"mesh data={data} x fsdp={fsdp} x tp={tp} = {data * fsdp * tp} "
                         f"!= {n} devices; pick sizes whose product is {n}")
    grid = np.asarray(devices, dtype=object).reshape(data, fsdp, tp)
    return Mesh(grid, AXES)


def logical_to_spec(names: Sequence[str | None], shape: Sequence[int], mesh: Mesh,
                    rules: Mapping[str, Any] = RULES) -> P:
    """PartitionSpec for an array with logical axis `names` and `shape` on `mesh`.

    Mesh axes of size 1, axes the dimension size does not divide, and mesh axes already used
    by an earlier dimension are dropped (replication on that dimension).

    Raises:
        KeyError: a logical name without a rule (message lists the known names).
    """
    used: set[str] = set()
    spec = []
    for name, size in zip(names, shape):
        if name is None:
            spec.append(None)
            continue
        if name not in rules:
            raise KeyError(f"no partition rule for logical axis {name!r}; known: {sorted(rules)}")
        target = rules[name]
        axes = () if target is None else ((target,) if isinstance(target, str) else tuple(target))
        keep = []
        for ax in axes:
            k = mesh.shape[ax]
            if k == 1 or ax in used:
                continue
            if size % (math.prod(mesh.shape[a] for a in keep) * k) == 0:
                keep.append(ax)
        used.update(keep)
        spec.append(None if not keep else (keep[0] if len(keep) == 1 else tuple(keep)))
    return P(*spec)


def variable_sharding(variable: nnx.Variable, mesh: Mesh, rules: Mapping[str, Any] = RULES) -> NamedSharding:
    """NamedSharding of one nnx Variable from its `out_sharding` metadata (logical axis names) (replicated if none)."""
    names = variable.get_metadata().get("out_sharding") or (None,) * len(variable.shape)
    return NamedSharding(mesh, logical_to_spec(names, variable.shape, mesh, rules))


def model_shardings(model: nnx.Module, mesh: Mesh, rules: Mapping[str, Any] = RULES) -> nnx.State:
    """An `nnx.State` shaped like `nnx.state(model, nnx.Param)` holding a NamedSharding per leaf."""
    state = nnx.state(model, nnx.Param)
    return jax.tree.map(lambda v: v.replace(variable_sharding(v, mesh, rules)), state,
                        is_leaf=lambda x: isinstance(x, nnx.Variable))


def shard_model(model: nnx.Module, mesh: Mesh, rules: Mapping[str, Any] = RULES) -> nnx.Module:
    """Place every parameter of `model` onto its sharding (in place); returns the model."""
    state = nnx.state(model, nnx.Param)
    shardings = model_shardings(model, mesh, rules)
    nnx.update(model, jax.device_put(state, shardings))
    return model


def batch_sharding(mesh: Mesh, shape: Sequence[int]) -> NamedSharding:
    """Sharding for a batch array of `shape` [B, ...]: B split over (data, fsdp) where it divides."""
    return NamedSharding(mesh, logical_to_spec(("batch",) + (None,) * (len(shape) - 1), shape, mesh))
