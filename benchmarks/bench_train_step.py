"""GRPO train-step throughput: orchestra_jax vs Google's Tunix GRPO vs PyTorch, same tiny Qwen3, same batch.

One run, CPU by default. Each contender does the same work per step: the policy's token log-probs
(forward + backward), the frozen reference's log-probs (forward, KL coefficient 1e-4), the clipped
surrogate loss (eps 0.2 / 0.28, dual clip 10, token-mean) and an AdamW update. Reported: tokens per
second (B x T / median step time over `--steps` steps after a warm-up step that includes compilation).

  orchestra_jax: `orchestra_jax.train_step.make_grpo_step` (one jit, donated state).
  tunix:         `tunix.rl.algo_core.grpo_loss_fn` with `tunix.models.qwen3` + nnx.Optimizer(optax.adamw),
                 ref log-probs by `tunix.rl.common.compute_per_token_logps` (both nnx.jit).
  torch:         transformers' Qwen3ForCausalLM (eager, fp32) + the same loss in PyTorch + torch.optim.AdamW.

Usage: PYTHONPATH=. python benchmarks/bench_train_step.py [--batch 8 --prompt 64 --completion 192 --steps 5]
       [--record]   (appends a section to benchmarks/RESULTS.md; without it: print only)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

TINY = dict(vocab=512, d=64, f=128, layers=2, heads=4, kv_heads=2, head_dim=16)


def make_data(b: int, p: int, c: int, vocab: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    prompt = rng.integers(1, vocab, size=(b, p)).astype(np.int32)
    comp = rng.integers(1, vocab, size=(b, c)).astype(np.int32)
    lengths = rng.integers(c // 2, c + 1, size=b)
    cmask = (np.arange(c)[None, :] < lengths[:, None]).astype(np.float32)
    adv = rng.normal(0, 1, size=b).astype(np.float32)
    return prompt, comp, cmask, adv


def timed(fn, steps: int) -> tuple[float, float]:
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return first, statistics.median(times)


# ------------------------------------------------------------------------------------------ orchestra_jax
def bench_ours(args, data):
    import jax
    from flax import nnx

    from orchestra_jax import grpo, train_step as train
    from orchestra_jax.config import ModelConfig
    from orchestra_jax.model import Qwen3

    prompt, comp, cmask, adv = data
    b = prompt.shape[0]
    cfg = ModelConfig.from_preset("tiny", vocab_size=TINY["vocab"], hidden_size=TINY["d"],
                                  intermediate_size=TINY["f"], num_layers=TINY["layers"], num_heads=TINY["heads"],
                                  num_kv_heads=TINY["kv_heads"], head_dim=TINY["head_dim"])
    model = Qwen3(cfg, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(model, nnx.Param)
    tx = train.make_optimizer(1e-6)
    state = train.init_state(params, tx, with_reference=True)
    step = train.make_grpo_step(train.make_logp_fn(graphdef, chunk=args.prompt + args.completion), tx,
                                grpo.LossConfig())
    tokens = np.concatenate([prompt, comp], 1)
    lm = np.concatenate([np.zeros_like(prompt, np.float32), cmask], 1)
    am = np.concatenate([np.ones_like(prompt), (cmask > 0).astype(np.int32)], 1)
    batch = train.split_micro({"tokens": tokens, "attention_mask": am, "loss_mask": lm,
                               "sampler_logp": np.zeros_like(lm), "advantages": adv}, 1)
    batch = {k: jax.numpy.asarray(v) for k, v in batch.items()}
    box = {"s": state}

    def run():
        box["s"], m = step(box["s"], batch)
        jax.block_until_ready(m["loss"])

    return timed(run, args.steps), b * tokens.shape[1]


# ------------------------------------------------------------------------------------------ tunix
def bench_tunix(args, data):
    import dataclasses

    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx
    from tunix.models.qwen3 import model as tmodel
    from tunix.rl import algo_core, common
    from tunix.rl.grpo.grpo_learner import GRPOConfig

    prompt, comp, cmask, adv = data
    b = prompt.shape[0]
    mc = tmodel.ModelConfig(num_layers=TINY["layers"], vocab_size=TINY["vocab"], embed_dim=TINY["d"],
                            hidden_dim=TINY["f"], num_heads=TINY["heads"], head_dim=TINY["head_dim"],
                            num_kv_heads=TINY["kv_heads"], rope_theta=1_000_000, norm_eps=1e-6)
    policy = tmodel.Qwen3(mc, rngs=nnx.Rngs(0))
    ref = tmodel.Qwen3(mc, rngs=nnx.Rngs(0))
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    kw = dict(num_generations=2, beta=1e-4, epsilon=0.2, loss_agg_mode="token-mean")
    if "epsilon_high" in fields:
        kw["epsilon_high"] = 0.28
    if "epsilon_c" in fields:
        kw["epsilon_c"] = 10.0
    algo = GRPOConfig(**kw)
    for attr, value in (("temperature", 1.0), ("epsilon_high", 0.28), ("epsilon_c", 10.0)):
        if not hasattr(algo, attr):  # read by grpo_loss_fn but not a GRPOConfig field in this release
            object.__setattr__(algo, attr, value)
    opt = nnx.Optimizer(policy, optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-6, weight_decay=0.01)),
                        wrt=nnx.Param)
    pad_id, eos_id = 0, TINY["vocab"] - 1
    prompt_j, comp_j = jnp.asarray(prompt), jnp.asarray(comp)
    pmask = jnp.ones_like(prompt_j)

    @nnx.jit
    def ref_logps(ref_model):
        gd, st = nnx.split(ref_model)
        return common.compute_per_token_logps(gd, st, prompt_tokens=prompt_j, completion_tokens=comp_j,
                                              pad_id=pad_id, eos_id=eos_id, stop_gradient=True)

    @nnx.jit
    def train_step(model, optimizer, ref_lp):
        ex = common.TrainExample(prompt_ids=prompt_j, prompt_mask=pmask, completion_ids=comp_j,
                                 completion_mask=jnp.asarray(cmask), advantages=jnp.asarray(adv),
                                 ref_per_token_logps=ref_lp, old_per_token_logps=None)

        def loss_fn(m):
            return algo_core.grpo_loss_fn(m, ex, algo, pad_id, eos_id)

        (loss, aux), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
        optimizer.update(model, grads)
        return loss

    def run():
        lp = ref_logps(ref)
        jax.block_until_ready(train_step(policy, opt, lp))

    return timed(run, args.steps), b * (prompt.shape[1] + comp.shape[1])


# ------------------------------------------------------------------------------------------ torch
def bench_torch(args, data):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    prompt, comp, cmask, adv = data
    b = prompt.shape[0]
    cfg = Qwen3Config(vocab_size=TINY["vocab"], hidden_size=TINY["d"], intermediate_size=TINY["f"],
                      num_hidden_layers=TINY["layers"], num_attention_heads=TINY["heads"],
                      num_key_value_heads=TINY["kv_heads"], head_dim=TINY["head_dim"], tie_word_embeddings=False,
                      attn_implementation="sdpa")
    policy, ref = Qwen3ForCausalLM(cfg), Qwen3ForCausalLM(cfg)
    ref.load_state_dict(policy.state_dict())
    ref.eval()
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-6, weight_decay=0.01)
    tokens = torch.as_tensor(np.concatenate([prompt, comp], 1), dtype=torch.long)
    mask = torch.as_tensor(cmask)
    a = torch.as_tensor(adv)[:, None]
    p = prompt.shape[1]

    def logps(model):
        logits = model(tokens).logits[:, p - 1:-1].float()
        return torch.log_softmax(logits, -1).gather(-1, tokens[:, p:, None]).squeeze(-1)

    def run():
        with torch.no_grad():
            ref_lp = logps(ref)
        lp = logps(policy)
        old = lp.detach()
        ratio = torch.exp(torch.clamp(lp - old, -20, 20))
        pg = torch.maximum(-a * ratio, -a * torch.clamp(ratio, 0.8, 1.28))
        pg = torch.where(a < 0, torch.minimum(pg, -a * 10.0), pg)
        loss_tok = pg + 1e-4 * 0.5 * (lp - ref_lp) ** 2
        loss = torch.where(mask > 0, loss_tok, torch.zeros_like(loss_tok)).sum() / mask.sum().clamp(min=1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()

    return timed(run, args.steps), b * tokens.shape[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--completion", type=int, default=192)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--only", default="ours,tunix,torch")
    ap.add_argument("--record", "--append-results", dest="append_results", action="store_true",
                    help="write into the repository: append a section to benchmarks/RESULTS.md (default: print only)")
    args = ap.parse_args(argv)
    data = make_data(args.batch, args.prompt, args.completion, TINY["vocab"])
    results = {}
    for name, fn in (("orchestra_jax", bench_ours), ("tunix", bench_tunix), ("torch", bench_torch)):
        key = {"orchestra_jax": "ours"}.get(name, name)
        if key not in args.only.split(","):
            continue
        try:
            (first, med), ntok = fn(args, data)
            results[name] = {"first_step_s": first, "step_s": med, "tokens_per_s": ntok / med}
        except Exception as e:  # report, do not hide: a contender that fails to run is listed with the error
            results[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
        print(name, json.dumps(results[name]), flush=True)
    ours = results.get("orchestra_jax", {}).get("tokens_per_s")
    for name in ("tunix", "torch"):
        other = results.get(name, {}).get("tokens_per_s")
        if ours and other:
            results[name]["orchestra_jax_speedup"] = ours / other
    print(json.dumps(results, indent=1))
    if args.append_results:
        import jax

        try:
            from importlib.metadata import version

            tunix_v = version("google-tunix")
        except Exception:
            tunix_v = "not installed"
        cmd = "PYTHONPATH=. python benchmarks/bench_train_step.py " + " ".join(argv if argv is not None else sys.argv[1:])
        lines = [
            "", "## Train step (issue 7)", "",
            f"Command: `{cmd.strip()}`  ",
            f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores visible ({platform.processor() or 'cpu'}), "
            f"jax {jax.__version__} on {jax.devices()[0].platform}; google-tunix {tunix_v}; load average at the end "
            f"{os.getloadavg()[0]:.1f} (absolute numbers move with the machine's load; the ratios come from one run).  ",
            f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}  ",
            f"Workload: tiny Qwen3 (vocab {TINY['vocab']}, d {TINY['d']}, ffn {TINY['f']}, {TINY['layers']} layers, "
            f"{TINY['heads']}/{TINY['kv_heads']} heads x {TINY['head_dim']}), batch {args.batch} x "
            f"({args.prompt} prompt + {args.completion} completion) tokens, policy fwd+bwd + reference fwd + "
            "clipped/dual-clip loss with k2 KL 1e-4 + AdamW, fp32.", "",
            "| implementation | first step (s, incl. compile) | step (s, median) | tokens/s | orchestra_jax speed-up |",
            "|---|---|---|---|---|",
        ]
        for name, r in results.items():
            if "error" in r:
                lines.append(f"| {name} | failed: {r['error']} | | | |")
            else:
                sp = r.get("orchestra_jax_speedup")
                lines.append(f"| {name} | {r['first_step_s']:.2f} | {r['step_s']:.3f} | {r['tokens_per_s']:.0f} | "
                             f"{'' if sp is None else f'{sp:.2f}x'} |")
        path = Path(__file__).resolve().parent / "RESULTS.md"
        with open(path, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
