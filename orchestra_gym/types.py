"""Core data types shared by every environment, tool and trainer in orchestra.

Units everywhere: money in US dollars (USD), time in seconds (s), text sizes in tokens.
All types are plain dataclasses so that they pickle (async vector envs) and turn into JSON
(`to_dict`) for trajectories and caches.

Source: ToolOrchestra (arXiv 2511.21689) Sec. 2-3 for the roles (orchestrator, tool, expert,
preference vector); OpenAI's chat-completions schema for `Message`, `ToolCall` and `ToolSpec`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

__all__ = [
    "Usage",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Message",
    "Preference",
    "Task",
]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class Usage:
    """Resources one tool or model call consumed.

    Attributes:
        prompt_tokens: input tokens billed (tokens; float so that `info` stays float-typed).
        completion_tokens: output tokens billed (tokens).
        cost_usd: money charged for the call, in USD (model price x tokens, plus per-call fees).
        latency_s: wall-clock seconds for real tools, logical seconds from a latency model for
            simulated ones (deterministic under a seed).
    """

    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
            self.latency_s + other.latency_s,
        )

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Usage":
        return cls(**{k: float(d.get(k, 0.0)) for k in ("prompt_tokens", "completion_tokens", "cost_usd", "latency_s")})


@dataclass
class ToolCall:
    """One call of a tool by the orchestrator (OpenAI / Hermes function-calling shape).

    Attributes:
        name: tool name, e.g. ``"get_order_details"`` or ``"call_expert"``.
        arguments: JSON object of arguments (always a dict; the parser rejects other JSON types).
        id: call id that pairs the call with its `ToolResult` message; the parser assigns
            ``call_<i>`` (position in the action) when the model text carries none.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI chat-completions ``tool_calls[i]`` entry (arguments as a JSON string)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ToolCall":
        return cls(name=d["name"], arguments=dict(d.get("arguments") or {}), id=d.get("id", ""))


@dataclass
class ToolResult:
    """What a tool returned.

    Attributes:
        content: the text the policy sees (tool output or a readable error message).
        error: True when the call failed (bad arguments, business rule, HTTP failure, timeout).
            A failing tool never raises into the environment; it returns ``error=True``.
        usage: tokens, cost (USD) and latency (s) of the call.
        metadata: extra machine-readable data (e.g. HTTP status, retries, the expert's own
            tool calls, whether the database changed). Never contains secrets.
    """

    content: str
    error: bool = False
    usage: Usage = field(default_factory=Usage)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"content": self.content, "error": self.error, "usage": self.usage.to_dict(), "metadata": self.metadata}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ToolResult":
        return cls(
            content=d["content"],
            error=bool(d.get("error", False)),
            usage=Usage.from_dict(d.get("usage", {})),
            metadata=dict(d.get("metadata", {})),
        )


def _field_path(path: Any) -> str:
    """A jsonschema error path as a field name: ``["flights", 0, "date"]`` -> ``flights[0].date``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


@functools.lru_cache(maxsize=512)
def _schema_validator(schema_json: str) -> Any:
    """A cached Draft 2020-12 validator of a tool's parameter schema (JSON text); None if unusable."""
    import jsonschema

    try:
        schema = json.loads(schema_json)
        if not isinstance(schema, dict):
            return None
        return jsonschema.Draft202012Validator(schema)
    except Exception:  # noqa: BLE001 - e.g. a non-JSON-schema dict: nothing to check against
        return None


