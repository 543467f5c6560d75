"""`BankingEnvironment`: tau2-bench v1.0.1's ``banking_knowledge`` domain (agent and user tools over one database).

`Tau2Environment("banking_knowledge", data_dir=..., task_id=..., version="v1.0.1", retrieval="bm25_grep")`
builds this class (the domain's ``DomainSpec.environment``).

Source followed: tau2-bench v1.0.1 ``domains/banking_knowledge/environment.py`` (``get_environment``,
``get_tasks``), ``runner/build.py`` (the read-log allowlist from the task's gold actions) and
``environment/environment.py`` (``get_response``, ``set_state``), as recorded in
``tau2_v1_reference/banking_knowledge``.

- Tasks come from ``tasks/task_*.json`` sorted by file name (tau2's loader), not from the stale
  ``tasks.json`` beside them; the domain has no ``split_tasks.json``.
- The agent and the user toolkits hold the **same** database object: the user's hash is the
  agent's. tau2 keeps this even after ``initialization_data``: its ``set_state`` rebuilds the
  agent DB and then points the user toolkit at it (``user_data`` would do the reverse), a likely
  tau2 bug for domains with a separate user DB (mock) that the reference keeps; here it is the
  natural state, since both toolkits share ``self.db``.
- `set_state` replays only the history calls of existing tools that change state (tau2 v1.0.1's
  ``mutates_state``: WRITE tools plus ``give_discoverable_user_tool`` and
  ``unlock_discoverable_agent_tool``), and checks each replayed answer against the recorded one.
- The retrieval variant (`banking_retrieval.VARIANTS`) changes only the retrieval tools and the
  policy, never the banking tools or the database.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from orchestra_gym.domains.tau2 import data
from orchestra_gym.domains.tau2.banking import KnowledgeTools, KnowledgeUserTools, GrepMixin, KBSearchMixin
from orchestra_gym.domains.tau2.banking_db import BankingDB, load_banking_db
from orchestra_gym.domains.tau2.banking_retrieval import (
    KnowledgeBase, Variant, build_policy, get_variant, load_knowledge_base,
)
from orchestra_gym.domains.tau2.banking_schemas import AGENT_SCHEMAS, RETRIEVAL_SCHEMAS, USER_SCHEMAS
from orchestra_gym.domains.tau2.db import copy_json
from orchestra_gym.domains.tau2.dual_control import DualControlEnvironment
from orchestra_gym.domains.tau2.environment import Tau2Environment, _history_calls, _loose_json
from orchestra_gym.data_paths import data_root
from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_gym.types import ToolSpec
from orchestra_gym.users import UserToolRequest

__all__ = ["BankingEnvironment", "DOMAIN", "VERSIONS", "banking_data_dir", "load_banking_tasks", "read_log_allowlist"]

DOMAIN = "banking_knowledge"
#: tau2 data versions that have this domain.
VERSIONS = ("v1.0.1",)
_KIND = {"READ": "read", "WRITE": "write", "GENERIC": "generic", "THINK": "generic"}


class KnowledgeToolsWithKBSearchAndGrep(KBSearchMixin, GrepMixin, KnowledgeTools):
    """Agent toolkit of ``bm25_grep`` / ``minilm_embeddings_grep``."""


class KnowledgeToolsWithKBSearch(KBSearchMixin, KnowledgeTools):
    """Agent toolkit of ``bm25`` / ``minilm_embeddings``."""


class KnowledgeToolsWithGrep(GrepMixin, KnowledgeTools):
    """Agent toolkit of ``grep_only``."""


class KnowledgeToolsPlain(KnowledgeTools):
    """Agent toolkit without retrieval tools (``full_kb``, ``golden_retrieval``, ``no_knowledge``)."""


def _json_arguments(name: str) -> Any:
    """Reads the JSON object after `` `name` `` in an agent's text: ``[args]``, or ``[]`` when unclear."""
    required = USER_SCHEMAS[name][2].get("required") or []

    def read(text: str) -> list[dict[str, Any]]:
        at = text.find(f"`{name}`")
        brace = text.find("{", at) if at >= 0 else -1
        if brace >= 0:
            try:
                value, _ = json.JSONDecoder().raw_decode(text[brace:])
            except json.JSONDecodeError:
                return []
            return [value] if isinstance(value, dict) else []
        return [] if required else [{}]

    return read


