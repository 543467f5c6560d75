"""Prefill and decode throughput of orchestra_jax's KV-cache sampler vs HF transformers generate.

Same random weights (a tiny Qwen3 built with transformers, saved, loaded by both), same
machine, one run. Decode uses greedy search with no EOS so both produce exactly
`--new` tokens per row; HF's decode time is its generate time minus its prefill time.

    PYTHONPATH=. python benchmarks/bench_sampler.py [--batch 4 --prompt 64 --new 64 --repeats 3]

Prints a table; with ``--record`` appends it to benchmarks/RESULTS.md under "## Sampler (issue 6)".
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SIZES = {
    # name: (hidden, intermediate, layers, heads, kv_heads, head_dim, vocab)
    "tiny-256": (256, 768, 4, 8, 4, 32, 4096),
    "tiny-512": (512, 1536, 8, 8, 4, 64, 8192),
}


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run(size, args, tmp):
    import jax
    import torch
    import transformers

    from orchestra_jax.sampler import Sampler, bucket
    from orchestra_jax.weights import load_hf_checkpoint

    d, f, layers, heads, kv, hd, vocab = SIZES[size]
    torch.manual_seed(0)
    cfg = transformers.Qwen3Config(vocab_size=vocab, hidden_size=d, intermediate_size=f, num_hidden_layers=layers,
                                   num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                                   tie_word_embeddings=False, max_position_embeddings=4096)
    hf = transformers.Qwen3ForCausalLM(cfg).eval()
    path = Path(tmp) / size
    hf.save_pretrained(path)
    model, _ = load_hf_checkpoint(path)
    b, p, n = args.batch, args.prompt, args.new
    prompts = np.random.RandomState(0).randint(0, vocab, (b, p))
    sampler = Sampler(model, eos_ids=(), max_cache_len=bucket(p) + n, chunk=n)

    def ours_prefill():
        state = sampler.prefill(prompts.tolist())
        jax.block_until_ready(state.next_logits)
        return state

    def ours_decode():
        state = ours_prefill()
        t0 = time.perf_counter()
        _, out = sampler.generate(state, n, temperature=0.0)
        assert all(len(t) == n for t in out.tokens)
        return time.perf_counter() - t0

    ours_decode()  # compile
    t_pre = best(ours_prefill, args.repeats)
    t_dec = min(ours_decode() for _ in range(args.repeats))

    ids = torch.tensor(prompts)
    gen_kw = dict(max_new_tokens=n, min_new_tokens=n, do_sample=False, eos_token_id=None, pad_token_id=0)
    with torch.no_grad():
        hf(ids)
        hf.generate(ids, **gen_kw)
        h_pre = best(lambda: hf(ids), args.repeats)
        h_gen = best(lambda: hf.generate(ids, **gen_kw), args.repeats)
    h_dec = max(h_gen - h_pre, 1e-9)
    return {
        "size": size, "params_M": sum(x.numel() for x in hf.parameters()) / 1e6,
        "ours_prefill": b * p / t_pre, "hf_prefill": b * p / h_pre,
        "ours_decode": b * n / t_dec, "hf_decode": b * n / h_dec,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", nargs="+", default=list(SIZES))
    ap.add_argument("--results", default=str(Path(__file__).with_name("RESULTS.md")))
    ap.add_argument("--record", action="store_true", help="write into the repository: add the section to --results "
                    "(default: print only)")
    args = ap.parse_args(argv)
    import jax
    import torch

    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run(s, args, tmp) for s in args.sizes]
    header = ("| size | params (M) | prefill tok/s ours | prefill tok/s HF | ratio | decode tok/s ours | "
              "decode tok/s HF | ratio |\n|---|---|---|---|---|---|---|---|")
    lines = [header] + [
        f"| {r['size']} | {r['params_M']:.1f} | {r['ours_prefill']:.0f} | {r['hf_prefill']:.0f} | "
        f"{r['ours_prefill'] / r['hf_prefill']:.2f}x | {r['ours_decode']:.0f} | {r['hf_decode']:.0f} | "
        f"{r['ours_decode'] / r['hf_decode']:.2f}x |" for r in rows]
    table = "\n".join(lines)
    print(table)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "PYTHONPATH=. python benchmarks/bench_sampler.py " + " ".join(argv if argv is not None else sys.argv[1:])
    section = (f"\n### {now}\n\nCommand: `{cmd.strip()}`  \nMachine: {platform.machine()} {platform.processor() or ''}"
               f", {os.cpu_count()} CPU cores visible (shared), jax {jax.__version__} ({jax.default_backend()}), "
               f"torch {torch.__version__} ({torch.get_num_threads()} threads)  \n"
               f"Load average before the run {load:.1f} (other jobs share the cores; compare ratios, not absolutes).  \n"
               f"Batch {args.batch}, prompt {args.prompt} tokens, {args.new} new tokens per row, greedy, "
               f"best of {args.repeats}; HF decode = generate time - prefill time.\n\n{table}\n")
    if not args.record:
        return rows
    results = Path(args.results)
    text = results.read_text() if results.exists() else "# Benchmark results\n"
    heading = "## Sampler (issue 6)"
    if heading not in text:
        text = text.rstrip("\n") + f"\n\n{heading}\n"
        text += section
    else:  # insert at the end of our section (before the next "## " heading)
        start = text.index(heading)
        nxt = text.find("\n## ", start + len(heading))
        end = len(text) if nxt < 0 else nxt
        text = text[:end].rstrip("\n") + "\n" + section + text[end:]
    results.write_text(text)
    return rows


if __name__ == "__main__":
    main()
