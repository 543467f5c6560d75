"""tau2's reward rules (tau2-bench v0.2.0 and v1.0.1 ``evaluator/``), applied to an episode's trajectory.

The rules are the same in both versions for these domains; what differs is data (v1.0.1's tasks
give their ``reward_basis`` explicitly) and the replay of a message history (`Tau2Environment.set_state`).

Components (each 1.0 or 0.0):

- ``DB``: the agent's state-changing calls (tau2 v1.0.1's ``mutates_state``: the WRITE tools in
  these domains, the same calls v0.2.0's replay changes state with), and the user's in
  dual-control domains (dicts with ``requestor="user"``), are replayed on a fresh environment at the task's
  initial state and its database(s) compared with the gold ones (the task's gold actions sent as
  tau2's evaluator sends them, failed gold calls ignored; see `gold_environment`). Equality is tau2's hash equality;
  it is computed over the touched records only. Tool names that are not tools are skipped
  (recorded in ``info["skipped_calls"]``), never an error. When a task has neither gold actions
  nor env assertions (both absent), ``DB`` is 1.0 as in tau2.
- ``ENV_ASSERTION``: each ``env_assertions`` entry holds on the agent's final database.
- ``ACTION``: every gold action is matched by some agent call: same name and equal arguments
  over ``compare_args`` (default: the agent call's own argument names; ``[]``: name only).
- ``COMMUNICATE``: every ``communicate_info`` string occurs, case-insensitively, in some agent
  message with commas removed.
- ``NL_ASSERTION``: a judge decides each ``nl_assertions`` entry; without a judge the component
  is reported in ``not_evaluated`` rather than passed.

The outcome is the product over ``reward_basis`` (default ``["DB", "COMMUNICATE"]``); a premature
end (``termination`` = ``"max_steps"`` or ``"too_many_errors"``) scores 0.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestra_gym.domains.tau2 import data
from orchestra_gym.domains.tau2.db import canonical_json
from orchestra_gym.domains.tau2.environment import Tau2Environment
from orchestra_gym.types import Message, Task, ToolCall

__all__ = ["evaluate", "EvaluationResult", "gold_environment", "replay", "COMPONENTS", "PREMATURE", "Judge"]

COMPONENTS = ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE", "NL_ASSERTION")
#: tau2 termination reasons that score 0 (``TerminationReason.MAX_STEPS`` / ``TOO_MANY_ERRORS``).
PREMATURE = ("max_steps", "too_many_errors")
#: termination reasons of a normal end.
NORMAL_END = ("agent_stop", "user_stop")

#: ``judge(nl_assertions, transcript) -> one verdict per assertion`` (bool, or a dict with ``met``).
#: ``transcript`` is a list of ``{"role", "content"}`` dicts of the conversation.
Judge = Callable[[list[str], list[dict[str, Any]]], Sequence[Any]]


@dataclass
class EvaluationResult:
    """tau2 evaluation of one episode.

    Attributes:
        reward: product over the evaluated components of ``reward_basis``, in [0, 1]; 0.0 for a
            premature end.
        breakdown: component -> 1.0 / 0.0 for each evaluated component of ``reward_basis``.
        not_evaluated: components of ``reward_basis`` that could not be judged (e.g.
            ``NL_ASSERTION`` without a judge); when non-empty, ``reward`` covers the others only.
        info: details: ``db_match``, ``skipped_calls``, ``action_checks``,
            ``communicate_checks``, ``env_assertion_checks``, ``nl_checks``, ``note``.
    """

    reward: float
    breakdown: dict[str, float] = field(default_factory=dict)
    not_evaluated: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when every component of the reward basis was evaluated."""
        return not self.not_evaluated

    def to_dict(self) -> dict[str, Any]:
        return {"reward": self.reward, "breakdown": dict(self.breakdown), "not_evaluated": list(self.not_evaluated),
                "complete": self.complete, "info": self.info}


def _criteria(task: Task) -> dict[str, Any] | None:
    """tau2 ``evaluation_criteria`` of a task (raw when the task came from `load_tau2_tasks`)."""
    raw = (task.metadata or {}).get("raw")
    if isinstance(raw, dict) and "evaluation_criteria" in raw:
        return raw["evaluation_criteria"]
    meta = task.metadata or {}
    return {
        "actions": meta.get("actions") or [
            {"action_id": c.id, "name": c.name, "arguments": c.arguments} for c in task.golden_actions
        ],
        "env_assertions": meta.get("env_assertions"),
        "communicate_info": task.communicate_info,
        "nl_assertions": meta.get("nl_assertions"),
        "reward_basis": task.reward_basis,
    }


