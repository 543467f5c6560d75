"""Device benchmark: decode tokens/s against the HBM-bandwidth bound, and the GRPO train step's MFU.

Builds `--config` (default ``qwen3-8b``) with random weights in `--dtype` (default bfloat16): no weights
are downloaded, and the parameters are created on the devices by one jitted initialiser whose
`out_shardings` are the trainer's (`orchestra_jax.sharding.model_shardings` on an FSDP mesh of all local
devices), so an 8B model never passes through host memory. Then:

decode  For each batch B in `--batches` (default 1,32,128): `orchestra_jax.sampler.Sampler.prefill` of B
        random prompts of `--prompt` tokens, two warm-up `generate` calls of 2 x `--chunk` tokens (compiles), then a
        timed `generate` of `--steps` tokens per row (temperature 1, no EOS ids so every row runs all
        steps; the sampler's host loop is inside the time). tokens_per_s = B x steps / seconds.
        The bound: one decode step reads every weight once and the whole attended KV window of every
        row (the sampler attends over `kv_len` = max_cache_len slots, masked), so
        bytes_per_step = param bytes + B x kv_len x (2 x L x K x H x compute-dtype bytes) and
        bound_tokens_per_s = B x bandwidth / bytes_per_step.
train   `orchestra_jax.train_step.make_grpo_step` (the trainer's AdamW with clipping, logp chunk 256 with
        entropy, KL off so no reference copy) on one row of `--seq` tokens (default 4096; second half
        loss tokens), remat on, params in `--dtype` (AdamW moments follow: bfloat16 for 8B, so the state
        fits one device; a timing of the same FLOPs as float32 master weights). When the device's memory
        limit is known, the layer count is cut to fit ~6 x param bytes in 80 % of it (embedding and head
        kept), and an out-of-memory run is retried with 2/3 of the layers (`train.layers` says which ran).
        FLOPs per step = 6 x N_matmul x tokens + 6 x L x N_heads x H x T^2 (causal attention, forward +
        backward; remat recompute not counted), N_matmul = params without the embedding table
        (the LM head counts). MFU = FLOPs / step seconds / peak bf16 FLOPs of the device kind.

Tables: HBM bandwidth by device kind (H100 SXM 3.35e12 B/s, H200 4.8e12) else measured (a jitted
read + write of a large array, 2 x bytes / median seconds); peak dense bf16 FLOPs (H100 989e12,
H200 989e12) else null (MFU null, e.g. on CPU).

Prints ONE JSON line (and writes it to `--json` when given). Keys: device_kind, platform, n_devices,
config, dtype, num_params, param_bytes, bandwidth_Bps, bandwidth_source, peak_flops, decode (list of
{batch, prompt, steps, kv_len, seconds, tokens_per_s, bytes_per_step, bound_tokens_per_s,
fraction_of_bound}), train ({layers, rows, seq, tokens, step_s, flops_per_step, flops_per_s, mfu,
oom_retries}), wall_s, jax.

Usage: python benchmarks/device/bench_device.py [--config qwen3-8b] [--batches 1,32,128] [--prompt 512]
       [--steps 128] [--seq 4096] [--train-steps 3] [--json runs/device.json]
CPU smoke: python benchmarks/device/bench_device.py --config tiny --batches 1,2 --prompt 16 --steps 8
       --seq 64 --train-steps 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

from orchestra_jax.devices import device_specs  # noqa: E402

def measure_bandwidth(n_bytes: int, repeats: int = 5) -> float:
    """Bytes/s of a jitted ``x + 1`` over a float32 array of `n_bytes` on the default device
    (each element read once and written once: 2 x n_bytes per call), median of `repeats`."""
    x = jnp.zeros((n_bytes // 4,), jnp.float32)
    f = jax.jit(lambda a: a + 1)
    f(x).block_until_ready()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f(x).block_until_ready()
        times.append(time.perf_counter() - t)
    return 2 * x.nbytes / statistics.median(times)


def init_params(config, mesh, seed: int = 0):
    """(graphdef, params nnx.State) of a randomly initialised Qwen3, created on the devices under jit
    with the trainer's shardings (no host copy of the weights)."""
    from flax import nnx

    from orchestra_jax import sharding as sh
    from orchestra_jax.model import Qwen3

    abstract = nnx.eval_shape(lambda: Qwen3(config, rngs=nnx.Rngs(seed)))
    graphdef = nnx.graphdef(abstract)
    shardings = sh.model_shardings(abstract, mesh)
    params = jax.jit(lambda: nnx.state(Qwen3(config, rngs=nnx.Rngs(seed)), nnx.Param),
                     out_shardings=shardings)()
    return graphdef, params