def _toolkit_class(variant: Variant) -> type[KnowledgeTools]:
    if variant.kb_search and variant.grep:
        return KnowledgeToolsWithKBSearchAndGrep
    if variant.kb_search:
        return KnowledgeToolsWithKBSearch
    return KnowledgeToolsWithGrep if variant.grep else KnowledgeToolsPlain


def banking_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The tau2 v1.0.1 data folder (holding ``domains/banking_knowledge``).

    ``data_dir`` when given; else the folder `orchestra_gym.domains.tau2.data.data_dir` finds
    (``$TAU2_DATA_DIR``, ...) when it has this domain; else ``$TAU2_V1_DATA_DIR``, else
    ``$ORCHESTRA_DATA_DIR/tau2_v1`` (the layout of the project's data folder, where ``tau2/`` holds
    v0.2.0's data, which has no banking_knowledge).

    Raises:
        FileNotFoundError: no folder with ``domains/banking_knowledge`` (the message names them).
    """
    if data_dir is not None:
        return data.data_dir(data_dir)
    tried = []
    try:
        found = data.data_dir(None)
        tried.append(str(found))
        if (found / "domains" / DOMAIN).is_dir():
            return found
    except FileNotFoundError:
        pass
    root = data_root()
    for cand in (os.environ.get("TAU2_V1_DATA_DIR"), root / "tau2_v1" if root is not None else None):
        if cand:
            tried.append(str(cand))
            if (Path(cand) / "domains" / DOMAIN).is_dir():
                return Path(cand)
    raise FileNotFoundError(f"tau2 domain {DOMAIN!r} (tau2-bench v1.0.1 data) not found; looked in {tried}. Pass "
                            f"data_dir= (the v1.0.1 folder that holds domains/), or set TAU2_V1_DATA_DIR")


_TASKS: dict[tuple[str, int], list[dict[str, Any]]] = {}


def load_banking_tasks(data_dir: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The domain's tasks as tau2 loads them: ``tasks/task_*.json`` sorted by file name (97 at v1.0.1);
    read once per process (the list and the dicts are shared: do not modify).

    Raises:
        FileNotFoundError: no ``tasks/`` folder with task files (the message names it).
    """
    folder = data.domain_dir(DOMAIN, banking_data_dir(data_dir)) / "tasks"
    key = (str(folder.resolve()), folder.stat().st_mtime_ns if folder.is_dir() else 0)
    tasks = _TASKS.get(key)
    if tasks is None:
        files = sorted(folder.glob("task_*.json")) if folder.is_dir() else []
        if not files:
            raise FileNotFoundError(f"tau2 domain {DOMAIN!r}: no tasks/task_*.json in {folder.parent} "
                                    f"(tau2-bench v1.0.1 data; tasks.json beside it is stale and not used)")
        tasks = _TASKS[key] = [data.read_data_file(f) for f in files]
    return tasks


def find_banking_task(task_id: str, data_dir: Any = None) -> dict[str, Any]:
    """The raw task with this id.

    Raises:
        ValueError: unknown id (with near matches).
    """
    tasks = load_banking_tasks(data_dir)
    for t in tasks:
        if str(t.get("id")) == str(task_id):
            return t
    ids = [str(t.get("id")) for t in tasks]
    raise ValueError(f"unknown task id {task_id!r}{did_you_mean(task_id, ids, n=3)} in tau2 domain {DOMAIN!r}; "
                     f"{len(ids)} tasks, e.g. {ids[:5]}")


def read_log_allowlist(task: dict[str, Any] | None) -> set[str]:
    """tau2's runner: the agent tool names of the task's gold ``call_discoverable_agent_tool`` actions."""
    actions = ((task or {}).get("evaluation_criteria") or {}).get("actions") or []
    return {str((a.get("arguments") or {}).get("agent_tool_name")) for a in actions
            if a.get("name") == "call_discoverable_agent_tool" and (a.get("arguments") or {}).get("agent_tool_name")}


class BankingEnvironment(DualControlEnvironment):
    """tau2's ``banking_knowledge`` environment for one episode (see the module docstring).

    The user-side call path (``requestor="user"``, env functions, the user DB hash) is
    `DualControlEnvironment`'s; there is nothing to sync (one shared database).

    Args:
        domain: ``"banking_knowledge"``.
        data_dir: tau2 v1.0.1 data folder (holding ``domains/``); default: `banking_data_dir`.
        task_id: when given, the task's initial state is applied and its read-log allowlist set.
        version: tau2 data version; only ``"v1.0.1"`` has this domain.
        retrieval: retrieval variant (`banking_retrieval.VARIANTS`), default ``"bm25_grep"``
            (tau2's offline configuration, the reference's).
        read_log_allowlist: READ discoverable tools whose calls are logged; default from the task.

    Raises:
        ConfigError: another version or an unknown / API-only retrieval variant.
        ValueError: unknown task id, or an initial state that does not replay.
        FileNotFoundError: the data folder or a file is missing.

    Attributes:
        domain, task_id, task (raw dict or None), version, retrieval (`Variant`), kb
        (`KnowledgeBase`), tools (`KnowledgeTools`), user_tools (`KnowledgeUserTools`), db
        (`BankingDB`, shared by both).
    """

    def __init__(self, domain: str = DOMAIN, data_dir: str | os.PathLike[str] | None = None,
                 task_id: str | None = None, version: str = "v1.0.1", retrieval: str = "bm25_grep",
                 read_log_allowlist: Any = None):
        if domain != DOMAIN:
            raise ValueError(f"BankingEnvironment is the {DOMAIN!r} domain, got {domain!r}")
        if version not in VERSIONS:
            raise ConfigError(f"version={version!r}: tau2 domain {DOMAIN!r} exists only in {list(VERSIONS)}")
        self.spec = None
        self.domain = domain
        self.version = version
        self.data_dir = banking_data_dir(data_dir)
        folder = data.domain_dir(domain, self.data_dir)
        self.retrieval = get_variant(retrieval)
        self.kb: KnowledgeBase = load_knowledge_base(folder)
        db = load_banking_db(folder / "db.json")
        self.task_id = task_id
        self.task: dict[str, Any] | None = find_banking_task(task_id, self.data_dir) if task_id is not None else None
        allow = read_log_allowlist if read_log_allowlist is not None else globals()["read_log_allowlist"](self.task)
        self._build(db, allow)
        if self.task is not None:
            self.apply_initial_state(self.task.get("initial_state"))

    def _build(self, db: BankingDB, allowlist: Any) -> None:
        kit = _toolkit_class(self.retrieval)(db, allowlist)
        kit.kb, kit.variant = self.kb, self.retrieval
        self.tools: KnowledgeTools = kit
        self.user_tools = KnowledgeUserTools(db)

    @classmethod
    def from_task(cls, task: Any, domain: str | None = None, data_dir: str | os.PathLike[str] | None = None,
                  **kwargs: Any) -> "BankingEnvironment":
        """A fresh environment at the initial state of an `orchestra_gym.types.Task` (its raw task's allowlist)."""
        raw = (task.metadata or {}).get("raw") if getattr(task, "metadata", None) else None
        env = cls(domain or task.domain, data_dir, read_log_allowlist=read_log_allowlist(raw), **kwargs)
        env.task_id, env.task = task.id, raw
        env.apply_initial_state(task.initial_state)
        return env

    # ------------------------------------------------------------------------------------------
    @property
    def db(self) -> BankingDB:
        return self.tools.db

    @property
    def policy(self) -> str:
        """The agent policy of the retrieval variant (``golden_retrieval``: the task's required documents)."""
        return build_policy(self.retrieval, data.domain_dir(DOMAIN, self.data_dir), self.kb,
                            (self.task or {}).get("required_documents"))

    def agent_tool_names(self) -> list[str]:
        """The listed agent tools in tau2's order: the variant's retrieval tools, then the 14 base tools."""
        names = (["KB_search"] if self.retrieval.kb_search else []) + (["grep"] if self.retrieval.grep else [])
        return names + list(AGENT_SCHEMAS)

    def openai_schemas(self) -> list[dict[str, Any]]:
        """The listed agent tools' OpenAI schemas, exactly as tau2 sends them."""
        table = {**RETRIEVAL_SCHEMAS, **AGENT_SCHEMAS}
        return [{"type": "function", "function": {"name": n, "description": table[n][1],
                                                  "parameters": copy_json(table[n][2])}} for n in self.agent_tool_names()]

    def user_openai_schemas(self) -> list[dict[str, Any]]:
        """The user's listed tools' OpenAI schemas."""
        return [{"type": "function", "function": {"name": n, "description": d, "parameters": copy_json(p)}}
                for n, (_, d, p) in USER_SCHEMAS.items()]

    def tool_specs(self) -> list[ToolSpec]:
        """The listed agent tools as `ToolSpec` (discoverable tools are reached through the unlock / call tools)."""
        return [ToolSpec(name=s["function"]["name"], description=s["function"]["description"],
                         parameters=s["function"]["parameters"], kind=_KIND[self.tools.tool_type(s["function"]["name"])])
                for s in self.openai_schemas()]

    def user_tool_specs(self) -> list[ToolSpec]:
        """The user's listed tools as `ToolSpec`."""
        return [ToolSpec(name=s["function"]["name"], description=s["function"]["description"],
                         parameters=s["function"]["parameters"],
                         kind=_KIND[self.user_tools.tool_type(s["function"]["name"])])
                for s in self.user_openai_schemas()]

    def user_requests(self) -> tuple[UserToolRequest, ...]:
        """How the offline scripted user recognises a request for one of its tools: the tool's name in
        backticks followed by its arguments as a JSON object (`user_request_text` writes them so)."""
        return tuple(UserToolRequest(name, (), arguments=_json_arguments(name)) for name in USER_SCHEMAS)

    def user_request_text(self, name: str, arguments: dict[str, Any]) -> str:
        """The message an agent (the oracle) sends to ask the user for one of their tool actions.

        Raises:
            ValueError: ``name`` is not one of the user's listed tools.
        """
        if name not in USER_SCHEMAS:
            raise ValueError(f"{name!r} is not a banking_knowledge user tool; user tools: {list(USER_SCHEMAS)}")
        return f"Could you please do this on your side: `{name}` with arguments {json.dumps(arguments)}"

    def mutates_state(self, name: str, requestor: str = "assistant") -> bool:
        """tau2 v1.0.1 ``tool_mutates_state``: whether a replay (history, evaluation) re-runs this call."""
        kit = {"assistant": self.tools, "user": self.user_tools}.get(requestor)
        return kit is not None and kit.has_tool(name) and kit.mutates_state(name)

    # ------------------------------------------------------------------------------------------
    def db_hash(self) -> str:
        """tau2's hash of the transactional DB (sha256 of the sorted JSON dump), hex."""
        return self.db.hash()

    def same_db(self, other: "Tau2Environment") -> bool:
        return self.db_hash() == other.db_hash()

    def fork(self) -> "BankingEnvironment":
        """An independent copy (database, unlocked and given tools, allowlist)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._build(self.db.copy(), self.tools.read_log_allowlist)
        new.tools.unlocked = dict(self.tools.unlocked)
        new.tools.given = dict(self.tools.given)
        return new

    # ------------------------------------------------------------------------------------------
    def update_db(self, update: dict[str, Any]) -> None:
        """Deep-merge ``update`` into the shared DB (tau2 ``update_db`` of ``initialization_data``)."""
        self.db.merge(update)

    def set_state(self, initialization_data: dict[str, Any] | None,
                  initialization_actions: list[dict[str, Any]] | None,
                  message_history: list[dict[str, Any]]) -> None:
        """tau2 v1.0.1 ``Environment.set_state`` (see the module docstring).

        Raises:
            ValueError: a replayed history call answers other content than recorded, or the history
                is malformed.
        """
        for part in ("agent_data", "user_data"):  # both rebind the one shared DB in tau2 (kept)
            update = (initialization_data or {}).get(part)
            if update:
                self.update_db(update)
        for action in initialization_actions or []:
            self.run_env_function(action["func_name"], action.get("arguments") or {}, action.get("env_type", "assistant"))
        for call, expected in _history_calls(message_history):
            requestor = call.get("requestor", "assistant")
            if not self.mutates_state(call["name"], requestor):
                continue
            result = self.call_tool(call["name"], call.get("arguments") or {}, requestor)
            if _loose_json(result.content) != _loose_json(expected.get("content") or ""):
                raise ValueError(f"task {self.task_id!r}: replaying history call {call['name']} returned "
                                 f"{result.content[:300]!r}, recorded {str(expected.get('content'))[:300]!r}")

