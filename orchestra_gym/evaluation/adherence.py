"""The in-sample ceiling of the adherence check (ToolOrchestra Sec. 6.4, Table 3) over fixed experts: the kind
oracle (the best expert per request kind under a preference, chosen on the played episodes) and how each
preference's routing scores under every other (`oracle_matrix`). `benchmarks/bench_orchestration.py` and
`benchmarks/bench_preference_headroom.py` report them; the expert-pool form is `orchestra_gym.evaluation.pools`.
"""

from __future__ import annotations

from typing import Any

from orchestra_gym.evaluation.metrics import group_preference_score
from orchestra_gym.evaluation.records import EpisodeResult

__all__ = ["FIXED_AGENTS", "request_kind", "kind_oracle_routes", "routed_score", "oracle_matrix"]

#: The fixed rules the orchestration and headroom benchmarks play (`orchestra_gym.agents.make_agent` names).
FIXED_AGENTS = ("random", "expert-1", "expert-2", "expert-3", "cascade")


def request_kind(r: EpisodeResult) -> str:
    """An episode's request kind, "category/difficulty" (the env's final info; the router's table keys)."""
    return f"{r.info.get('task_category')}/{r.info.get('task_difficulty')}"


def kind_oracle_routes(experts: dict[str, list[EpisodeResult]], references: list[list[EpisodeResult]],
                       preference: dict[str, Any]) -> dict[str, str]:
    """The best expert per request kind (the task's category/difficulty labels) under `preference`, chosen on
    these very episodes: the kind-level routing that maximises the group-form score (an in-sample upper
    bound of what any kind router earns; kinds where no expert scores above 0 keep the cheapest rule,
    expert-3)."""
    kinds: dict[str, list[int]] = {}
    first = next(iter(experts.values()))
    for i, r in enumerate(first):
        kinds.setdefault(request_kind(r), []).append(i)
    routes = {}
    for kind, idx in kinds.items():
        scores = {e: group_preference_score([res[i] for i in idx], [[ref[i] for i in idx] for ref in references],
                                            preference) for e, res in experts.items()}
        best = max(scores, key=scores.get)
        routes[kind] = best if scores[best] > 0 else "expert-3"
    return routes


def routed_score(routes: dict[str, str], experts: dict[str, list[EpisodeResult]],
                  references: list[list[EpisodeResult]], preference: dict[str, Any]) -> float:
    first = next(iter(experts.values()))
    picked = [experts[routes[request_kind(r)]][i] for i, r in enumerate(first)]
    return group_preference_score(picked, references, preference) / len(picked)


def oracle_matrix(experts: dict[str, list[EpisodeResult]], references: list[list[EpisodeResult]],
                  preferences: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, float]]]:
    """The kind oracle of every preference and each one's routes scored under every other: ``(routes, score)`` with
    ``routes[P]`` = `kind_oracle_routes` under P and ``score[P][Q]`` = the mean group-form preference reward under P
    of the routes fitted to Q (per task, on these episodes). ``score[P][P] - score[P][Q]`` is the most a routing by
    request kind can gain under P by following P rather than Q: the in-sample ceiling of the adherence check's
    "beats the same policy under the other preferences" (near 0 when P and Q ask for the same routing)."""
    routes = {name: kind_oracle_routes(experts, references, pref) for name, pref in preferences.items()}
    score = {p: {q: routed_score(routes[q], experts, references, preferences[p]) for q in preferences}
             for p in preferences}
    return routes, score
