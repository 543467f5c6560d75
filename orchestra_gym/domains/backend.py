"""The contract between a function-calling environment and a domain (tau2 or ToolScale-synthetic).

`orchestra_gym.envs.function_calling.FunctionCallingEnv` drives one `DomainBackend` per episode:
it shows the policy `tools` and `policy`, forwards every domain tool call to `call_tool`, and at
the end asks `grade` for the outcome. Domains never import environments (one-way data flow).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from orchestra_gym.types import Task, ToolCall, ToolResult, ToolSpec


@runtime_checkable
class DomainBackend(Protocol):
    """One task's domain state for one episode.

    Attributes:
        task: the task (golden actions, communicate_info, user scenario, reward basis).
        tools: the domain's tools as the policy sees them (OpenAI function-calling schemas), in
            the domain's own order; includes ``transfer_to_human_agents`` where the domain has it.
        policy: the domain policy document (markdown) for the system prompt.
    """

    task: Task
    tools: list[ToolSpec]
    policy: str

    def call_tool(self, name: str, arguments: dict[str, Any], requestor: str = "assistant") -> ToolResult:
        """Execute one domain tool call against the episode's database.

        Never raises for bad input: an unknown tool, bad arguments or a business-rule violation
        is a `ToolResult` with ``error=True`` and a readable message. Domain tools cost nothing
        (``usage`` all zeros) unless the domain says otherwise.
        """
        ...

    def grade(self, agent_messages: list[str], trajectory: list[ToolCall]) -> tuple[float, dict[str, Any]]:
        """Outcome in [0, 1] and a breakdown dict (each check's float score, plus notes).

        Args:
            agent_messages: every text the agent sent to the user, in order.
            trajectory: every tool call the agent made (including failed ones), in order.
        """
        ...