@dataclass
class ToolSpec:
    """A tool as the policy sees it: the OpenAI function-calling JSON schema.

    Attributes:
        name: function name.
        description: natural-language description (prices and latencies of experts go here).
        parameters: JSON Schema object (``{"type": "object", "properties": ..., "required": [...]}``).
        kind: ``"read"``, ``"write"``, ``"generic"`` (tau2's tool types) or ``"model"`` for
            tools backed by a model (experts, search/reasoner/answer models).
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}, "required": []})
    kind: str = "generic"

    def model_choices(self) -> tuple[str, list[str]] | None:
        """For a ``kind="model"`` tool: the argument that picks the model and its allowed values
        (the first parameter with an ``enum``), e.g. ``("expert", ["expert-1", "expert-2"])``;
        None for other tools or a model tool without an enum parameter."""
        if self.kind != "model":
            return None
        for arg, schema in (self.parameters or {}).get("properties", {}).items():
            if "enum" in schema:
                return arg, list(schema["enum"])
        return None

    def to_openai(self) -> dict[str, Any]:
        """``{"type": "function", "function": {"name", "description", "parameters"}}``."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def unknown_arguments(self, arguments: dict[str, Any]) -> list[str]:
        """Names in `arguments` that the schema does not declare, in the call's order.

        Empty when the schema declares no ``properties`` or allows ``additionalProperties``
        (then every name is accepted).
        """
        props = self.parameters.get("properties") if isinstance(self.parameters, dict) else None
        if not isinstance(props, dict) or not props or self.parameters.get("additionalProperties"):
            return []
        return [str(k) for k in arguments if k not in props]

    def argument_errors(self, arguments: Any) -> list[tuple[str, str]]:
        """Where a call's `arguments` break this tool's JSON schema: ``(field, problem)`` pairs.

        Checked with ``jsonschema`` (Draft 2020-12; ``$defs``/``$ref`` resolved within the
        schema): a missing required argument, a wrong type, a value outside an ``enum``, ...;
        nested fields are named by their path (``flights[0].date``); names the schema does not
        declare (`unknown_arguments`) come last, as ``(name, "unknown argument; <tool> takes
        [...]")``. ``problem`` is jsonschema's message (at most 200 characters). Arguments that are
        not a JSON object give ``("", "arguments must be a JSON object, got <type>")``.

        Returns:
            The pairs in schema-check order, each field once per problem; empty for a call that
            fits the schema, and for a schema jsonschema cannot use (it is not the call's fault).
        """
        if not isinstance(arguments, dict):
            return [("", f"arguments must be a JSON object, got {type(arguments).__name__}")]
        out: list[tuple[str, str]] = []
        validator = _schema_validator(json.dumps(self.parameters, sort_keys=True, default=str))
        if validator is not None:
            try:
                errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
                for e in errors:
                    path = _field_path(e.absolute_path)
                    if e.validator == "required":
                        missing = [str(r) for r in e.validator_value if isinstance(e.instance, dict) and r not in e.instance]
                        name = next((m for m in missing if repr(m) in e.message), missing[0] if missing else "")
                        out.append((f"{path}.{name}" if path else name, e.message[:200]))
                    elif e.validator != "additionalProperties":  # unknown names: below, once
                        out.append((path, e.message[:200]))
            except Exception:  # noqa: BLE001 - an unresolvable schema ($ref) is the tool's problem, not the call's
                out = []
        known = list((self.parameters or {}).get("properties", {}) or {})
        out += [(k, f"unknown argument; {self.name} takes {known}") for k in self.unknown_arguments(arguments)]
        return list(dict.fromkeys(out))


@dataclass
class Message:
    """One chat message (OpenAI chat-completions roles).

    Attributes:
        role: ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``.
        content: the text. For an assistant turn of the orchestrator this is the raw model text
            (with its ``<think>`` and ``<tool_call>`` blocks) so that token-in/token-out holds.
        tool_calls: the parsed calls of an assistant turn, if any.
        tool_call_id: for ``role="tool"``: the id of the call this message answers.
        name: for ``role="tool"``: the tool's name.
    """

    role: Role
    content: str
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        return d

    def to_openai(self) -> dict[str, Any]:
        """The message in OpenAI chat-completions form (tool-call arguments as JSON strings)."""
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Message":
        calls = d.get("tool_calls")
        return cls(
            role=d["role"],
            content=d.get("content") or "",
            tool_calls=[ToolCall.from_dict(c) for c in calls] if calls else None,
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
        )


