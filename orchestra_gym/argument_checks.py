"""Checks on the values a model hands over, where they enter: text scrubbed, argument nesting bounded.

One job: make any value from a model's output safe to keep, encode and show. `scrub_text` replaces
lone UTF-16 surrogates (which no UTF-8 encoder accepts) by U+FFFD; `MAX_ARGUMENT_DEPTH` bounds how
deep a call's arguments may nest (`_deeper_than` answers it without recursion); `_safe_repr` writes
any value as bounded text; `_json_type` names a value's JSON type for error texts.
`orchestra_gym.parsing` applies them to every action (and re-exports the public names).
"""

from __future__ import annotations

import json
import re
import reprlib
from typing import Any, Iterable

__all__ = ["MAX_ARGUMENT_DEPTH", "scrub_text"]

# Deepest nesting of a call's "arguments" (objects/arrays; the arguments object is level 1). Real
# tool schemas nest 3-4 levels; the limit stays far below Python's recursion limit (1000) so that
# json.dumps, copy.deepcopy and the tools never recurse out of the stack.
MAX_ARGUMENT_DEPTH = 32


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def scrub_text(value: Any) -> Any:
    """`value` with every lone UTF-16 surrogate (U+D800..U+DFFF) in its strings replaced by U+FFFD.

    Strings, and the keys and values of dicts, lists and tuples (recursively), are scrubbed;
    other values are returned as they are. Such code points cannot be encoded as UTF-8, so one
    of them in a request body, a cache key or a log line would raise ``UnicodeEncodeError``.
    """
    if isinstance(value, str):
        return _SURROGATE_RE.sub("\ufffd", value) if _SURROGATE_RE.search(value) else value
    if isinstance(value, dict):
        return {scrub_text(k): scrub_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_text(v) for v in value)
    return value


def _deeper_than(obj: Any, limit: int) -> bool:
    """True when `obj` nests dicts/lists/tuples more than `limit` levels (iterative: any depth,
    cycles included, is answered without recursion)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children: Iterable[Any] = v.values()
        elif isinstance(v, (list, tuple)):
            children = v
        else:
            continue
        if d > limit:
            return True
        stack.extend((c, d + 1) for c in children)
    return False


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 8, 200, 200


def _safe_repr(v: Any) -> str:
    """JSON text of `v` when it is shallow enough, else a bounded `reprlib` form (never raises)."""
    try:
        if not _deeper_than(v, MAX_ARGUMENT_DEPTH + 2):
            return scrub_text(json.dumps(v, ensure_ascii=False, default=repr))
    except Exception:
        pass
    try:
        return scrub_text(_REPR.repr(v))
    except Exception:
        return f"<unprintable {type(v).__name__}>"
