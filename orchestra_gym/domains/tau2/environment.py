"""`Tau2Environment`: one tau2 domain's database and tools for one episode (the replay API).

Source followed: tau2-bench v0.2.0 and v1.0.1 ``Environment`` (``get_response``, ``set_state``,
``get_db_hash``), as recorded in ``tau2_reference/`` and ``tau2_v1_reference/`` and described in
their READMEs. The one difference between the versions in this module: v1.0.1's ``set_state``
re-runs only the state-changing calls of a message history (`Tau2Toolkit.mutates_state`) and
skips tool names that no toolkit has; v0.2.0 re-runs every call.

Registering a domain (`DOMAIN_SPECS`): one `DomainSpec` per (domain, version) it exists in, plus
its name in `DOMAINS`; `orchestra_gym.domains.tau2.data.VERSION_MARKERS` tells its files' version.

A fresh environment costs microseconds after the first one of a process: the database file is
parsed once (`db.load_snapshot`), each environment is a copy-on-write view of it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from orchestra_gym.domains.tau2 import data
from orchestra_gym.domains.tau2.data import DEFAULT_VERSION
from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_gym.domains.tau2.db import CowDB, Schema, deep_update, load_snapshot
from orchestra_gym.domains.tau2.toolkit import Tau2Toolkit
from orchestra_gym.types import ToolResult, ToolSpec

__all__ = ["Tau2Environment", "DOMAINS", "DomainSpec", "get_domain", "DOMAIN_SPECS"]


@dataclass(frozen=True)
class DomainSpec:
    """A tau2 domain: its toolkit class and the data model of its database tables.

    ``environment``: ``"module:Class"`` of a `Tau2Environment` subclass that `Tau2Environment(domain)`
    builds instead (dual-control domains with user tools: telecom, mock from v1.0.1), imported on
    first use (so this module never imports it); None for the plain environment.
    """

    name: str
    toolkit: type[Tau2Toolkit]
    tables: dict[str, Schema]
    environment: str | None = None


def _builtin_domains() -> dict[tuple[str, str], DomainSpec]:
    from orchestra_gym.domains.tau2.airline import AIRLINE_TABLES, AirlineTools
    from orchestra_gym.domains.tau2.banking import KnowledgeTools
    from orchestra_gym.domains.tau2.mock import MOCK_TABLES, MockTools
    from orchestra_gym.domains.tau2.retail import RETAIL_TABLES, RetailTools, RetailToolsV1
    from orchestra_gym.domains.tau2.telecom import TELECOM_TABLES, TelecomTools

    telecom = DomainSpec("telecom", TelecomTools, TELECOM_TABLES, "orchestra_gym.domains.tau2.telecom_env:TelecomEnvironment")
    return {
        ("mock", "v0.2.0"): DomainSpec("mock", MockTools, MOCK_TABLES),
        ("mock", "v1.0.1"): DomainSpec("mock", MockTools, MOCK_TABLES, "orchestra_gym.domains.tau2.mock_user:MockEnvironment"),
        ("retail", "v0.2.0"): DomainSpec("retail", RetailTools, RETAIL_TABLES),
        ("retail", "v1.0.1"): DomainSpec("retail", RetailToolsV1, RETAIL_TABLES),
        ("airline", "v0.2.0"): DomainSpec("airline", AirlineTools, AIRLINE_TABLES),
        ("airline", "v1.0.1"): DomainSpec("airline", AirlineTools, AIRLINE_TABLES),
        ("telecom", "v0.2.0"): telecom,
        ("telecom", "v1.0.1"): telecom,
        # tau2-bench v1.0.1 only; its own database model and loader (banking_env.py)
        ("banking_knowledge", "v1.0.1"): DomainSpec("banking_knowledge", KnowledgeTools, {},  # type: ignore[arg-type]
                                                    "orchestra_gym.domains.tau2.banking_env:BankingEnvironment"),
    }


#: the tau2 domains, in the order the envs are registered.
DOMAINS: tuple[str, ...] = ("mock", "retail", "airline", "telecom", "banking_knowledge")
#: (domain, data version) -> `DomainSpec`; the built-in four are added on first use. A new domain
#: registers with ``DOMAIN_SPECS[("banking_knowledge", "v1.0.1")] = DomainSpec(...)`` (plus its
#: name in `DOMAINS` and a marker in `orchestra_gym.domains.tau2.data.VERSION_MARKERS`).
DOMAIN_SPECS: dict[tuple[str, str], DomainSpec] = {}


def _environment_class(cls: type, domain: str, version: str) -> type:
    """The class `Tau2Environment(domain, version=...)` builds: the domain's own (``DomainSpec.environment``) or ``cls``."""
    if cls is Tau2Environment and domain:
        custom = get_domain(domain, version).environment
        if custom is not None:
            import importlib

            module, name = custom.split(":")
            return getattr(importlib.import_module(module), name)
    return cls


