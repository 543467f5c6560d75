"""Tools of tau2's ``banking_knowledge`` domain: the agent's (`KnowledgeTools`) and the user's (`KnowledgeUserTools`).

Source followed: tau2-bench v1.0.1 ``domains/banking_knowledge/tools.py`` and ``utils.py``, as
recorded in ``tau2_v1_reference/banking_knowledge`` (tools.json, gold replays, probes; its README
lists the behaviours kept here). Schemas and the discoverable tools' descriptions are in
`orchestra_gym.domains.tau2.banking_schemas`.

What the domain does differently from the other tau2 domains:

- 14 base agent tools plus the retrieval tools of the variant (`banking_retrieval`); 44
  *discoverable* agent tools that the agent unlocks (``unlock_discoverable_agent_tool``, found in
  the knowledge base) and calls through ``call_discoverable_agent_tool(agent_tool_name,
  arguments)``, ``arguments`` a JSON **string** parsed with every number a float; 6 user tools
  and 4 discoverable user tools that the agent gives (``give_discoverable_user_tool``).
- Discoverable tools are not listed, but can be called directly by name (tau2's toolkit keeps
  them in its tool table).
- A call of a state-changing discoverable agent tool is logged in ``agent_discoverable_tools``
  (``{tool_name, status: "CALLED"}``, id from the name only), also when the tool answers an
  ``Error:`` string; READ ones only when their name is in the read-log allowlist (tau2's runner
  takes it from the task's gold actions). Discoverable user tools log every call in
  ``user_discoverable_tool_calls``.
- Failures are mostly returned strings starting with ``Error:`` (``error`` false); Python
  exceptions (missing / unexpected keywords of a directly called tool, bad types) are
  ``error`` true, with Python's own text naming ``KnowledgeTools.<tool>()``, which is why the
  classes carry tau2's names.
- A fixed clock: today is 11/14/2025 (``get_current_time``: 2025-11-14 03:40:00 EST); record ids
  are deterministic (sha256 of the inputs).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar

from orchestra_gym.domains.tau2.banking_db import BankingDB, format_records, query_records, query_text
from orchestra_gym.domains.tau2.banking_schemas import AGENT_DISCOVERABLE, USER_DISCOVERABLE
from orchestra_gym.domains.tau2.toolkit import render_result, tool

__all__ = ["KnowledgeTools", "KnowledgeUserTools", "BankingToolkit", "discoverable", "format_tool_for_agent", "TODAY"]

TODAY = "11/14/2025"
NOW = datetime(2025, 11, 14, 3, 40, 0)


def discoverable(tool_type: str, mutates_state: bool | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method as a discoverable tool of tau2 type ``tool_type`` (not listed; unlocked or given)."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn = tool(tool_type)(fn)
        fn.__tau2_discoverable__ = True  # type: ignore[attr-defined]
        if mutates_state is not None:
            fn.__tau2_mutates__ = mutates_state  # type: ignore[attr-defined]
        return fn

    return mark


def mutating(fn: Callable[..., Any]) -> Callable[..., Any]:
    """tau2's ``mutates_state=True`` on a non-WRITE tool (replayed by ``set_state``)."""
    fn.__tau2_mutates__ = True  # type: ignore[attr-defined]
    return fn


