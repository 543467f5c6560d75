"""tau2-bench task files -> `orchestra_gym.types.Task`.

Source format: tau2-bench v0.2.0 ``data/tau2/domains/<domain>/tasks.json`` (a list of tasks with
``id``, ``description``, ``user_scenario`` {``persona``, ``instructions``: str or {``domain``,
``reason_for_call``, ``known_info``, ``unknown_info``, ``task_instructions``}}, optional ``ticket``,
``initial_state`` and ``evaluation_criteria`` {``actions``, ``env_assertions``,
``communicate_info``, ``nl_assertions``, ``reward_basis``}).
"""

from __future__ import annotations

import os
from typing import Any

from orchestra_gym.types import Task, ToolCall

__all__ = ["load_tau2_tasks", "task_from_raw", "DEFAULT_REWARD_BASIS"]

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
    from orchestra_gym.domains.tau2.db import copy_json

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


def load_tau2_tasks(domain: str, data_dir: str | os.PathLike[str] | None = None, task_set: str = "base") -> list[Task]:
    """All tasks of a tau2 domain, in file order.

    Args:
        domain: ``"mock"``, ``"retail"``, ``"telecom"`` (any folder under ``domains/`` with a tasks
            file works).
        data_dir: tau2 data folder (holding ``domains/``); default ``$TAU2_DATA_DIR`` or
            ``<repo>/../shared/data/tau2``.
        task_set: ``"base"`` (the domain's default set), or telecom's ``"small"`` / ``"full"``
            (see `orchestra_gym.domains.tau2.data.TASK_SETS`).

    Raises:
        FileNotFoundError: the domain folder or the set's tasks file is missing.
        ValueError: unknown ``task_set``.
    """
    from orchestra_gym.domains.tau2.data import load_raw_tasks

    return [task_from_raw(t, domain) for t in load_raw_tasks(domain, data_dir, task_set)]
