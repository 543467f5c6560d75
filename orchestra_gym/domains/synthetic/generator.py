"""ToolScale-synthetic: procedural, offline function-calling domains and tasks (the generator).

ToolOrchestra (arXiv 2511.21689, Sec. 3.3) trains on ToolScale: for each of ten domains an LLM
wrote a database schema, tools, a policy and tasks with golden actions. Here the same artefacts
come from a seed, offline and deterministically::

    from orchestra_gym.domains.synthetic import DOMAIN_NAMES, make_instance
    inst = make_instance(seed=7, domain="railway")
    backend = inst.new_backend()                      # a `DomainBackend` for one episode
    for call in inst.task.golden_actions:
        backend.call_tool(call.name, call.arguments)
    backend.grade(["The refund is 120.50 USD."], inst.task.golden_actions)  # -> (1.0, {...})

Each domain has four related tables (customers, catalogue items, bookings, payment methods), 11
domain tools plus ``calculate`` and ``transfer_to_human_agents``, a policy generated from the
rules the tools enforce, and eight task templates (lookup, compute, conditional write, search and
book, several writes, change item, and two requests the policy sends to a human agent; their
kinds, which become `Task.category`, are `CATEGORIES`). A task is kept only if its golden actions
replay on a fresh database without an error.

Adding a domain: a module ``orchestra_gym/domains/synthetic/<name without '-'>.py`` that defines
``SPEC`` (a `core.DomainSpec`; for the booking shape, ``build_domain(BookingConfig(...))``), and its
name in `DOMAIN_NAMES`. The booking shape's tools and templates are module-level functions in
`booking` registered in tables (`booking.BOOKING_TOOLS` by `booking.booking_tool`,
`booking.BOOKING_TEMPLATES` by `booking.booking_template`); a function added there serves every
booking domain.

Grading (`SyntheticBackend.grade`), each check 0.0 or 1.0, outcome = their product (all must pass):

- ``execution_correctness``: the database after replaying the trajectory on a fresh copy of the
  initial database equals the database after replaying the golden actions (sha256 of canonical JSON).
- ``process_fidelity``: every ``communicate_info`` item occurs in some agent message, compared after
  normalising case, thousands separators and trailing decimal zeros (`core.mentions`).
- ``operation_completeness``: every record the golden actions touch (read or write) is touched by a
  successful call of the trajectory, and the trajectory transfers to a human agent exactly when
  the golden actions do.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from typing import Any

import numpy as np

from orchestra_gym.domains.synthetic.booking import TEMPLATE_KINDS as CATEGORIES
from orchestra_gym.domains.synthetic.core import (
    TRANSFER_RECORD,
    Database,
    DomainSpec,
    TrackedDB,
    copy_db,
    db_hash,
    execute,
    mentions,
    pick,
    render_policy,
    replay,
)
from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_gym.types import Task, ToolCall, ToolResult, ToolSpec

__all__ = [
    "DOMAIN_NAMES",
    "CATEGORIES",
    "GENERATOR_VERSION",
    "SyntheticInstance",
    "SyntheticBackend",
    "make_instance",
    "get_domain",
    "export_tasks",
    "import_tasks",
]

DOMAIN_NAMES: tuple[str, ...] = (
    "finance", "sport", "e-commerce", "medicine", "entertainment",
    "railway", "restaurant", "education", "travel", "weather",
)
"""The ten ToolScale domains of the paper (Sec. 3.3), in the paper's order; all implemented."""

GENERATOR_VERSION = 1
"""Bumped whenever the same (domain, seed) would produce a different task or database."""

_MAX_DRAWS = 200
_DRAWS_PER_TEMPLATE = 25
REWARD_BASIS = ["DB", "COMMUNICATE", "COMPLETENESS"]
_PERSONAS = (
    "You are polite and brief.",
    "You are in a hurry and answer in few words.",
    "You are careful and want every detail confirmed.",
    "You are friendly and chatty.",
)


@cache
def get_domain(name: str) -> DomainSpec:
    """The `DomainSpec` of domain ``name`` (one of `DOMAIN_NAMES`).

    Raises:
        ConfigError: for an unknown name (the message lists the known ones).
    """
    if name not in DOMAIN_NAMES:
        raise ConfigError(f"unknown synthetic domain {name!r}{did_you_mean(name, DOMAIN_NAMES)}; "
                          f"known domains: {', '.join(DOMAIN_NAMES)}")
    import importlib

    module = importlib.import_module(f"orchestra_gym.domains.synthetic.{name.replace('-', '')}")
    return module.SPEC


