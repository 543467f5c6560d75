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

from collections.abc import Callable
from typing import Any, ClassVar

from orchestra_gym.domains.tau2.db import CowDB, render_json

__all__ = ["tool", "Tau2Toolkit", "ModelValidationError", "check_str_fields", "render_result"]

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


class ModelValidationError(ValueError):
    """A record failed tau2's model validation; the text reproduces pydantic 2.14's message."""


def check_str_fields(model_name: str, fields: list[tuple[str, Any, bool]]) -> None:
    """Validate string fields the way tau2's pydantic models do when a tool builds a model.

    Args:
        model_name: model class name used in the message (``Task``, ``UserAddress``).
        fields: ``(field name, value, optional)``; ``optional`` fields also accept None.

    Raises:
        ModelValidationError: with pydantic 2.14's text, e.g. ``1 validation error for Task\\ntitle\\n
        Input should be a valid string [type=string_type, input_value=25, input_type=int]\\n    For
        further information visit https://errors.pydantic.dev/2.14/v/string_type``.
    """
    bad = [(n, v) for n, v, opt in fields if not (isinstance(v, str) or (opt and v is None))]
    if not bad:
        return
    lines = [f"{len(bad)} validation error{'s' if len(bad) > 1 else ''} for {model_name}"]
    for name, value in bad:
        lines.append(name)
        lines.append(
            f"  Input should be a valid string [type=string_type, input_value={value!r}, "
            f"input_type={type(value).__name__}]"
        )
        lines.append("    For further information visit https://errors.pydantic.dev/2.14/v/string_type")
    raise ModelValidationError("\n".join(lines))


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
    _TOOLS: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found = {
            name: getattr(fn, "__tau2_tool_type__")
            for name, fn in vars(cls).items()
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
    def openai_schemas(cls) -> list[dict[str, Any]]:
        """``[{"type": "function", "function": {name, description, parameters}}, ...]`` exactly as tau2 sends."""
        import copy

        return [
            {"type": "function", "function": {"name": n, "description": d, "parameters": copy.deepcopy(p)}}
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
