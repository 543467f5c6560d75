"""Base of the tau2 toolkits: tool registry, call path and result rendering as tau2 v0.2.0 does them.

The call path follows tau2 v0.2.0's ``Environment.get_response`` (source: tau2-bench v0.2.0 and the
reference README in ``tau2_reference/``):

- ``requestor="user"`` in a domain without user tools -> ``Error: User tools not available``;
- a name that is not a tool -> ``Error: Tool '<name>' not found.`` (helpers such as ``assert_*``
  and private methods are not tools);
- otherwise the arguments go straight to the Python method as keywords, with no validation
  against the JSON schema (a v0.2.0 behaviour kept on purpose: wrong types reach the code and
  fail, or succeed, as they did in the benchmark);
- any exception becomes ``"Error: " + str(exception)`` with ``error=True``; Python's own
  ``TypeError`` texts for missing / unexpected keywords therefore name ``MockTools.<tool>()`` or
  ``RetailTools.<tool>()``, which is why the toolkit classes carry those names;
- a result is rendered as tau2's ``to_json_str``: a ``str`` as is, a bare number / bool as
  ``str(x)``, records (tau2's pydantic models, here plain dicts already in model field order) and
  lists of them as ``json.dumps(value, default=str)``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from orchestra_gym.domains import arith
from orchestra_gym.domains.tau2.db import CowDB, copy_json, render_json
from orchestra_gym.errors import OrchestraError

__all__ = [
    "tool", "Tau2Toolkit", "ModelValidationError", "Field", "validate_model", "check_str_fields", "render_result",
    "calculate_expression",
]

TOOL_TYPES = ("READ", "WRITE", "GENERIC", "THINK")


def tool(tool_type: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a toolkit method as a tool of tau2 type ``READ``, ``WRITE`` or ``GENERIC``.

    The method itself is returned unchanged (no wrapper), so Python's argument errors carry the
    method's qualified name exactly as in tau2.
    """
    if tool_type not in TOOL_TYPES:
        raise ValueError(f"tool_type must be one of {TOOL_TYPES}, got {tool_type!r}")

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__tau2_tool_type__ = tool_type  # type: ignore[attr-defined]
        return fn

    return mark


class ModelValidationError(OrchestraError, ValueError):
    """A record failed tau2's model validation; the text reproduces pydantic 2.14's message."""


_PYDANTIC_URL = "https://errors.pydantic.dev/2.14/v/"
_REQUIRED = object()


class Field:
    """One field of a tau2 pydantic model, for `validate_model`.

    ``kind``: ``"str"``, ``"int"``, ``"float"`` (pydantic's lax coercions: ``"122"`` and ``122.0``
    become the int 122, ``"100"`` the float 100.0) or ``"literal"`` (one of ``choices``).
    ``default``: the value when the field is absent; required when not given.
    ``optional``: None is also accepted.
    """

    __slots__ = ("name", "kind", "choices", "default", "optional")

    def __init__(self, name: str, kind: str, choices: Sequence[Any] = (), default: Any = _REQUIRED,
                 optional: bool = False):
        self.name, self.kind, self.choices, self.default, self.optional = name, kind, tuple(choices), default, optional


def _input_repr(value: Any) -> str:
    """pydantic-core's ``input_value``: the repr, cut to 25 + '...' + 24 characters when over 50."""
    r = repr(value)
    return r if len(r) <= 50 else f"{r[:25]}...{r[-24:]}"


