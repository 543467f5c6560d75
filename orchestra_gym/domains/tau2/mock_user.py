"""The tau2 ``mock`` domain's user side, new in tau2-bench v1.0.1: a notification inbox and `MockEnvironment`.

User database (``user_db.json``, tau2's ``MockUserDB``): ``notifications`` (notification_id ->
Notification{notification_id, message, status: "unread" | "read" (default "unread"), task_id
(default None)}). User tools: ``check_notifications`` (READ) and ``dismiss_notification`` (WRITE);
``add_notification`` (an initialisation function) and ``assert_notification_status`` (an env
assertion) are not tools.

Behaviour matched to tau2-bench v1.0.1 (checked against ``tau2_v1_reference/mock``):

- ``dismiss_notification`` sets ``status`` to ``"read"`` (again: no change); an unknown id raises
  ``Notification <id> not found``; ``add_notification`` overwrites an existing id (status back
  to ``"unread"``).
- QUIRK (tau2 v1.0.1 ``Environment.set_state``): a task's ``initialization_data.agent_data``
  rebuilds the agent database and then points the *user* toolkit at it. From then on the user
  "database" is the agent's ``MockDB``: its hash is the agent hash and the user tools fail with
  ``'MockDB' object has no attribute 'notifications'`` (task
  ``update_task_with_initialization_data``, probe ``mock_user_init_data_rebinds_user_db``).
"""

from __future__ import annotations

import re
from typing import Any

from orchestra_gym.domains.tau2 import data
from orchestra_gym.domains.tau2.db import ANY, CowDB, load_snapshot, model
from orchestra_gym.domains.tau2.dual_control import DualControlEnvironment
from orchestra_gym.domains.tau2.schemas import MOCK_USER_TOOLS
from orchestra_gym.domains.tau2.toolkit import Tau2Toolkit, check_str_fields, tool
from orchestra_gym.users import UserToolRequest

__all__ = ["MockUserTools", "MockEnvironment", "MOCK_USER_TABLES"]

#: tau2 ``MockUserDB``: field order and defaults of a notification record.
MOCK_USER_TABLES = {
    "notifications": model(("notification_id", ANY), ("message", ANY), ("status", ANY, "unread"), ("task_id", ANY, None)),
}


class MockUserTools(Tau2Toolkit):
    """The mock user's tools over their notification inbox (class name as in tau2, used in
    argument-error texts)."""

    SCHEMAS = MOCK_USER_TOOLS

    def _notifications(self) -> str:
        """The table name; as tau2, an AttributeError when the toolkit was pointed at the agent DB."""
        if not self.db.snapshot.is_table("notifications"):
            raise AttributeError("'MockDB' object has no attribute 'notifications'")
        return "notifications"

    @tool("READ")
    def check_notifications(self) -> list[dict[str, Any]]:
        """Every notification record, in inbox order."""
        return list(self.db.values(self._notifications()))

    @tool("WRITE")
    def dismiss_notification(self, notification_id: str) -> str:
        """Mark a notification ``read``; ``Notification <id> dismissed``."""
        table = self._notifications()
        if not self.db.contains(table, notification_id):
            raise ValueError(f"Notification {notification_id} not found")
        self.db.edit(table, notification_id)["status"] = "read"
        return f"Notification {notification_id} dismissed"

    # -- initialisation and env-assertion helpers (not tools) ---------------------------------
    def add_notification(self, notification_id: str, message: str, task_id: str | None = None) -> dict[str, Any]:
        """Put a new ``unread`` notification in the inbox (replacing one with the same id)."""
        table = self._notifications()
        check_str_fields("Notification", [("notification_id", notification_id, False), ("message", message, False),
                                          ("task_id", task_id, True)])
        record = {"notification_id": notification_id, "message": message, "status": "unread", "task_id": task_id}
        self.db.put(table, notification_id, record)
        return record

    def assert_notification_status(self, notification_id: str, expected_status: str) -> bool:
        """True when the notification's status equals ``expected_status``; ValueError for an unknown id."""
        table = self._notifications()
        if not self.db.contains(table, notification_id):
            raise ValueError(f"Notification {notification_id} not found")
        return self.db.get(table, notification_id)["status"] == expected_status


class MockEnvironment(DualControlEnvironment):
    """tau2-bench v1.0.1's mock environment: `MockTools` for the agent, `MockUserTools` for the user.

    Built by ``Tau2Environment("mock", ..., version="v1.0.1")``. No sync between the sides.
    """

    def _build_user_side(self) -> None:
        path = data.domain_file(self.domain, ["user_db.json"], self.data_dir)
        self.user_tools = MockUserTools(CowDB(load_snapshot(path, MOCK_USER_TABLES, cache_key="mock_user")))

    def set_state(self, initialization_data: dict[str, Any] | None,
                  initialization_actions: list[dict[str, Any]] | None,
                  message_history: list[dict[str, Any]]) -> None:
        """tau2 v1.0.1 ``set_state``, including the re-pointing of the user toolkit (module QUIRK).

        Raises:
            ValueError: ``initialization_data.user_data`` (no mock task has one), or as
                `Tau2Environment.set_state`.
        """
        if initialization_data and initialization_data.get("user_data"):
            raise ValueError("mock: initialization_data.user_data is not supported (no tau2 mock task uses it)")
        if initialization_data and initialization_data.get("agent_data"):
            self.update_db(initialization_data["agent_data"])
            self.user_tools = MockUserTools(self.db)
            initialization_data = None
        super().set_state(initialization_data, initialization_actions, message_history)

    def user_requests(self) -> tuple[UserToolRequest, ...]:
        """How the scripted user recognises the agent's requests for its two tools."""
        return (
            UserToolRequest("check_notifications", (r"\b(?:check|look at|open)\b[^.?!]{0,30}\bnotifications?\b",)),
            UserToolRequest("dismiss_notification", (r"\b(?:dismiss|mark)\b[^.?!]{0,40}\bnotification",),
                            arguments=lambda text: [{"notification_id": m} for m in _notification_ids(text)[:1]]),
        )

    def user_request_text(self, name: str, arguments: dict[str, Any]) -> str:
        """An agent's request for one user action, as the scripted user understands it."""
        if name == "dismiss_notification":
            return f"Please dismiss the notification {arguments.get('notification_id')} in your inbox."
        return "Please check your notifications."


def _notification_ids(text: str) -> list[str]:
    return re.findall(r"\bnotif_\w+", text)
