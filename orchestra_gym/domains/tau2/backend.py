"""`Tau2Backend`: a tau2 task as an `orchestra_gym.domains.backend.DomainBackend`.

The function-calling environment creates one backend per episode, shows the policy `tools` and
`policy`, forwards each domain tool call to `call_tool` and asks `grade` at the end. The backend
holds the episode's live `Tau2Environment`; grading replays the trajectory on a fresh one, as
tau2 does (see `orchestra_gym.domains.tau2.evaluation`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from orchestra_gym.domains.tau2.data import DEFAULT_VERSION
from orchestra_gym.domains.tau2.environment import DOMAINS, Tau2Environment, find_raw_task
from orchestra_gym.domains.tau2.evaluation import Judge, evaluate
from orchestra_gym.domains.tau2.tasks import task_from_raw
from orchestra_gym.types import Message, Task, ToolCall, ToolResult, ToolSpec

__all__ = ["Tau2Backend"]


class Tau2Backend:
    """One tau2 task's domain state for one episode (implements `DomainBackend`).

    Args:
        task: the task (`orchestra_gym.domains.tau2.tasks.load_tau2_tasks`), or a task id of ``domain``
            (`orchestra_gym.domains.tau2.environment.find_raw_task`: v0.2.0's base set, any task
            of v1.0.1's tasks file).
        domain: ``"mock"``, ``"airline"``, ``"retail"`` or ``"telecom"``; default ``task.domain``.
        data_dir: tau2 data folder (see `Tau2Environment`).
        judge: optional NL-assertion judge for `grade` (see `evaluation.Judge`).
        version: tau2-bench data version; default the task's (``task.metadata["version"]``), else
            ``"v0.2.0"``.
        env_options: keyword arguments of the domain's environment class, for the live
            environment and for grading (`Tau2Environment.from_task`; banking_knowledge: ``retrieval``; none for the built-in four).

    Attributes:
        task, tools (`ToolSpec` list in tau2's order, kinds read / write / generic; includes
        ``transfer_to_human_agents``), policy (markdown), env (the live `Tau2Environment`),
        user_tools (the user's own tools as `ToolSpec`s in dual-control domains (telecom, mock from
        v1.0.1); else []), version.
    """

    def __init__(self, task: Task | str, domain: str | None = None,
                 data_dir: str | os.PathLike[str] | None = None, judge: Judge | None = None,
                 version: str | None = None, env_options: dict[str, Any] | None = None):
        if isinstance(task, str):
            if domain is None:
                raise ValueError(f"Tau2Backend(task_id, ...) needs domain= (one of {list(DOMAINS)})")
            version = version or DEFAULT_VERSION
            task = task_from_raw(find_raw_task(domain, task, data_dir, version), domain, version)
        self.task: Task = task
        self.domain = domain or task.domain
        self.data_dir = data_dir
        self.judge = judge
        fallback = "v1.0.1" if self.domain == "banking_knowledge" else DEFAULT_VERSION  # the domain exists only there
        self.version = version or (task.metadata or {}).get("version") or fallback
        self.env_options = dict(env_options or {})
        self.env = Tau2Environment.from_task(task, self.domain, data_dir, self.version, **self.env_options)
        self.tools: list[ToolSpec] = self.env.tool_specs()
        self.policy: str = self.env.policy
        user_specs = getattr(self.env, "user_tool_specs", None)
        self.user_tools: list[ToolSpec] = user_specs() if user_specs is not None else []

    def call_tool(self, name: str, arguments: dict[str, Any], requestor: str = "assistant") -> ToolResult:
        """Run a domain tool on the episode's database(s); content and error exactly as tau2. Never raises.

        ``requestor="user"`` runs one of the user's own tools (dual control)."""
        if not isinstance(name, str):
            return ToolResult(content=f"Error: Tool '{name}' not found.", error=True, metadata={"tool_type": None})
        return self.env.call_tool(name, arguments, requestor)

    def grade(
        self,
        agent_messages: list[str],
        trajectory: Sequence[ToolCall | dict[str, Any]],
        *,
        termination: str | None = None,
        transcript: Sequence[Message | dict[str, Any]] | None = None,
    ) -> tuple[float, dict[str, Any]]:
        """Outcome in [0, 1] and the breakdown by tau2's rules.

        Returns:
            ``(reward, breakdown)`` where ``breakdown`` has one float (1.0 / 0.0) per evaluated
            component of the reward basis (``DB``, ``COMMUNICATE``, ...), ``complete`` (1.0 when
            every component could be judged, else 0.0), ``not_evaluated`` (list of names) and
            ``details`` (the per-check results).
        """
        res = evaluate(self.task, trajectory, agent_messages, domain=self.domain, data_dir=self.data_dir,
                       judge=self.judge, termination=termination, transcript=transcript, version=self.version,
                       env_options=self.env_options)
        out: dict[str, Any] = dict(res.breakdown)
        out["complete"] = 1.0 if res.complete else 0.0
        out["not_evaluated"] = list(res.not_evaluated)
        out["details"] = res.info
        return res.reward, out
