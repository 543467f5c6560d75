"""Per-device memory of the GRPO train step and the sampler's decode step, from XLA's compiler.

Nothing is allocated: the model is built with `nnx.eval_shape`, the train state with `jax.eval_shape`,
every input is a `jax.ShapeDtypeStruct` carrying the `NamedSharding` the trainer gives it
(`orchestra_jax.sharding` rules: params and optimizer state FSDP x TP, batch rows over (data, fsdp),
KV cache rows over (data, fsdp) and KV heads over tp), and each step is
``jax.jit(...).lower(...).compile()``; `compiled.memory_analysis()` then gives the bytes of one
device's partition (arguments, outputs, aliased/donated, temporaries).

Run it on a mesh of fake CPU devices (``XLA_FLAGS=--xla_force_host_platform_device_count=8`` set
before jax is imported). The CPU backend's buffer assignment is close to, not equal to, a GPU's
(the CPU compiler may keep some bf16 intermediates in float32), so temp bytes are an estimate.
Since the layers run under `jax.lax.scan`, compile time does not grow with the layer count.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from orchestra_jax import sharding as sh
from orchestra_jax.config import ModelConfig
from orchestra_jax.model import KVCache, Qwen3
from orchestra_jax.sampler import Sampler
from orchestra_jax.train_config import TrainConfig
from orchestra_jax.train_step import init_state, make_grpo_step, make_logp_fn, optimizer_from_config
from orchestra_jax.trainable import Trainable

__all__ = ["abstract_model", "tree_bytes_per_device", "kv_cache_bytes", "train_step_memory",
           "decode_step_memory", "resident_train_bytes", "max_rollout_rows", "GB"]

GB = 1e9  # bytes per GB (decimal, as HBM sizes are quoted: H100 80 GB, H200 141 GB)
_KV_NAMES = ("layers", "batch", "seq", "kv_heads", "head_dim")


def abstract_model(config: ModelConfig) -> Qwen3:
    """The Qwen3 module with `jax.ShapeDtypeStruct` leaves (no weights in memory)."""
    return nnx.eval_shape(lambda: Qwen3(config, rngs=nnx.Rngs(0)))


def _sds(x: Any, sharding: NamedSharding) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)


def _sharded_params(model: Qwen3, mesh) -> tuple[Any, Any]:
    """(abstract params nnx.State with sharded ShapeDtypeStruct leaves, same-structure NamedShardings)."""
    state = nnx.state(model, nnx.Param)
    shardings = sh.model_shardings(model, mesh)
    leaves, treedef = jax.tree.flatten(state)
    shard_leaves = jax.tree.leaves(shardings, is_leaf=lambda x: isinstance(x, NamedSharding))
    return (jax.tree.unflatten(treedef, [_sds(x, s) for x, s in zip(leaves, shard_leaves)]),
            jax.tree.unflatten(treedef, shard_leaves))


def tree_bytes_per_device(tree: Any) -> int:
    """Bytes one device holds of a pytree of sharded `jax.ShapeDtypeStruct` / arrays (the largest shard)."""
    total = 0
    for x in jax.tree.leaves(tree):
        shape = x.sharding.shard_shape(x.shape) if getattr(x, "sharding", None) is not None else x.shape
        total += math.prod(shape) * jnp.dtype(x.dtype).itemsize
    return int(total)


def kv_cache_bytes(config: ModelConfig, rows: int, tokens: int, mesh=None) -> int:
    """Bytes of the K and V caches [L, rows, tokens, K, H] in the compute dtype, per device on `mesh`
    (the sampler's layout: rows over (data, fsdp), KV heads over tp), total when mesh is None."""
    shape = (config.num_layers, rows, tokens, config.num_kv_heads, config.head_dim)
    if mesh is not None:
        shape = NamedSharding(mesh, sh.logical_to_spec(_KV_NAMES, shape, mesh)).shard_shape(shape)
    return 2 * math.prod(shape) * jnp.dtype(config.compute_dtype).itemsize


def _analysis(compiled) -> dict[str, int]:
    m = compiled.memory_analysis()
    out = {k: int(getattr(m, f"{k}_size_in_bytes")) for k in ("argument", "output", "alias", "temp")}
    out["peak"] = out["argument"] + out["output"] - out["alias"] + out["temp"]
    return out


def train_step_memory(config: ModelConfig, mesh, *, rows: int, seq: int, kl: bool = True,
                      logp_chunk: int = 256, trainable: Trainable | None = None) -> dict[str, Any]:
    """Compile `train_step.make_grpo_step` (one micro-batch of `rows` x `seq` tokens, the trainer's
    AdamW with clipping, KL reference when `kl`, entropy metric) on `mesh` and report bytes per device.

    Returns: dict with params / opt_state / ref_params / batch (bytes per device of each input, from
    the sharded shapes), compiled (argument, output, alias, temp, peak from `memory_analysis`), and
    the shapes used. Raises: whatever XLA raises for a layout it cannot compile.

    With a partial `trainable` (`orchestra_jax.trainable`: top-N layers / LoRA) the params, optimizer state and
    reference are the trained part only and ``frozen`` (bytes per device) the rest, every leaf of both
    replicated on the mesh (the split's sharding is not planned here).
    """
    if trainable is not None and not trainable.is_full:
        return _split_step_memory(config, mesh, rows=rows, seq=seq, kl=kl, logp_chunk=logp_chunk, trainable=trainable)
    model = abstract_model(config)
    graphdef = nnx.graphdef(model)
    params, shardings = _sharded_params(model, mesh)
    tx = optimizer_from_config(TrainConfig())
    state = jax.eval_shape(lambda p: init_state(p, tx, with_reference=kl), params)
    rep = NamedSharding(mesh, P())
    # the optimizer state mirrors the params' sharding (the trainer inits it from sharded params)
    opt = _mirror(tx, state.opt_state, shardings, rep)
    ref = None if state.ref_params is None else jax.tree.map(_sds, state.ref_params, shardings)
    st = state._replace(params=jax.tree.map(_sds, state.params, shardings), opt_state=opt,
                        step=_sds(state.step, rep), ref_params=ref)
    return _compile_step(config, mesh, graphdef, st, tx, rows=rows, seq=seq, kl=kl, logp_chunk=logp_chunk)


def _compile_step(config: ModelConfig, mesh, graphdef: Any, st: Any, tx: Any, *, rows: int, seq: int, kl: bool,
                  logp_chunk: int, trainable: Trainable | None = None) -> dict[str, Any]:
    rows_spec = NamedSharding(mesh, P(None, ("data", "fsdp")) if rows % (mesh.shape["data"] * mesh.shape["fsdp"]) == 0
                              else P())
    batch = {k: jax.ShapeDtypeStruct((1, rows, seq), d, sharding=rows_spec) for k, d in
             (("tokens", jnp.int32), ("attention_mask", jnp.int32), ("loss_mask", jnp.float32),
              ("sampler_logp", jnp.float32))}
    batch["advantages"] = jax.ShapeDtypeStruct((1, rows), jnp.float32, sharding=rows_spec)
    loss_cfg = TrainConfig().loss_config()
    if not kl:
        loss_cfg = dataclasses.replace(loss_cfg, kl_coef=0.0)
    logp_fn = make_logp_fn(graphdef, chunk=logp_chunk, with_entropy=True, trainable=trainable)
    step = make_grpo_step(logp_fn, tx, loss_cfg)
    with mesh:
        compiled = step.lower(st, batch).compile()
    out = {"params": tree_bytes_per_device(st.params), "opt_state": tree_bytes_per_device(st.opt_state),
           "ref_params": tree_bytes_per_device(st.ref_params), "batch": tree_bytes_per_device(batch),
           "compiled": _analysis(compiled), "rows": rows, "seq": seq, "remat": config.remat,
           "num_layers": config.num_layers}
    if trainable is not None:
        out["frozen"] = tree_bytes_per_device(st.frozen)
    return out


def _split_step_memory(config: ModelConfig, mesh, *, rows: int, seq: int, kl: bool, logp_chunk: int,
                       trainable: Trainable) -> dict[str, Any]:
    """`train_step_memory` under a trainable split (every state leaf replicated)."""
    model = abstract_model(config)
    graphdef = nnx.graphdef(model)
    params = nnx.state(model, nnx.Param)
    tx = optimizer_from_config(TrainConfig())
    state = jax.eval_shape(lambda p: init_state(p, tx, with_reference=kl, trainable=trainable,
                                                key=jax.random.key(0)), params)
    rep = NamedSharding(mesh, P())
    st = jax.tree.map(lambda x: _sds(x, rep), state)
    return _compile_step(config, mesh, graphdef, st, tx, rows=rows, seq=seq, kl=kl, logp_chunk=logp_chunk,
                         trainable=trainable)


def _mirror(tx: Any, opt_state: Any, shardings: Any, rep: NamedSharding) -> Any:
    """Sharded abstract optimizer state: leaves shaped like a parameter take its sharding, the rest
    (step counts) are replicated (`optax.tree_utils.tree_map_params`)."""
    return optax.tree_utils.tree_map_params(tx, lambda x, s: _sds(x, s), opt_state, shardings,
                                            transform_non_params=lambda x: _sds(x, rep))


def decode_step_memory(config: ModelConfig, mesh, *, rows: int, cache_len: int, chunk: int = 32) -> dict[str, Any]:
    """Compile the sampler's decode loop (`Sampler._decode`, `chunk` steps, sampling at T > 0, attention
    over the whole cache) for `rows` x `cache_len` on `mesh`, weights in `config.param_dtype`.

    Returns: dict with params, kv_cache (analytic, per device), compiled (memory_analysis) and shapes.
    """
    model = abstract_model(config)
    params, shardings = _sharded_params(model, mesh)
    sampler = Sampler.__new__(Sampler)  # the jitted cores only need graphdef, chunk, pad_id
    sampler.config, sampler.mesh, sampler.chunk, sampler.pad_id = config, mesh, int(chunk), 0
    sampler.graphdef = nnx.graphdef(model)
    decode = jax.jit(sampler._decode_impl, donate_argnums=(1,),
                     static_argnames=("greedy", "top_k", "use_top_p", "kv_len"))

    def put(x, names):
        return _sds(x, NamedSharding(mesh, sh.logical_to_spec(names, x.shape, mesh)))

    cache = jax.eval_shape(lambda: KVCache.init(config, rows, cache_len))
    cache = KVCache(put(cache.k, _KV_NAMES), put(cache.v, _KV_NAMES), put(cache.valid, ("batch", "seq")),
                    put(cache.length, ("batch",)), put(cache.slot, ()))
    s = jax.ShapeDtypeStruct
    logits = put(s((rows, config.vocab_size), jnp.float32), ("batch", "vocab"))
    row = lambda d: put(s((rows,), d), ("batch",))  # noqa: E731
    rep = lambda shape, d: _sds(s(shape, d), NamedSharding(mesh, P()))  # noqa: E731
    args = (params, cache, logits, row(jnp.bool_), rep((), jnp.int32), rep((), jnp.int32), row(jnp.int32),
            put(s((rows, 1), jnp.int32), ("batch", None)), rep((1, 1), jnp.int32),
            jax.eval_shape(lambda: jax.random.key(0)), rep((), jnp.float32), rep((), jnp.float32),
            rep((2,), jnp.int32))
    with mesh:
        compiled = decode.lower(*args, greedy=False, top_k=0, use_top_p=False, kv_len=cache_len).compile()
    return {"params": tree_bytes_per_device(params), "kv_cache": kv_cache_bytes(config, rows, cache_len, mesh),
            "compiled": _analysis(compiled), "rows": rows, "cache_len": cache_len, "num_layers": config.num_layers}


def analytic_param_bytes(config: ModelConfig, shards: int) -> float:
    """`ModelConfig.num_params` x dtype bytes / shards: the fully-sharded ideal bytes per device."""
    return config.num_params() * np.dtype(config.param_dtype).itemsize / shards


def resident_train_bytes(train: dict[str, Any]) -> int:
    """Bytes per device the trainer keeps between steps (params + AdamW state + KL reference + the frozen part of a
    trainable split), from a
    `train_step_memory` result; the step's temporaries (activations) are freed while rollouts run."""
    return int(train["params"] + train["opt_state"] + train["ref_params"] + train.get("frozen", 0))


def max_rollout_rows(hbm: float, train: dict[str, Any], decode: dict[str, Any], *, multiple: int = 1) -> int:
    """The largest number of KV-cache rows (of `decode["cache_len"]` tokens) whose decode step fits in
    `hbm` bytes per device beside the resident train state.

    The decode step's peak minus its weights (shared with the trainer, already resident) is taken as
    linear in the rows: KV cache + logits + temporaries per row = (decode peak - decode params) / rows.
    The answer is rounded down to a multiple of `multiple` (the row shards, data x fsdp), 0 when even
    that does not fit. Units: bytes in, rows out.
    """
    per_row = (decode["compiled"]["peak"] - decode["params"]) / decode["rows"]
    free = hbm - resident_train_bytes(train)
    rows = int(free // per_row) if free > 0 and per_row > 0 else 0
    return max(0, rows - rows % max(1, int(multiple)))
