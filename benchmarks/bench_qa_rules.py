"""Every fixed rule on the offline QA envs against the oracle (issue 37: QA that measures orchestration).

A fixed rule (`orchestra_gym.agents.QAPipelineAgent`) plays the same models on every question:
``search`` three times (queries: the problem, then the best new document), ``enhance_reasoning``
once, ``answer``, with one search, one reasoning and one answer model: 3 x 3 x 6 = 54 rules. Each
rule is screened on ``--screen`` episodes; the best ``--top`` are replayed on ``--episodes``
episodes, beside random, the oracle, expert-1..3 and the cascade. Episodes go through
`orchestra_gym.evaluation.run_episodes` (seeds ``seed + i``, tasks drawn by the env), on the
generated sample of each benchmark (``data_path="sample"``, `orchestra_gym.data`).

Usage: python benchmarks/bench_qa_rules.py [--env frames|hle] [--screen 30] [--top 3] [--episodes 100] [--seed 0]
Prints one line per agent: accuracy and the 95% normal interval.
"""

from __future__ import annotations

import argparse
import itertools
import math

from orchestra_gym.agents import QAPipelineAgent, make_agent
from orchestra_gym.envs.qa import QAEnv
from orchestra_gym.envs.qa_tools import TOOL_MODELS
from orchestra_gym.evaluation import run_episodes


def accuracy(benchmark: str, factory, episodes: int, seed: int) -> float:
    """Mean outcome of `episodes` episodes of `factory` (episode index -> agent)."""
    res = run_episodes(lambda: QAEnv(benchmark, data_path="sample"), factory, episodes, seed=seed)
    return sum(float(r.info["outcome"]) for r in res) / len(res)


def rule(models: tuple[str, str, str]):
    s, r, a = models
    return lambda i: QAPipelineAgent({"search": s, "enhance_reasoning": r, "answer": a}, name=f"{s}/{r}/{a}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", choices=("frames", "hle"), default="frames")
    p.add_argument("--screen", type=int, default=30)
    p.add_argument("--top", type=int, default=3)
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    combos = list(itertools.product(TOOL_MODELS["search"], TOOL_MODELS["enhance_reasoning"], TOOL_MODELS["answer"]))
    screened = sorted(((accuracy(a.env, rule(c), a.screen, a.seed), c) for c in combos), reverse=True)
    print(f"{a.env}: screened {len(combos)} fixed rules on {a.screen} episodes; best: "
          + ", ".join(f"{'/'.join(c)} {s:.2f}" for s, c in screened[:a.top]))
    agents = {n: (lambda i, n=n: make_agent(n, seed=a.seed + i))
              for n in ("random", "oracle", "expert-1", "expert-2", "expert-3", "cascade")}
    agents.update({"/".join(c): rule(c) for _, c in screened[:a.top]})
    for name, factory in agents.items():
        acc = accuracy(a.env, factory, a.episodes, a.seed)
        half = 1.96 * math.sqrt(max(acc * (1 - acc), 1e-12) / a.episodes)
        print(f"{a.env} {name:36s} n={a.episodes} accuracy {acc:.3f} [{max(0, acc - half):.3f}, {min(1, acc + half):.3f}]",
              flush=True)


if __name__ == "__main__":
    main()
