"""The plots of a training run (PNG; matplotlib `Figure` objects,
no pyplot, so the caller's backend is left alone), read from DIR/metrics.jsonl, the two held-out
evaluations and the fixed-rule baselines (`orchestra_jax.evaluation.play_baselines`):

- DIR/plots/training.png: reward, success rate, cost and latency per GRPO step, each raw (thin) and
  smoothed (trailing mean, `smooth`), with the held-out evaluations (warm start at step 0, after GRPO
  at the last step) as points and each fixed rule's held-out value as a dashed line;
- DIR/plots/tool_mix.png: calls per episode of each expert before and after GRPO (the aggregate
  ``call_expert``, the sum of the expert bars, is not drawn), the domain calls in the title.

The numbers drawn come from `training_plot_data` and `tool_mix_plot_data` (what the tests check).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

__all__ = ["write_plots", "training_plot_data", "tool_mix_plot_data", "smooth", "PANELS"]

#: (metrics.jsonl key, evaluation summary key or None, panel title) of training.png's panels
PANELS = (
    ("reward_mean", None, "reward"),
    ("success_rate", "success_rate", "success rate"),
    ("mean_cost_usd", "mean_cost_usd", "cost per episode (USD)"),
    ("mean_latency_s", "mean_latency_s", "latency per episode (s)"),
)


def smooth(values: list[float], window: int) -> list[float]:
    """Trailing mean over the last `window` values (fewer at the start), NaNs skipped (NaN where a
    window holds none). Returns a list of the same length."""
    v = np.asarray(values, dtype=float)
    out = []
    for i in range(len(v)):
        w = v[max(0, i - window + 1): i + 1]
        w = w[~np.isnan(w)]
        out.append(float(w.mean()) if len(w) else float("nan"))
    return out


def _grpo_records(out_dir: Path) -> dict[int, dict[str, Any]]:
    recs = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    last: dict[int, dict] = {}
    for r in recs:
        if r.get("phase") == "grpo":
            last[int(r["step"])] = r  # a resumed run may repeat steps: keep the latest record
    return last


def training_plot_data(out_dir: Path, initial: dict[str, Any] | None, final: dict[str, Any] | None,
                       baselines: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """What training.png draws.

    Returns:
        ``steps`` (GRPO steps, ascending), ``window`` (the smoothing window: max(1, steps // 10)) and
        ``panels``: one dict per `PANELS` entry with ``key``, ``title``, ``raw`` and ``smoothed``
        (per step), ``held_out`` (list of ``(step, value)``: the warm start's evaluation at 0 and the
        final one at the last step, where given) and ``baselines`` (agent -> held-out value).
    """
    last = _grpo_records(out_dir)
    steps = sorted(last)
    window = max(1, len(steps) // 10)
    panels = []
    for key, eval_key, title in PANELS:
        raw = [float(last[s].get(key, np.nan)) for s in steps]
        held: list[tuple[int, float]] = []
        rules: dict[str, float] = {}
        if eval_key is not None:
            if initial and eval_key in initial:
                held.append((0, float(initial[eval_key])))
            if final and eval_key in final:
                held.append((steps[-1] if steps else 0, float(final[eval_key])))
            rules = {name: float(b[eval_key]) for name, b in (baselines or {}).items() if eval_key in b}
        panels.append({"key": key, "title": title, "raw": raw, "smoothed": smooth(raw, window),
                       "held_out": held, "baselines": rules})
    return {"steps": steps, "window": window, "panels": panels}


def tool_mix_plot_data(initial: dict[str, Any], final: dict[str, Any]) -> dict[str, Any]:
    """What tool_mix.png draws: ``keys`` (the experts, ``expert-<k>``, sorted), ``before`` and
    ``after`` (calls per episode of each), ``domain_calls`` (``(before, after)``). Aggregate keys
    (``call_expert``) are never bars."""
    keys = sorted(k for k in set(initial["tool_mix"]) | set(final["tool_mix"]) if k.startswith("expert-"))
    return {"keys": keys, "before": [float(initial["tool_mix"].get(k, 0.0)) for k in keys],
            "after": [float(final["tool_mix"].get(k, 0.0)) for k in keys],
            "domain_calls": (float(initial["tool_mix"].get("domain_calls", np.nan)),
                             float(final["tool_mix"].get("domain_calls", np.nan)))}


def write_plots(out_dir: Path, initial: dict[str, Any] | None, final: dict[str, Any] | None,
                baselines: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Write training.png (when there are GRPO steps) and tool_mix.png (when both evaluations are
    given); returns their paths relative to `out_dir`."""
    files = []
    (out_dir / "plots").mkdir(exist_ok=True)
    data = training_plot_data(out_dir, initial, final, baselines)
    steps = data["steps"]
    if steps:
        fig = Figure(figsize=(18, 3.8))
        axes = fig.subplots(1, len(PANELS))
        for ax, p in zip(axes, data["panels"]):
            ax.plot(steps, p["raw"], color="tab:blue", alpha=0.3, linewidth=0.8, label="training (raw)")
            ax.plot(steps, p["smoothed"], color="tab:blue", linewidth=2,
                    label=f"training (mean of {data['window']})")
            if p["held_out"]:
                xs, ys = zip(*p["held_out"])
                ax.plot(xs, ys, "o", color="black", label="held-out evaluation")
            for (name, value), color in zip(sorted(p["baselines"].items()), ("tab:green", "tab:orange", "tab:red",
                                                                                "tab:purple", "tab:brown")):
                ax.axhline(value, color=color, linestyle="--", linewidth=1, label=f"{name} always (held-out)")
            ax.set_xlabel("GRPO step")
            ax.set_title(p["title"])
        handles, labels = axes[1].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        fig.savefig(out_dir / "plots" / "training.png", dpi=90)
        files.append("plots/training.png")
    if initial and final:
        mix = tool_mix_plot_data(initial, final)
        x = np.arange(len(mix["keys"]))
        fig = Figure(figsize=(max(5, len(mix["keys"]) * 1.4), 3.4))
        ax = fig.subplots()
        ax.bar(x - 0.2, mix["before"], 0.4, label="warm start")
        ax.bar(x + 0.2, mix["after"], 0.4, label="after GRPO")
        ax.set_xticks(x, mix["keys"])
        ax.set_ylabel("calls per episode")
        before, after = mix["domain_calls"]
        ax.set_title(f"expert calls per held-out episode (domain calls: {before:.2f} -> {after:.2f})", fontsize=9)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "plots" / "tool_mix.png", dpi=90)
        files.append("plots/tool_mix.png")
    return files
