"""`DualControlEnvironment`: a tau2 environment in which the user has tools and a database of their own.

tau2's ``Environment`` holds an agent toolkit and, in dual-control domains, a user toolkit
(telecom: the user's phone; mock from tau2-bench v1.0.1: a notification inbox). Source followed:
tau2-bench v0.2.0 and v1.0.1 ``Environment`` (``get_response``, ``make_tool_call``, ``set_state``,
``run_env_function_call``, ``sync_tools``, ``get_user_db_hash``), as recorded in
``tau2_reference/telecom`` and ``tau2_v1_reference/{mock,telecom}``.
"""

from __future__ import annotations

from typing import Any

from orchestra_gym.domains.tau2.environment import Tau2Environment
from orchestra_gym.domains.tau2.toolkit import Tau2Toolkit
from orchestra_gym.types import ToolResult, ToolSpec

__all__ = ["DualControlEnvironment"]


class DualControlEnvironment(Tau2Environment):
    """A `Tau2Environment` with the user's toolkit (``user_tools``) next to the agent's (``tools``).

    Subclasses build the user toolkit in `_build_user_side` and may override `sync_tools` (telecom
    links the line to the phone). As in tau2:

    - ``call_tool(..., requestor="user")`` runs a user tool; an agent tool asked for by the user,
      or a user tool asked for by the agent, is ``Error: Tool '<name>' not found.``;
    - after every call that did not fail, and after each initialisation action and env assertion,
      `sync_tools` runs; `make_tool_call` is the same call without the sync (tau2's evaluator builds
      its gold environment this way, see `orchestra_gym.domains.tau2.evaluation`);
    - env functions with ``env_type="user"`` run on the user toolkit;
    - hashes and comparisons cover both databases (`user_db_hash`, `same_db`).

    Attributes (besides `Tau2Environment`'s): user_tools (a `Tau2Toolkit` over the user `CowDB`).
    """

    user_tools: Tau2Toolkit

    def user_tool_specs(self) -> list[ToolSpec]:
        """The user's tools as `ToolSpec` (OpenAI schema parts; kinds ``read`` / ``write``)."""
        return [ToolSpec(name=s["function"]["name"], description=s["function"]["description"],
                         parameters=s["function"]["parameters"],
                         kind=self.user_tools.tool_type(s["function"]["name"]).lower())
                for s in self.user_tools.openai_schemas()]

    def tool_type(self, name: str, requestor: str = "assistant") -> str | None:
        """tau2 tool type of an agent tool (``requestor="assistant"``) or a user tool (``"user"``); None
        for a name that is not a string or not a tool."""
        kit = {"assistant": self.tools, "user": self.user_tools}.get(requestor)
        return kit.tool_type(name) if kit is not None and isinstance(name, str) else None

    def has_tool(self, name: str) -> bool:
        """Whether the agent's or the user's toolkit has a tool of this name."""
        return isinstance(name, str) and (self.tools.tool_type(name) is not None
                                          or self.user_tools.tool_type(name) is not None)

    def mutates_state(self, name: str, requestor: str = "assistant") -> bool:
        """tau2 v1.0.1 ``mutates_state`` of the ``requestor``'s tool (False when it is not one)."""
        kit = {"assistant": self.tools, "user": self.user_tools}.get(requestor)
        return kit is not None and isinstance(name, str) and kit.mutates_state(name)

    def _toolkit(self, requestor: str) -> Tau2Toolkit:
        if requestor == "user":
            return self.user_tools
        if requestor == "assistant":
            return self.tools
        raise ValueError(f"Invalid requestor: {requestor}")

    def make_tool_call(self, name: str, arguments: dict[str, Any] | None = None,
                       requestor: str = "assistant") -> ToolResult:
        """One call without the sync (tau2 ``Environment.make_tool_call``); content and error as rendered."""
        try:
            kit = self._toolkit(requestor)
        except ValueError as e:
            return ToolResult(content=f"Error: {e}", error=True, metadata={"tool_type": None})
        content, error = kit.invoke(name, {} if arguments is None else arguments)
        return ToolResult(content=content, error=error, metadata={"tool_type": kit.tool_type(name)})

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None, requestor: str = "assistant") -> ToolResult:
        """One call through tau2's ``get_response``: the tool, then `sync_tools` unless it failed. Never raises."""
        result = self.make_tool_call(name, arguments, requestor)
        if not result.error:
            try:
                self.sync_tools()
            except Exception as e:  # noqa: BLE001 - tau2 renders a failing sync as the call's error
                result.content, result.error = f"Error: {e}", True
        return result

    def run_env_function(self, func_name: str, arguments: dict[str, Any], env_type: str = "assistant") -> Any:
        """Call a toolkit function directly (initialisation actions, env assertions), then sync."""
        kit = self._toolkit(env_type)
        func = getattr(kit, func_name, None)
        if func is None or func_name.startswith("_") or not callable(func):
            raise ValueError(f"Function {func_name} not found in {env_type} tools")
        result = func(**arguments)
        self.sync_tools()
        return result

    def set_state(self, initialization_data: dict[str, Any] | None,
                  initialization_actions: list[dict[str, Any]] | None,
                  message_history: list[dict[str, Any]]) -> None:
        """`Tau2Environment.set_state`, then one `sync_tools` (tau2 syncs at the end of ``set_state``)."""
        super().set_state(initialization_data, initialization_actions, message_history)
        self.sync_tools()

    def sync_tools(self) -> None:
        """Bring the two sides in line after a call (tau2 ``sync_tools``); nothing to do by default."""

    def user_db_hash(self) -> str:
        """tau2 hash of the user database (same definition as `db_hash`)."""
        return self.user_tools.db.hash()

    def same_db(self, other: Any) -> bool:
        """Both databases equal to ``other``'s (tau2 compares the agent and the user hash)."""
        return self.db.same_state(other.db) and self.user_tools.db.same_state(other.user_tools.db)

    def fork(self) -> "DualControlEnvironment":
        """An independent copy of this environment (both databases; a user toolkit that shares the
        agent's database keeps sharing the copy)."""
        shared = self.user_tools.db is self.db
        new = super().fork()
        new.user_tools = type(self.user_tools)(new.db if shared else self.user_tools.db.fork())
        return new