def kv_bytes_per_token(config) -> int:
    """Bytes of one row's K and V at one cache slot over all layers (compute dtype)."""
    return 2 * config.num_layers * config.num_kv_heads * config.head_dim * jnp.dtype(config.compute_dtype).itemsize


def bench_decode(config, graphdef, params, mesh, batches, prompt: int, steps: int, chunk: int,
                 bandwidth: float | None, param_bytes: int) -> list[dict]:
    from flax import nnx

    from orchestra_jax.sampler import Sampler, bucket

    model = nnx.merge(graphdef, params)
    cache_len = bucket(prompt) + 4 * chunk + steps
    rng = np.random.default_rng(0)
    out = []
    for b in batches:
        sampler = Sampler(model, eos_ids=(), max_cache_len=cache_len, chunk=chunk, kv_min=cache_len,
                          mesh=mesh if mesh.size > 1 else None)
        prompts = rng.integers(1, config.vocab_size, size=(b, prompt)).tolist()
        state = sampler.prefill(prompts)
        # compiles: a call of two chunks compiles the decode loop for fresh inputs and for the previous
        # chunk's outputs (another jit signature); the second call sees the cache as generate leaves it
        for warm in (1, 2):
            state, _ = sampler.generate(state, max_new_tokens=2 * chunk, temperature=1.0, rng=warm)
        jax.block_until_ready(state.next_logits)
        t = time.perf_counter()
        state, gen = sampler.generate(state, max_new_tokens=steps, temperature=1.0, rng=3)
        jax.block_until_ready(state.next_logits)
        sec = time.perf_counter() - t
        n_tok = sum(len(x) for x in gen.tokens)
        bytes_step = param_bytes + b * cache_len * kv_bytes_per_token(config)
        bound = None if bandwidth is None else b * bandwidth / bytes_step
        tps = n_tok / sec
        out.append({"batch": b, "prompt": prompt, "steps": steps, "kv_len": cache_len, "tokens": n_tok,
                    "seconds": round(sec, 4), "tokens_per_s": tps, "bytes_per_step": bytes_step,
                    "bound_tokens_per_s": bound, "fraction_of_bound": None if bound is None else tps / bound})
        print(f"bench_device: decode batch {b}: {tps:.1f} tokens/s", file=sys.stderr, flush=True)
        del state, sampler
    return out


def train_flops(config, tokens_per_row: int, rows: int) -> float:
    """6 N_matmul T + causal attention 6 L N_heads H T^2 per row (see the module docstring)."""
    n_matmul = config.num_params() - config.vocab_size * config.hidden_size
    attn = 6 * config.num_layers * config.num_heads * config.head_dim * tokens_per_row ** 2
    return float(rows * (6 * n_matmul * tokens_per_row + attn))


def _fit_layers(config, limit: int | None) -> int:
    """Largest layer count whose ~6 x param bytes (params, gradient sum, AdamW moments, update
    temporaries) fit in 80 % of `limit` bytes; the config's when the limit is unknown."""
    if not limit:
        return config.num_layers
    item = jnp.dtype(config.param_dtype).itemsize
    for layers in range(config.num_layers, 0, -1):
        if 6 * config.replace(num_layers=layers).num_params() * item <= 0.8 * limit:
            return layers
    return 1


def _is_oom(err: BaseException) -> bool:
    s = str(err)
    return "RESOURCE_EXHAUSTED" in s or "out of memory" in s.lower() or "Out of memory" in s


