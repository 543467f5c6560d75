"""Shared machinery of the ToolScale-synthetic generator: schemas, tools, rules, policy, grading.

A domain is a compact `DomainSpec`: typed tables (`TableSpec`), a seeded record generator, tools
(`Tool`: JSON-schema parameters, business `Rule`s, a function over the database) and task
templates. Everything else (argument checking, rule enforcement, the policy document, replaying
golden actions, grading, export) lives here, once.

The database is a plain JSON-able dict ``{table: {primary_key: record}}``. Tools read and write it
through `TrackedDB`, which records every record a call touches (read or write): that set is what
operation completeness compares.

Source: ToolOrchestra (arXiv 2511.21689) Sec. 3.3 (ToolScale: simulated domains with a database
schema, tools, a policy, and tasks graded by execution correctness, process fidelity and
operation completeness); tau2-bench for the tool kinds (read / write / generic), the
``calculate`` and ``transfer_to_human_agents`` tools and the task JSON shape.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from orchestra_gym.domains import arith
from orchestra_gym.errors import OrchestraError, did_you_mean
from orchestra_gym.types import ToolCall, ToolResult, ToolSpec

__all__ = [
    "ToolError",
    "TableSpec",
    "Param",
    "Rule",
    "Tool",
    "Draft",
    "DomainSpec",
    "TrackedDB",
    "copy_db",
    "db_hash",
    "execute",
    "replay",
    "render_policy",
    "safe_calculate",
    "normalize_text",
    "mentions",
    "money",
    "pick",
    "GENERIC_TOOLS",
    "TRANSFER_RECORD",
]

Record = dict[str, Any]
Database = dict[str, dict[str, Record]]


class ToolError(OrchestraError):
    """A tool call that cannot be carried out (record not found, business rule, bad value).

    Raised inside tool functions only; `execute` turns it into ``ToolResult(error=True)``.
    """


# ---------------------------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------------------------

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
}


def _has_type(value: Any, json_type: str) -> bool:
    if json_type in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _PY_TYPES[json_type])


@dataclass(frozen=True)
class TableSpec:
    """One typed table of a domain database.

    Attributes:
        name: table name, e.g. ``"tickets"``.
        key: primary-key field name, e.g. ``"ticket_id"`` (the record stores it too).
        fields: field name -> JSON type (``"string"``, ``"integer"``, ``"number"``, ``"boolean"``,
            ``"array"``); the key is one of them.
        foreign_keys: field -> table whose keys its value(s) must be (string or array of strings).
    """

    name: str
    key: str
    fields: dict[str, str]
    foreign_keys: dict[str, str] = field(default_factory=dict)


def check_schema(db: Database, tables: Sequence[TableSpec]) -> list[str]:
    """Problems of ``db`` against ``tables`` (types, keys, foreign keys); empty when valid."""
    problems: list[str] = []
    for t in tables:
        if t.name not in db:
            problems.append(f"missing table {t.name!r}")
            continue
        for k, rec in db[t.name].items():
            if rec.get(t.key) != k:
                problems.append(f"{t.name}[{k!r}]: key field {t.key!r} is {rec.get(t.key)!r}")
            if set(rec) != set(t.fields):
                problems.append(f"{t.name}[{k!r}]: fields {sorted(rec)} != schema {sorted(t.fields)}")
            for f, typ in t.fields.items():
                if f in rec and not _has_type(rec[f], typ):
                    problems.append(f"{t.name}[{k!r}].{f}: {rec[f]!r} is not {typ}")
            for f, other in t.foreign_keys.items():
                vals = rec.get(f)
                for v in vals if isinstance(vals, list) else [vals]:
                    if v not in db.get(other, {}):
                        problems.append(f"{t.name}[{k!r}].{f}: {v!r} is not a key of {other!r}")
    return problems


def copy_db(db: Database) -> Database:
    """Deep copy of a database whose values are scalars or lists of scalars (faster than deepcopy)."""
    return {
        t: {k: {f: (list(v) if isinstance(v, list) else v) for f, v in rec.items()} for k, rec in rows.items()}
        for t, rows in db.items()
    }


def canonical_json(obj: Any) -> str:
    """``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def db_hash(db: Database) -> str:
    """sha256 hex digest of the database's canonical JSON (`canonical_json`)."""
    return hashlib.sha256(canonical_json(db).encode("utf-8")).hexdigest()