@cache
def _static(name: str) -> tuple[tuple[ToolSpec, ...], str]:
    """The tool schemas and the policy document of a domain (the same for every seed)."""
    spec = get_domain(name)
    return tuple(t.spec() for t in spec.all_tools()), render_policy(spec)


class SyntheticBackend:
    """One episode of one synthetic task (implements `orchestra_gym.domains.backend.DomainBackend`).

    Attributes:
        task, tools, policy: as in the protocol.
        db: the episode's live database (a deep copy of the instance's initial one).
        transferred: True once ``transfer_to_human_agents`` succeeded.
    """

    def __init__(self, instance: "SyntheticInstance"):
        self.instance = instance
        self.task: Task = instance.task
        self.tools: list[ToolSpec] = instance.tools
        self.policy: str = instance.policy
        self._db = TrackedDB(copy_db(instance.initial_db), instance.spec.tables)
        self._tool_map = instance.spec.tool_map()
        self.transferred = False

    @property
    def db(self) -> Database:
        return self._db.data

    def db_hash(self) -> str:
        """sha256 of the live database's canonical JSON."""
        return db_hash(self._db.data)

    def call_tool(self, name: str, arguments: dict[str, Any], requestor: str = "assistant") -> ToolResult:
        """Run one domain tool on the live database; never raises (errors are ``error=True`` results).

        ``requestor`` is accepted for protocol compatibility; synthetic domains have no user tools.
        """
        result = execute(self._tool_map, self._db, name, arguments)
        if not result.error and list(TRANSFER_RECORD) in result.metadata.get("touched", []):
            self.transferred = True
        return result

    def grade(self, agent_messages: list[str], trajectory: list[ToolCall]) -> tuple[float, dict[str, Any]]:
        """Outcome (1.0 when all three checks pass, else 0.0) and the breakdown; see the module docstring.

        The trajectory is replayed on a fresh copy of the initial database, so the grade depends
        only on ``trajectory`` (the live database gives the same result, tools being deterministic).
        Calls of tools this domain does not have (e.g. ``call_expert``) fail and change nothing.
        """
        calls = [c if isinstance(c, ToolCall) else ToolCall.from_dict(c) for c in trajectory]
        final, touched, results = replay(self.instance.spec, self.instance.initial_db, calls)
        final_hash = db_hash(final)
        inst = self.instance
        messages = [str(m) for m in agent_messages if m]
        missing_info = [s for s in self.task.communicate_info if not any(mentions(m, s) for m in messages)]
        missing_records = sorted(inst.golden_touched - touched - {TRANSFER_RECORD})
        transferred = TRANSFER_RECORD in touched
        gold_transfer = TRANSFER_RECORD in inst.golden_touched
        scores = {
            "execution_correctness": float(final_hash == inst.golden_db_hash),
            "process_fidelity": float(not missing_info),
            "operation_completeness": float(not missing_records and transferred == gold_transfer),
        }
        outcome = float(np.prod(list(scores.values())))
        breakdown: dict[str, Any] = {
            **scores,
            "db_hash": final_hash,
            "golden_db_hash": inst.golden_db_hash,
            "missing_communicate_info": missing_info,
            "missing_records": [f"{t}/{k}" for t, k in missing_records],
            "transferred": transferred,
            "golden_transfers": gold_transfer,
            "tool_errors": float(sum(r.error for r in results)),
        }
        return outcome, breakdown