def bench_train(config, mesh, seq: int, n_steps: int, peak: float | None, limit: int | None) -> dict:
    import dataclasses

    from orchestra_jax import sharding as sh
    from orchestra_jax.train_config import TrainConfig
    from orchestra_jax.train_step import TrainState, make_grpo_step, make_logp_fn, optimizer_from_config, split_micro

    layers = _fit_layers(config, limit)
    retries = 0
    while True:
        cfg = config.replace(num_layers=layers, remat=True)
        try:
            graphdef, params = init_params(cfg, mesh, seed=1)
            tx = optimizer_from_config(TrainConfig())
            state = TrainState(params=params, opt_state=jax.jit(tx.init)(params),
                               step=jnp.zeros((), jnp.int32), ref_params=None)
            loss_cfg = dataclasses.replace(TrainConfig().loss_config(), kl_coef=0.0)
            step = make_grpo_step(make_logp_fn(graphdef, chunk=256, with_entropy=True), tx, loss_cfg)
            rng = np.random.default_rng(0)
            rows = 1
            tokens = rng.integers(1, cfg.vocab_size, size=(rows, seq)).astype(np.int32)
            loss_mask = np.zeros((rows, seq), np.float32)
            loss_mask[:, seq // 2:] = 1.0
            batch = split_micro({"tokens": tokens, "attention_mask": np.ones((rows, seq), np.int32),
                                 "loss_mask": loss_mask, "sampler_logp": np.zeros((rows, seq), np.float32),
                                 "advantages": rng.normal(size=rows).astype(np.float32)}, 1)
            batch = {k: jax.device_put(v, NamedSharding(mesh, P(None, *sh.batch_sharding(mesh, v.shape[1:]).spec)))
                     for k, v in batch.items()}  # [M=1, rows, ...]: rows over (data, fsdp) where they divide
            with mesh:
                for _ in range(2):  # compiles; the second call sees the state as the step leaves it (its shardings)
                    state, m = step(state, batch)
                    jax.block_until_ready(m["loss"])
                times = []
                for _ in range(n_steps):
                    t = time.perf_counter()
                    state, m = step(state, batch)
                    jax.block_until_ready(m["loss"])
                    times.append(time.perf_counter() - t)
            loss = float(m["loss"])
            break
        except Exception as err:  # noqa: BLE001 - only out-of-memory is retried
            if not _is_oom(err) or layers == 1:
                raise
            state = params = batch = None
            layers, retries = max(1, layers * 2 // 3), retries + 1
    sec = statistics.median(times)
    flops = train_flops(cfg, seq, rows)
    print(f"bench_device: train step {layers} layers x {seq} tokens: {sec:.3f} s", file=sys.stderr, flush=True)
    del state
    return {"layers": layers, "full_layers": config.num_layers, "rows": rows, "seq": seq, "tokens": rows * seq,
            "step_s": sec, "flops_per_step": flops, "flops_per_s": flops / sec,
            "mfu": None if peak is None else flops / sec / peak, "loss": loss, "oom_retries": retries}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="qwen3-8b", help="orchestra_jax.config preset")
    p.add_argument("--dtype", default="bfloat16", help="param and compute dtype")
    p.add_argument("--batches", default="1,32,128", type=lambda v: [int(x) for x in v.split(",")])
    p.add_argument("--prompt", type=int, default=512, help="prompt tokens per row before decoding")
    p.add_argument("--steps", type=int, default=128, help="timed decode tokens per row")
    p.add_argument("--chunk", type=int, default=32, help="sampler decode steps per compiled call")
    p.add_argument("--seq", type=int, default=4096, help="train-step tokens (one row)")
    p.add_argument("--train-steps", type=int, default=3, help="timed train steps after the two warm-up steps")
    p.add_argument("--no-train", action="store_true")
    p.add_argument("--bandwidth-bytes", type=int, default=1 << 28,
                   help="array size for the measured bandwidth (devices not in the table)")
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    t0 = time.perf_counter()

    from orchestra_jax import sharding as sh
    from orchestra_jax.config import ModelConfig

    config = ModelConfig.from_preset(args.config, param_dtype=args.dtype, compute_dtype=args.dtype)
    dev = jax.devices()[0]
    kind = dev.device_kind
    bw, peak = device_specs(kind)
    bw_source = "table"
    if bw is None:
        bw, bw_source = measure_bandwidth(args.bandwidth_bytes), "measured"
    stats = dev.memory_stats() if hasattr(dev, "memory_stats") else None
    limit = (stats or {}).get("bytes_limit")
    mesh = sh.make_mesh(data=1, devices=jax.local_devices())
    param_bytes = config.num_params() * jnp.dtype(config.param_dtype).itemsize
    graphdef, params = init_params(config, mesh)
    decode = bench_decode(config, graphdef, params, mesh, args.batches, args.prompt, args.steps, args.chunk,
                          bw, param_bytes)
    del params
    train = None if args.no_train else bench_train(config, mesh, args.seq, args.train_steps, peak, limit)
    out = {"device_kind": kind, "platform": dev.platform, "n_devices": jax.local_device_count(),
           "config": args.config, "dtype": args.dtype, "num_params": config.num_params(),
           "param_bytes": param_bytes, "bandwidth_Bps": bw, "bandwidth_source": bw_source, "peak_flops": peak,
           "memory_limit_bytes": limit, "decode": decode, "train": train,
           "wall_s": round(time.perf_counter() - t0, 1), "jax": jax.__version__}
    line = json.dumps(out)
    print(line, flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(line + "\n")
    return out


if __name__ == "__main__":
    main()