def _coerce(field: Field, value: Any) -> tuple[Any, tuple[str, str] | None]:
    """``(value, None)`` or ``(None, (error type, message))`` under pydantic 2.14's lax rules."""
    kind = field.kind
    if value is None and field.optional:
        return None, None
    if kind == "str":
        return (value, None) if isinstance(value, str) else (None, ("string_type", "Input should be a valid string"))
    if kind == "literal":
        if any(type(value) is type(c) and value == c for c in field.choices):
            return value, None
        names = [repr(c) for c in field.choices]
        text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        return None, ("literal_error", f"Input should be {text}")
    if kind == "int":
        if isinstance(value, int):
            return int(value), None
        if isinstance(value, float):
            if value.is_integer():
                return int(value), None
            return None, ("int_from_float", "Input should be a valid integer, got a number with a fractional part")
        if isinstance(value, str):
            try:
                return int(value.strip()), None
            except ValueError:
                return None, ("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
        return None, ("int_type", "Input should be a valid integer")
    if kind == "float":
        if isinstance(value, (int, float)):
            return float(value), None
        if isinstance(value, str):
            try:
                return float(value.strip()), None
            except ValueError:
                return None, ("float_parsing", "Input should be a valid number, unable to parse string as a number")
        return None, ("float_type", "Input should be a valid number")
    raise ValueError(f"Field {field.name!r}: unknown kind {kind!r}; use str, int, float or literal")


def validate_model(model_name: str, values: dict[str, Any], fields: Sequence[Field]) -> dict[str, Any]:
    """Validate ``values`` as tau2's pydantic model ``model_name`` would (pydantic 2.14, lax mode).

    Returns the record in model field order with coerced values and defaults; unknown keys are
    dropped (pydantic's ``extra="ignore"``).

    Raises:
        ModelValidationError: pydantic's text, e.g. ``1 validation error for Passenger\ndob\n  Field
        required [type=missing, input_value={...}, input_type=dict]\n    For further information
        visit https://errors.pydantic.dev/2.14/v/missing``.
    """
    out: dict[str, Any] = {}
    errors: list[tuple[str, str, str, Any]] = []
    for f in fields:
        if f.name not in values:
            if f.default is _REQUIRED:
                errors.append((f.name, "missing", "Field required", values))
            else:
                out[f.name] = f.default
            continue
        value, err = _coerce(f, values[f.name])
        if err is None:
            out[f.name] = value
        else:
            errors.append((f.name, err[0], err[1], values[f.name]))
    if errors:
        lines = [f"{len(errors)} validation error{'s' if len(errors) > 1 else ''} for {model_name}"]
        for loc, etype, msg, value in errors:
            lines.append(loc)
            lines.append(f"  {msg} [type={etype}, input_value={_input_repr(value)}, input_type={type(value).__name__}]")
            lines.append(f"    For further information visit {_PYDANTIC_URL}{etype}")
        raise ModelValidationError("\n".join(lines))
    return out


def check_str_fields(model_name: str, fields: list[tuple[str, Any, bool]]) -> None:
    """Validate string fields the way tau2's pydantic models do when a tool builds a model.

    Args:
        model_name: model class name used in the message (``Task``, ``UserAddress``).
        fields: ``(field name, value, optional)``; ``optional`` fields also accept None.

    Raises:
        ModelValidationError: with pydantic 2.14's text (see `validate_model`).
    """
    validate_model(model_name, {n: v for n, v, _ in fields}, [Field(n, "str", optional=opt) for n, _, opt in fields])


_CALC_CHARS = frozenset("0123456789+-*/(). ")
_MAX_EXPONENT = 10_000
_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow,
}


def _arith(node: ast.AST, until: float) -> Any:
    """Evaluate an arithmetic expression tree with Python's own operators (so Python's error texts).

    Only nodes that the character filter lets through can occur: constants, + - * / // **,
    unary signs and the empty tuple ``()``. Work is bounded by `arith.check_binop` (integer
    results of at most `arith.MAX_RESULT_BITS` bits, `until` the deadline).
    """
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        v = _arith(node.operand, until)
        return +v if isinstance(node.op, ast.UAdd) else -v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _arith(node.left, until), _arith(node.right, until)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > _MAX_EXPONENT \
                and isinstance(left, (int, float)) and abs(left) > 1:
            raise ValueError("Exponent too large")
        arith.check_binop(node.op, left, right, until)
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Tuple):
        return tuple(_arith(e, until) for e in node.elts)
    raise ValueError("Invalid expression")


def calculate_expression(expression: str) -> str:
    """tau2's ``calculate`` tool (retail and airline): ``str(round(float(value), 2))`` of ``+ - * / ( ) .`` arithmetic.

    Same character filter and error texts as tau2 (Python's ``SyntaxError`` / ``ZeroDivisionError``
    texts); the tree is evaluated with Python's operators, not ``eval``. Unlike tau2, exponents
    above 10000, integer results above `arith.MAX_RESULT_BITS` bits and evaluations past
    `arith.MAX_EVAL_S` seconds are refused instead of hanging the process (such numbers could never
    be the float answer: tau2 would fail on them too, later).

    Raises:
        ValueError: ``Invalid characters in expression``; `arith.ArithmeticLimitError` (a
        ValueError) for a result or an evaluation over the bounds; TypeError for a non-string (a
        number fails on iteration, ``'int' object is not iterable``, exactly as in tau2);
        SyntaxError / ZeroDivisionError as Python raises them.
    """
    if not all(ch in _CALC_CHARS for ch in expression):
        raise ValueError("Invalid characters in expression")
    value = _arith(ast.parse(expression, "<string>", "eval").body, arith.deadline())
    return str(round(float(value), 2))