@dataclass
class SyntheticInstance:
    """One generated task with its domain and initial database.

    Attributes:
        spec: the domain.
        seed: the generator seed (int >= 0).
        task: the task (id ``"<domain>-<seed>"``, domain ``"synthetic/<domain>"``).
        tools: the tools the policy sees (domain tools, then ``calculate`` and ``transfer_to_human_agents``);
            the `ToolSpec` objects are shared by every instance of the domain: treat them as read-only.
        policy: the policy document (markdown), generated from the tools' rules.
        initial_db: the initial database (do not mutate; `new_backend` copies it).
        user_answers: what the simulated user knows, field -> value (``"email"``, ``"name"``,
            ``"<booking>_id"``, ...), so a scripted user can answer "what is your X?".
        golden_db_hash: sha256 of the database after the golden actions.
        golden_touched: records (table, key) the golden actions touch, plus `TRANSFER_RECORD` if
            they transfer.
    """

    spec: DomainSpec
    seed: int
    task: Task
    tools: list[ToolSpec]
    policy: str
    initial_db: Database
    user_answers: dict[str, str]
    golden_db_hash: str
    golden_touched: set[tuple[str, str]] = field(default_factory=set)

    @property
    def domain(self) -> str:
        return self.spec.name

    @cached_property
    def _value_index(self) -> dict[str, list[str]]:
        return _value_index(self.initial_db)

    @cached_property
    def _field_values(self) -> dict[str, list[str]]:
        return _field_values(self.initial_db)

    def new_backend(self) -> SyntheticBackend:
        """A fresh backend (its own copy of the initial database) for one episode."""
        return SyntheticBackend(self)

    def plausible_wrong_action(self, call: ToolCall, rng: np.random.Generator) -> ToolCall:
        """A plausible but wrong variant of ``call`` (for simulated experts), same ``id``.

        In order of preference: one argument replaced by another value of the same table field
        in the initial database (another ticket id, another passenger's email, another city);
        a number off by one; an arithmetic expression with one number changed; otherwise a
        sibling tool (another tool of the same kind, a write tool for generic ones) with
        arguments taken from the call or the database.
        """
        index = self._value_index
        args = dict(call.arguments)
        names = [k for k in sorted(args) if isinstance(args[k], (str, int, float)) and not isinstance(args[k], bool)]
        for j in rng.permutation(len(names)):
            k = names[int(j)]
            v = args[k]
            if isinstance(v, str) and v in index:
                others = [x for x in index[v] if x != v]
                if others:
                    args[k] = pick(rng, others)
                    return ToolCall(call.name, args, call.id)
            elif isinstance(v, int):
                args[k] = v + 1 if v <= 1 or rng.random() < 0.5 else v - 1
                return ToolCall(call.name, args, call.id)
            elif isinstance(v, float):
                args[k] = round(v * 1.1 + 1.0, 2)
                return ToolCall(call.name, args, call.id)
            elif k == "expression" and (numbers := list(re.finditer(r"\d+(?:\.\d+)?", v))):
                m = pick(rng, numbers)
                args[k] = v[: m.start()] + str(round(float(m.group()) + 1, 2)) + v[m.end():]
                return ToolCall(call.name, args, call.id)
        tools = {t.name: t for t in self.spec.all_tools()}
        kind = tools[call.name].kind if call.name in tools else "read"
        want = "write" if kind == "generic" else kind
        siblings = [t for t in self.spec.tools if t.kind == want and t.name != call.name]
        tool = pick(rng, siblings)
        new_args: dict[str, Any] = {}
        keys = {t.key: sorted(self.initial_db[t.name]) for t in self.spec.tables}
        field_values = self._field_values
        for p in tool.params:
            base = p.name.removeprefix("new_")
            if p.name in call.arguments:
                new_args[p.name] = call.arguments[p.name]
            elif base in keys:
                new_args[p.name] = pick(rng, keys[base])
            elif p.type == "integer":
                new_args[p.name] = 1
            else:
                new_args[p.name] = pick(rng, field_values.get(p.name, [""]))
        return ToolCall(tool.name, new_args, call.id)


def _field_values(db: Database) -> dict[str, list[str]]:
    """field name -> its string values over all tables, sorted."""
    out: dict[str, set[str]] = {}
    for rows in db.values():
        for rec in rows.values():
            for f, v in rec.items():
                if isinstance(v, str):
                    out.setdefault(f, set()).add(v)
    return {f: sorted(v) for f, v in out.items()}


def _value_index(db: Database) -> dict[str, list[str]]:
    """string value -> every value of the same (table, field), sorted (for plausible swaps)."""
    by_field: dict[tuple[str, str], set[str]] = {}
    for t, rows in db.items():
        for rec in rows.values():
            for f, v in rec.items():
                if isinstance(v, str):
                    by_field.setdefault((t, f), set()).add(v)
    index: dict[str, list[str]] = {}
    for _, values in sorted(by_field.items()):
        ordered = sorted(values)
        for v in ordered:
            index.setdefault(v, ordered)
    return index


