"""The plots of a training run (PNG; matplotlib `Figure` objects,
no pyplot, so the caller's backend is left alone): reward, success, cost and latency per
GRPO step (DIR/plots/training.png) and the tool-call mix before and after GRPO (DIR/plots/tool_mix.png),
read from DIR/metrics.jsonl and the two evaluations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

__all__ = ["write_plots"]


def write_plots(out_dir: Path, initial: dict[str, Any] | None, final: dict[str, Any] | None) -> list[str]:
    """reward / success / cost / latency per GRPO step and the tool-call mix before and after (PNG)."""
    recs = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    last: dict[int, dict] = {}
    for r in recs:
        if r.get("phase") == "grpo":
            last[int(r["step"])] = r  # a resumed run may repeat steps: keep the latest record
    steps = sorted(last)
    files = []
    (out_dir / "plots").mkdir(exist_ok=True)
    if steps:
        fig = Figure(figsize=(16, 3.2))
        axes = fig.subplots(1, 4)
        for ax, key, label in zip(axes, ["reward_mean", "success_rate", "mean_cost_usd", "mean_latency_s"],
                                  ["reward", "success rate", "cost per episode (USD)", "latency per episode (s)"]):
            ax.plot(steps, [last[s].get(key, np.nan) for s in steps])
            ax.set_xlabel("GRPO step")
            ax.set_title(label)
        fig.tight_layout()
        fig.savefig(out_dir / "plots" / "training.png", dpi=90)
        files.append("plots/training.png")
    if initial and final:
        keys = sorted(set(initial["tool_mix"]) | set(final["tool_mix"]))
        keys = [k for k in keys if k.startswith("expert") or k == "call_expert"] or keys
        x = np.arange(len(keys))
        fig = Figure(figsize=(max(5, len(keys) * 1.2), 3.2))
        ax = fig.subplots()
        ax.bar(x - 0.2, [initial["tool_mix"].get(k, 0) for k in keys], 0.4, label="warm start")
        ax.bar(x + 0.2, [final["tool_mix"].get(k, 0) for k in keys], 0.4, label="after GRPO")
        ax.set_xticks(x, keys, rotation=20)
        ax.set_ylabel("calls per episode")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "plots" / "tool_mix.png", dpi=90)
        files.append("plots/tool_mix.png")
    return files