def render_result(result: Any) -> str:
    """tau2 v0.2.0 ``to_json_str`` for the values our tools return.

    ``str`` -> itself; ``bool`` / ``int`` / ``float`` -> ``str(x)``; records (dicts) and lists of
    records -> ``json.dumps(value, default=str)`` (separators ``", "`` / ``": "``, ASCII-escaped,
    keys in model field order). Our tools never return plain dicts with bare numbers at the top
    level, so every dict is treated as a model dump.
    """
    if isinstance(result, str):
        return result
    if isinstance(result, (bool, int, float)):
        return str(result)
    if isinstance(result, (list, tuple)):
        result = [str(x) if isinstance(x, (bool, int, float)) else x for x in result]
    return render_json(result)


class Tau2Toolkit:
    """One domain's agent tools over a `CowDB`.

    Subclasses define tools as methods marked with `tool` and a class attribute ``SCHEMAS``
    (name -> (tool_type, description, parameters)) in the order tau2 lists them.

    Attributes:
        db: the episode's database view.
    """

    SCHEMAS: ClassVar[dict[str, tuple[str, str, dict[str, Any]]]] = {}
    #: tau2 v1.0.1's ``mutates_state`` where it differs from its default (True for WRITE tools
    #: only): tool name -> bool. Only mutating calls are re-run when a message history is replayed.
    MUTATES_STATE: ClassVar[dict[str, bool]] = {}
    _TOOLS: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found = {  # tools of the class and its bases (a later version's toolkit extends an earlier one)
            name: getattr(fn, "__tau2_tool_type__")
            for klass in reversed(cls.__mro__) for name, fn in vars(klass).items()
            if callable(fn) and hasattr(fn, "__tau2_tool_type__")
        }
        if cls.SCHEMAS:
            missing = set(cls.SCHEMAS) ^ set(found)
            if missing:
                raise TypeError(f"{cls.__name__}: tools and SCHEMAS differ on {sorted(missing)}")
            for name, (ttype, _, _) in cls.SCHEMAS.items():
                if found[name] != ttype:
                    raise TypeError(f"{cls.__name__}.{name}: tool type {found[name]} != schema type {ttype}")
            cls._TOOLS = {name: cls.SCHEMAS[name][0] for name in cls.SCHEMAS}

    def __init__(self, db: CowDB):
        self.db = db

    @classmethod
    def tool_names(cls) -> list[str]:
        """Tool names in tau2's order."""
        return list(cls._TOOLS)

    @classmethod
    def tool_type(cls, name: str) -> str | None:
        """``READ`` / ``WRITE`` / ``GENERIC`` for a tool, None for a name that is not a tool."""
        return cls._TOOLS.get(name)

    @classmethod
    def mutates_state(cls, name: str) -> bool:
        """tau2 v1.0.1 ``tool_mutates_state``: `MUTATES_STATE`, else True for WRITE tools (False for
        names that are not tools)."""
        if name not in cls._TOOLS:
            return False
        return cls.MUTATES_STATE.get(name, cls._TOOLS[name] == "WRITE")

    @classmethod
    def openai_schemas(cls) -> list[dict[str, Any]]:
        """``[{"type": "function", "function": {name, description, parameters}}, ...]`` exactly as tau2 sends."""
        return [
            {"type": "function", "function": {"name": n, "description": d, "parameters": copy_json(p)}}
            for n, (_, d, p) in cls.SCHEMAS.items()
        ]

    def invoke(self, name: str, arguments: Any) -> tuple[str, bool]:
        """Run one tool call; returns ``(content, error)`` as tau2 renders them. Never raises."""
        if name not in self._TOOLS:
            return f"Error: Tool '{name}' not found.", True
        try:
            if not isinstance(arguments, dict):
                raise TypeError(f"{type(self).__name__}.{name}() argument after ** must be a mapping, "
                                f"not {type(arguments).__name__}")
            result = getattr(self, name)(**arguments)
            if type(result) is dict:
                cached = self.db.snapshot.rendered(result)
                if cached is not None:
                    return cached, False
            return render_result(result), False
        except Exception as e:  # noqa: BLE001 - tau2 turns every tool exception into an error message
            return f"Error: {e}", True