def _sha_id(seed: str, length: int = 16) -> str:
    """tau2 ``_deterministic_id``: the first ``length // 2`` bytes of sha256(seed), hex."""
    return hashlib.sha256(seed.encode()).digest()[:length // 2].hex()


def _dispute_id(user_id: Any, transaction_id: Any) -> str:
    return f"dsp_{_sha_id(f'dispute:{user_id}:{transaction_id}', 12)}"


def _cli_id(account_id: Any, user_id: Any, amount: float) -> str:
    return f"cli_{_sha_id(f'cli_request:{account_id}:{user_id}:{amount:.2f}', 12)}"


def _money(val: Any) -> float:
    """tau2 ``_parse_balance``: numbers as floats, strings without ``$`` and ``,``, anything else 0."""
    if isinstance(val, (int, float)):
        return float(val)
    if isinstance(val, str):
        return float(val.replace("$", "").replace(",", ""))
    return 0.0


def _balance(account: dict[str, Any]) -> float:
    return _money(account.get("current_holdings", account.get("balance", 0)))


def _title(s: str) -> str:
    return s.replace("_", " ").title()


def _args_json(args: dict[str, Any]) -> str:
    return json.dumps(args, indent=2)


def _found(text: str) -> bool:
    return "No records found" not in text and "No results found" not in text


def format_tool_for_agent(info: dict[str, Any]) -> str:
    """tau2 ``format_discoverable_tool_for_agent``: the tool's name, description and parameter list."""
    params = [f"  - {n}: {p.get('type', 'string')}{' (required)' if p.get('required', True) else ' (optional)'} - "
              f"{p.get('description', '')}" for n, p in info.get("parameters", {}).items()]
    body = "\n".join(params) if params else "  (no parameters)"
    return f"Tool: {info['name']}\nDescription: {info['description']}\nParameters:\n{body}"


def _age_days(date_opened: Any) -> int:
    try:
        return (NOW - datetime.strptime(date_opened, "%m/%d/%Y")).days
    except ValueError:
        return 0


class BankingToolkit:
    """Tool registry and call path shared by the agent's and the user's banking toolkits.

    Attributes:
        db: the `BankingDB` (one object shared by the agent and the user toolkit, as in tau2).
    """

    LISTED: ClassVar[tuple[str, ...]] = ()
    _TYPES: ClassVar[dict[str, str]] = {}
    _DISCOVERABLE: ClassVar[frozenset[str]] = frozenset()
    _MUTATES: ClassVar[dict[str, bool]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        types, disc, mut = {}, set(), {}
        for klass in reversed(cls.__mro__):
            for name, fn in vars(klass).items():
                if callable(fn) and hasattr(fn, "__tau2_tool_type__"):
                    types[name] = fn.__tau2_tool_type__
                    mut[name] = getattr(fn, "__tau2_mutates__", fn.__tau2_tool_type__ == "WRITE")
                    if getattr(fn, "__tau2_discoverable__", False):
                        disc.add(name)
        cls._TYPES, cls._DISCOVERABLE, cls._MUTATES = types, frozenset(disc), mut

    def __init__(self, db: BankingDB):
        self.db = db

    @classmethod
    def has_tool(cls, name: str) -> bool:
        """True for listed and discoverable tools (tau2's toolkit table)."""
        return name in cls._TYPES

    @classmethod
    def tool_type(cls, name: str) -> str | None:
        return cls._TYPES.get(name)

    @classmethod
    def mutates_state(cls, name: str) -> bool:
        """tau2 ``tool_mutates_state``: only such calls are replayed from a message history."""
        return cls._MUTATES.get(name, True)

    @classmethod
    def has_discoverable_tool(cls, name: str) -> bool:
        return name in cls._DISCOVERABLE

    def invoke(self, name: str, arguments: Any) -> tuple[str, bool]:
        """One call as tau2's ``use_tool`` + ``get_response`` render it: ``(content, error)``. Never raises."""
        try:
            if name not in self._TYPES:  # an unhashable name raises here, as in tau2
                return f"Error: Tool '{name}' not found.", True
            if not isinstance(arguments, dict):
                raise TypeError(f"{type(self).__name__}.{name}() argument after ** must be a mapping, "
                                f"not {type(arguments).__name__}")
            return render_result(getattr(self, name)(**arguments)), False
        except Exception as e:  # noqa: BLE001 - tau2 turns every tool exception into an error message
            return f"Error: {e}", True


class KBSearchMixin:
    """tau2's ``KB_search`` tool (BM25 or dense, per variant); needs ``self.kb`` and ``self.variant``."""

    @tool("READ")
    def KB_search(self, query: str) -> str:
        from orchestra_gym.domains.tau2.banking_retrieval import format_results, timing_trailer

        top = self.kb.dense_search(query) if self.variant.kb_search == "dense" else self.kb.bm25_search(query)
        if not top:
            return "No relevant documents found." + timing_trailer()
        return format_results(self.kb, top) + timing_trailer()


class GrepMixin:
    """tau2's ``grep`` tool over the knowledge base; needs ``self.kb``."""

    @tool("READ")
    def grep(self, pattern: str) -> str:
        from orchestra_gym.domains.tau2.banking_retrieval import format_results

        top = self.kb.grep(pattern)
        if not top:
            return f"No matches found for pattern: {pattern}"
        return format_results(self.kb, top)


_TRANSFER_REASONS = (
    "fraud_or_security_concern", "account_closure_request", "deceased_account_holder", "legal_or_regulatory_matter",
    "account_ownership_dispute", "complex_billing_dispute", "abusive_customer_behavior", "third_party_inquiry",
    "technical_system_error", "unconfirmed_external_communication", "customer_demands_after_unavailable_offer_refusal",
    "kb_search_unsuccessful_customer_requests_transfer", "specialized_department_required",
    "accessibility_or_special_needs", "customer_frustrated_demands_human", "supervisor_request_service_complaint",
    "customer_requests_human_no_specific_reason", "request_completed_customer_wants_human_followup", "other",
)
_SEQUENTIAL_PINS = ("0123", "1234", "2345", "3456", "4567", "5678", "6789", "9876", "8765", "7654", "6543", "5432",
                    "4321", "3210")
_ACTIVATION_TOOL = {"new_account": "8291", "first_card": "8291", "lost": "8292", "stolen": "8292", "fraud": "8292",
                    "expired": "8293", "damaged": "8293", "upgrade": "8293", "bank_reissue": "8293"}
_CHECKING_EARLY_CLOSURE = {  # account level -> (fee USD, window days), tau2's table
    "Light Blue Account": (15, 30), "Light Green Account": (15, 30), "Green Fee-Free Account": (15, 30),
    "Blue Account": (25, 60), "Green Account": (25, 60), "Evergreen Account": (50, 90), "Bluest Account": (100, 180),
}
_SAVINGS_EARLY_CLOSURE = {
    "Bronze Account": (20, 60), "Silver Account": (35, 90), "Silver Plus Account": (35, 90), "Gold Account": (75, 180),
    "Gold Plus Account": (75, 180), "Gold Years Account": (75, 180), "Platinum Account": (150, 270),
    "Platinum Plus Account": (150, 270), "Diamond Elite Account": (150, 270),
}
_DEFAULT_ATM_LIMITS = {
    "blue account": 500, "green account": 600, "light blue account": 400, "green fee-free account": 500,
    "evergreen account": 750, "bluest account": 1500, "dark green account": 300, "gold years account": 600,
    "purple account": 1000,
}


def _envelope_scan(envelope: str, time: str, location: str, check: str, bank: str, payee: str, dated: str) -> str:
    """The envelope scan text of tau2's two canned mixed (check + cash) ATM deposits with a $750 discrepancy."""
    return (f"\n=== ATM DEPOSIT ENVELOPE SCAN ===\nEnvelope ID: {envelope}\nDeposit Time: {time}\nATM Location: {location}\n"
            f"\n--- ENVELOPE CONTENTS ---\nItem 1: Personal Check\n  - Check Number: {check}\n  - Drawn On: {bank}\n"
            f"  - Payee: {payee}\n  - Amount: $875.00\n  - Memo: \"October rent refund\"\n  - Signature: Present and "
            f"legible\n  - Date on Check: {dated}\n\nItem 2: Cash\n  - Denomination breakdown:\n    * 2 x $100 bills = "
            f"$200.00\n    * 3 x $20 bills = $60.00\n  - Total Cash: $260.00\n\n--- DEPOSIT SUMMARY ---\nCheck Total: "
            f"$875.00\nCash Total: $260.00\nGRAND TOTAL: $1,135.00\n\n--- MACHINE RECORD ---\nAmount Recorded by ATM: "
            f"$385.00\nDISCREPANCY DETECTED: $750.00 difference\n\n--- IMAGE QUALITY ---\nEnvelope scan: CLEAR\n"
            f"Check front: CLEAR\nCheck back (endorsement): CLEAR - endorsed \"For Deposit Only - {payee}\"\n"
            f"Cash image: CLEAR - bills visible and countable\n")


_DISCREPANCY_NOTE = ("Images clearly show deposit contents totaling $1,135.00. ATM machine recorded only $385.00. "
                     "Discrepancy of $750.00 confirmed via image review.")
#: transaction id -> (ATM id, envelope scan, verification notes): the deposit images tau2's
#: ``get_atm_deposit_images_8473`` has for three test transactions (none is in db.json; a task or
#: probe adds them with initialization_data); every other Rho-Bank deposit has no images.
_ATM_SCANS = {
    "btxn_834027370c20": ("ATM #3921", _envelope_scan(
        "ENV-2025-3921-00923", "3:47 PM CST", "Rho-Bank ATM #3921, Cedar Lane Branch, Austin, TX", "7284",
        "First Texas Bank", "Derek Yamamoto", "11/03/2025"), _DISCREPANCY_NOTE),
    "btxn_test_deposit_001": ("ATM #3921", _envelope_scan(
        "ENV-2025-3921-00847", "2:34 PM EST", "Rho-Bank ATM #3921, 742 Oak Avenue, Portland, OR", "4821",
        "First National Bank", "Linda Patterson", "11/05/2025"), _DISCREPANCY_NOTE),
    "btxn_test_atm_dep_partial": ("ATM #5847", (
        "\n=== ATM DEPOSIT ENVELOPE SCAN ===\nEnvelope ID: ENV-2025-5847-00293\nDeposit Time: 10:15 AM EST\n\n"
        "--- ENVELOPE CONTENTS ---\nItem 1: Personal Check\n  - Check Number: 7392\n  - Amount: $500.00\n\n"
        "--- DEPOSIT SUMMARY ---\nCheck Total: $500.00\nCash Total: $0.00\nGRAND TOTAL: $500.00\n\n"
        "--- MACHINE RECORD ---\nAmount Recorded by ATM: $500.00\nNo discrepancy detected.\n"),
        "Images confirm deposit matches recorded amount. No discrepancy found."),
}


def _pin_problem(pin: Any) -> str | None:
    if not pin or not pin.isdigit() or len(pin) != 4:
        return "PIN must be exactly 4 digits."
    if pin in _SEQUENTIAL_PINS:
        return "PIN cannot be sequential (e.g., 1234). Please choose a more secure PIN."
    if len(set(pin)) == 1:
        return "PIN cannot be all the same digit (e.g., 1111). Please choose a more secure PIN."
    return None


class KnowledgeTools(BankingToolkit):
    """The agent's banking tools (tau2 ``KnowledgeTools``) without retrieval tools.

    Attributes (besides ``db``): read_log_allowlist (set of READ discoverable tool names whose calls
    are logged), unlocked (agent tool name -> unlock record, in memory only).
    """

    def __init__(self, db: BankingDB, read_log_allowlist: Any = None):
        super().__init__(db)
        self.read_log_allowlist: set[str] = set(read_log_allowlist or [])
        self.unlocked: dict[str, dict[str, Any]] = {}
        self.given: dict[str, dict[str, Any]] = {}

    def _cards(self) -> dict[str, Any]:
        return self.db.data("debit_cards")

    def _accounts(self) -> dict[str, Any]:
        return self.db.data("accounts")

    def _cc_accounts(self) -> dict[str, Any]:
        return self.db.data("credit_card_accounts")

    def _history(self, title: str, tool_name: str, heading: str, table: str, field: str, value: Any, empty: str) -> str:
        """The text of tau2's history look-ups: a header, then the query's records or ``empty``."""
        text = query_text(self.db, table, f'{{"{field}": "{value}"}}')
        parts = [title, "", f"Executed: {tool_name}", heading]
        parts.append(text if _found(text) else empty)
        return "\n".join(parts)

    def _cc_missing(self, account_id: Any) -> bool:
        return not _found(query_text(self.db, "credit_card_accounts", f'{{"account_id": "{account_id}"}}'))

    # -- base tools (listed) ------------------------------------------------------------------
    @tool("GENERIC")
    def transfer_to_human_agents(self, summary: str, reason: str = "other") -> str:
        if reason not in _TRANSFER_REASONS:
            return f"Error: Invalid transfer reason '{reason}'. Must be one of: {', '.join(_TRANSFER_REASONS)}"
        return f"Transfer successful (reason: {reason}). A human agent will assist you shortly."

    @tool("READ")
    def get_current_time(self) -> str:
        return "The current time is 2025-11-14 03:40:00 EST."

    @tool("READ")
    def get_user_information_by_id(self, user_id: str) -> str:
        return query_text(self.db, "users", f'{{"user_id": "{user_id}"}}')

    @tool("READ")
    def get_user_information_by_name(self, customer_name: str) -> str:
        return query_text(self.db, "users", f'{{"name": "{customer_name}"}}')

    @tool("READ")
    def get_user_information_by_email(self, email: str) -> str:
        return query_text(self.db, "users", f'{{"email": "{email}"}}')

    @tool("WRITE")
    def change_user_email(self, user_id: str, new_email: str) -> str:
        if not self.db.update("users", user_id, {"email": new_email}):
            return f"Error: User with ID '{user_id}' not found."
        return f"Email updated successfully.\n  - User ID: {user_id}\n  - New Email: {new_email}"

    @tool("READ")
    def get_referrals_by_user(self, user_id: str) -> str:
        return query_text(self.db, "referrals", f'{{"referrer_id": "{user_id}"}}')

    @tool("READ")
    def get_credit_card_transactions_by_user(self, user_id: str) -> str:
        return query_text(self.db, "credit_card_transaction_history", f'{{"user_id": "{user_id}"}}')

    @tool("READ")
    def get_credit_card_accounts_by_user(self, user_id: str) -> str:
        return query_text(self.db, "credit_card_accounts", f'{{"user_id": "{user_id}"}}')

    @tool("WRITE")
    def log_verification(self, name: str, user_id: str, address: str, email: str, phone_number: str,
                         date_of_birth: str, time_verified: str) -> str:
        record_id = f"{user_id}_{time_verified.replace(' ', '_').replace(':', '').replace('-', '')}"
        record = {"name": name, "user_id": user_id, "address": address, "email": email, "phone_number": phone_number,
                  "date_of_birth": date_of_birth, "time_verified": time_verified}
        if not self.db.add("verification_history", record_id, record):
            return "Failed to log verification: Record may already exist."
        return f"Verification logged successfully.\n  - User: {name} (ID: {user_id})\n  - Verified at: {time_verified}"

    @tool("GENERIC")
    @mutating
    def give_discoverable_user_tool(self, discoverable_tool_name: str, arguments: str = "{}") -> str:
        if not isinstance(discoverable_tool_name, str):  # tau2's hasattr() on the name
            raise TypeError(f"attribute name must be string, not '{type(discoverable_tool_name).__name__}'")
        if discoverable_tool_name not in KnowledgeUserTools._DISCOVERABLE:
            return f"Error: Unknown discoverable tool '{discoverable_tool_name}'."
        try:
            args = json.loads(arguments)
        except json.JSONDecodeError as e:
            return f"Error: Invalid JSON in arguments: {e}"
        params = inspect.signature(getattr(KnowledgeUserTools, discoverable_tool_name)).parameters
        for name in args:
            if name not in params and name != "self":
                return f"Error: Unexpected parameter: {name}"
        info = USER_DISCOVERABLE[discoverable_tool_name]
        self.given[discoverable_tool_name] = {"arguments": args, "given_at": NOW.isoformat(), "tool_info": info}
        self.db.add("user_discoverable_tools", _sha_id(f"user_discoverable_tool:{discoverable_tool_name}"),
                    {"tool_name": discoverable_tool_name, "status": "GIVEN"})
        shown = json.dumps(args, indent=2) if args else "(no arguments)"
        return (f"Tool given to user: {discoverable_tool_name}\nDescription: {info['description']}\nArguments: {shown}\n\n"
                f"The user can now execute this action by calling `call_discoverable_user_tool` with "
                f"discoverable_tool_name='{discoverable_tool_name}' and the same arguments.")

    @tool("GENERIC")
    @mutating
    def unlock_discoverable_agent_tool(self, agent_tool_name: str) -> str:
        if not self.has_discoverable_tool(agent_tool_name):
            return f"Error: Unknown agent tool '{agent_tool_name}'. This tool is not available."
        info = AGENT_DISCOVERABLE[agent_tool_name]
        self.unlocked[agent_tool_name] = {"unlocked_at": NOW.isoformat(), "tool_info": info}
        return (f"Tool unlocked: {agent_tool_name}\nDescription: {info['description']}\n\n{format_tool_for_agent(info)}\n\n"
                f"You can now use this tool by calling `call_discoverable_agent_tool` with "
                f"agent_tool_name='{agent_tool_name}' and the required arguments.")

    @tool("WRITE")
    def call_discoverable_agent_tool(self, agent_tool_name: str, arguments: str = "{}") -> str:
        if not self.has_discoverable_tool(agent_tool_name):
            return f"Error: Unknown agent tool '{agent_tool_name}'. This tool is not available."
        if agent_tool_name not in self.unlocked:
            return (f"Error: Tool '{agent_tool_name}' has not been unlocked. You must first use "
                    f"`unlock_discoverable_agent_tool` to unlock this tool before calling it.")
        try:
            args = json.loads(arguments, parse_int=float)
        except json.JSONDecodeError as e:
            return f"Error: Invalid JSON in arguments: {e}"
        try:
            result = getattr(self, agent_tool_name)(**args)
        except TypeError as e:
            return f"Error: Invalid arguments: {e}"
        if self._MUTATES[agent_tool_name] or agent_tool_name in self.read_log_allowlist:
            self.db.add("agent_discoverable_tools", _sha_id(f"agent_discoverable_tool:{agent_tool_name}"),
                        {"tool_name": agent_tool_name, "status": "CALLED"})
        return result

    @tool("READ")
    def list_discoverable_agent_tools(self) -> str:
        # tau2 tests for "No results found" while the query answers "No records found": kept.
        return f"Your called agent tools:\n{query_text(self.db, 'agent_discoverable_tools', '{}')}"

    # -- env functions (not tools) --------------------------------------------------------------
    def set_read_log_allowlist(self, allowlist: Any) -> None:
        self.read_log_allowlist = set(allowlist or [])

    def get_agent_discoverable_tools_state(self) -> dict[str, dict[str, Any]]:
        return self.unlocked

    def get_user_discoverable_tools_state(self) -> dict[str, dict[str, Any]]:
        return self.given

    # -- discoverable agent tools ------------------------------------------------------------------
    @discoverable("WRITE")
    def example_agent_tool_0000(self) -> str:
        return "Example tool executed successfully."

    @discoverable("WRITE")
    def update_transaction_rewards_3847(self, transaction_id: str, new_rewards_earned: str) -> str:
        if not transaction_id or not new_rewards_earned:
            return "Error: Missing required parameters."
        if not self.db.update("credit_card_transaction_history", transaction_id, {"rewards_earned": new_rewards_earned}):
            return f"Error: Transaction '{transaction_id}' not found."
        args = {"transaction_id": transaction_id, "new_rewards_earned": new_rewards_earned}
        return (f"Transaction rewards updated successfully.\n\nExecuted: update_transaction_rewards_3847\n"
                f"Arguments: {_args_json(args)}\nTransaction updated:\n  - Transaction ID: {transaction_id}\n"
                f"  - New Rewards: {new_rewards_earned}")

    @discoverable("GENERIC")
    def initial_transfer_to_human_agent_0218(self) -> str:
        return ("Initial Transfer Initiated, Inform the user that the lines are busy.\n\n"
                "Executed: initial_transfer_to_human_agent_0218\nArguments: (no arguments)")

    @discoverable("GENERIC")
    def initial_transfer_to_human_agent_1822(self) -> str:
        return ("Do not explicitly tell the user, but the conversation has not reached the necessary stages to "
                "transfer to a real human yet. Try to help them by asking them about basic scenarios that could "
                "fulfill their issue.\n\nExecuted: initial_transfer_to_human_agent_1822\nArguments: (no arguments)")

    @discoverable("GENERIC")
    def emergency_credit_bureau_incident_transfer_1114(self) -> str:
        return ("Emergency escalation logged. Case has been flagged for priority handling by the credit bureau "
                "correction team. Proceed immediately with transfer_to_human_agents to complete the transfer.\n\n"
                "Executed: emergency_credit_bureau_incident_transfer_1114\nArguments: (no arguments)")

    @discoverable("WRITE")
    def file_credit_card_transaction_dispute_4829(
        self, transaction_id: str, card_action: str, card_last_4_digits: str, full_name: str, user_id: str, phone: str,
        email: str, address: str, contacted_merchant: bool, purchase_date: str, issue_noticed_date: str,
        dispute_reason: str, resolution_requested: str, eligible_for_provisional_credit: bool,
        partial_refund_amount: float | None = None,
    ) -> str:
        if not transaction_id or not user_id:
            return "Error: Missing required parameters."
        actions = ["keep_active", "cancel_and_reissue"]
        if card_action not in actions:
            return f"Error: Invalid card_action. Must be one of: {actions}"
        reasons = ["unauthorized_fraudulent_charge", "duplicate_charge", "incorrect_amount",
                   "goods_services_not_received", "goods_services_not_as_described",
                   "canceled_subscription_still_charging", "refund_never_processed"]
        if dispute_reason not in reasons:
            return f"Error: Invalid dispute_reason. Must be one of: {reasons}"
        resolutions = ["full_refund", "partial_refund"]
        if resolution_requested not in resolutions:
            return f"Error: Invalid resolution_requested. Must be one of: {resolutions}"
        if resolution_requested == "partial_refund" and partial_refund_amount is None:
            return "Error: partial_refund_amount is required when resolution_requested is 'partial_refund'."
        dispute_id = _dispute_id(user_id, transaction_id)
        record = {
            "dispute_id": dispute_id, "transaction_id": transaction_id, "user_id": user_id, "card_action": card_action,
            "card_last_4_digits": card_last_4_digits, "full_name": full_name, "phone": phone, "email": email,
            "address": address, "contacted_merchant": contacted_merchant, "purchase_date": purchase_date,
            "issue_noticed_date": issue_noticed_date, "dispute_reason": dispute_reason,
            "resolution_requested": resolution_requested, "partial_refund_amount": partial_refund_amount,
            "eligible_for_provisional_credit": eligible_for_provisional_credit,
            "provisional_credit_given": eligible_for_provisional_credit, "submitted_at": TODAY, "status": "SUBMITTED",
        }
        if not self.db.add("transaction_disputes", dispute_id, record):
            return "Error: Dispute may have already been filed for this transaction."
        parts = ["Credit card transaction dispute filed successfully. A case has been opened and will be reviewed "
                 "within 10 business days.", "", "Executed: file_credit_card_transaction_dispute_4829",
                 f"Dispute ID: {dispute_id}", f"Transaction: {transaction_id}", f"Reason: {_title(dispute_reason)}",
                 f"Resolution Requested: {_title(resolution_requested)}"]
        if partial_refund_amount:
            parts.append(f"Partial Refund Amount: ${partial_refund_amount:.2f}")
        parts.append("Provisional Credit: ELIGIBLE - Credit will be applied within 2 business days."
                     if eligible_for_provisional_credit else "Provisional Credit: Not eligible at this time.")
        return "\n".join(parts)

    @discoverable("WRITE")
    def file_debit_card_transaction_dispute_6281(
        self, transaction_id: str, account_id: str, card_id: str, user_id: str, dispute_category: str,
        transaction_date: str, discovery_date: str, disputed_amount: float, transaction_type: str,
        card_in_possession: bool, pin_compromised: str, contacted_merchant: bool, police_report_filed: bool,
        written_statement_provided: bool, provisional_credit_eligible: bool, customer_max_liability_amount: float,
        card_action: str,
    ) -> str:
        if not all([transaction_id, account_id, card_id, user_id, dispute_category, transaction_date, discovery_date,
                    disputed_amount, transaction_type, pin_compromised, card_action]):
            return "Error: Missing required parameters."
        if customer_max_liability_amount is None:
            return "Error: customer_max_liability_amount is required."
        if None in (card_in_possession, contacted_merchant, police_report_filed, written_statement_provided):
            return ("Error: card_in_possession, contacted_merchant, police_report_filed, and written_statement_provided "
                    "are required boolean fields.")
        categories = ["unauthorized_transaction", "atm_cash_discrepancy", "atm_deposit_not_credited", "duplicate_charge",
                      "incorrect_amount", "goods_services_not_received", "recurring_charge_after_cancellation",
                      "card_present_fraud", "card_not_present_fraud"]
        if dispute_category not in categories:
            return f"Error: Invalid dispute_category. Must be one of: {categories}"
        types = ["pin_purchase", "signature_purchase", "online_purchase", "atm_withdrawal", "atm_deposit",
                 "recurring_payment", "person_to_person"]
        if transaction_type not in types:
            return f"Error: Invalid transaction_type. Must be one of: {types}"
        pins = ["yes_shared", "yes_observed", "no", "unknown"]
        if pin_compromised not in pins:
            return f"Error: Invalid pin_compromised. Must be one of: {pins}"
        actions = ["keep_active", "freeze_pending_investigation", "close_and_reissue"]
        if card_action not in actions:
            return f"Error: Invalid card_action. Must be one of: {actions}"
        if disputed_amount <= 0:
            return "Error: disputed_amount must be a positive number."
        dispute_id = _dispute_id(user_id, transaction_id)
        fraud = dispute_category in ("unauthorized_transaction", "card_present_fraud", "card_not_present_fraud")
        shared = pin_compromised == "yes_shared"
        record = {
            "dispute_id": dispute_id, "transaction_id": transaction_id, "account_id": account_id, "card_id": card_id,
            "user_id": user_id, "dispute_category": dispute_category, "transaction_date": transaction_date,
            "discovery_date": discovery_date, "disputed_amount": disputed_amount, "transaction_type": transaction_type,
            "card_in_possession": card_in_possession, "pin_compromised": pin_compromised,
            "contacted_merchant": contacted_merchant, "police_report_filed": police_report_filed,
            "written_statement_provided": written_statement_provided,
            "provisional_credit_eligible": provisional_credit_eligible,
            "provisional_credit_issued": provisional_credit_eligible,
            "provisional_credit_amount": disputed_amount if provisional_credit_eligible else None,
            "customer_max_liability_amount": customer_max_liability_amount, "card_action": card_action,
            "is_fraud_category": fraud, "pin_shared_voluntarily": shared, "submitted_at": TODAY, "status": "OPEN",
        }
        if not self.db.add("debit_card_disputes", dispute_id, record):
            return "Error: Dispute may have already been filed for this transaction."
        parts = [f"Dispute ID: {dispute_id}", f"Transaction: {transaction_id}", f"Account: {account_id}",
                 f"Category: {_title(dispute_category)}", f"Disputed Amount: ${disputed_amount:.2f}",
                 f"Card Action: {_title(card_action)}"]
        if provisional_credit_eligible:
            parts.append(f"Provisional Credit: ISSUED - ${disputed_amount:.2f} credited within 10 business days per "
                         f"Regulation E.")
        else:
            parts.append("Provisional Credit: Not eligible - see Debit Card Provisional Credit Guidelines for details.")
        if shared:
            parts.append("WARNING: Customer indicated PIN was shared voluntarily. This may affect liability determination.")
        if fraud and not police_report_filed and disputed_amount > 500:
            parts.append("RECOMMENDATION: For fraud disputes over $500, filing a police report is recommended.")
        return "\n".join(parts)

    @discoverable("WRITE")
    def set_debit_card_recurring_block_7382(self, card_id: str, block_recurring: bool) -> str:
        if not card_id:
            return "Error: Missing required parameter: card_id"
        card = self._cards().get(card_id)
        if not card:
            return f"Error: Debit card '{card_id}' not found."
        status = card.get("status", "").upper()
        if status != "ACTIVE":
            return (f"Error: Cannot update recurring block settings for a card with status '{status}'. "
                    f"Card must be ACTIVE.")
        card["recurring_blocked"] = block_recurring
        if block_recurring:
            return (f"Recurring payments BLOCKED for debit card {card_id}.\nAll recurring/subscription charges will be "
                    f"declined.\nOne-time purchases are not affected.\nThis change takes effect within 24 hours.")
        return (f"Recurring payments UNBLOCKED for debit card {card_id}.\nRecurring/subscription charges will now be "
                f"allowed.\nThis change takes effect within 24 hours.")

    @discoverable("READ")
    def get_debit_dispute_status_7483(self, user_id: str) -> str:
        if not user_id:
            return "Error: Missing required parameter: user_id"
        return self._history("Debit card dispute history retrieved successfully.", "get_debit_dispute_status_7483",
                             f"Debit card dispute history for user {user_id}:", "debit_card_disputes", "user_id", user_id,
                             "\nNo debit card disputes found for this user.")

    @discoverable("READ")
    def get_atm_deposit_images_8473(self, transaction_id: str) -> str:
        if not transaction_id:
            return "Error: Missing required parameter: transaction_id"
        txns = self.db.data("bank_account_transaction_history")
        if transaction_id not in txns:
            return f"Error: Transaction '{transaction_id}' not found."
        txn = txns[transaction_id]
        if txn.get("type") != "atm_deposit":
            return (f"Error: Transaction '{transaction_id}' is not an ATM deposit. This tool only works for ATM deposit "
                    f"transactions.")
        desc = txn.get("description", "")
        if "RHO-BANK" not in desc.upper() and "RHOBANK" not in desc.upper():
            return (f"Error: Transaction '{transaction_id}' is from a third-party ATM. Deposit images are only available "
                    f"for Rho-Bank ATM deposits. For third-party ATM disputes, a chargeback request must be submitted "
                    f"to the ATM network.")
        head = f"ATM Deposit Image Retrieval Results\n=====================================\nTransaction ID: {transaction_id}\n"
        scan = _ATM_SCANS.get(transaction_id)
        if scan is not None:
            atm_id, envelope, notes = scan
            return (f"{head}ATM: {atm_id}\nDeposit Date: {txn.get('date', 'Unknown')}\n\n{envelope}\n\n"
                    f"--- VERIFICATION NOTES ---\n{notes}\n")
        return (f"{head}ATM: {desc}\nDeposit Date: {txn.get('date', 'Unknown')}\n"
                f"Amount Recorded: ${abs(txn.get('amount', 0)):.2f}\n\n--- IMAGE STATUS ---\n"
                f"Status: IMAGES NOT AVAILABLE\nReason: Deposit images for this transaction have either expired (older "
                f"than 90 days) or were not captured by the ATM system.\n\nFor deposits without available images, the "
                f"dispute will proceed based on customer statement and ATM journal records only. Investigation "
                f"timeline may be extended.\n")

    @discoverable("WRITE")
    def order_replacement_credit_card_7291(self, credit_card_account_id: str, user_id: str, shipping_address: str,
                                           reason: str, expedited_shipping: bool = False) -> str:
        if not credit_card_account_id or not user_id or not shipping_address or not reason:
            return "Error: Missing required parameters (credit_card_account_id, user_id, shipping_address, reason)."
        reasons = ["fraud_suspected", "lost", "stolen", "damaged", "expired", "other"]
        if reason not in reasons:
            return f"Error: Invalid reason. Must be one of: {reasons}"
        if self._cc_missing(credit_card_account_id):
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        order_id = f"ccord_{_sha_id(f'credit_card_order:{credit_card_account_id}:{user_id}:{reason}', 12)}"
        record = {"order_id": order_id, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
                  "shipping_address": shipping_address, "reason": reason, "expedited_shipping": expedited_shipping,
                  "order_date": TODAY, "status": "ORDERED", "old_card_cancelled": True}
        if not self.db.add("credit_card_orders", order_id, record):
            return "Error: Order may have already been placed for this card replacement."
        cc = self._cc_accounts()
        if credit_card_account_id in cc:
            cc[credit_card_account_id]["status"] = "CLOSED"
            cc[credit_card_account_id]["closed_date"] = TODAY
        return "\n".join([
            f"Order ID: {order_id}", f"Card Account: {credit_card_account_id}", f"Reason: {_title(reason)}",
            f"Shipping Address: {shipping_address}", f"Shipping Method: {'Expedited' if expedited_shipping else 'Standard'}",
            f"Expected Delivery: {'2-3 business days' if expedited_shipping else '7-10 business days'}", "",
            "The old card has been cancelled for security. The new card will have the same account number but a new "
            "card number and CVV."])

    @discoverable("READ")
    def get_user_dispute_history_7291(self, user_id: str) -> str:
        if not user_id:
            return "Error: Missing required parameter: user_id"
        return self._history("User transaction dispute history retrieved successfully.", "get_user_dispute_history_7291",
                             f"Transaction dispute history for user {user_id}:", "transaction_disputes", "user_id",
                             user_id, "\nNo transaction disputes found for this user.")

    @discoverable("READ")
    def get_pending_replacement_orders_5765(self, credit_card_account_id: str) -> str:
        if not credit_card_account_id:
            return "Error: Missing required parameter: credit_card_account_id"
        return self._history("Pending replacement orders check completed.", "get_pending_replacement_orders_5765",
                             f"Replacement orders for credit card account {credit_card_account_id}:",
                             "credit_card_orders", "credit_card_account_id", credit_card_account_id,
                             "\nNo pending replacement orders found for this credit card account.")

    @discoverable("WRITE")
    def log_credit_card_closure_reason_4521(self, credit_card_account_id: str, user_id: str, closure_reason: str) -> str:
        if not credit_card_account_id or not user_id or not closure_reason:
            return "Error: Missing required parameters."
        reasons = ["annual_fee", "not_using_card", "found_better_card", "unhappy_with_rewards", "simplifying_finances",
                   "negative_experience", "other"]
        if closure_reason not in reasons:
            return f"Error: Invalid closure_reason. Must be one of: {reasons}"
        record_id = f"clsr_{_sha_id(f'closure_reason:{credit_card_account_id}:{user_id}', 12)}"
        self.db.add("credit_card_closure_reasons", record_id, {
            "record_id": record_id, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
            "closure_reason": closure_reason, "logged_at": TODAY, "status": "LOGGED"})
        args = {"credit_card_account_id": credit_card_account_id, "user_id": user_id, "closure_reason": closure_reason}
        return (f"Closure reason logged successfully.\n\nExecuted: log_credit_card_closure_reason_4521\n"
                f"Arguments: {_args_json(args)}\nClosure reason '{closure_reason}' logged for account "
                f"{credit_card_account_id}.")

    @discoverable("READ")
    def get_closure_reason_history_8293(self, credit_card_account_id: str) -> str:
        if not credit_card_account_id:
            return "Error: Missing required parameter: credit_card_account_id"
        return self._history("Closure reason history retrieved successfully.", "get_closure_reason_history_8293",
                             f"Closure reason history for credit card account {credit_card_account_id}:",
                             "credit_card_closure_reasons", "credit_card_account_id", credit_card_account_id,
                             "\nNo closure reason records found for this credit card account.")

    @discoverable("WRITE")
    def apply_statement_credit_8472(self, user_id: str, credit_card_account_id: str, amount: float, reason: str) -> str:
        if not user_id or not credit_card_account_id or amount is None or not reason:
            return "Error: Missing required parameters (user_id, credit_card_account_id, amount, reason)."
        if amount <= 0:
            return "Error: Credit amount must be positive."
        reasons = ["goodwill_adjustment", "promotional_credit", "annual_fee_reversal", "late_fee_reversal",
                   "interest_charge_reversal", "dispute_resolution", "price_match", "retention_offer",
                   "error_correction", "other"]
        if reason not in reasons:
            return f"Error: Invalid reason. Must be one of: {reasons}"
        if self._cc_missing(credit_card_account_id):
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        txn_id = _transaction_id(user_id, "STATEMENT_CREDIT", reason, amount, "Statement Credit")
        record = {"transaction_id": txn_id, "user_id": user_id, "credit_card_account_id": credit_card_account_id,
                  "credit_card_type": "N/A", "merchant_name": "Rho-Bank Statement Credit",
                  "transaction_amount": f"-${amount:.2f}", "transaction_date": TODAY, "category": "Statement Credit",
                  "status": "COMPLETED", "rewards_earned": "0 points", "credit_reason": reason}
        if not self.db.add("credit_card_transaction_history", txn_id, record):
            return f"Error: Failed to apply statement credit. Transaction ID '{txn_id}' may already exist."
        return (f"Statement credit applied successfully.\n\nExecuted: apply_statement_credit_8472\n"
                f"  - Transaction ID: {txn_id}\n  - User ID: {user_id}\n  - Account: {credit_card_account_id}\n"
                f"  - Credit Amount: ${amount:.2f}\n  - Reason: {_title(reason)}\n  - Date: {TODAY}")

    @discoverable("WRITE")
    def apply_credit_card_account_flag_6147(self, credit_card_account_id: str, user_id: str, flag_type: str,
                                            expiration_date: str, reason: str) -> str:
        if not credit_card_account_id or not user_id or not flag_type or not expiration_date or not reason:
            return ("Error: Missing required parameters (credit_card_account_id, user_id, flag_type, expiration_date, "
                    "reason).")
        flags = ["annual_fee_waived", "promotional_apr", "rewards_bonus", "other"]
        if flag_type not in flags:
            return f"Error: Invalid flag_type. Must be one of: {flags}"
        reasons = ["retention_offer", "loyalty_benefit", "promotional", "error_correction", "other"]
        if reason not in reasons:
            return f"Error: Invalid reason. Must be one of: {reasons}"
        if self._cc_missing(credit_card_account_id):
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        flag_id = f"ccflag_{_sha_id(f'account_flag:{credit_card_account_id}:{flag_type}:{expiration_date}', 12)}"
        record = {"flag_id": flag_id, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
                  "flag_type": flag_type, "effective_date": TODAY, "expiration_date": expiration_date, "reason": reason,
                  "applied_at": TODAY, "status": "ACTIVE"}
        if not self.db.add("credit_card_account_flags", flag_id, record):
            return f"Error: Failed to apply account flag. Flag ID '{flag_id}' may already exist."
        return (f"Account flag applied successfully!\n  - Flag ID: {flag_id}\n  - Account: {credit_card_account_id}\n"
                f"  - User ID: {user_id}\n  - Flag Type: {_title(flag_type)}\n  - Effective Date: {TODAY}\n"
                f"  - Expiration Date: {expiration_date}\n  - Reason: {_title(reason)}")

    @discoverable("WRITE")
    def close_credit_card_account_7834(self, credit_card_account_id: str, user_id: str) -> str:
        if not credit_card_account_id or not user_id:
            return "Error: Missing required parameters (credit_card_account_id, user_id)."
        if self._cc_missing(credit_card_account_id):
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        if not self.db.update("credit_card_accounts", credit_card_account_id,
                              {"status": "CLOSED", "closed_date": TODAY, "closed_by": user_id}):
            return f"Error: Failed to close credit card account '{credit_card_account_id}'."
        args = {"credit_card_account_id": credit_card_account_id, "user_id": user_id}
        return (f"Credit card account closed successfully.\n\nExecuted: close_credit_card_account_7834\n"
                f"Arguments: {_args_json(args)}\nAccount {credit_card_account_id} has been closed.")

    @discoverable("WRITE")
    def pay_credit_card_from_checking_9182(self, user_id: str, checking_account_id: str, credit_card_account_id: str,
                                           amount: float) -> str:
        if not user_id or not checking_account_id or not credit_card_account_id or amount is None:
            return "Error: Missing required parameters (user_id, checking_account_id, credit_card_account_id, amount)."
        try:
            amount = float(amount)
            if amount <= 0:
                return "Error: Payment amount must be a positive number."
        except (ValueError, TypeError):
            return "Error: Invalid payment amount. Must be a positive number."
        accounts = self._accounts()
        if checking_account_id not in accounts:
            return f"Error: Checking account '{checking_account_id}' not found."
        checking = accounts[checking_account_id]
        if checking.get("user_id") != user_id:
            return f"Error: Checking account '{checking_account_id}' does not belong to user '{user_id}'."
        if checking.get("class") != "checking":
            return f"Error: Account '{checking_account_id}' is not a checking account."
        balance = _balance(checking)
        if amount > balance:
            return (f"Error: Insufficient funds in checking account. Available balance: ${balance:.2f}, requested "
                    f"payment: ${amount:.2f}.")
        cc_all = self._cc_accounts()
        if credit_card_account_id not in cc_all:
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        cc = cc_all[credit_card_account_id]
        if cc.get("user_id") != user_id:
            return f"Error: Credit card account '{credit_card_account_id}' does not belong to user '{user_id}'."
        try:
            owed = float(str(cc.get("current_balance", "$0.00")).replace("$", "").replace(",", ""))
        except (ValueError, TypeError):
            owed = 0.0
        if amount > owed:
            return (f"Error: Payment amount (${amount:.2f}) exceeds credit card balance (${owed:.2f}). Please specify an "
                    f"amount up to the outstanding balance.")
        new_checking, new_cc = balance - amount, owed - amount
        checking["current_holdings"] = f"{new_checking:.2f}"
        cc["current_balance"] = f"${new_cc:.2f}"
        return (f"Payment processed successfully!\n  - Payment Amount: ${amount:.2f}\n  - From Checking Account: "
                f"{checking_account_id}\n  - To Credit Card Account: {credit_card_account_id}\n  - New Checking Balance: "
                f"${new_checking:.2f}\n  - New Credit Card Balance: ${new_cc:.2f}\nThe payment has been applied immediately.")

    @discoverable("WRITE")
    def submit_credit_limit_increase_request_7392(self, credit_card_account_id: str, user_id: str,
                                                  requested_increase_amount: int) -> str:
        if not credit_card_account_id or not user_id or requested_increase_amount is None:
            return "Error: Missing required parameters."
        try:
            amount = float(requested_increase_amount)
        except (TypeError, ValueError):
            return "Error: Invalid requested_increase_amount. Must be a whole number."
        if not amount.is_integer():
            return "Error: Invalid requested_increase_amount. Must be a whole number of dollars."
        whole = int(amount)
        if whole <= 0:
            return "Error: Requested increase amount must be positive."
        cc_all = self._cc_accounts()
        if credit_card_account_id not in cc_all:
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        if cc_all[credit_card_account_id].get("user_id") != user_id:
            return f"Error: Credit card account '{credit_card_account_id}' does not belong to user '{user_id}'."
        request_id = _cli_id(credit_card_account_id, user_id, whole)
        record = {"request_id": request_id, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
                  "requested_increase_amount": whole, "submitted_at": TODAY, "status": "PENDING"}
        if not self.db.add("credit_limit_increase_requests", request_id, record):
            return "Error: A similar request may already exist."
        return (f"Credit limit increase request submitted successfully.\n\nExecuted: "
                f"submit_credit_limit_increase_request_7392\n  - Request ID: {request_id}\n  - Account: "
                f"{credit_card_account_id}\n  - Requested Increase: ${whole:,}\n  - Status: PENDING")

    @discoverable("READ")
    def get_credit_limit_increase_history_4829(self, credit_card_account_id: str) -> str:
        if not credit_card_account_id:
            return "Error: Missing required parameter: credit_card_account_id"
        return self._history("Credit limit increase history retrieved.", "get_credit_limit_increase_history_4829",
                             f"Credit limit increase history for account {credit_card_account_id}:",
                             "credit_limit_increase_requests", "credit_card_account_id", credit_card_account_id,
                             "\nNo credit limit increase requests found for this account.")

    @discoverable("READ")
    def get_payment_history_6183(self, credit_card_account_id: str, months: int) -> str:
        if not credit_card_account_id or months is None:
            return "Error: Missing required parameters (credit_card_account_id, months)."
        try:
            months = int(months)
            if months <= 0:
                return "Error: months must be a positive integer."
        except (ValueError, TypeError):
            return "Error: Invalid months value. Must be a positive integer."
        payments = [p for p in self.db.data("payment_history").values()
                    if p.get("credit_card_account_id") == credit_card_account_id]
        if not payments:
            return f"No payment history found for account '{credit_card_account_id}'."
        payments.sort(key=lambda p: p.get("payment_date") or "", reverse=True)
        payments = payments[:months]
        streak = 0
        for p in payments:
            if p.get("status") != "ON_TIME":
                break
            streak += 1
        parts = [f"Payment history for account '{credit_card_account_id}' (last {months} months):",
                 f"Consecutive on-time payments: {streak}"]
        parts += [f"\n  - Payment Date: {p.get('payment_date')}\n    Amount: {p.get('amount')}\n    Status: "
                  f"{p.get('status')}" for p in payments]
        return "\n".join(parts)

    @discoverable("WRITE")
    def approve_credit_limit_increase_5847(self, credit_card_account_id: str, user_id: str, new_credit_limit: int) -> str:
        if not credit_card_account_id or not user_id or new_credit_limit is None:
            return "Error: Missing required parameters."
        cc_all = self._cc_accounts()
        if credit_card_account_id not in cc_all:
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        cc = cc_all[credit_card_account_id]
        if cc.get("user_id") != user_id:
            return f"Error: Credit card account '{credit_card_account_id}' does not belong to user '{user_id}'."
        open_dispute = any(d.get("user_id") == user_id and d.get("status") in ("SUBMITTED", "UNDER_REVIEW", "PENDING")
                           for d in self.db.data("transaction_disputes").values())
        if (open_dispute
                or any(o.get("credit_card_account_id") == credit_card_account_id
                       and o.get("status") in ("PENDING", "PROCESSING", "SHIPPED")
                       for o in self.db.data("credit_card_orders").values())
                or cc.get("account_status", "").upper() in ("PAST_DUE", "DELINQUENT", "COLLECTIONS", "CLOSED")):
            return "Error: Credit limit increase request cannot be approved at this time."
        try:
            current = float(str(cc.get("credit_limit", "$0.00")).replace("$", "").replace(",", ""))
        except (ValueError, TypeError):
            current = 0.0
        new = float(new_credit_limit)
        cc["credit_limit"] = f"${new:.2f}"
        request_id = _cli_id(credit_card_account_id, user_id, new - current)
        self.db.add("credit_limit_increase_requests", request_id, {
            "request_id": request_id, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
            "previous_limit": f"${current:.2f}", "new_limit": f"${new:.2f}", "increase_amount": f"${new - current:.2f}",
            "decision_date": TODAY, "status": "APPROVED"})
        return (f"Credit limit increase approved!\n  - Account: {credit_card_account_id}\n  - Previous Limit: "
                f"${current:.2f}\n  - New Limit: ${new:.2f}\n  - Increase: ${new - current:.2f}\n  - Effective Date: "
                f"{TODAY}\nThe customer will receive a confirmation email.")

    @discoverable("WRITE")
    def deny_credit_limit_increase_5848(self, credit_card_account_id: str, user_id: str, denial_reason: str) -> str:
        if not credit_card_account_id or not user_id or not denial_reason:
            return "Error: Missing required parameters."
        reasons = ["insufficient_account_age", "cooldown_period_active", "pending_disputes", "pending_replacement_card",
                   "past_due_balance", "high_utilization", "insufficient_payment_history",
                   "requested_amount_exceeds_limit", "other"]
        if denial_reason not in reasons:
            return f"Error: Invalid denial_reason. Must be one of: {', '.join(reasons)}"
        if credit_card_account_id not in self._cc_accounts():
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        request_id = _cli_id(credit_card_account_id, user_id, 0.0)
        self.db.add("credit_limit_increase_requests", request_id, {
            "request_id": request_id, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
            "denial_reason": denial_reason, "decision_date": TODAY, "status": "DENIED"})
        return (f"Credit limit increase request denied.\n  - Account: {credit_card_account_id}\n  - Denial Reason: "
                f"{denial_reason}\n  - Date: {TODAY}\nThe customer will receive a notification explaining the denial.")

    @discoverable("WRITE")
    def open_bank_account_4821(self, user_id: str, account_type: str, account_class: str) -> str:
        if not user_id or not account_type or not account_class:
            return "Error: Missing required parameters."
        types = ["checking", "savings", "business_checking", "business_savings"]
        if account_type not in types:
            return f"Error: Invalid account_type. Must be one of: {types}"
        mine = [a for a in self._accounts().values() if a.get("user_id") == user_id]
        kind = [a.get("account_type", a.get("class", "")) for a in mine]
        live = [a.get("status", "") in ("OPEN", "ACTIVE") for a in mine]
        refused = "Error: Account eligibility requirements not met."
        if account_type == "savings":
            if not any(k in ("checking", "personal_checking") and ok and _age_days(a.get("date_opened", "")) >= 14
                       for a, k, ok in zip(mine, kind, live)):
                return refused
        if account_type == "business_checking":
            if any(a.get("status") == "CLOSED" for a in mine):
                return refused
            if not any(k in ("checking", "personal_checking") and ok for k, ok in zip(kind, live)):
                return refused
        if account_type == "business_savings":
            if any(_balance(a) < 0 for a in mine):
                return refused
            if not any(k == "business_checking" and ok and _age_days(a.get("date_opened", "")) >= 30
                       for a, k, ok in zip(mine, kind, live)):
                return refused
        account_id = _sha_id(f"account:{user_id}:{account_type}:{account_class}")
        record = {"account_id": account_id, "user_id": user_id, "account_type": account_type,
                  "account_class": account_class, "current_holdings": "0.00", "status": "OPEN", "date_opened": TODAY}
        if not self.db.add("accounts", account_id, record):
            return f"Failed to open account: Account ID '{account_id}' may already exist."
        return (f"Bank account opened successfully!\n  - Account ID: {account_id}\n  - User ID: {user_id}\n"
                f"  - Account Type: {account_type}\n  - Account Class: {account_class}\n  - Status: OPEN\n"
                f"  - Initial Balance: $0.00\n  - Date Opened: {TODAY}")

    @discoverable("WRITE")
    def close_bank_account_7392(self, account_id: str, reason: str = "Customer requested closure",
                                waive_early_closure_fee: bool = False) -> str:
        if not account_id:
            return "Error: Missing required parameter (account_id)."
        accounts = self._accounts()
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        account = accounts[account_id]
        if account.get("status") == "CLOSED":
            return f"Error: Account '{account_id}' is already closed."
        balance = _balance(account)
        fee = 0.0
        if not waive_early_closure_fee:
            table = {"checking": _CHECKING_EARLY_CLOSURE, "savings": _SAVINGS_EARLY_CLOSURE}.get(account.get("class", ""))
            rule = table.get(account.get("level", "")) if table is not None else None
            opened = account.get("date_opened", "")
            if rule and opened:
                try:
                    age = (NOW - datetime.strptime(opened, "%m/%d/%Y")).days
                    if age < rule[1]:
                        if balance < rule[0]:
                            return "Error: Account unable to be closed."
                        fee = rule[0]
                except ValueError:
                    pass
        if balance - fee != 0:
            return f"Error: Account balance must be $0.00 before closing. Current balance: ${balance:.2f}"
        account.update({"status": "CLOSED", "date_closed": TODAY, "closure_reason": reason,
                        "early_closure_fee_waived": waive_early_closure_fee})
        return (f"Bank account closed successfully!\n  - Account ID: {account_id}\n  - Account Type: "
                f"{account.get('account_type', 'N/A')}\n  - Account Class: {account.get('account_class', 'N/A')}\n"
                f"  - Status: CLOSED\n  - Date Closed: {TODAY}\n  - Reason: {reason}\n  - Early Closure Fee Waived: "
                f"{'Yes' if waive_early_closure_fee else 'No'}")

    @discoverable("READ")
    def get_all_user_accounts_by_user_id_3847(self, user_id: str) -> str:
        if not user_id:
            return "Error: Missing required parameter: user_id"
        bank = query_text(self.db, "accounts", f'{{"user_id": "{user_id}"}}')
        cards = query_text(self.db, "credit_card_accounts", f'{{"user_id": "{user_id}"}}')
        return "\n".join([
            "User accounts retrieved successfully.", "", "Executed: get_all_user_accounts_by_user_id_3847",
            f"Accounts for user {user_id}:", "", "Bank Accounts:", bank if _found(bank) else "  No bank accounts found.",
            "\nCredit Card Accounts:", cards if _found(cards) else "  No credit card accounts found."])

    @discoverable("WRITE")
    def transfer_funds_between_bank_accounts_7291(self, source_account_id: str, destination_account_id: str,
                                                  amount: float) -> str:
        if not source_account_id or not destination_account_id or amount is None:
            return "Error: Missing required parameters (source_account_id, destination_account_id, amount)."
        try:
            amount = float(amount)
        except (ValueError, TypeError):
            return f"Error: Invalid amount '{amount}'. Must be a number."
        if amount <= 0:
            return "Error: Transfer amount must be positive."
        if source_account_id == destination_account_id:
            return "Error: Source and destination accounts cannot be the same."
        accounts = self._accounts()
        if source_account_id not in accounts:
            return f"Error: Source account '{source_account_id}' not found."
        if destination_account_id not in accounts:
            return f"Error: Destination account '{destination_account_id}' not found."
        src, dst = accounts[source_account_id], accounts[destination_account_id]
        if src.get("status") not in ("ACTIVE", "OPEN"):
            return f"Error: Source account '{source_account_id}' is not active."
        if dst.get("status") not in ("ACTIVE", "OPEN"):
            return f"Error: Destination account '{destination_account_id}' is not active."
        have = _balance(src)
        if have < amount:
            return (f"Error: Insufficient funds. Source account balance is ${have:.2f}, but transfer amount is "
                    f"${amount:.2f}.")
        new_src, new_dst = have - amount, _balance(dst) + amount
        src["current_holdings"] = f"${new_src:.2f}"
        dst["current_holdings"] = f"${new_dst:.2f}"
        return (f"Transfer completed successfully!\n  - Amount: ${amount:.2f}\n  - From: {source_account_id} (new "
                f"balance: ${new_src:.2f})\n  - To: {destination_account_id} (new balance: ${new_dst:.2f})")

    def _credit_account(self, account_id: Any, amount: Any, credit_type: Any, kinds: dict[str, str], classes: tuple[str, ...],
                        wrong_class: str, seed: str, money_format: str) -> str:
        """The shared body of the checking and savings credit tools (tau2's two copies differ only in these)."""
        if not account_id or amount is None or not credit_type:
            return "Error: Missing required parameters."
        try:
            amount = float(amount)
        except (TypeError, ValueError):
            return "Error: Invalid credit amount. Must be a number."
        if amount <= 0:
            return "Error: Credit amount must be positive."
        if credit_type not in kinds:
            return f"Error: Invalid credit_type. Must be one of: {list(kinds)}"
        accounts = self._accounts()
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        account = accounts[account_id]
        if account.get("class", "").lower() not in classes:
            return f"Error: Account '{account_id}' is not a {wrong_class}"
        if account.get("status") not in ("ACTIVE", "OPEN"):
            return f"Error: Account '{account_id}' is not active."
        before = _balance(account)
        after = before + amount
        account["current_holdings"] = money_format.format(after)
        txn_id = f"txn_{_sha_id(f'{seed}:{account_id}:{credit_type}:{amount}:{TODAY}')}"
        self.db.data("bank_account_transaction_history")[txn_id] = {
            "transaction_id": txn_id, "account_id": account_id, "date": TODAY, "description": kinds[credit_type],
            "amount": amount, "type": credit_type, "status": "posted"}
        return (f"\nCredit applied successfully!\n  - Transaction ID: {txn_id}\n  - Account: {account_id}\n"
                f"  - Credit Type: {credit_type}\n  - Amount: ${amount:.2f}\n  - Previous Balance: ${before:.2f}\n"
                f"  - New Balance: ${after:.2f}")

    @discoverable("WRITE")
    def apply_checking_account_credit_5829(self, account_id: str, amount: float, credit_type: str) -> str:
        return self._credit_account(
            account_id, amount, credit_type,
            {"rebate_credit": "REBATE CREDIT - CUSTOMER SERVICE", "fee_refund": "FEE REFUND - CUSTOMER SERVICE"},
            ("checking",), "checking account. Credits can only be applied to checking accounts.", "checking_credit",
            "${:.2f}")

    @discoverable("WRITE")
    def apply_savings_account_credit_6831(self, account_id: str, amount: float, credit_type: str) -> str:
        return self._credit_account(
            account_id, amount, credit_type,
            {"interest_correction": "INTEREST CORRECTION - CUSTOMER SERVICE",
             "fee_refund": "FEE REFUND - CUSTOMER SERVICE", "goodwill_credit": "GOODWILL CREDIT - CUSTOMER SERVICE"},
            ("saving", "savings"), "savings account. This tool only applies to savings accounts.", "savings_credit",
            "{:.2f}")

    @discoverable("WRITE")
    def submit_interest_discrepancy_report_7294(self, account_id: str, user_id: str, expected_apy: float,
                                                actual_apy: float, amount_difference: float) -> str:
        if not account_id or not user_id or expected_apy is None or actual_apy is None or amount_difference is None:
            return "Error: Missing required parameters."
        try:
            expected_apy, actual_apy, amount_difference = float(expected_apy), float(actual_apy), float(amount_difference)
        except (ValueError, TypeError):
            return "Error: expected_apy, actual_apy, and amount_difference must be numbers."
        account = self._accounts().get(account_id)
        if account is None:
            return f"Error: Account '{account_id}' not found."
        user = self.db.data("users").get(user_id)
        if user is None:
            return f"Error: User '{user_id}' not found."
        report_id = f"IDR_{_sha_id(f'interest_report:{account_id}:{user_id}:{expected_apy}:{actual_apy}:{TODAY}')}"
        # tau2 writes the report to 'interest_discrepancy_reports', which is not a table of the DB model:
        # add_to_db returns False and nothing is stored (only the call log changes). Kept.
        self.db.add("interest_discrepancy_reports", report_id, {})
        level = account.get("level", "Unknown")
        return (f"\nInterest Discrepancy Report Submitted Successfully!\n  - Report ID: {report_id}\n  - Account: "
                f"{account_id} ({level})\n  - Customer: {user.get('name', 'Unknown')}\n  - Expected APY: {expected_apy}%\n"
                f"  - Actual APY: {actual_apy}%\n  - APY Difference: {round(expected_apy - actual_apy, 4)}%\n"
                f"  - Amount Difference: ${amount_difference:.2f}\n  - Status: PENDING_REVIEW\n\nThe backend team will "
                f"investigate this discrepancy and ensure correct APY calculations are applied going forward.")

    @discoverable("READ")
    def get_bank_account_transactions_9173(self, account_id: str) -> str:
        if not account_id:
            return "Error: Missing required parameter: account_id"
        if account_id not in self._accounts():
            return f"Error: Account '{account_id}' not found."
        rows = query_records(self.db, "bank_account_transaction_history", {"account_id": account_id})

        def when(row: tuple[str, dict[str, Any]]) -> datetime:
            text = str(row[1].get("date", ""))
            for fmt in ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y"):
                try:
                    return datetime.strptime(text, fmt)
                except ValueError:
                    continue
            return datetime.min

        rows = sorted(rows, key=when, reverse=True)
        parts = ["Bank account transactions retrieved successfully.", "", "Executed: get_bank_account_transactions_9173",
                 f"Transactions for account {account_id}:"]
        parts.append(format_records("bank_account_transaction_history", rows) if rows
                     else "\nNo transactions found for this account.")
        return "\n".join(parts)

    @discoverable("WRITE")
    def order_debit_card_5739(self, account_id: str, user_id: str, delivery_option: str, delivery_fee: float,
                              card_design: str, design_fee: float, shipping_address: str,
                              excess_replacement_fee: float | None = None) -> str:
        excess = excess_replacement_fee or 0
        try:
            delivery_fee = float(delivery_fee) if delivery_fee is not None else None
        except (TypeError, ValueError):
            return "Error: delivery_fee must be a number."
        try:
            design_fee = float(design_fee) if design_fee is not None else None
        except (TypeError, ValueError):
            return "Error: design_fee must be a number."
        try:
            excess = float(excess)
        except (TypeError, ValueError):
            excess = 0
        if not all([account_id, user_id, delivery_option, delivery_fee is not None, card_design, design_fee is not None,
                    shipping_address]):
            return ("Error: Missing required parameters. Required: account_id, user_id, delivery_option, delivery_fee, "
                    "card_design, design_fee, shipping_address.")
        deliveries = {"STANDARD": "7-10 business days", "EXPEDITED": "3-5 business days", "RUSH": "1-2 business days"}
        if delivery_option.upper() not in deliveries:
            return f"Error: Invalid delivery_option. Must be one of: {list(deliveries)}"
        delivery_option = delivery_option.upper()
        designs = ["CLASSIC", "PREMIUM", "CUSTOM"]
        if card_design.upper() not in designs:
            return f"Error: Invalid card_design. Must be one of: {designs}"
        card_design = card_design.upper()
        accounts = self._accounts()
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        account = accounts[account_id]
        if account.get("class") != "checking":
            return (f"Error: Debit cards can only be ordered for checking accounts. Account '{account_id}' is a "
                    f"{account.get('class')} account.")
        if account.get("status") != "OPEN":
            return f"Error: Account must be OPEN. Account '{account_id}' has status: {account.get('status')}"
        if account.get("user_id") != user_id:
            return f"Error: Account '{account_id}' does not belong to user '{user_id}'."
        try:
            holdings = float(str(account.get("current_holdings", "0")).replace(",", ""))
        except ValueError:
            holdings = 0.0
        if holdings < 25.0:
            return f"Error: Account must have a minimum balance of $25. Current balance: ${holdings:.2f}"
        if any(o.get("account_id") == account_id and o.get("status") == "PENDING"
               for o in self.db.data("debit_card_orders").values()):
            return f"Error: There is already a pending debit card order for account '{account_id}'."
        if any(c.get("account_id") == account_id and c.get("status") == "ACTIVE" for c in self._cards().values()):
            return (f"Error: Account '{account_id}' already has an active debit card. Maximum 1 active card per "
                    f"checking account.")
        total = delivery_fee + design_fee + excess
        if total > 0 and holdings < total:
            return f"Error: Insufficient funds for fees. Total fees: ${total:.2f}. Current balance: ${holdings:.2f}"
        order_id = f"dcord_{_sha_id(f'debit_card_order:{account_id}:{user_id}:{delivery_option}', 12)}"
        order = {"order_id": order_id, "account_id": account_id, "user_id": user_id, "delivery_option": delivery_option,
                 "card_design": card_design, "shipping_address": shipping_address, "delivery_fee": delivery_fee,
                 "design_fee": design_fee, "excess_replacement_fee": excess, "total_fee": total, "order_date": TODAY,
                 "expected_delivery": deliveries[delivery_option], "status": "PENDING"}
        if not self.db.add("debit_card_orders", order_id, order):
            return "Error: Failed to create debit card order. Order may already exist."
        if total > 0:
            account["current_holdings"] = f"{holdings - total:.2f}"
            what = []
            if delivery_fee > 0:
                what.append(f"Delivery ${delivery_fee}")
            if design_fee > 0:
                what.append(f"Design ${design_fee}")
            if excess > 0:
                what.append(f"Excess Replacement ${excess:.0f}")
            fee_id = f"btxn_dcfee_{order_id[-8:]}"
            self.db.add("bank_account_transaction_history", fee_id, {
                "transaction_id": fee_id, "account_id": account_id, "date": TODAY,
                "description": f"DEBIT CARD ORDER FEE - {', '.join(what)}", "amount": -total, "type": "debit_card_fee",
                "status": "posted"})
        card_id = f"dbc_{_sha_id(f'debit_card:{account_id}:{user_id}:{TODAY}', 12)}"
        seed = f"card_details:{card_id}"
        last4 = "".join(c for c in _sha_id(seed + ":last4", 8) if c.isdigit())[:4].zfill(4)
        cvv = "".join(c for c in _sha_id(seed + ":cvv", 6) if c.isdigit())[:3].zfill(3)
        users = self.db.data("users")
        holder = users[user_id].get("name", "CARDHOLDER").upper() if user_id in users else "CARDHOLDER"
        month, _, year = TODAY.split("/")
        day = "31" if month in ("01", "03", "05", "07", "08", "10", "12") else ("28" if month == "02" else "30")
        existing = [c for c in self._cards().values() if c.get("account_id") == account_id]
        closed = next((c for c in existing if c.get("status") == "CLOSED"), None)
        if closed:
            why = closed.get("closure_reason", "first_card")
            issue_reason = ("fraud" if why == "fraud_suspected" else why) if why in ("lost", "stolen", "fraud",
                                                                                     "fraud_suspected") else "first_card"
        else:
            issue_reason = "first_card" if existing else "new_account"
        self.db.add("debit_cards", card_id, {
            "card_id": card_id, "account_id": account_id, "user_id": user_id, "cardholder_name": holder,
            "last_4_digits": last4, "cvv": cvv, "status": "PENDING", "issue_date": TODAY,
            "expiration_date": f"{month}/{day}/{int(year) + 4}", "card_design": card_design, "issue_reason": issue_reason})
        parts = ["Debit Card Order Confirmed", f"Order ID: {order_id}", f"Card ID: {card_id}", f"Linked Account: {account_id}",
                 f"Delivery Option: {delivery_option}", f"Card Design: {card_design}", f"Shipping Address: {shipping_address}",
                 f"Expected Delivery: {deliveries[delivery_option]}", "",
                 "Note: Card will arrive with status PENDING. Customer must call to activate after receiving the card."]
        if total > 0:
            what = []
            if delivery_fee > 0:
                what.append(f"Delivery: ${delivery_fee}")
            if design_fee > 0:
                what.append(f"Design: ${design_fee}")
            if excess > 0:
                what.append(f"Excess Replacement: ${excess:.0f}")
            parts.append(f"Total Fees: ${total:.2f} ({', '.join(what)}) - CHARGED to account {account_id}")
            parts.append(f"New Account Balance: ${holdings - total:.2f}")
        else:
            parts.append("Total Fees: $0 (No additional charges)")
        return "\n".join(parts)

    def _activation_problem(self, card_id: Any, last_4_digits: Any, expiration_date: Any, cvv: Any, pin: Any,
                            allowed: tuple[str, ...], tool_name: str) -> tuple[str | None, dict[str, Any] | None]:
        """tau2 ``_validate_activation_common``: ``(error text, None)`` or ``(None, card)``."""
        if not all([card_id, last_4_digits, expiration_date, cvv, pin]):
            return "Error: Missing required parameters. Required: card_id, last_4_digits, expiration_date, cvv, pin.", None
        problem = _pin_problem(pin)
        if problem:
            return f"Error: {problem}", None
        if not cvv.isdigit() or len(cvv) != 3:
            return "Error: CVV must be exactly 3 digits.", None
        if not last_4_digits.isdigit() or len(last_4_digits) != 4:
            return "Error: Last 4 digits must be exactly 4 digits.", None
        cards = self._cards()
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found.", None
        card = cards[card_id]
        reason = card.get("issue_reason", "new_account")
        if reason not in allowed:
            right = f"activate_debit_card_{_ACTIVATION_TOOL[reason]}" if reason in _ACTIVATION_TOOL else "unknown"
            return (f"Error: Wrong activation tool. This card has issue_reason='{reason}'. Please use {right} instead of "
                    f"{tool_name}.", None)
        if card.get("status") == "ACTIVE":
            return f"Error: Debit card '{card_id}' is already active.", None
        if card.get("status") != "PENDING":
            return (f"Error: Debit card '{card_id}' cannot be activated. Current status: {card.get('status')}. Only "
                    f"PENDING cards can be activated.", None)
        if card.get("last_4_digits") != last_4_digits:
            return "Error: Card verification failed. The last 4 digits do not match our records.", None
        account_id = card.get("account_id")
        accounts = self._accounts()
        if account_id and account_id in accounts and accounts[account_id].get("status") != "OPEN":
            return (f"Error: The linked checking account '{account_id}' is no longer open. Card cannot be activated.",
                    None)
        return None, card

    def _activate(self, card_id: str, card: dict[str, Any], new_status: str, extra: Callable[[dict[str, Any]], None]) -> list[str]:
        """Activate ``card``; every other ACTIVE card of its account gets ``new_status`` and ``extra``; their ids."""
        card["status"] = "ACTIVE"
        card["activated_date"] = TODAY
        others = []
        for other_id, other in self._cards().items():
            if other_id != card_id and other.get("account_id") == card.get("account_id") and other.get("status") == "ACTIVE":
                other["status"] = new_status
                extra(other)
                others.append(other_id)
        return others

    @discoverable("WRITE")
    def activate_debit_card_8291(self, card_id: str, last_4_digits: str, expiration_date: str, cvv: str, pin: str) -> str:
        error, card = self._activation_problem(card_id, last_4_digits, expiration_date, cvv, pin,
                                               ("new_account", "first_card"), "activate_debit_card_8291")
        if error:
            return error
        others = self._activate(card_id, card, "DEACTIVATED", lambda c: c.update(
            {"deactivated_date": TODAY, "deactivation_reason": "New card activated"}))
        parts = ["New Debit Card Activation Successful", f"Card ID: {card_id}", "Status: ACTIVE", f"Activation Date: {TODAY}",
                 "", "Your card is now ready to use at any ATM or point of sale terminal.",
                 "For security, please sign the back of your card."]
        if others:
            parts.append(f"\nNote: Previous card(s) have been deactivated: {', '.join(others)}")
        return "\n".join(parts)

    @discoverable("WRITE")
    def activate_debit_card_8292(self, card_id: str, last_4_digits: str, expiration_date: str, cvv: str, pin: str) -> str:
        error, card = self._activation_problem(card_id, last_4_digits, expiration_date, cvv, pin,
                                               ("lost", "stolen", "fraud"), "activate_debit_card_8292")
        if error:
            return error
        reason = card.get("issue_reason", "lost")
        others = self._activate(card_id, card, "DEACTIVATED", lambda c: c.update(
            {"deactivated_date": TODAY, "deactivation_reason": f"Replacement card activated ({reason})"}))
        parts = ["Replacement Debit Card Activation Successful", f"Card ID: {card_id}", f"Replacement Reason: {_title(reason)}",
                 "Status: ACTIVE", f"Activation Date: {TODAY}", "", "Your replacement card is now ready to use.", "",
                 "IMPORTANT SECURITY REMINDERS:", "- Please review your recent transactions for any unauthorized charges",
                 "- Report any suspicious activity immediately"]
        if reason == "fraud":
            parts.append("- Since fraud was suspected, we recommend changing your online banking password")
        if others:
            parts.append(f"\nPrevious card(s) have been deactivated for security: {', '.join(others)}")
        return "\n".join(parts)

    @discoverable("WRITE")
    def activate_debit_card_8293(self, card_id: str, last_4_digits: str, expiration_date: str, cvv: str, pin: str) -> str:
        error, card = self._activation_problem(card_id, last_4_digits, expiration_date, cvv, pin,
                                               ("expired", "damaged", "upgrade", "bank_reissue"), "activate_debit_card_8293")
        if error:
            return error
        reason = card.get("issue_reason", "expired")
        others = self._activate(card_id, card, "GRACE_PERIOD", lambda c: c.update(
            {"grace_period_ends": TODAY, "deactivation_reason": f"Reissued card activated ({reason})"}))
        parts = ["Reissued Debit Card Activation Successful", f"Card ID: {card_id}", f"Reissue Reason: {_title(reason)}",
                 "Status: ACTIVE", f"Activation Date: {TODAY}", "", "Your reissued card is now ready to use."]
        if others:
            parts.append(f"\nNote: Your previous card(s) ({', '.join(others)}) will remain active for 24 hours as a "
                         f"grace period.")
            parts.append("After 24 hours, the old card(s) will be automatically deactivated.")
        if reason in ("expired", "bank_reissue"):
            parts.append("\nReminder: If your card number changed, please update any recurring payments with your new "
                         "card details.")
        return "\n".join(parts)

    @discoverable("WRITE")
    def close_debit_card_4721(self, card_id: str, reason: str) -> str:
        if not card_id or not reason:
            return "Error: Missing required parameters. Required: card_id, reason."
        reasons = ["lost", "stolen", "fraud_suspected", "damaged", "no_longer_needed", "account_closing"]
        if reason.lower() not in reasons:
            return f"Error: Invalid reason. Must be one of: {reasons}"
        reason = reason.lower()
        cards = self._cards()
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if card.get("status") not in ("ACTIVE", "PENDING"):
            return (f"Error: Debit card '{card_id}' cannot be closed. Current status: {card.get('status')}. Only ACTIVE "
                    f"or PENDING cards can be closed.")
        before = card.get("status")
        card.update({"status": "CLOSED", "closed_date": TODAY, "closure_reason": reason})
        parts = ["Debit Card Closed Successfully", f"Card ID: {card_id}", f"Previous Status: {before}", "New Status: CLOSED",
                 f"Closure Reason: {_title(reason)}", f"Closure Date: {TODAY}", ""]
        if reason in ("lost", "stolen", "fraud_suspected"):
            parts += ["IMPORTANT: This card has been immediately deactivated for security.",
                      "Any pending transactions may still be processed."]
            if reason == "fraud_suspected":
                parts += ["Please advise the customer to review recent transactions and file disputes for any "
                          "unauthorized charges.", "Also recommend changing their online banking password."]
        parts += ["", "Note: This card cannot be reactivated. If the customer needs a new card, they can order one "
                  "through the standard ordering process.",
                  "Any recurring payments linked to this card will need to be updated with new payment information."]
        return "\n".join(parts)

    @discoverable("WRITE")
    def freeze_debit_card_3892(self, card_id: str) -> str:
        if not card_id:
            return "Error: Missing required parameter: card_id."
        cards = self._cards()
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if card.get("status") == "FROZEN":
            return f"Error: Debit card '{card_id}' is already frozen."
        if card.get("status") != "ACTIVE":
            return (f"Error: Debit card '{card_id}' cannot be frozen. Current status: {card.get('status')}. Only ACTIVE "
                    f"cards can be frozen.")
        card.update({"status": "FROZEN", "frozen_date": TODAY})
        return "\n".join([
            "Debit Card Frozen Successfully", f"Card ID: {card_id}", "Status: FROZEN", f"Frozen Date: {TODAY}", "",
            "While frozen:", "- All new purchase transactions will be declined",
            "- Recurring payments and subscriptions will be declined",
            "- Pending transactions already authorized may still process", "",
            "To unfreeze, the customer can call customer service or use the mobile app.",
            "If the card is confirmed lost or stolen, recommend closing the card permanently instead."])

    @discoverable("WRITE")
    def unfreeze_debit_card_3893(self, card_id: str) -> str:
        if not card_id:
            return "Error: Missing required parameter: card_id."
        cards = self._cards()
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if card.get("status") == "ACTIVE":
            return f"Error: Debit card '{card_id}' is already active."
        if card.get("status") != "FROZEN":
            return (f"Error: Debit card '{card_id}' cannot be unfrozen. Current status: {card.get('status')}. Only "
                    f"FROZEN cards can be unfrozen.")
        account_id = card.get("account_id")
        accounts = self._accounts()
        if account_id and account_id in accounts and accounts[account_id].get("status") != "OPEN":
            return f"Error: The linked checking account '{account_id}' is no longer open. Card cannot be unfrozen."
        card.update({"status": "ACTIVE", "unfrozen_date": TODAY})
        return "\n".join(["Debit Card Unfrozen Successfully", f"Card ID: {card_id}", "Status: ACTIVE",
                          f"Unfrozen Date: {TODAY}", "", "The card is now active and ready to use immediately.",
                          "All transactions will process normally."])

    @discoverable("WRITE")
    def clear_debit_card_fraud_alert_4892(self, card_id: str, reason: str) -> str:
        if not card_id:
            return "Error: Missing required parameter: card_id."
        if not reason:
            return "Error: Missing required parameter: reason."
        reasons = ["customer_verified", "velocity_clear"]
        if reason not in reasons:
            return f"Error: Invalid reason '{reason}'. Must be one of: {', '.join(reasons)}"
        cards = self._cards()
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if reason == "velocity_clear":
            if not card.get("velocity_blocked", False):
                return f"Error: Debit card '{card_id}' does not have an active velocity block."
            card.update({"velocity_blocked": False, "velocity_cleared_date": TODAY})
            return "\n".join(["Velocity Block Cleared Successfully", f"Card ID: {card_id}", f"Cleared Date: {TODAY}", "",
                              "The card is now unblocked and ready for normal use.",
                              "The velocity monitoring will continue - if the same unusual patterns recur,",
                              "the card may be blocked again automatically."])
        if not card.get("fraud_alert_active", False):
            return f"Error: Debit card '{card_id}' does not have an active fraud alert."
        if card.get("alert_source") == "bank_initiated":
            return ("Error: BANK_INITIATED_ALERT - This fraud alert was initiated by the bank's fraud detection system "
                    "and cannot be cleared by customer service agents. Please transfer the customer to the security "
                    "team using transfer_to_human_agents.")
        card.update({"fraud_alert_active": False, "alert_source": None, "fraud_alert_cleared_date": TODAY})
        return "\n".join(["Fraud Alert Cleared Successfully", f"Card ID: {card_id}", f"Cleared Date: {TODAY}", "",
                          "The fraud alert has been removed from the card.", "All transactions will process normally.", "",
                          "Remind the customer to review recent transactions and report any unauthorized charges."])

    @discoverable("WRITE")
    def reset_debit_card_pin_6284(self, card_id: str, last_4_digits: str, new_pin: str) -> str:
        if not all([card_id, last_4_digits, new_pin]):
            return "Error: Missing required parameters. Required: card_id, last_4_digits, new_pin."
        if not last_4_digits.isdigit() or len(last_4_digits) != 4:
            return "Error: Last 4 digits must be exactly 4 digits."
        problem = _pin_problem(new_pin)
        if problem:
            return f"Error: {problem}"
        cards = self._cards()
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if card.get("last_4_digits") != last_4_digits:
            return "Error: Card verification failed. The last 4 digits do not match our records."
        if card.get("status") != "ACTIVE":
            return (f"Error: Cannot reset PIN. Card status is {card.get('status')}. Only ACTIVE cards can have their PIN "
                    f"reset.")
        card.update({"pin_last_changed": TODAY, "pin_locked": False, "pin_attempts_remaining": 3})
        return "\n".join(["Debit Card PIN Reset Successfully", f"Card ID: {card_id}", f"PIN Changed: {TODAY}", "",
                          "The new PIN is effective immediately.", "Your card has been unlocked and is ready to use.",
                          "Customer can use the new PIN for ATM withdrawals and point-of-sale transactions.", "",
                          "Security reminder: Never share your PIN with anyone."])

    @discoverable("WRITE")
    def change_debit_card_pin_6285(self, card_id: str, current_pin: str, new_pin: str) -> str:
        if not all([card_id, current_pin, new_pin]):
            return "Error: Missing required parameters. Required: card_id, current_pin, new_pin."
        if not current_pin.isdigit() or len(current_pin) != 4:
            return "Error: Current PIN must be exactly 4 digits."
        problem = _pin_problem(new_pin)
        if problem:
            return f"Error: {problem}"
        if current_pin == new_pin:
            return "Error: New PIN must be different from current PIN."
        cards = self._cards()
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if card.get("status") != "ACTIVE":
            return (f"Error: Cannot change PIN. Card status is {card.get('status')}. Only ACTIVE cards can have their PIN "
                    f"changed.")
        card["pin_last_changed"] = TODAY
        return "\n".join(["Debit Card PIN Changed Successfully", f"Card ID: {card_id}", f"PIN Changed: {TODAY}", "",
                          "The new PIN is effective immediately.",
                          "Customer can use the new PIN for ATM withdrawals and point-of-sale transactions.", "",
                          "Security reminder: Never share your PIN with anyone."])

    @discoverable("READ")
    def get_debit_cards_by_account_id_7823(self, account_id: str) -> str:
        if not account_id:
            return "Error: Missing required parameter 'account_id'."
        accounts = self._accounts()
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        if accounts[account_id].get("class", "").lower() not in ("checking", "business_checking"):
            return (f"Error: Account '{account_id}' is not a checking account. Debit cards are only available for "
                    f"checking accounts.")
        found = []
        for card_id, card in self._cards().items():
            if card.get("account_id") != account_id:
                continue
            info = {"card_id": card_id}
            info.update(card)
            if "last_4_digits" in info and "card_number_last_4" not in info:
                info["card_number_last_4"] = info.pop("last_4_digits")
            if "issue_date" in info and "date_issued" not in info:
                info["date_issued"] = info.pop("issue_date")
            elif "created_date" in info and "date_issued" not in info:
                info["date_issued"] = info.pop("created_date")
            found.append(info)
        if not found:
            return f"No debit cards found for account '{account_id}'."
        found.sort(key=lambda c: c.get("date_issued") or "", reverse=True)
        return json.dumps(found, indent=2)

    @discoverable("WRITE")
    def request_temporary_debit_card_limit_increase_8374(self, card_id: str, limit_type: str, new_limit: int) -> str:
        if not card_id:
            return "Error: Missing required parameter: card_id."
        if not limit_type:
            return "Error: Missing required parameter: limit_type."
        if limit_type not in ("atm", "purchase"):
            return f"Error: Invalid limit_type '{limit_type}'. Must be 'atm' or 'purchase'."
        if new_limit is None:
            return "Error: Missing required parameter: new_limit."
        try:
            new_limit = float(new_limit)
        except (ValueError, TypeError):
            return f"Error: new_limit must be an integer, got '{new_limit}'."
        if not new_limit.is_integer():
            return f"Error: new_limit must be an integer, got '{new_limit}'."
        new_limit = int(new_limit)
        if new_limit <= 0:
            return "Error: new_limit must be a positive amount."
        cards = self._cards()
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if card.get("status") != "ACTIVE":
            return (f"Error: Debit card '{card_id}' is not active. Current status: {card.get('status')}. Only ACTIVE "
                    f"cards can have limit increases.")
        account_id = card.get("account_id")
        accounts = self._accounts()
        if not account_id or account_id not in accounts:
            return f"Error: Could not find linked account for debit card '{card_id}'."
        account = accounts[account_id]
        if account.get("status") != "OPEN":
            return (f"Error: The linked account '{account_id}' is not in good standing. Account status: "
                    f"{account.get('status')}.")
        opened = account.get("date_opened")
        if opened:
            try:
                age = (datetime.strptime(TODAY, "%m/%d/%Y") - datetime.strptime(opened, "%m/%d/%Y")).days
                if age < 60:
                    return (f"Error: Account must be at least 60 days old for a temporary limit increase. Account age: "
                            f"{age} days.")
            except ValueError:
                pass
        if limit_type == "atm":
            current, field, label = card.get("daily_atm_limit"), "daily_atm_limit", "Daily ATM Withdrawal Limit"
            if current is None:
                level = account.get("level", "").lower()
                if "light green" in level:
                    return ("Error: Light Green Account (teen checking) cards have policy-based limits that cannot be "
                            "modified. The daily ATM withdrawal limit of $150 is fixed by account policy for safety "
                            "reasons. The customer may request the parent/guardian to withdraw cash from their own "
                            "account if needed.")
                current = _DEFAULT_ATM_LIMITS.get(level)
                if current is None:
                    return (f"Error: Could not determine the default ATM limit for account type '{account.get('level')}'. "
                            f"Please verify the account type.")
        else:
            current, field, label = card.get("daily_purchase_limit"), "daily_purchase_limit", "Daily Purchase Limit"
        if current is None:
            return (f"Error: The card does not have a {label.lower()} configured. This may be a restricted account type "
                    f"where limits are set by account policy and cannot be modified.")
        cap = int(current * 1.5)
        if new_limit > cap:
            return (f"Error: Requested limit ${new_limit} exceeds the maximum allowed temporary increase. Maximum "
                    f"temporary limit is ${cap} (150% of current ${current} limit).")
        if new_limit <= current:
            return f"Error: Requested limit ${new_limit} is not higher than the current limit of ${current}."
        card[field] = new_limit
        card[f"temporary_{limit_type}_limit_increase"] = True
        card[f"original_{limit_type}_limit"] = current
        card[f"temporary_{limit_type}_limit_expires"] = TODAY
        return "\n".join([
            f"Temporary {label} Increase Granted Successfully", f"Card ID: {card_id}", f"Previous Limit: ${current}",
            f"New Temporary Limit: ${new_limit}", f"Increase Amount: ${new_limit - current}", "", "Important Information:",
            "- This temporary increase expires in 24 hours", f"- After expiration, the limit will revert to ${current}",
            "- Only one temporary increase is allowed per 24-hour period", "",
            "Note: If the customer is at a third-party (non-Rho-Bank) ATM, that ATM may have its own",
            "per-transaction or daily limits that Rho-Bank cannot override. The customer may need to",
            "use a Rho-Bank ATM or make multiple smaller withdrawals at third-party ATMs."])


def _transaction_id(user_id: Any, card_type: str, merchant: Any, amount: float, category: Any) -> str:
    """tau2 ``generate_transaction_id`` (no date part)."""
    return f"txn_{_sha_id(':'.join(['transaction', user_id, card_type, merchant, f'{amount:.2f}', category]), 12)}"


_CARD_TYPES = ["Bronze Rewards Card", "Business Bronze Rewards Card", "Business Gold Rewards Card",
               "Business Platinum Rewards Card", "Business Silver Rewards Card", "Crypto-Cash Back",
               "Diamond Elite Card", "EcoCard", "Gold Rewards Card", "Green Rewards Card", "Platinum Rewards Card",
               "Silver Rewards Card", "Silver Zoom Card"]
#: points per USD by card and category (``default`` for the rest), tau2's table.
_REWARDS = {
    "Bronze Rewards Card": {"default": 1.0}, "Silver Rewards Card": {"Travel": 4.0, "Software": 4.0, "default": 1.0},
    "Gold Rewards Card": {"default": 2.5}, "Platinum Rewards Card": {"default": 10.0},
    "Business Bronze Rewards Card": {"default": 1.0},
    "Business Silver Rewards Card": {"Travel": 10.0, "Software": 10.0, "default": 1.0},
    "Green Rewards Card": {"Sustainable": 3.0, "default": 1.0},
    "Business Gold Rewards Card": {"Operations": 2.5, "default": 1.0},
    "Business Platinum Rewards Card": {"Travel": 4.0, "Software": 4.0, "Media": 4.0, "default": 1.5},
    "Silver Zoom Card": {"Transportation": 3.0, "default": 1.0}, "Diamond Elite Card": {"default": 5.0},
    "EcoCard": {"Green": 5.0, "default": 1.0}, "Crypto-Cash Back": {"default": 2.0},
}


class KnowledgeUserTools(BankingToolkit):
    """The user's banking tools (tau2 ``KnowledgeUserTools``), over the agent's database object."""

    def _given(self, name: str) -> str | None:
        if not _found(query_text(self.db, "user_discoverable_tools", f'{{"tool_name": "{name}"}}')):
            return (f"Error: Tool '{name}' has not been given to you by the agent. The agent must first use "
                    f"`give_discoverable_user_tool` to give this tool to you.")
        return None

    def _log_call(self, name: str, args: dict[str, Any]) -> None:
        self.db.add("user_discoverable_tool_calls",
                    _sha_id(f"user_discoverable_tool_call:{name}:{json.dumps(args, sort_keys=True)}"),
                    {"tool_name": name, "arguments": args, "called_at": TODAY, "status": "CALLED"})

    @discoverable("WRITE")
    def submit_cash_back_dispute_0589(self, user_id: str, transaction_id: str) -> str:
        error = self._given("submit_cash_back_dispute_0589")
        if error:
            return error
        args = {"user_id": user_id, "transaction_id": transaction_id}
        self._log_call("submit_cash_back_dispute_0589", args)
        dispute_id = _dispute_id(user_id, transaction_id)
        config = self.db.data("task_config")
        auto = bool(config) and config.get("dispute_settings", {}).get("auto_resolve_disputes", False)
        record = {"dispute_id": dispute_id, "user_id": user_id, "transaction_id": transaction_id, "submitted_at": TODAY}
        if auto:
            record.update(status="RESOLVED", resolution="APPROVED")
            status = ("Status: RESOLVED - The dispute has been reviewed and approved. The transaction rewards need to be "
                      "updated.")
        else:
            record["status"] = "SUBMITTED"
            status = "Status: SUBMITTED - Your dispute has been queued for review."
        added = self.db.add("cash_back_disputes", dispute_id, record)
        text = (f"Cash back dispute submitted successfully. Your case has been queued for review.\n\nExecuted: "
                f"submit_cash_back_dispute_0589\nArguments: {_args_json(args)}\n")
        return text + (f"Dispute ID: {dispute_id}\n{status}" if added
                       else "Note: Dispute may have already been submitted for this transaction.")

    @discoverable("WRITE")
    def get_referral_link(self, user_id: str, card_name: str) -> str:
        error = self._given("get_referral_link")
        if error:
            return error
        args = {"user_id": user_id, "card_name": card_name}
        self._log_call("get_referral_link", args)
        referral_id = _sha_id(f"referral_link:{user_id}:{card_name}")
        added = self.db.add("referrals", referral_id, {
            "referral_id": referral_id, "referrer_id": user_id, "referred_account_type": card_name,
            "referral_status": "NO_PROGRESS", "date": TODAY})
        text = (f"Referral link generated successfully. Share this link with the person you want to refer.\n\n"
                f"Executed: get_referral_link\nArguments: {_args_json(args)}\n")
        return text + (f"Referral ID: {referral_id}\nReferral link: https://rhobank.com/refer/{referral_id}" if added
                       else "Note: A referral link for this card may have already been generated.")

    @discoverable("READ")
    def get_card_last_4_digits(self, credit_card_account_id: str) -> str:
        error = self._given("get_card_last_4_digits")
        if error:
            return error
        args = {"credit_card_account_id": credit_card_account_id}
        self._log_call("get_card_last_4_digits", args)
        if not _found(query_text(self.db, "credit_card_accounts", f'{{"account_id": "{credit_card_account_id}"}}')):
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        digest = hashlib.sha256(f"card_last4:{credit_card_account_id}".encode()).hexdigest()
        last4 = "".join(c for c in digest if c.isdigit())[:4].ljust(4, "0")
        return (f"Card information retrieved successfully.\n\nExecuted: get_card_last_4_digits\nArguments: "
                f"{_args_json(args)}\nLast 4 digits of card: {last4}")

    @discoverable("WRITE")
    def deposit_check_3847(self, account_id: str, check_amount: float) -> str:
        error = self._given("deposit_check_3847")
        if error:
            return error
        args = {"account_id": account_id, "check_amount": check_amount}
        self._log_call("deposit_check_3847", args)
        try:
            check_amount = float(check_amount)
        except (ValueError, TypeError):
            return f"Error: Invalid check amount '{check_amount}'. Must be a number."
        if check_amount <= 0:
            return "Error: Check amount must be positive."
        accounts = self.db.data("accounts")
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        account = accounts[account_id]
        if account.get("status") not in ("ACTIVE", "OPEN"):
            return f"Error: Account '{account_id}' is not active."
        before = _balance(account)
        after = before + check_amount
        account["current_holdings"] = f"${after:.2f}"
        return (f"Check deposited successfully. Funds will be available according to your account's deposit policy.\n\n"
                f"Executed: deposit_check_3847\nArguments: {_args_json(args)}\nCheck deposit processed!\n  - Account: "
                f"{account_id}\n  - Check Amount: ${check_amount:.2f}\n  - Previous Balance: ${before:.2f}\n"
                f"  - New Balance: ${after:.2f}")

    @tool("WRITE")
    def apply_for_credit_card(self, card_type: str, customer_name: str, annual_income: float,
                              rho_bank_subscription: bool = False) -> str:
        if card_type not in _CARD_TYPES:
            return f"Error: Invalid card_type '{card_type}'. Must be one of: {_CARD_TYPES}"
        try:
            annual_income = float(annual_income)
        except (TypeError, ValueError):
            return "Error: Invalid annual_income. Must be a number."
        app_id = _sha_id(f"credit_card:{card_type}:{customer_name}:{annual_income}:{rho_bank_subscription}")
        record = {"application_id": app_id, "card_type": card_type, "customer_name": customer_name,
                  "annual_income": annual_income, "rho_bank_subscription": rho_bank_subscription, "status": "PENDING",
                  "date": TODAY}
        if not self.db.add("credit_card_applications", app_id, record):
            return f"Failed to submit application: Record ID '{app_id}' may already exist."
        return ("Credit card application submitted:\nYour application has been successfully submitted. You will receive "
                "a decision within 5-7 business days via email.")

    @tool("WRITE")
    def submit_referral(self, user_id: str, account_type: str) -> str:
        referral_id = _sha_id(f"referral:{user_id}:{account_type}")
        record = {"referral_id": referral_id, "referrer_id": user_id, "referred_account_type": account_type,
                  "referral_status": "NO_PROGRESS", "date": TODAY}
        if not self.db.add("referrals", referral_id, record):
            return f"Failed to submit referral: Record ID '{referral_id}' may already exist."
        return (f"Referral request submitted successfully!\n  - Referral ID: {referral_id}\n  - Referrer ID: {user_id}\n"
                f"  - Account Type: {account_type}\n  - Status: NO_PROGRESS\n  - Date: {TODAY}\n\nShare your referral "
                f"ID with the person you're referring. They will need to use this when applying for their account.")

    def query_database(self, database_name: str, constraints: str = "{}") -> str:
        """An env function (not a tool): tau2's ``query_database_tool`` over the shared DB."""
        return query_text(self.db, database_name, constraints)

    @tool("WRITE")
    def call_discoverable_user_tool(self, discoverable_tool_name: str, arguments: str = "{}") -> str:
        if not self.has_discoverable_tool(discoverable_tool_name):
            return f"Error: Unknown discoverable tool '{discoverable_tool_name}'."
        try:
            args = json.loads(arguments, parse_int=float)
        except json.JSONDecodeError as e:
            return f"Error: Invalid JSON in arguments: {e}"
        method = getattr(self, discoverable_tool_name)
        params = inspect.signature(method).parameters
        for name, p in params.items():
            if p.default is inspect.Parameter.empty and name not in args:
                return f"Error: Missing required parameter: {name}"
        for name in args:
            if name not in params:
                return f"Error: Unexpected parameter: {name}"
        try:
            return method(**args)
        except TypeError as e:
            return f"Error: Invalid arguments for tool '{discoverable_tool_name}': {e}"

    @tool("READ")
    def list_discoverable_user_tools(self) -> str:
        # tau2 tests for "No results found" while the query answers "No records found": kept.
        return f"Tools given to you by the agent:\n{query_text(self.db, 'user_discoverable_tools', '{}')}"

    @tool("WRITE")
    def request_human_agent_transfer(self) -> str:
        existing = query_text(self.db, "human_transfer_requests", "{}")
        count = 1 if not _found(existing) else existing.count("request_id") + 1
        request_id = f"transfer_request_{count}"
        self.db.add("human_transfer_requests", request_id, {"request_id": request_id, "request_number": count,
                                                            "requested_at": TODAY, "status": "PENDING"})
        return f"Transfer request #{count} submitted.\nThe agent will process your request."

    @tool("WRITE")
    def submit_transaction(self, user_id: str, credit_card_type: str, merchant_name: str, amount: float,
                           category: str) -> str:
        if credit_card_type not in _REWARDS:
            return f"Error: Unknown credit card type '{credit_card_type}'. Available types: {list(_REWARDS)}"
        txn_id = _transaction_id(user_id, credit_card_type, merchant_name, amount, category)
        rates = _REWARDS[credit_card_type]
        points = int(amount * rates.get(category, rates["default"]))
        record = {"transaction_id": txn_id, "user_id": user_id, "credit_card_type": credit_card_type,
                  "merchant_name": merchant_name, "transaction_amount": f"${amount:.2f}", "transaction_date": TODAY,
                  "category": category, "status": "COMPLETED", "rewards_earned": f"{points} points"}
        if not self.db.add("credit_card_transaction_history", txn_id, record):
            return f"Failed to submit transaction: Record ID '{txn_id}' may already exist."
        rate = rates.get(category, rates["default"])
        return (f"Transaction submitted successfully!\n  - Transaction ID: {txn_id}\n  - User ID: {user_id}\n"
                f"  - Card Type: {credit_card_type}\n  - Merchant: {merchant_name}\n  - Amount: ${amount:.2f}\n"
                f"  - Category: {category}\n  - Date: {TODAY}\n  - Rewards Earned: {points} points ({rate}% cashback "
                f"rate)\n")