def get_domain(domain: str, version: str = DEFAULT_VERSION) -> DomainSpec:
    """The `DomainSpec` of a domain at a tau2-bench data version.

    Raises:
        ValueError: unknown domain (the message lists the known ones), unknown version, or a
            domain that does not exist at that version (names the versions it has).
    """
    data.check_version_name(version)
    if not any(key[0] in ("mock", "retail", "airline", "telecom") for key in DOMAIN_SPECS):
        for key, spec in _builtin_domains().items():
            DOMAIN_SPECS.setdefault(key, spec)
    spec = DOMAIN_SPECS.get((domain, version))
    if spec is None:
        names = sorted({d for d, _ in DOMAIN_SPECS})
        if domain not in names:
            raise ValueError(f"unknown tau2 domain {domain!r}{did_you_mean(domain, names)}; known domains: {names}")
        have = sorted(v for d, v in DOMAIN_SPECS if d == domain)
        raise ConfigError(f"version={version!r}: tau2 domain {domain!r} exists only in tau2-bench {have}")
    return spec


_KIND = {"READ": "read", "WRITE": "write", "GENERIC": "generic", "THINK": "generic"}


class Tau2Environment:
    """A tau2 domain (``mock``, ``retail``, ``airline``, ``telecom``) with a fresh database, optionally at a task's initial state.

    ``Tau2Environment("telecom", ...)`` returns a `orchestra_gym.domains.tau2.telecom_env.TelecomEnvironment`
    and ``Tau2Environment("mock", ..., version="v1.0.1")`` a
    `orchestra_gym.domains.tau2.mock_user.MockEnvironment` (the domain's ``DomainSpec.environment``),
    which add the user's tools and database.

    Args:
        domain: ``"mock"``, ``"retail"``, ``"airline"`` or ``"telecom"`` (``"banking_knowledge"``:
            `orchestra_gym.domains.tau2.banking_env.BankingEnvironment`, which exists at
            ``version="v1.0.1"`` only and also takes ``retrieval=``).
        data_dir: the tau2 data folder (holding ``domains/``, or a folder whose ``tau2/`` or
            ``data/tau2/`` does); default ``$TAU2_DATA_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2``
            (``tau2_v1`` for v1.0.1), else an installed tau2 distribution's data
            (`orchestra_gym.domains.tau2.data.data_dir`).
        task_id: when given, the task's ``initial_state`` is applied as tau2's evaluator does:
            ``initialization_data`` (deep-merged into the database), then ``initialization_actions``
            (toolkit functions run directly), then the tool calls of ``message_history`` replayed
            (every call at v0.2.0, the state-changing ones at v1.0.1; the recorded result must
            match, else ValueError). Any task of the version's tasks file (v0.2.0: its base set).
        version: tau2-bench data version, ``"v0.2.0"`` (default) or ``"v1.0.1"``: the tools
            (v1.0.1: retail's ``get_item_details``, mock's user tools), the history replay and the
            tasks follow it; the data folder must be of it.

    Raises:
        ValueError: unknown domain, version or task id (with the known ones), data of the other
            version (names both), or an initial state that does not replay.
        FileNotFoundError: the data folder or a file is missing.

    Attributes:
        domain, version, task_id, tools (the toolkit, whose ``db`` is a `CowDB`), policy (markdown str).
    """

    def __new__(cls, domain: str = "", *args: Any, **kwargs: Any) -> "Tau2Environment":
        if cls is Tau2Environment and domain:
            version = kwargs.get("version", args[2] if len(args) > 2 else DEFAULT_VERSION)
            if domain == "banking_knowledge" and "version" not in kwargs and len(args) <= 2:
                version = "v1.0.1"  # the domain exists only there
            cls = _environment_class(cls, domain, version)
        return super().__new__(cls)

    def __init__(self, domain: str, data_dir: str | os.PathLike[str] | None = None, task_id: str | None = None,
                 version: str = DEFAULT_VERSION):
        self.spec = get_domain(domain, version)
        self.domain = domain
        self.version = version
        self.data_dir = data.data_dir(data_dir, version)
        data.check_version(domain, self.data_dir, version)
        snap = load_snapshot(data.db_path(domain, self.data_dir), self.spec.tables, cache_key=domain)
        self.tools: Tau2Toolkit = self.spec.toolkit(CowDB(snap))
        self._build_user_side()
        self.task_id = task_id
        self.task: dict[str, Any] | None = None
        if task_id is not None:
            self.task = find_raw_task(domain, task_id, self.data_dir, version)
            self.apply_initial_state(self.task.get("initial_state"))

    def _build_user_side(self) -> None:
        """Build the user's toolkit and database (dual-control subclasses); nothing here."""

    @classmethod
    def from_task(cls, task: Any, domain: str | None = None, data_dir: str | os.PathLike[str] | None = None,
                  version: str | None = None, **options: Any) -> "Tau2Environment":
        """A fresh environment at the initial state of an `orchestra_gym.types.Task` (any source).

        Same as ``Tau2Environment(domain, data_dir, task_id=task.id, version=version)`` for tasks
        from the data folder, but uses ``task.initial_state`` directly, so it also works for tasks
        built in code. ``version`` defaults to the task's (``task.metadata["version"]``), else
        `DEFAULT_VERSION`. ``options`` go to the domain's environment class (e.g. a retrieval
        variant for a knowledge domain; the four built-in domains take none).
        """
        domain = domain or task.domain
        if version is None:
            fallback = "v1.0.1" if domain == "banking_knowledge" else DEFAULT_VERSION  # only there
            version = (getattr(task, "metadata", None) or {}).get("version", fallback)
        custom = _environment_class(cls, domain, version)
        if custom is not cls and "from_task" in vars(custom):
            return custom.from_task(task, domain, data_dir, version=version, **options)
        env = cls(domain, data_dir, version=version, **options)
        env.task_id = task.id
        env.apply_initial_state(task.initial_state)
        return env

    def apply_initial_state(self, initial_state: dict[str, Any] | None) -> None:
        """`set_state` with a task's ``initial_state`` (tau2 task JSON: ``initialization_data``,
        ``initialization_actions``, ``message_history``; None or missing parts: nothing to apply).

        Raises:
            ValueError: as `set_state` (a replayed history call that answers otherwise than recorded).
        """
        init = initial_state or {}
        self.set_state(init.get("initialization_data"), init.get("initialization_actions"),
                       init.get("message_history") or [])

    # ------------------------------------------------------------------------------------------
    @property
    def db(self) -> CowDB:
        return self.tools.db

    @property
    def policy(self) -> str:
        return data.load_policy(self.domain, self.data_dir)

    def tool_specs(self) -> list[ToolSpec]:
        """The agent tools as `ToolSpec` (OpenAI schema parts; kind ``read`` / ``write`` / ``generic``)."""
        return [
            ToolSpec(name=s["function"]["name"], description=s["function"]["description"],
                     parameters=s["function"]["parameters"], kind=_KIND[self.tools.tool_type(s["function"]["name"])])
            for s in self.tools.openai_schemas()
        ]

    def tool_type(self, name: str, requestor: str = "assistant") -> str | None:
        """tau2 tool type (``READ`` / ``WRITE`` / ``GENERIC``) of an agent tool; None if not a tool
        (or, in these domains, when ``requestor`` is not ``"assistant"``)."""
        return self.tools.tool_type(name) if requestor == "assistant" else None

    def has_tool(self, name: str) -> bool:
        """Whether any toolkit of the environment (agent's or user's) has a tool of this name
        (tau2 v1.0.1 ``Environment._has_tool``)."""
        return isinstance(name, str) and self.tools.tool_type(name) is not None

    def mutates_state(self, name: str, requestor: str = "assistant") -> bool:
        """tau2 v1.0.1 ``mutates_state`` of the ``requestor``'s tool (False when it is not one);
        `orchestra_gym.domains.tau2.banking_env.BankingEnvironment` overrides it with its per-tool flags."""
        return requestor == "assistant" and isinstance(name, str) and self.tools.mutates_state(name)

    # ------------------------------------------------------------------------------------------
    def call_tool(self, name: str, arguments: dict[str, Any] | None = None, requestor: str = "assistant") -> ToolResult:
        """Run one tool call through tau2's path and return its content and error flag as tau2 renders them.

        Args:
            name: tool name.
            arguments: keyword arguments passed to the tool unvalidated (v0.2.0 behaviour).
            requestor: ``"assistant"`` or ``"user"`` (these domains have no user tools).

        Returns:
            `ToolResult` with ``content`` (str), ``error`` (bool), zero usage and
            ``metadata={"tool_type": READ|WRITE|GENERIC|None}``. Never raises.
        """
        if arguments is None:
            arguments = {}
        if requestor == "user":
            content, error = "Error: User tools not available", True
        elif requestor != "assistant":
            content, error = f"Error: Invalid requestor: {requestor}", True
        else:
            content, error = self.tools.invoke(name, arguments)
        return ToolResult(content=content, error=error, metadata={"tool_type": self.tools.tool_type(name)})

    def make_tool_call(self, name: str, arguments: dict[str, Any] | None = None,
                       requestor: str = "assistant") -> ToolResult:
        """The call as tau2's evaluator makes gold calls (``make_tool_call``); here the same as `call_tool`."""
        return self.call_tool(name, arguments, requestor)

    def db_hash(self) -> str:
        """tau2 v0.2.0 database hash: sha256 of ``json.dumps(db, sort_keys=True, default=str)``, hex."""
        return self.db.hash()

    def user_db_hash(self) -> str | None:
        """The user database's hash; None in a domain without user tools (tau2 ``get_user_db_hash``)."""
        return None

    def same_db(self, other: "Tau2Environment") -> bool:
        """``self.db_hash() == other.db_hash()``, computed over the touched records only."""
        return self.db.same_state(other.db)

    def fork(self) -> "Tau2Environment":
        """An independent copy of this environment (cost proportional to the records written)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.tools = self.spec.toolkit(self.db.fork())
        return new

    # ------------------------------------------------------------------------------------------
    def run_env_function(self, func_name: str, arguments: dict[str, Any], env_type: str = "assistant") -> Any:
        """Call a toolkit function directly (initialisation actions, env assertions); exceptions propagate."""
        if env_type == "user":
            raise ValueError("User tools not available")
        if env_type != "assistant":
            raise ValueError(f"Invalid environment type: {env_type}")
        func = getattr(self.tools, func_name, None)
        if func is None or func_name.startswith("_") or not callable(func):
            raise ValueError(f"Function {func_name} not found in {env_type} tools")
        return func(**arguments)

    def run_env_assertion(self, assertion: dict[str, Any]) -> bool:
        """Evaluate a tau2 ``EnvAssertion`` dict (``func_name``, ``arguments``, ``assert_value`` = True).

        Returns True when the function's result equals ``assert_value``.

        Raises:
            ValueError: the function does not return a bool.
        """
        res = self.run_env_function(assertion["func_name"], assertion.get("arguments") or {},
                                    assertion.get("env_type", "assistant"))
        if not isinstance(res, bool):
            raise ValueError(f"Function {assertion['func_name']} returned {type(res)} instead of bool")
        return res == assertion.get("assert_value", True)

    def update_db(self, update: dict[str, Any]) -> None:
        """Deep-merge ``update`` into the database and re-normalise touched records (tau2 ``update_db``)."""
        snap = self.db.snapshot
        for name, value in update.items():
            if snap.is_table(name) and isinstance(value, dict):
                schema = self.spec.tables.get(name)
                for key, rec in value.items():
                    cur = self.db.get(name, key)
                    merged = deep_update(cur, rec) if isinstance(cur, dict) and isinstance(rec, dict) else rec
                    self.db.put(name, key, schema.normalise(merged) if schema is not None else merged)
            else:
                schema = self.spec.tables.get(name)
                if schema is not None and isinstance(value, list):  # a list of records (telecom): replaced
                    value = [schema.normalise(v) for v in value]
                self.db.set_scalar(name, value)

    def set_state(
        self,
        initialization_data: dict[str, Any] | None,
        initialization_actions: list[dict[str, Any]] | None,
        message_history: list[dict[str, Any]],
    ) -> None:
        """Bring the database to a task's initial state (tau2 ``Environment.set_state``).

        ``initialization_data`` is merged in, ``initialization_actions`` run, then the tool calls
        of ``message_history`` are replayed through `call_tool` and each result compared with the
        recorded tool message (after ``json.loads`` where both parse). v0.2.0 replays every call;
        v1.0.1 only those of tools that some toolkit has and that mutate state (`has_tool`,
        `mutates_state`; strict mode, the evaluator's default).

        Raises:
            ValueError: a replayed history call returns other content than recorded, or the
                history is malformed (a tool message without its call, mismatched ids).
        """
        if initialization_data:
            agent_data = initialization_data.get("agent_data")
            if agent_data:
                self.update_db(agent_data)
            if initialization_data.get("user_data"):
                raise ValueError(f"domain {self.domain!r} has no user database, but initialization_data.user_data is set")
        for action in initialization_actions or []:
            self.run_env_function(action["func_name"], action.get("arguments") or {}, action.get("env_type", "assistant"))
        for call, expected in _history_calls(message_history):
            if self.version != "v0.2.0" and not self._replays(call["name"]):
                continue
            result = self.call_tool(call["name"], call.get("arguments") or {}, call.get("requestor", "assistant"))
            if _loose_json(result.content) != _loose_json(expected.get("content") or ""):
                raise ValueError(
                    f"task {self.task_id!r}: replaying history call {call['name']}({call.get('arguments')}) "
                    f"returned {result.content[:300]!r}, recorded {str(expected.get('content'))[:300]!r}"
                )


    def _replays(self, name: Any) -> bool:
        """tau2 v1.0.1 ``set_state``: a history call is re-run when some toolkit has the tool and
        that tool mutates state (the first toolkit that has it decides, the agent's first)."""
        if not self.has_tool(name):
            return False
        requestor = "assistant" if self.tool_type(name, "assistant") is not None else "user"
        return self.mutates_state(name, requestor)


def _loose_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return text


def _history_calls(messages: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Pairs (tool call, tool message) from a tau2 message history, validated as tau2 does."""
    out = []
    i = 0
    while i < len(messages):
        m = messages[i]
        i += 1
        if m.get("role") == "tool":
            raise ValueError("Tool message not expected. Tool messages should always follow a tool call.")
        for tc in m.get("tool_calls") or []:
            if i >= len(messages):
                raise ValueError("Tool message expected. Got None.")
            tm = messages[i]
            i += 1
            if tm.get("role") != "tool":
                raise ValueError(f"Tool message expected. Got {tm.get('role')}")
            if tc.get("id") != tm.get("id"):
                raise ValueError(f"Tool call id mismatch. Got {tc.get('id')} and {tm.get('id')}")
            call = dict(tc)
            call.setdefault("requestor", m.get("role", "assistant"))
            out.append((call, tm))
    return out


def find_raw_task(domain: str, task_id: str, data_dir: Any = None, version: str = DEFAULT_VERSION) -> dict[str, Any]:
    """The raw task dict with this id from the domain's tasks file (v0.2.0: the ``base`` task
    set; v1.0.1: any task of ``tasks.json``, as tau2's evaluator may be given any split's task).

    Raises:
        ValueError: no such task (the message shows some known ids).
    """
    tasks = data.load_raw_tasks(domain, data_dir, "base" if version == "v0.2.0" else None, version)
    for t in tasks:
        if str(t.get("id")) == str(task_id):
            return t
    ids = [str(t.get("id")) for t in tasks]
    raise ValueError(f"unknown task id {task_id!r}{did_you_mean(task_id, ids, n=3)} in tau2 domain {domain!r}; "
                     f"{len(ids)} tasks, e.g. {ids[:10]}")
