"""`TelecomEnvironment`: tau2's dual-control telecom environment (agent and user toolkits, kept in sync).

`Tau2Environment("telecom", ...)` builds this class (the domain's ``DomainSpec.environment``).
Source followed: tau2-bench v0.2.0 / v1.0.1 ``TelecomEnvironment`` (``sync_tools``), as recorded in
``tau2_reference/telecom`` and ``tau2_v1_reference/telecom`` and described in their READMEs; the
dual-control call path is `orchestra_gym.domains.tau2.dual_control.DualControlEnvironment`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestra_gym.domains.tau2 import data
from orchestra_gym.domains.tau2.db import CowDB, Snapshot, deep_update
from orchestra_gym.domains.tau2.dual_control import DualControlEnvironment
from orchestra_gym.domains.tau2.telecom_requests import request_text, user_requests
from orchestra_gym.domains.tau2.telecom_user import TELECOM_USER_TABLES, TelecomUserTools

__all__ = ["TelecomEnvironment", "load_user_snapshot"]

_USER_SNAPSHOTS: dict[tuple[str, int, int], Any] = {}


def load_user_snapshot(path: Any) -> Any:
    """The user database (``user_db.toml``) normalised to tau2's ``TelecomUserDB``, parsed once per process.

    Raises:
        FileNotFoundError: no such file (the message names it and the domain).
    """
    p = Path(path).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"tau2 telecom user database not found: {p} (domain 'telecom' needs user_db.toml)")
    st = p.stat()
    key = (str(p), st.st_mtime_ns, st.st_size)
    snap = _USER_SNAPSHOTS.get(key)
    if snap is None:
        raw = data.read_data_file(p)
        parts = {name: schema.normalise(raw.get(name) or {}) for name, schema in TELECOM_USER_TABLES.items()}
        snap = _USER_SNAPSHOTS.setdefault(key, Snapshot(parts, path=p))
    return snap


class TelecomEnvironment(DualControlEnvironment):
    """tau2's telecom environment: the agent's `TelecomTools` and the user's `TelecomUserTools`.

    Built by `Tau2Environment("telecom", ...)` (same arguments). The dual-control call path is
    `DualControlEnvironment`'s; telecom adds, as in tau2-bench v0.2.0 and v1.0.1
    (``TelecomEnvironment``), the sync: after every call that did not fail, after each
    initialisation action and env assertion and at the end of `set_state`, `sync_tools` copies the
    line's status, roaming and data allowance into the user's surroundings, marks a paid payment
    request's bill ``Paid`` and turns the first ``Awaiting Payment`` bill into a payment request
    for the user (only once the user's phone number is known: ``set_user_info``). The telecom tool
    code and its tasks' ``base`` set are the same in both versions.

    Attributes (besides `Tau2Environment`'s): user_tools (`TelecomUserTools` over the user `CowDB`).
    """

    def _build_user_side(self) -> None:
        folder = data.domain_dir(self.domain, self.data_dir)
        self.user_tools = TelecomUserTools(CowDB(load_user_snapshot(folder / "user_db.toml")))

    @property
    def policy(self) -> str:
        """tau2's telecom agent policy: the main policy and the tech-support manual, each in its tag."""
        folder = data.domain_dir(self.domain, self.data_dir)
        for name in ("main_policy.md", "tech_support_manual.md"):
            if not (folder / name).is_file():
                raise FileNotFoundError(f"tau2 domain {self.domain!r}: {name} not found in {folder}")
        main = (folder / "main_policy.md").read_text(encoding="utf-8")
        manual = (folder / "tech_support_manual.md").read_text(encoding="utf-8")
        return (f"<main_policy>\n{main}\n</main_policy>\n"
                f"<tech_support_policy>\n{manual}\n</tech_support_policy>")

    def user_requests(self) -> tuple[Any, ...]:
        """How the scripted user recognises requests for its tools (`telecom_requests.user_requests`)."""
        return user_requests()

    def user_request_text(self, name: str, arguments: dict[str, Any]) -> str:
        """An agent's request for one user action (`telecom_requests.request_text`)."""
        return request_text(name, arguments)

    def set_state(self, initialization_data: dict[str, Any] | None,
                  initialization_actions: list[dict[str, Any]] | None,
                  message_history: list[dict[str, Any]]) -> None:
        """tau2 ``set_state`` with a user database: ``user_data`` merges into it; one sync at the end."""
        user_data = (initialization_data or {}).get("user_data")
        if user_data:
            for name, value in user_data.items():
                if name not in TELECOM_USER_TABLES:
                    raise ValueError(f"initialization_data.user_data: unknown part {name!r}; known: "
                                     f"{list(TELECOM_USER_TABLES)}")
                merged = deep_update(self.user_tools.part(name), value)
                self.user_tools.db.scalars[name] = TELECOM_USER_TABLES[name].normalise(merged)
            initialization_data = {k: v for k, v in initialization_data.items() if k != "user_data"}
        super().set_state(initialization_data, initialization_actions, message_history)

    def sync_tools(self) -> None:
        """tau2 ``TelecomEnvironment.sync_tools`` (see the class docstring); no-op before ``set_user_info``."""
        user, agent = self.user_tools, self.tools
        phone = user.surroundings["phone_number"]
        if phone is None:
            return
        line = agent.line_by_phone(phone)
        plan = agent._plan(line["plan_id"])
        user.set_surroundings(
            line_active=line["status"] == "Active",
            roaming_allowed=bool(line["roaming_enabled"]),
            mobile_data_usage_exceeded=line["data_used_gb"] >= plan["data_limit_gb"] + line["data_refueling_gb"],
        )
        request = user.surroundings["payment_request"]
        if request is not None and request["paid"]:
            agent.set_bill_paid(request["bill_id"])
            user.set_surroundings(payment_request=None)
        if user.surroundings["payment_request"] is None:
            awaiting = agent.bills_awaiting_payment(agent.get_customer_by_phone(phone))
            if awaiting:
                bill_id, due = awaiting[0]["bill_id"], awaiting[0]["total_due"]
                amount = float(due) if type(due) is int else due  # PaymentRequest.amount_due is a float field
                user.set_surroundings(payment_request={"bill_id": bill_id, "amount_due": amount, "paid": False})
