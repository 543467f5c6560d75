"""The tau2 ``mock`` domain (task manager): data model and tools, reimplemented from tau2-bench v0.2.0.

Database: ``tasks`` (task_id -> Task{task_id, title, description, status}) and ``users``
(user_id -> User{user_id, name, tasks: [task_id]}).

Behaviour matched to tau2-bench v0.2.0 (checked against ``tau2_reference/mock``):

- ``create_task`` names the new task ``task_<number of tasks + 1>`` and validates ``title`` /
  ``description`` as strings (tau2 builds a pydantic ``Task``, so a non-string is a validation
  error that names ``Task``).
- QUIRK (no validation of status, v0.2.0): ``update_task_status`` stores any value (``"done"``,
  ``"Completed"``, ``None``, ``1``) although the schema's enum is ``pending`` / ``completed``;
  tau2 assigns to the model attribute without validation.
- ``assert_number_of_tasks`` / ``assert_task_status`` are the env-assertion helpers; they are
  not tools (calling them through the tool path gives "Tool ... not found").
"""

from __future__ import annotations

from typing import Any

from orchestra_gym.domains.tau2.db import ANY, list_of, model
from orchestra_gym.domains.tau2.schemas import MOCK_TOOLS
from orchestra_gym.domains.tau2.toolkit import Tau2Toolkit, check_str_fields, tool

__all__ = ["MockTools", "MOCK_TABLES"]

STR = ANY

#: tau2 mock data model: field order and defaults of the records of each table (table = {id: record}).
MOCK_TABLES = {
    "tasks": model(("task_id", STR), ("title", STR), ("description", ANY, None), ("status", STR)),
    "users": model(("user_id", STR), ("name", STR), ("tasks", list_of(STR), [])),
}


class MockTools(Tau2Toolkit):
    """Tools of the tau2 ``mock`` domain (class name as in tau2, used in argument-error texts)."""

    SCHEMAS = MOCK_TOOLS

    @tool("WRITE")
    def create_task(self, user_id: str, title: str, description: str = None) -> dict[str, Any]:  # type: ignore[assignment]
        """Create ``task_<n+1>`` for an existing user; returns the task record."""
        if not self.db.contains("users", user_id):
            raise ValueError(f"User {user_id} not found")
        task_id = f"task_{self.db.size('tasks') + 1}"
        check_str_fields("Task", [("task_id", task_id, False), ("title", title, False),
                                  ("description", description, True)])
        task = {"task_id": task_id, "title": title, "description": description, "status": "pending"}
        self.db.put("tasks", task_id, task)
        self.db.edit("users", user_id)["tasks"].append(task_id)
        return task

    @tool("READ")
    def get_users(self) -> list[dict[str, Any]]:
        """All user records, in database order."""
        return list(self.db.values("users"))

    @tool("WRITE")
    def update_task_status(self, task_id: str, status: str) -> dict[str, Any]:
        """Set a task's status; returns the task record."""
        if not self.db.contains("tasks", task_id):
            raise ValueError(f"Task {task_id} not found")
        task = self.db.edit("tasks", task_id)
        # QUIRK (v0.2.0): no validation of `status` against its enum; any JSON value is stored.
        task["status"] = status
        return task

    @tool("GENERIC")
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the conversation to a human; the summary is not checked (any type is accepted)."""
        return "Transfer successful"

    # -- env-assertion helpers (not tools) ----------------------------------------------------
    def assert_number_of_tasks(self, user_id: str, expected_number: int) -> bool:
        """True when the user has ``expected_number`` tasks; ValueError for an unknown user."""
        if not self.db.contains("users", user_id):
            raise ValueError(f"User {user_id} not found")
        return len(self.db.get("users", user_id)["tasks"]) == expected_number

    def assert_task_status(self, task_id: str, expected_status: str) -> bool:
        """True when the task's status equals ``expected_status``; ValueError for an unknown task."""
        if not self.db.contains("tasks", task_id):
            raise ValueError(f"Task {task_id} not found")
        return self.db.get("tasks", task_id)["status"] == expected_status