TRANSFER_RECORD = ("human_agents", "transfer")
"""Pseudo record a successful ``transfer_to_human_agents`` call touches (operation completeness)."""


class TrackedDB:
    """A database plus the set of ``(table, key)`` records touched since the last `take_touched`.

    Args:
        data: the database dict (mutated in place by write tools).
        tables: the domain's table specs (used for readable "not found" messages).
    """

    def __init__(self, data: Database, tables: Sequence[TableSpec]):
        self.data = data
        self._singular = {t.name: t.key.removesuffix("_id") for t in tables}
        self._key = {t.name: t.key for t in tables}
        self.touched: set[tuple[str, str]] = set()

    def get(self, table: str, key: Any) -> Record:
        """The record ``table[key]`` (touched). Raises `ToolError` naming the id when absent."""
        rec = self.data[table].get(key) if isinstance(key, str) else None
        if rec is None:
            raise ToolError(f"{self._singular[table]} {key!r} not found")
        self.touched.add((table, key))
        return rec

    def select(self, table: str, pred: Callable[[Record], bool]) -> list[Record]:
        """Records of ``table`` satisfying ``pred``, in key order (each touched)."""
        out = [r for _, r in sorted(self.data[table].items()) if pred(r)]
        for r in out:
            self.touched.add((table, r[self._key[table]]))
        return out

    def find_one(self, table: str, field_name: str, value: Any) -> Record:
        """The first record with ``record[field_name] == value``; `ToolError` when none."""
        hits = [r for _, r in sorted(self.data[table].items()) if r.get(field_name) == value]
        if not hits:
            raise ToolError(f"no {self._singular[table]} with {field_name} {value!r}")
        self.touched.add((table, hits[0][self._key[table]]))
        return hits[0]

    def new_key(self, table: str, prefix: str) -> str:
        """Next free key ``<prefix><n>`` (n = 1 + the largest numeric suffix in use), deterministic."""
        nums = [int(k[len(prefix):]) for k in self.data[table] if k.startswith(prefix) and k[len(prefix):].isdigit()]
        return f"{prefix}{max(nums, default=1000) + 1}"

    def insert(self, table: str, record: Record) -> str:
        """Insert ``record`` (its key field must be set); returns the key (touched)."""
        key = record[self._key[table]]
        self.data[table][key] = record
        self.touched.add((table, key))
        return key

    def take_touched(self) -> set[tuple[str, str]]:
        out, self.touched = self.touched, set()
        return out


