"""Tables and plots of orchestra_gym's evaluation: text for ``orchestra eval``, Markdown and a PNG for
``orchestra report``.

`format_table`, `format_mix` and `format_qa_table` render a run's summary as the text that
``orchestra eval`` prints; `table1_row` is one run's row of ToolOrchestra's Table 1; `report` renders
the paper's tables over run folders (Table 1, Table 15, the App. L preference score, the
accuracy-cost plane with its hull and AIQ) and `_plot_planes` draws the plane (matplotlib, Agg).
The figures come from `orchestra_gym.evaluation.metrics`; nothing here computes a statistic of
its own.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orchestra_gym.evaluation.metrics import (TAU2_PREFIX, aiq, cost_accuracy_hull, hull_gap, mean_tool_calls,
                                              pass_hat_ks, preference_score, qa_metrics, tau2_task_weighted)
from orchestra_gym.evaluation.records import EpisodeResult, is_infra
from orchestra_gym.evaluation.runs import RunConfig, load_run

__all__ = ["format_table", "format_mix", "format_qa_table", "table1_row", "report", "MODEL_TOOLS"]

# Tools whose calls are also counted under the model they used (see OrchestraEnv's info).
MODEL_TOOLS = frozenset({"call_expert", "search", "enhance_reasoning", "answer"})


_MODEL_ID = re.compile(r"[a-z\-]+-\d+")  # an anonymised model id: expert-2, answer-math-1


def format_table(summary: dict[str, Any], env_id: str, agent: str) -> str:
    """A plain-text table of a `summarize` result (one row; the tool-call mix and end reasons below it)."""
    head = f"{'env':<30} {'agent':<10} {'episodes':>8} {'success':>8} {'95% CI':>15} {'cost USD':>10} {'latency s':>10}"
    lo, hi = summary["success_rate_ci95"]
    row = (
        f"{env_id:<30} {agent:<10} {summary['episodes']:>8d} {summary['success_rate']:>8.3f} "
        f"{f'[{lo:.2f}, {hi:.2f}]':>15} {summary['mean_cost_usd']:>10.5f} {summary['mean_latency_s']:>10.2f}"
    )
    text = f"{head}\n{row}\ntool calls per episode: {format_mix(summary['tool_calls'])}\nend reasons: {summary['end_reasons']}"
    nj = summary.get("not_fully_judged", {})
    if nj.get("judgeability_reported") and not nj.get("episodes"):
        text += "\nnot judgeable offline: 0 episodes (every component of every reward basis was judged)"
    if nj.get("episodes"):
        text += (
            f"\nnot judgeable offline: {nj['episodes']} episodes (components without a judge: {nj['components']}; "
            f"NL assertions need an LLM judge); success on the fully judged ones: {summary['success_rate_judged']:.3f}"
        )
    return text


def format_mix(tool_calls: dict[str, float], top: int = 6) -> str:
    """The tool-call mix in one line: the `top` most called tools, the rest summed as ``other``.

    Every model id (``expert-1``, ``answer-2``, ...) is listed; the model tools themselves
    (``call_expert``, ``search``, ``enhance_reasoning``, ``answer``) are left out then, since each
    of their calls is already counted under its model."""
    if not tool_calls:
        return "none"
    model_ids = [k for k in tool_calls if _MODEL_ID.fullmatch(k)]
    if model_ids:  # a model tool's call is counted under the tool and its model: keep the models only
        tool_calls = {k: v for k, v in tool_calls.items() if k not in MODEL_TOOLS}
    total = sum(tool_calls.values()) or 1.0
    ranked = sorted(tool_calls.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [kv for kv in ranked if kv[0] in model_ids]
    for kv in ranked:
        if len(shown) >= top:
            break
        if kv not in shown:
            shown.append(kv)
    rest = sum(v for k, v in tool_calls.items() if k not in dict(shown))
    parts = [f"{k} {v:.2f} ({100 * v / total:.0f}%)" for k, v in shown]
    if rest:
        parts.append(f"other {rest:.2f} ({100 * rest / total:.0f}%)")
    return ", ".join(parts)


def format_qa_table(metrics: dict[str, Any], env_id: str, agent: str) -> str:
    """The Table 1 columns of a `qa_metrics` result as text: accuracy (%) with its 95% interval,
    cost (cents), latency (min), then the calls per model."""
    lo, hi = metrics["accuracy_ci95"]
    acc = metrics["accuracy"]
    head = f"{'env':<26} {'agent':<12} {'n':>5} {'accuracy %':>10} {'95% CI':>16} {'cost ¢':>9} {'latency min':>11}"
    row = (f"{env_id:<26} {agent:<12} {metrics['n']:>5d} {100 * acc:>10.1f} {f'[{100 * lo:.1f}, {100 * hi:.1f}]':>16} "
           f"{metrics['cost_cents']:>9.3f} {metrics['latency_min']:>11.3f}")
    calls = ", ".join(f"{k} {int(v)} ({100 * metrics['model_call_share'][k]:.0f}%)" for k, v in metrics["model_calls"].items())
    return f"{head}\n{row}\nmodel calls: {calls or 'none'}"


def table1_row(cfg: RunConfig, results: Sequence[EpisodeResult]) -> dict[str, Any]:
    """One run's row of ToolOrchestra's Table 1 (any env): ``env``, ``agent``, ``n`` (graded
    episodes), ``accuracy`` in [0, 1] with ``accuracy_ci95`` (`wald_interval`), ``cost_cents``
    (mean US cents per task), ``latency_min`` (mean minutes per task), ``infra_failures``,
    ``pass_hat_k`` (k = 1..trials) and ``tool_calls`` (Table 15: calls per tool per task)."""
    graded = [r for r in results if not is_infra(r)]
    m = qa_metrics(graded)
    return {
        "env": cfg.env, "agent": cfg.agent, "n": m["n"], "accuracy": m["accuracy"], "accuracy_ci95": m["accuracy_ci95"],
        "cost_cents": m["cost_cents"], "latency_min": m["latency_min"], "infra_failures": len(results) - len(graded),
        "pass_hat_k": pass_hat_ks(results, cfg.trials), "tool_calls": mean_tool_calls(graded),
    }


def report(run_dirs: Sequence[str | os.PathLike[str]], baseline: str | os.PathLike[str] | None = None,
           png_path: str | os.PathLike[str] | None = None) -> str:
    """``orchestra report``: the paper's tables over run folders, as Markdown.

    Sections: Table 1 (one row per run: accuracy % with its 95% interval, cost in cents per task,
    latency in minutes per task, pass^k, infra failures; plus, per agent with runs of several tau2
    domains, their task-weighted row, `tau2_task_weighted`); Table 15 (calls per task of each
    model, ``expert-1``, ``answer-2``..., and of all other tools summed, `mean_tool_calls`); with
    `baseline` the App. L preference score of each run of the baseline's env against it (`preference_score`); with several runs of one env the accuracy-cost plane:
    the hull's vertices (`cost_accuracy_hull`), AIQ over the runs' cost range in cents (`aiq`),
    each run's gap to the hull of the other runs (`hull_gap`), and a PNG of the plane at
    `png_path` (matplotlib, Agg).

    Raises:
        FileNotFoundError: a folder that is not a run folder. ValueError: no run folders.
    """
    if not run_dirs:
        raise ValueError("report needs at least one run folder")
    runs = [load_run(d) for d in run_dirs]
    rows = [table1_row(cfg, results) for cfg, results in runs]
    lines = ["## Table 1: accuracy, cost, latency", "",
             "| env | agent | n | accuracy % | 95% CI | cost ¢/task | latency min/task | pass^k | infra failures |",
             "|---|---|---|---|---|---|---|---|---|"]

    def row_line(r: Mapping[str, Any]) -> str:
        lo, hi = r["accuracy_ci95"]
        passk = ", ".join(f"{k}: {v:.3f}" for k, v in (r.get("pass_hat_k") or {}).items() if not math.isnan(v)) or "-"
        return (f"| {r['env']} | {r['agent']} | {r['n']} | {100 * r['accuracy']:.1f} | [{100 * lo:.1f}, {100 * hi:.1f}] | "
                f"{r['cost_cents']:.3f} | {r['latency_min']:.3f} | {passk} | {r['infra_failures']} |")

    lines += [row_line(r) for r in rows]
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if str(r["env"]).startswith(TAU2_PREFIX) and r["n"]:
            by_agent.setdefault(r["agent"], []).append(r)
    lines += [row_line(tau2_task_weighted(rs)) for rs in by_agent.values() if len({r["env"] for r in rs}) > 1]
    tools = sorted({t for r in rows for t in r["tool_calls"] if _MODEL_ID.fullmatch(t)})  # the models, as the paper's columns
    lines += ["", "## Table 15: calls per tool per task", "", "| env | agent | " + " | ".join(tools + ["other tools"]) + " |",
              "|---|---|" + "---|" * (len(tools) + 1)]
    for r in rows:
        other = sum(v for t, v in r["tool_calls"].items() if t not in tools and t not in MODEL_TOOLS)
        lines.append(f"| {r['env']} | {r['agent']} | " + " | ".join(f"{r['tool_calls'].get(t, 0.0):.2f}" for t in tools)
                     + f" | {other:.2f} |")
    if baseline is not None:
        bcfg, bres = load_run(baseline)
        bgraded = [b for b in bres if not is_infra(b)]
        lines += ["", f"## Preference score (App. L) against {bcfg.agent} on {bcfg.env}", "",
                  "| env | agent | preference score |", "|---|---|---|"]
        pairs = {(b.task_id, b.trial) for b in bgraded}
        for cfg, results in runs:
            if cfg.env == bcfg.env:  # the episodes both runs graded (an infra failure on either side drops the pair)
                graded = [e for e in results if not is_infra(e) and (e.task_id, e.trial) in pairs]
                try:
                    cell = f"{preference_score(graded, bgraded):.4f} ({len(graded)} episodes)"
                except ValueError as e:  # no common episode, or other tools
                    cell = f"n/a: {e}"
                lines.append(f"| {cfg.env} | {cfg.agent} | {cell} |")
    planes = {}
    for r in rows:
        if r["n"]:
            planes.setdefault(r["env"], []).append(r)
    planes = {env: rs for env, rs in planes.items() if len(rs) > 1}
    for env, rs in planes.items():
        pts = [(r["cost_cents"], r["accuracy"]) for r in rs]
        hull = cost_accuracy_hull(pts)
        span = (min(c for c, _ in pts), max(c for c, _ in pts))
        lines += ["", f"## Accuracy-cost plane: {env}", "",
                  "hull vertices (cost ¢, accuracy %): " + ", ".join(f"({c:.3f}, {100 * a:.1f})" for c, a in hull)]
        if span[1] > span[0]:
            lines.append(f"AIQ over [{span[0]:.3f}, {span[1]:.3f}] ¢: {aiq(pts, span):.4f}")
        lines += ["", "| agent | cost ¢ | accuracy % | gap to the others' hull (points) |", "|---|---|---|---|"]
        for i, r in enumerate(rs):
            others = [p for j, p in enumerate(pts) if j != i]
            lines.append(f"| {r['agent']} | {r['cost_cents']:.3f} | {100 * r['accuracy']:.1f} | "
                         f"{100 * hull_gap(r['accuracy'], r['cost_cents'], others):+.1f} |")
    if png_path is not None and planes:
        _plot_planes(planes, png_path)
        lines += ["", f"![accuracy-cost plane]({Path(png_path).name})"]
    return "\n".join(lines) + "\n"


def _plot_planes(planes: Mapping[str, Sequence[Mapping[str, Any]]], png_path: str | os.PathLike[str]) -> None:
    """One panel per env: the runs as points, their non-decreasing convex hull as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(planes), figsize=(5.5 * len(planes), 4.2), squeeze=False)
    for ax, (env, rs) in zip(axes[0], planes.items()):
        pts = [(r["cost_cents"], r["accuracy"]) for r in rs]
        hull = cost_accuracy_hull(pts)
        right = max(c for c, _ in pts) * 1.05 or 1.0
        hx, hy = zip(*(hull + [(right, hull[-1][1])]))
        ax.plot(hx, [100 * a for a in hy], "-", color="0.4", label="non-decreasing convex hull")
        for r in rs:
            ax.scatter(r["cost_cents"], 100 * r["accuracy"], zorder=3)
            ax.annotate(r["agent"], (r["cost_cents"], 100 * r["accuracy"]), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set(title=env, xlabel="cost (¢ per task)", ylabel="accuracy (%)")
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