def _call_parts(call: ToolCall | dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    if isinstance(call, ToolCall):
        return call.name, call.arguments, "assistant"
    return call.get("name", ""), call.get("arguments") or {}, call.get("requestor", "assistant")


def replay(env: Tau2Environment, calls: Sequence[ToolCall | dict[str, Any]], writes_only: bool = True) -> list[str]:
    """Replay calls on ``env``; returns the names skipped because they are not tools of the domain.

    With ``writes_only`` only the calls that can change state run (`Tau2Environment.mutates_state`:
    WRITE tools; in banking_knowledge tau2 v1.0.1's flags, which add its unlock and give tools).
    """
    skipped = []
    for call in calls:
        name, arguments, requestor = _call_parts(call)
        ttype = env.tool_type(name, requestor) if isinstance(name, str) else None
        if ttype is None:
            skipped.append(str(name))
            continue
        if writes_only and not env.mutates_state(name, requestor):
            continue
        env.call_tool(name, arguments if isinstance(arguments, dict) else {}, requestor)
    return skipped


_GOLD: dict[tuple[str, str, str, str, str], Tau2Environment] = {}
_GOLD_LOCK = threading.Lock()


def gold_environment(task: Task, domain: str, data_dir: str | os.PathLike[str] | None = None,
                     version: str | None = None, env_options: dict[str, Any] | None = None) -> Tau2Environment:
    """The task's gold final environment (initial state + gold actions, errors ignored); cached, do not modify.

    Gold actions go through `Tau2Environment.make_tool_call`, as tau2's evaluator sends them: in
    telecom that skips the sync after each call (tau2 v0.2.0's own behaviour), so its gold user
    database can differ from a replay through the normal call path; telecom never grades on DB.
    """
    version = version or _version(task)
    crit = _criteria(task) or {}
    env_options = dict(env_options or {})
    fingerprint = canonical_json([crit.get("actions"), task.initial_state, env_options])
    key = (domain, version, str(data.data_dir(data_dir, version).resolve()), str(task.id), fingerprint)
    env = _GOLD.get(key)
    if env is None:
        env = Tau2Environment.from_task(task, domain, data_dir, version, **env_options)
        for a in crit.get("actions") or []:
            env.make_tool_call(a["name"], a.get("arguments") or {}, a.get("requestor", "assistant"))
        with _GOLD_LOCK:
            _GOLD[key] = env
    return env


def _version(task: Task) -> str:
    """The tau2 data version a task came from (``metadata["version"]``), else the default."""
    return (task.metadata or {}).get("version") or data.DEFAULT_VERSION


def _action_matches(action: dict[str, Any], name: str, arguments: dict[str, Any]) -> bool:
    if action["name"] != name:
        return False
    compare = action.get("compare_args")
    keys = list(arguments) if compare is None else list(compare)
    if not keys:
        return True
    gold = action.get("arguments") or {}
    return {k: v for k, v in arguments.items() if k in keys} == {k: v for k, v in gold.items() if k in keys}


def _communicated(info: str, agent_messages: Sequence[str]) -> bool:
    # QUIRK (tau2 parity): commas are stripped from the agent's message only, never from `info`,
    # so an info holding a comma ("$1,000") can never be met. Kept on purpose; see Tau2Env "Rewards".
    needle = info.lower()
    return any(needle in (m or "").lower().replace(",", "") for m in agent_messages)


def evaluate(
    task: Task,
    trajectory: Sequence[ToolCall | dict[str, Any]],
    agent_messages: Sequence[str],
    *,
    domain: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    judge: Judge | None = None,
    termination: str | None = None,
    transcript: Sequence[Message | dict[str, Any]] | None = None,
    version: str | None = None,
    env_options: dict[str, Any] | None = None,
) -> EvaluationResult:
    """Score one episode by tau2's rules (v0.2.0 and v1.0.1 alike).

    Args:
        task: the task (from `orchestra_gym.domains.tau2.tasks.load_tau2_tasks`).
        trajectory: every tool call the agent made, in order (`ToolCall`, or dicts with
            ``name``, ``arguments`` and optional ``requestor``), failed ones included.
        agent_messages: every text the agent sent to the user, in order.
        domain: tau2 domain; default ``task.domain``.
        data_dir: tau2 data folder (see `Tau2Environment`).
        judge: NL-assertion judge (see `Judge`); None -> ``NL_ASSERTION`` is not evaluated.
        termination: ``"agent_stop"``, ``"user_stop"``, ``"max_steps"``, ``"too_many_errors"`` or
            None (normal end); the last two score 0.
        transcript: the conversation for the judge (messages or ``{"role","content"}`` dicts);
            default: the agent messages as assistant turns.
        version: tau2 data version of the environments; default the task's (``metadata["version"]``).
        env_options: keyword arguments of the domain's environment class (`Tau2Environment.from_task`).

    Raises:
        ValueError: unknown ``termination`` or an unknown component in ``reward_basis``.
    """
    domain = domain or task.domain
    version = version or _version(task)
    if termination is not None and termination not in PREMATURE + NORMAL_END:
        raise ValueError(f"unknown termination {termination!r}; use one of {list(PREMATURE + NORMAL_END)} or None")
    basis = list(task.reward_basis or ["DB", "COMMUNICATE"])
    unknown = [b for b in basis if b not in COMPONENTS]
    if unknown:
        raise ValueError(f"task {task.id!r}: unknown reward_basis component(s) {unknown}; known: {list(COMPONENTS)}")
    if termination in PREMATURE:
        return EvaluationResult(0.0, {}, [], {"note": f"premature end ({termination}) scores 0", "termination": termination})
    crit = _criteria(task)
    if crit is None:
        return EvaluationResult(1.0, {b: 1.0 for b in basis}, [], {"note": "No evaluation criteria"})

    info: dict[str, Any] = {"reward_basis": basis}
    scores: dict[str, float] = {}
    not_evaluated: list[str] = []
    actions = crit.get("actions")
    env_assertions = crit.get("env_assertions")

    # DB and ENV_ASSERTION (tau2 EnvironmentEvaluator)
    if "DB" in basis or "ENV_ASSERTION" in basis:
        if actions is None and env_assertions is None:
            info["note"] = "No expected actions or env assertions"
            scores["DB"] = scores["ENV_ASSERTION"] = 1.0
        else:
            agent_env = Tau2Environment.from_task(task, domain, data_dir, version, **(env_options or {}))
            info["skipped_calls"] = replay(agent_env, trajectory)
            # tau2 always reports the DB check (both databases), even when DB is not in the reward basis
            match = agent_env.same_db(gold_environment(task, domain, data_dir, version, env_options))
            info["db_match"] = match
            if "DB" in basis:
                scores["DB"] = 1.0 if match else 0.0
            if "ENV_ASSERTION" in basis:
                checks = []
                for a in env_assertions or []:
                    try:
                        met, err = agent_env.run_env_assertion(a), None
                    except Exception as e:  # noqa: BLE001 - a failing assertion function counts as not met
                        met, err = False, f"{type(e).__name__}: {e}"
                    checks.append({"assertion": a, "met": met, "error": err})
                info["env_assertion_checks"] = checks
                scores["ENV_ASSERTION"] = 1.0 if all(c["met"] for c in checks) else 0.0

    if "ACTION" in basis:
        calls = [_call_parts(c) for c in trajectory]
        checks = []
        for a in actions or []:
            met = any(_action_matches(a, n, args) for n, args, _ in calls if isinstance(args, dict))
            checks.append({"action_id": a.get("action_id"), "name": a["name"], "met": met})
        info["action_checks"] = checks
        scores["ACTION"] = 1.0 if all(c["met"] for c in checks) else 0.0

    if "COMMUNICATE" in basis:
        infos = crit.get("communicate_info") or []
        checks = [{"info": s, "met": _communicated(s, agent_messages)} for s in infos]
        info["communicate_checks"] = checks
        scores["COMMUNICATE"] = 1.0 if all(c["met"] for c in checks) else 0.0

    if "NL_ASSERTION" in basis:
        assertions = list(crit.get("nl_assertions") or [])
        if not assertions:
            scores["NL_ASSERTION"] = 1.0
        elif judge is None:
            not_evaluated.append("NL_ASSERTION")
            info["nl_note"] = "no judge given: NL assertions not evaluated"
        else:
            conv = [m.to_dict() if isinstance(m, Message) else dict(m) for m in transcript] if transcript is not None \
                else [{"role": "assistant", "content": m} for m in agent_messages]
            verdicts = list(judge(assertions, conv))
            if len(verdicts) != len(assertions):
                raise ValueError(f"judge returned {len(verdicts)} verdicts for {len(assertions)} NL assertions")
            mets = [bool(v.get("met")) if isinstance(v, dict) else bool(v) for v in verdicts]
            info["nl_checks"] = [{"assertion": s, "met": m} for s, m in zip(assertions, mets)]
            scores["NL_ASSERTION"] = 1.0 if all(mets) else 0.0

    breakdown = {b: scores[b] for b in basis if b in scores}
    reward = 1.0
    for v in breakdown.values():
        reward *= v
    return EvaluationResult(float(reward), breakdown, not_evaluated, info)