# ---------------------------------------------------------------------------------------------
# Tools and rules
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One tool parameter (a JSON Schema property).

    Attributes:
        name: argument name.
        type: JSON type: ``"string"``, ``"integer"``, ``"number"``, ``"boolean"`` or ``"array"``
            (arrays hold strings).
        description: what the value is.
        enum: allowed values, if restricted.
        required: whether the call must give it.
    """

    name: str
    type: str
    description: str
    enum: tuple[Any, ...] | None = None
    required: bool = True

    def schema(self) -> dict[str, Any]:
        s: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.type == "array":
            s["items"] = {"type": "string"}
        if self.enum is not None:
            s["enum"] = list(self.enum)
        return s


@dataclass(frozen=True)
class Rule:
    """A business rule of a write tool, stated once and used twice: enforced and written in the policy.

    Attributes:
        text: the policy sentence, e.g. "A ticket that is already 'used' cannot be cancelled."
        violated: ``(db, args) -> bool``; True when the call breaks the rule (may raise
            `ToolError` for a missing record).
        transfer: True when the policy says such a request must be transferred to a human agent.
    """

    text: str
    violated: Callable[[TrackedDB, dict[str, Any]], bool]
    transfer: bool = False


@dataclass(frozen=True)
class Tool:
    """A domain tool: schema, kind, rules and implementation.

    Attributes:
        name: function name.
        description: one-line description shown to the policy.
        kind: ``"read"``, ``"write"`` or ``"generic"`` (tau2 tool types).
        params: the parameters, in order.
        fn: ``(db, args) -> JSON-able result``; raises `ToolError` on failure and mutates the
            database only after every check has passed.
        rules: business rules checked (in order) before ``fn`` runs.
    """

    name: str
    description: str
    kind: str
    params: tuple[Param, ...]
    fn: Callable[[TrackedDB, dict[str, Any]], Any]
    rules: tuple[Rule, ...] = ()

    def spec(self) -> ToolSpec:
        """The OpenAI function-calling schema of this tool."""
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {p.name: p.schema() for p in self.params},
                "required": [p.name for p in self.params if p.required],
            },
            kind=self.kind,
        )

    def check_arguments(self, args: Any) -> str | None:
        """A readable problem with ``args`` (names the argument and the fix), or None if valid."""
        if not isinstance(args, dict):
            return f"arguments of {self.name!r} must be a JSON object, got {type(args).__name__}"
        by_name = {p.name: p for p in self.params}
        for k in args:
            if k not in by_name:
                return f"unexpected argument {k!r} for {self.name!r}{did_you_mean(k, by_name)}; parameters: {list(by_name)}"
        missing = [p.name for p in self.params if p.required and p.name not in args]
        if missing:
            return f"missing required argument(s) {missing} for {self.name!r}; required: " + str(
                [p.name for p in self.params if p.required]
            )
        for k, v in args.items():
            p = by_name[k]
            if not _has_type(v, p.type) or (p.type == "array" and not all(isinstance(x, str) for x in v)):
                want = "array of strings" if p.type == "array" else p.type
                return f"argument {k!r} of {self.name!r} must be {want}, got {type(v).__name__} {v!r}"
            if p.enum is not None and v not in p.enum:
                return f"argument {k!r} of {self.name!r} must be one of {list(p.enum)}, got {v!r}"
        return None


# ---------------------------------------------------------------------------------------------
# Generic tools: calculate, transfer_to_human_agents
# ---------------------------------------------------------------------------------------------

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNOPS: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_MAX_EXPR_CHARS = 500


def safe_calculate(expression: str) -> float:
    """Evaluate an arithmetic expression without ``eval``: numbers, + - * / // % **, parentheses.

    Args:
        expression: e.g. ``"(120.5 + 30) * 2"`` (at most 500 characters).

    Returns:
        The value as a float (not rounded).

    Raises:
        ToolError: on anything else (names, calls, attributes, strings), on a syntax error, on
            division by zero, on an exponent above 100 in absolute value, or when an integer
            result would exceed `orchestra_gym.domains.arith.MAX_RESULT_BITS` or the evaluation
            its time budget (``arith.MAX_EVAL_S``).
    """
    if not isinstance(expression, str) or not expression.strip():
        raise ToolError("expression must be a non-empty string like '12.5 * 3 + 4'")
    if len(expression) > _MAX_EXPR_CHARS:
        raise ToolError(f"expression too long ({len(expression)} > {_MAX_EXPR_CHARS} characters)")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as e:
        raise ToolError(f"invalid arithmetic expression {expression!r}: {e.msg}") from None

    until = arith.deadline()

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise ToolError("exponent too large (|exponent| must be <= 100)")
            if isinstance(node.op, ast.Pow) and abs(left) > 1e10:
                raise ToolError("base of a power too large (|base| must be <= 1e10)")
            try:
                arith.check_binop(node.op, left, right, until)
            except arith.ArithmeticLimitError as e:
                raise ToolError(str(e)) from None
            try:
                return _BINOPS[type(node.op)](left, right)
            except ZeroDivisionError:
                raise ToolError("division by zero") from None
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
            return _UNOPS[type(node.op)](ev(node.operand))
        raise ToolError(
            f"unsupported element {type(node).__name__} in {expression!r}: only numbers, "
            "+ - * / // % ** and parentheses are allowed"
        )

    try:
        value = float(ev(tree))
    except (OverflowError, TypeError):  # huge ints; complex results of fractional powers
        value = math.nan
    if not math.isfinite(value):
        raise ToolError(f"expression {expression!r} has no finite real value")
    return value


def money(x: float) -> str:
    """A USD amount as the tools print it: two decimals, no separator (``1234.5 -> "1234.50"``)."""
    return f"{x:.2f}"


def _calculate(db: TrackedDB, args: dict[str, Any]) -> str:
    return money(round(safe_calculate(args["expression"]), 2))


def _transfer(db: TrackedDB, args: dict[str, Any]) -> str:
    db.touched.add(TRANSFER_RECORD)
    return "Transfer successful"


GENERIC_TOOLS: tuple[Tool, ...] = (
    Tool(
        "calculate",
        "Calculate the result of an arithmetic expression (numbers, + - * / // % ** and parentheses); "
        "the result is rounded to 2 decimals.",
        "generic",
        (Param("expression", "string", "The expression, e.g. '12.50 * 3 + 4'."),),
        _calculate,
    ),
    Tool(
        "transfer_to_human_agents",
        "Transfer the user to a human agent, with a summary of the issue. Only when the policy says so.",
        "generic",
        (Param("summary", "string", "A short summary of the user's issue."),),
        _transfer,
    ),
)


# ---------------------------------------------------------------------------------------------
# Domain spec, execution, replay, policy
# ---------------------------------------------------------------------------------------------


@dataclass
class Draft:
    """A task proposed by a template, before the generator checks it is solvable.

    Attributes:
        kind: template kind (becomes `Task.category`), e.g. ``"lookup"``, ``"transfer"``.
        golden: golden actions as ``(tool name, arguments)`` pairs, in order.
        communicate_info: strings the agent must tell the user.
        reason_for_call: the user's request (tau2 ``reason_for_call``).
        known_info: facts the user knows, field -> value (``"email"``, ``"ticket_id"``, ...).
        unknown_info: what the user does not know (tau2 ``unknown_info``).
    """

    kind: str
    golden: list[tuple[str, dict[str, Any]]]
    communicate_info: list[str]
    reason_for_call: str
    known_info: dict[str, str]
    unknown_info: str


Template = Callable[[np.random.Generator, Database], "Draft | None"]


@dataclass(frozen=True)
class DomainSpec:
    """Everything that makes one synthetic domain.

    Attributes:
        name: domain name, e.g. ``"railway"``.
        title: what the agent does, e.g. ``"railway ticketing"`` (policy heading).
        tables: the typed tables (>= 3, related by foreign keys).
        generate: ``rng -> database`` (tens of records; seeded, no other randomness).
        tools: the domain tools (the generic tools are appended by `all_tools`).
        templates: task templates ``(rng, db) -> Draft | None``.
        policy_intro: general policy sentences (before the per-tool rules).
    """

    name: str
    title: str
    tables: tuple[TableSpec, ...]
    generate: Callable[[np.random.Generator], Database]
    tools: tuple[Tool, ...]
    templates: tuple[Template, ...]
    policy_intro: tuple[str, ...] = ()

    def all_tools(self) -> tuple[Tool, ...]:
        return self.tools + GENERIC_TOOLS

    def tool_map(self) -> dict[str, Tool]:
        return {t.name: t for t in self.all_tools()}


def execute(tools: dict[str, Tool], db: TrackedDB, name: str, arguments: Any) -> ToolResult:
    """Run one tool call; never raises.

    Returns:
        `ToolResult` with the JSON result (``error=False``) or a readable message naming the
        problem (``error=True``): unknown tool (with a did-you-mean), bad arguments, a broken
        business rule (``metadata["rule"]``), a missing record. ``usage`` is zero. The records the
        call touched are in ``metadata["touched"]`` (empty for failed calls, which change nothing).
    """
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None:
        return ToolResult(f"Error: unknown tool {name!r}{did_you_mean(name, tools)}; known tools: {', '.join(tools)}",
                          error=True)
    problem = tool.check_arguments(arguments)
    if problem:
        return ToolResult(f"Error: {problem}", error=True)
    db.take_touched()
    try:
        for rule in tool.rules:
            if rule.violated(db, arguments):
                db.take_touched()
                what = " Per policy this request must be transferred to a human agent." if rule.transfer else ""
                return ToolResult(
                    f"Error: {name} not allowed by policy: {rule.text}{what}",
                    error=True,
                    metadata={"rule": rule.text, "transfer": rule.transfer},
                )
        out = tool.fn(db, arguments)
    except ToolError as e:
        db.take_touched()
        return ToolResult(f"Error: {e}", error=True)
    except Exception as e:  # a tool bug must not crash an episode; report it as an error
        db.take_touched()
        return ToolResult(f"Error: internal error in {name!r}: {type(e).__name__}: {e}", error=True)
    touched = sorted(db.take_touched())
    content = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
    return ToolResult(content, metadata={"touched": [list(t) for t in touched], "kind": tool.kind})


def replay(
    spec: DomainSpec, initial_db: Database, calls: Sequence[ToolCall]
) -> tuple[Database, set[tuple[str, str]], list[ToolResult]]:
    """Run ``calls`` in order on a fresh copy of ``initial_db``.

    Returns:
        (final database, records touched by the successful calls, one `ToolResult` per call).
    """
    db = TrackedDB(copy_db(initial_db), spec.tables)
    tools = spec.tool_map()
    touched: set[tuple[str, str]] = set()
    results = []
    for c in calls:
        r = execute(tools, db, c.name, c.arguments)
        if not r.error:
            touched.update(tuple(t) for t in r.metadata["touched"])
        results.append(r)
    return db.data, touched, results


def render_policy(spec: DomainSpec) -> str:
    """The domain's policy document (markdown), generated from the same `Rule`s the tools enforce."""
    lines = [f"# {spec.title.capitalize()} agent policy", ""]
    lines += [f"- {s}" for s in spec.policy_intro]
    lines += [
        "- Before any action that changes the database, list the action details and obtain the user's "
        "explicit confirmation (yes) to proceed.",
        "- Make at most one tool call at a time; do not make up information that the user or the tools "
        "did not give.",
        "- Use the `calculate` tool for arithmetic and tell the user every amount they asked for.",
        "",
        "## Rules of each action",
    ]
    transfer: list[str] = []
    for tool in spec.tools:
        if not tool.rules:
            continue
        lines += ["", f"### {tool.name}", ""]
        for r in tool.rules:
            lines.append(f"- {r.text}")
            if r.transfer and r.text not in transfer:
                transfer.append(r.text)
    lines += ["", "## Transfer to a human agent", ""]
    lines.append(
        "Transfer the user to a human agent (call `transfer_to_human_agents`, then tell the user) if and "
        "only if the request cannot be handled within this policy, in particular:"
    )
    lines += [f"- {t}" for t in transfer]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Text normalisation for process fidelity