def _difficulty(n_actions: int) -> str:
    return "easy" if n_actions <= 3 else "medium" if n_actions <= 5 else "hard"


def _known_info_text(answers: dict[str, str]) -> str:
    return " ".join(f"Your {k.replace('_', ' ')} is {v}." for k, v in answers.items())


def make_instance(seed: int, domain: str | None = None) -> SyntheticInstance:
    """Generate one solvable task, deterministically from ``(seed, domain)``.

    Args:
        seed: int >= 0. The same seed gives the same task and database in any process.
        domain: one of `DOMAIN_NAMES`, or None to take ``DOMAIN_NAMES[seed % len(DOMAIN_NAMES)]``.

    Returns:
        A `SyntheticInstance` whose golden actions replay without error.

    Raises:
        ConfigError: bad seed or unknown domain.
        RuntimeError: if no solvable task was drawn in 200 tries (a generator bug).

    The last `INSTANCE_CACHE_SIZE` instances are kept (an instance is read-only: `new_backend` copies its
    database), so the G rollouts of a GRPO group and the repeated evaluations of a held-out task do not
    generate the same database again; the same (seed, domain) returns the same object.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be an int >= 0, got {seed!r}")
    seed = int(seed)
    name = DOMAIN_NAMES[seed % len(DOMAIN_NAMES)] if domain is None else domain
    get_domain(name)  # unknown domain: ConfigError before the cache
    return _make_instance(seed, name)


INSTANCE_CACHE_SIZE = 1024


@lru_cache(maxsize=INSTANCE_CACHE_SIZE)
def _make_instance(seed: int, name: str) -> SyntheticInstance:
    spec = get_domain(name)
    salt = zlib.crc32(name.encode())
    first = int(np.random.default_rng([seed, salt, GENERATOR_VERSION]).integers(len(spec.templates)))
    for draw in range(_MAX_DRAWS):
        # the seed picks the template; it gets _DRAWS_PER_TEMPLATE databases before the next is tried,
        # so that templates with stricter preconditions are not under-represented
        template = spec.templates[(first + draw // _DRAWS_PER_TEMPLATE) % len(spec.templates)]
        rng = np.random.default_rng([seed, draw, salt, GENERATOR_VERSION])
        db = spec.generate(rng)
        draft = template(rng, db)
        if draft is None or not draft.golden:
            continue
        calls = [ToolCall(t, dict(a), f"gold_{i}") for i, (t, a) in enumerate(draft.golden)]
        final, touched, results = replay(spec, db, calls)
        if any(r.error for r in results) or not touched:
            continue
        answers = {k: str(v) for k, v in draft.known_info.items()}
        scenario = {
            "persona": None,
            "instructions": {
                "domain": name,
                "reason_for_call": draft.reason_for_call,
                "known_info": _known_info_text(answers),
                "unknown_info": draft.unknown_info,
                "task_instructions": pick(rng, _PERSONAS)
                + " When the agent lists an action and asks you to confirm, answer 'yes'.",
            },
        }
        golden_hash = db_hash(final)
        task = Task(
            id=f"{name}-{seed}",
            domain=f"synthetic/{name}",
            prompt=draft.reason_for_call,
            category=draft.kind,
            difficulty=_difficulty(len(calls)),
            golden_actions=calls,
            communicate_info=list(draft.communicate_info),
            user_scenario=scenario,
            initial_state=None,
            reward_basis=list(REWARD_BASIS),
            metadata=_metadata(name, seed, golden_hash, answers),
        )
        tools, policy = _static(name)
        return SyntheticInstance(spec, seed, task, list(tools), policy, db, answers, golden_hash, touched)
    raise RuntimeError(f"no solvable {name} task in {_MAX_DRAWS} draws for seed {seed} (generator bug)")


def _metadata(name: str, seed: int, golden_hash: str, answers: dict[str, str]) -> dict[str, Any]:
    return {
        "generator": "orchestra_gym.domains.synthetic",
        "generator_version": GENERATOR_VERSION,
        "synthetic_domain": name,
        "seed": seed,
        "golden_db_hash": golden_hash,
        "user_answers": dict(answers),
    }


_NOTES = re.compile(r"generator=orchestra_gym\.domains\.synthetic version=(\d+) domain=(\S+) seed=(\d+)")


def export_tasks(instances: list[SyntheticInstance]) -> list[dict[str, Any]]:
    """Tasks as ToolScale / tau2 JSON task dicts.

    Each dict has ``id``, ``description`` (``purpose``, ``relevant_policies``, ``notes``; the notes
    carry ``generator=... version=V domain=D seed=S category=C difficulty=X`` so the database can
    be regenerated), ``user_scenario``, ``initial_state`` (None: the database is the generated
    one), ``evaluation_criteria`` (``actions`` with ``action_id``, ``name``, ``arguments``,
    ``info``; ``communicate_info``; ``nl_assertions``: None). Source: tau2-bench ``tasks.json``.
    """
    out = []
    for inst in instances:
        t = inst.task
        out.append({
            "id": t.id,
            "description": {
                "purpose": t.prompt,
                "relevant_policies": None,
                "notes": f"generator=orchestra_gym.domains.synthetic version={GENERATOR_VERSION} "
                f"domain={inst.domain} seed={inst.seed} category={t.category} difficulty={t.difficulty}",
            },
            "user_scenario": _plain(t.user_scenario),
            "initial_state": None,
            "evaluation_criteria": {
                "actions": [
                    {"action_id": f"{t.id}_{i}", "name": c.name, "arguments": _plain(c.arguments), "info": None}
                    for i, c in enumerate(t.golden_actions)
                ],
                "communicate_info": list(t.communicate_info),
                "nl_assertions": None,
            },
        })
    return out


def _plain(obj: Any) -> Any:
    """A JSON-plain deep copy (dicts, lists, scalars)."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def import_tasks(rows: list[dict[str, Any]]) -> list[SyntheticInstance]:
    """Runnable instances from tau2 / ToolScale task dicts written by `export_tasks`.

    The database, tools and policy are regenerated from the ``domain`` and ``seed`` in
    ``description.notes``; the task itself (user scenario, golden actions, communicate_info) is
    taken from the row, and the golden database hash is recomputed by replaying its actions.

    Raises:
        ConfigError: a row without the generator notes, from another generator version, or whose
            golden actions fail on the regenerated database (the message names the task id).
    """
    out = []
    for row in rows:
        notes = (row.get("description") or {}).get("notes") or ""
        m = _NOTES.search(notes)
        tid = row.get("id")
        if not m:
            raise ConfigError(
                f"task {tid!r}: description.notes lacks 'generator=orchestra_gym.domains.synthetic version=V "
                "domain=D seed=S'; only tasks written by export_tasks can be imported"
            )
        version, name, seed = int(m.group(1)), m.group(2), int(m.group(3))
        if version != GENERATOR_VERSION:
            raise ConfigError(f"task {tid!r}: generator version {version} != current {GENERATOR_VERSION}")
        base = make_instance(seed, name)
        crit = row.get("evaluation_criteria") or {}
        calls = [ToolCall(a["name"], _plain(a.get("arguments") or {}), f"gold_{i}")
                 for i, a in enumerate(crit.get("actions") or [])]
        final, touched, results = replay(base.spec, base.initial_db, calls)
        bad = [c.name for c, r in zip(calls, results) if r.error]
        if bad or not calls:
            raise ConfigError(f"task {tid!r}: golden actions {bad or '(none)'} fail on the regenerated database")
        extra = dict(re.findall(r"(category|difficulty)=(\S+)", notes))
        scenario = _plain(row.get("user_scenario") or {})
        golden_hash = db_hash(final)
        task = Task(
            id=str(tid),
            domain=f"synthetic/{name}",
            prompt=(row.get("description") or {}).get("purpose") or "",
            category=extra.get("category", base.task.category),
            difficulty=extra.get("difficulty", base.task.difficulty),
            golden_actions=calls,
            communicate_info=list(crit.get("communicate_info") or []),
            user_scenario=scenario,
            initial_state=row.get("initial_state"),
            reward_basis=list(REWARD_BASIS),
            metadata=_metadata(name, seed, golden_hash, base.user_answers),
        )
        out.append(SyntheticInstance(base.spec, seed, task, base.tools, base.policy, base.initial_db,
                                     dict(base.user_answers), golden_hash, touched))
    return out
