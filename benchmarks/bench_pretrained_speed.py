"""The JAX trainer against PyTorch + transformers on the same model, weights, batch and trained part (issue 51 item 6).

One run on one machine (CPU by default), both sides in this process, one after the other:

  train step:  orchestra_jax `make_sft_step` (token-mean NLL, AdamW, one jit, donated state, the trained part of
               `orchestra_jax.trainable.Trainable`: "all", "top:N", LoRA) against transformers' CausalLM (eager,
               fp32) with the same NLL, `torch.optim.AdamW` over the same trained parameters (requires_grad off
               for the rest; the top-N split's lower layers then build no graph). LoRA: JAX side only (transformers
               has no LoRA without peft), reported without a ratio.
  generation:  `orchestra_jax.sampler.Sampler` greedy (prefill + decode into the KV cache, no EOS) against
               transformers' `generate` (greedy, `min_new_tokens` = `max_new_tokens`), same prompts.

The weights: a random Qwen3 of `--preset` / `--override` (saved with `orchestra_jax.weights.save_hf_checkpoint`
and loaded by `transformers.AutoModelForCausalLM`), or `--checkpoint` (a Hugging Face folder or any checkpoint
`orchestra_jax.weights.load_hf_checkpoint` reads; transformers loads the folder the project writes back).
Reported: tokens per second of each (B x T / median time over `--steps` after a warm-up that includes compiling),
their ratios JAX / torch, the load average and the CPU count. Prints JSON.

  PYTHONPATH=. python benchmarks/bench_pretrained_speed.py --preset small --trainable top:2 --batch 4 --seq 256
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

import numpy as np
from bench_train_step import timed  # (first call seconds, median of the next calls)


def make_batch(b: int, t: int, vocab: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, vocab, size=(b, t)).astype(np.int32)
    loss = np.zeros((b, t), np.float32)
    loss[:, t // 2:] = 1.0  # the second half is "assistant" tokens
    return {"tokens": tokens, "attention_mask": np.ones((b, t), np.int32), "loss_mask": loss}


def build(args):
    """(our model, HF folder with the same weights) for the run."""
    from flax import nnx

    from orchestra_jax.config import ModelConfig
    from orchestra_jax.model import Qwen3
    from orchestra_jax.weights import load_hf_checkpoint, save_hf_checkpoint

    folder = Path(tempfile.mkdtemp(prefix="bench_pretrained_"))
    if args.checkpoint:
        model, _ = load_hf_checkpoint(args.checkpoint)
    else:
        overrides = json.loads(args.override) if args.override else {}
        model = Qwen3(ModelConfig.from_preset(args.preset, **overrides), rngs=nnx.Rngs(0))
    save_hf_checkpoint(model, model.config, folder)
    return model, folder


def jax_train(model, tr, batch, steps: int) -> dict[str, float]:
    import jax
    import optax
    from flax import nnx

    from orchestra_jax.train_step import init_state, make_logp_fn, make_sft_step, split_micro

    graphdef, params = nnx.split(model, nnx.Param)
    tx = optax.adamw(1e-5)
    split = None if tr.is_full else tr
    state = init_state(params, tx, with_reference=False, trainable=split, key=jax.random.key(0))
    step = make_sft_step(make_logp_fn(graphdef, chunk=256, trainable=split), tx)
    mb = {k: jax.numpy.asarray(v) for k, v in split_micro(batch, 1).items()}
    box = {"s": state}

    def run():
        box["s"], m = step(box["s"], mb)
        jax.block_until_ready(m["nll"])

    first, med = timed(run, steps)
    return {"first_s": first, "step_s": med}


def torch_train(folder: Path, tr, batch, steps: int) -> dict[str, float]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
    model.train()
    for p in model.parameters():
        p.requires_grad_(tr.is_full)
    if not tr.is_full:
        for layer in model.model.layers[tr.frozen_layers:]:
            for p in layer.parameters():
                p.requires_grad_(True)
        model.model.norm.weight.requires_grad_(True)
        if not tr.config.tie_word_embeddings:
            model.lm_head.weight.requires_grad_(True)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    ids = torch.as_tensor(batch["tokens"], dtype=torch.long)
    am = torch.as_tensor(batch["attention_mask"], dtype=torch.long)
    mask = torch.as_tensor(batch["loss_mask"][:, 1:])

    def run():
        opt.zero_grad(set_to_none=True)
        logits = model(input_ids=ids, attention_mask=am).logits[:, :-1].float()
        lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None])[..., 0]
        loss = -(lp * mask).sum() / mask.sum()
        loss.backward()
        opt.step()

    first, med = timed(run, steps)
    return {"first_s": first, "step_s": med}


def jax_generate(model, prompts: np.ndarray, new: int, steps: int) -> dict[str, float]:
    from orchestra_jax.sampler import Sampler

    s = Sampler(model, eos_ids=(), max_cache_len=prompts.shape[1] + new + 8, chunk=32)
    rows = [list(map(int, r)) for r in prompts]

    def run():
        out = s.generate(s.prefill(rows), new, 0.0)[1]
        assert len(out.tokens[0]) == new

    first, med = timed(run, steps)
    return {"first_s": first, "call_s": med}


def torch_generate(folder: Path, prompts: np.ndarray, new: int, steps: int) -> dict[str, float]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
    ids = torch.as_tensor(prompts, dtype=torch.long)

    def run():
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, min_new_tokens=new,
                                 do_sample=False, pad_token_id=0)
        assert out.shape[1] == ids.shape[1] + new

    first, med = timed(run, steps)
    return {"first_s": first, "call_s": med}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="", help="a checkpoint load_hf_checkpoint reads ('' = random --preset)")
    ap.add_argument("--preset", default="small", help="ModelConfig preset of the random model")
    ap.add_argument("--override", default="", help='ModelConfig fields as JSON, e.g. \'{"num_layers": 4}\'')
    ap.add_argument("--trainable", default="all", help='"all" or "top:N"')
    ap.add_argument("--lora-rank", type=int, default=0)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = torch's default)")
    ap.add_argument("--json", default="")
    a = ap.parse_args(argv)

    import torch

    from orchestra_jax.trainable import Trainable

    if a.threads:
        torch.set_num_threads(a.threads)
    model, folder = build(a)
    tr = Trainable.from_spec(model.config, a.trainable, lora_rank=a.lora_rank)
    batch = make_batch(a.batch, a.seq, model.config.vocab_size)
    prompts = make_batch(a.batch, a.prompt, model.config.vocab_size, seed=1)["tokens"]
    tokens = a.batch * a.seq
    out = {"config": {k: getattr(model.config, k) for k in ("num_layers", "hidden_size", "num_heads", "num_kv_heads",
                                                           "vocab_size", "tie_word_embeddings")},
           "num_params": model.config.num_params(), "trainable": a.trainable, "lora_rank": a.lora_rank,
           "trained_params": tr.num_trained(), "batch": a.batch, "seq": a.seq, "prompt": a.prompt,
           "new_tokens": a.new_tokens, "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
           "machine": platform.processor() or platform.machine(), "load_before": os.getloadavg()}
    gj = jax_generate(model, prompts, a.new_tokens, a.steps)  # first: the train step donates the weights
    gt = torch_generate(folder, prompts, a.new_tokens, a.steps)
    gen = a.batch * a.new_tokens
    out["generate_jax"] = {**gj, "tokens_per_s": gen / gj["call_s"]}
    out["generate_torch"] = {**gt, "tokens_per_s": gen / gt["call_s"]}
    out["generate_ratio_jax_over_torch"] = out["generate_jax"]["tokens_per_s"] / out["generate_torch"]["tokens_per_s"]
    jt = jax_train(model, tr, batch, a.steps)
    out["train_jax"] = {**jt, "tokens_per_s": tokens / jt["step_s"]}
    if a.lora_rank == 0:
        tt = torch_train(folder, tr, batch, a.steps)
        out["train_torch"] = {**tt, "tokens_per_s": tokens / tt["step_s"]}
        out["train_ratio_jax_over_torch"] = out["train_jax"]["tokens_per_s"] / out["train_torch"]["tokens_per_s"]
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