# ---------------------------------------------------------------------------------------------

_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0_](?=\d{3}(?!\d))")
_SPACES = re.compile(r"\s+")


_TRAILING_ZEROS = re.compile(r"(?<![\d.])(\d+)\.(\d*?)0+(?!\d)")


def normalize_text(s: str) -> str:
    """Canonical text for process fidelity.

    Lower-case; drop thousands separators between digits (``"1,234.50" -> "1234.50"``); drop
    trailing decimal zeros (``"91.10" -> "91.1"``, ``"91.00" -> "91"``, so that a tool's JSON
    number and a formatted amount agree); squeeze whitespace.
    """
    t = _THOUSANDS.sub("", str(s).lower())
    t = _TRAILING_ZEROS.sub(lambda m: m.group(1) + ("." + m.group(2) if m.group(2) else ""), t)
    return _SPACES.sub(" ", t).strip()


def mentions(text: str, item: str) -> bool:
    """Whether normalised ``item`` occurs in normalised ``text``, not as part of a longer number.

    ``mentions("Refund: $1,234.50.", "1234.50")`` is True; ``mentions("1234.55", "1234.5")`` is False.
    """
    needle = normalize_text(item)
    if not needle:
        return True
    pattern = r"(?<![\d.])" + re.escape(needle) if needle[0].isdigit() else re.escape(needle)
    if needle[-1].isdigit():
        pattern += r"(?!\.?\d)"
    return re.search(pattern, normalize_text(text)) is not None


def pick(rng: np.random.Generator, seq: Sequence[Any]) -> Any:
    """One element of ``seq`` chosen by ``rng`` (a Python object, never a NumPy scalar)."""
    return seq[int(rng.integers(len(seq)))]