@dataclass
class Preference:
    """A user's preference vector P over the reward vector (ToolOrchestra Sec. 3.2).

    The reward vector of an episode is ``M = [calls of tool_1, ..., calls of tool_n, outcome,
    -cost_usd, -latency_s]``; P weights its min-max normalised components. A positive tool
    weight means the user wants that tool used; ``cost`` and ``latency`` weights are applied to
    the negated cost and latency, so a larger weight means "cheaper / faster is better".

    Attributes:
        tools: tool (or model) name -> weight; tools not listed have weight 0.
        outcome: weight of the outcome component (the paper keeps it positive).
        cost: weight of -cost (USD).
        latency: weight of -latency (s).
    """

    tools: dict[str, float] = field(default_factory=dict)
    outcome: float = 1.0
    cost: float = 0.0
    latency: float = 0.0

    def as_vector(self, tool_names: list[str]) -> np.ndarray:
        """Return P as float64 array of shape [len(tool_names) + 3] in reward-vector order."""
        return np.array(
            [float(self.tools.get(t, 0.0)) for t in tool_names] + [self.outcome, self.cost, self.latency],
            dtype=np.float64,
        )

    def to_dict(self) -> dict[str, Any]:
        return {"tools": dict(self.tools), "outcome": self.outcome, "cost": self.cost, "latency": self.latency}

    def describe(self) -> str:
        """The preference as the orchestrator reads it in its prompt (paper Sec. 3.2 / 6.4: the user's
        preference vector is an input of the orchestrator). One line, weights in the reward vector's
        order, tools sorted by name; only non-zero tool weights are listed::

            User preference (weights; cost and latency: lower is better): outcome 1, cost 0.5, latency 0
        """
        return "User preference (weights; cost and latency: lower is better): " + self.weights_text()

    def describe_levels(self) -> str:
        """`describe` followed by the cost and latency weights in words (`levels_text`)::

            User preference (weights; cost and latency: lower is better): outcome 1, cost 0.5, latency 0 (cost medium, latency none)
        """
        return f"{self.describe()} ({self.levels_text()})"

    #: Level words of a cost or latency weight relative to the outcome weight (upper bounds, exclusive;
    #: 0 is ``"none"``): the user's weights said in words, as the paper's preference instructions state a
    #: preference in language beside its vector (Sec. 3.3). Held-out vectors with other numbers read as
    #: the training vector of the same level.
    LEVELS: ClassVar[tuple[tuple[float, str], ...]] = ((0.25, "low"), (1.5, "medium"), (math.inf, "high"))

    @classmethod
    def level(cls, weight: float, outcome: float = 1.0) -> str:
        """The level word of `weight` relative to `outcome` (``"none"``, ``"low"``, ``"medium"``,
        ``"high"``; see `LEVELS`). A non-positive outcome weight counts as 1. Negative weights (the user
        wants more cost or latency) read ``"negative"``."""
        w = float(weight) / (float(outcome) if outcome > 0 else 1.0)
        if w == 0.0:
            return "none"
        if w < 0.0:
            return "negative"
        return next(word for bound, word in cls.LEVELS if w < bound)

    def levels_text(self) -> str:
        """The cost and latency weights in words: ``"cost medium, latency none"`` (`level`)."""
        return f"cost {self.level(self.cost, self.outcome)}, latency {self.level(self.latency, self.outcome)}"

    def weights_text(self) -> str:
        """The weights alone, as `describe` lists them: ``"outcome 1, cost 0.5, latency 0"`` (then
        the non-zero tool weights, tools sorted by name). The one rendering of P's numbers, used by
        the prompt line and by the warm start's demonstrator when it restates the preference."""
        parts = [f"outcome {self.outcome:g}", f"cost {self.cost:g}", f"latency {self.latency:g}"]
        parts += [f"{name} {w:g}" for name, w in sorted(self.tools.items()) if w]
        return ", ".join(parts)

    @classmethod
    def from_dict(cls, d: "dict[str, Any] | Preference | None") -> "Preference":
        """Build from a dict ``{"tools": {...}, "outcome", "cost", "latency"}``.

        Raises:
            ValueError: on an unknown key, a non-numeric or a non-finite (NaN, inf) weight (the
                message names the key).
        """
        if d is None:
            return cls()
        if isinstance(d, Preference):
            return d
        if not isinstance(d, dict):
            raise ValueError(f"preference must be a dict like {{'outcome': 1.0, 'cost': 0.5}}, got {type(d).__name__}")
        allowed = {"tools", "outcome", "cost", "latency"}
        unknown = set(d) - allowed
        if unknown:
            raise ValueError(f"unknown preference key(s) {sorted(unknown)}; allowed keys: {sorted(allowed)}")
        try:
            tools = {str(k): float(v) for k, v in (d.get("tools") or {}).items()}
            pref = cls(
                tools=tools,
                outcome=float(d.get("outcome", 1.0)),
                cost=float(d.get("cost", 0.0)),
                latency=float(d.get("latency", 0.0)),
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"preference weights must be numbers: {e}") from None
        weights = {"outcome": pref.outcome, "cost": pref.cost, "latency": pref.latency,
                   **{f"tools.{k}": v for k, v in pref.tools.items()}}
        bad = [k for k, v in weights.items() if not math.isfinite(v)]
        if bad:
            raise ValueError(f"preference weight(s) {bad} must be finite numbers (got NaN or infinity); "
                             "fix: give each weight a finite number, e.g. {'outcome': 1.0, 'cost': 0.5}")
        return pref


@dataclass
class Task:
    """One task an orchestrator must solve.

    Attributes:
        id: unique task id within its source (string).
        domain: source/domain name, e.g. ``"hle"``, ``"frames"``, ``"retail"``, ``"synthetic/railway"``.
        prompt: the problem statement (QA) or the user's request summary (function calling).
        answer: gold answer for QA tasks (None for function-calling tasks).
        category: task category used by simulated experts' accuracy tables (e.g. ``"math"``).
        difficulty: ``"easy"``, ``"medium"`` or ``"hard"`` (simulated experts' accuracy tables).
        golden_actions: tool calls that solve the task (tau2 ``evaluation_criteria.actions``).
        communicate_info: strings the agent must say to the user (tau2 ``communicate_info``).
        user_scenario: tau2/ToolScale user scenario: ``{"instructions": {"task_instructions",
            "reason_for_call", "known_info", "unknown_info", "domain"}, "persona": ...}``.
        initial_state: tau2 ``initial_state`` (initialization data/actions, message history).
        reward_basis: which tau2 checks make up the outcome (e.g. ``["DB", "COMMUNICATE"]``).
        metadata: everything else from the source row (kept for export).
    """

    id: str
    domain: str
    prompt: str = ""
    answer: str | None = None
    category: str = "general"
    difficulty: str = "medium"
    golden_actions: list[ToolCall] = field(default_factory=list)
    communicate_info: list[str] = field(default_factory=list)
    user_scenario: dict[str, Any] = field(default_factory=dict)
    initial_state: dict[str, Any] | None = None
    reward_basis: list[str] = field(default_factory=lambda: ["DB", "COMMUNICATE"])
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["golden_actions"] = [c.to_dict() for c in self.golden_actions]
        return d
