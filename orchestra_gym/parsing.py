"""Model text <-> actions: the Qwen3 / Hermes tool-call format.

An orchestrator's turn is plain text. This module turns it into a `ParsedAction` (tool calls, a
message to the user, the model's thinking, and errors) and back (`render_tool_calls`,
`render_action`).

Format (Qwen3 chat template, itself the Hermes function-calling format)::

    <think>free reasoning, may mention <tool_call> without effect</think>
    <tool_call>
    {"name": "get_order_details", "arguments": {"order_id": "#W123"}}
    </tool_call>
    <tool_call>
    {"name": "call_expert", "arguments": {"expert": "gpt-5"}}
    </tool_call>
    <message>Your order has been cancelled.</message>

Rules (each one is a test in ``tests/gym/test_parsing.py``):

* ``<think>...</think>`` is thinking. Everything inside it, including ``<tool_call>`` blocks, is
  *not* an action. An unclosed ``<think>`` is an error (and ``truncated=True``).
* Each ``<tool_call>`` block holds one JSON object ``{"name": str, "arguments": object}``
  (optional ``"id": str``). The block ends at the first ``</tool_call>`` that lies *outside* a
  JSON string: tags or braces inside JSON strings never end a call. ``"arguments"`` may be a
  JSON string that itself decodes to an object (some models double-encode); a list, number,
  boolean or null is an error. A missing ``"arguments"`` means ``{}``; ``"parameters"`` is
  accepted in its place (Llama-style output).
* Several JSON objects in one block (or a JSON array of call objects) give several calls, in
  order. This is accepted rather than rejected because the meaning is unambiguous.
* Several blocks give several calls, in text order; text between blocks is ignored (it is kept
  in `ParsedAction.text`).
* A last ``<tool_call>`` block with no closing tag at the end of the text (a sampler that stops
  on ``</tool_call>`` and drops the stop string, or a token limit) is parsed as far as it goes:
  a complete JSON object is a valid call and ``truncated=True``; an incomplete one is an error.
* ``<message>...</message>`` is text for the user. Its content is free text, not JSON: it ends
  at the first ``</message>``. Several message blocks are joined with a blank line. An
  unclosed ``<message>`` at the end of the text is accepted with ``truncated=True``.
* A message together with tool calls is allowed: the environment executes the calls first, in
  order, and then delivers the message.
* Plain text with no tags (after any thinking) is a message to the user when
  ``plain_text_as_message=True`` (the default: chat environments treat an untagged reply as
  talking to the user, as Qwen3 does), else an error.
* Stray closing tags (``</tool_call>``, ``</message>``, ``</think>`` with no opening tag) and a
  block interrupted by another tag (``<tool_call>{...}<message>``) are errors.

Error texts name the problem, where it is (``tool call 2``), and the expected format, because
the environment shows them to the policy as an observation.

Structured actions are accepted too: a call dict ``{"name", "arguments"[, "id"]}``, an OpenAI
``{"type": "function", "function": {...}}`` entry, a list of those, ``{"message": str}``, or
``{"tool_calls": [...], "message": str}``. Bad structured actions are errors, never exceptions.

Text is scrubbed where it enters (`scrub_text`): a lone UTF-16 surrogate (``"\\ud800"``, which
no UTF-8 encoder accepts) becomes U+FFFD in the raw text, tool names, arguments, ids and
messages, so one bad call never breaks the conversation's later requests or the cache.

Arguments may nest at most `MAX_ARGUMENT_DEPTH` levels (objects and arrays counted alike, the
``arguments`` object itself being level 1); deeper arguments, in text or structured actions, make
the call an error (so no deep JSON ever reaches a tool, the cache or ``json.dumps``). Like every
malformed action, such a step still counts as a turn and as a parse error.

Source: Qwen3 chat template (``<tool_call>\\n{json}\\n</tool_call>``, ``<think>``), Hermes
function-calling format (NousResearch); ToolOrchestra (arXiv 2511.21689), whose orchestrator
turn is reasoning followed by tool calls, and whose tau2 agents also send messages to a user.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from orchestra_gym.argument_checks import MAX_ARGUMENT_DEPTH, _deeper_than, _json_type, _safe_repr, scrub_text
from orchestra_gym.types import ToolCall

__all__ = [
    "FORMAT_HINT",
    "MAX_ARGUMENT_DEPTH",
    "ParsedAction",
    "parse_action",
    "render_tool_calls",
    "render_action",
    "scrub_text",
]

FORMAT_HINT = (
    'Expected format: optional <think>...</think>, then one or more '
    '<tool_call>{"name": "<tool name>", "arguments": {<JSON object>}}</tool_call> blocks, '
    "and/or <message>text for the user</message>."
)

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_CALL_OPEN, _CALL_CLOSE = "<tool_call>", "</tool_call>"
_MSG_OPEN, _MSG_CLOSE = "<message>", "</message>"
_TAGS = (_THINK_OPEN, _THINK_CLOSE, _CALL_OPEN, _CALL_CLOSE, _MSG_OPEN, _MSG_CLOSE)
_TAG_RE = re.compile("|".join(re.escape(t) for t in _TAGS))
# Outside a JSON string only these characters matter to the scanner ('<' may start a tag).
_JSON_OUTSIDE_RE = re.compile(r'["{}\[\]<]')
# Inside a JSON string only the closing quote and the escape character matter.
_JSON_INSIDE_RE = re.compile(r'["\\]')
_WS = " \t\r\n"
_DECODER = json.JSONDecoder()


@dataclass
class ParsedAction:
    """One orchestrator turn, parsed.

    Attributes:
        tool_calls: the calls, in the order the environment must execute them. Ids are the
            ``"id"`` the model wrote, else ``call_<i>`` with ``i`` the call's index in this list.
        message: text for the user (from ``<message>`` blocks, or plain text when allowed), or
            None. With tool calls present, the message is delivered after the calls.
        thinking: the content of ``<think>`` blocks (each stripped, joined with a blank line), or None.
        errors: problems found, each naming where and how to fix it. Non-empty means the action
            is not well-formed; the environment answers with these texts and counts an error.
        truncated: the text ended inside an open block (``<tool_call>``, ``<message>`` or
            ``<think>`` with no closing tag).
        raw: the model text (for a structured action: the equivalent model text, see
            `render_action`).
        text: non-whitespace text outside every block, stripped (e.g. "Let me check.").
    """

    tool_calls: list[ToolCall] = field(default_factory=list)
    message: str | None = None
    thinking: str | None = None
    errors: list[str] = field(default_factory=list)
    truncated: bool = False
    raw: str = ""
    text: str = ""

    @property
    def valid(self) -> bool:
        """True when there are no errors and at least one call or a message."""
        return not self.errors and (bool(self.tool_calls) or self.message is not None)

    def error_text(self, max_errors: int = 10) -> str:
        """The errors as one observation for the policy ("" when there are none).

        At most `max_errors` are listed (then "... and N more"), so that a long garbled output
        cannot flood the context.
        """
        if not self.errors:
            return ""
        lines = [f"Your last output could not be executed ({len(self.errors)} problem(s)):"]
        lines += [f"- {e}" for e in self.errors[:max_errors]]
        if len(self.errors) > max_errors:
            lines.append(f"- ... and {len(self.errors) - max_errors} more")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for trajectories (``raw`` left out: it is the assistant message)."""
        return {
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "message": self.message,
            "thinking": self.thinking,
            "errors": list(self.errors),
            "truncated": self.truncated,
            "text": self.text,
            "valid": self.valid,
        }


# --------------------------------------------------------------------------------------------
# text -> action


def parse_action(
    action: "str | dict | list | ToolCall",
    *,
    plain_text_as_message: bool = True,
    think_open: bool = False,
) -> ParsedAction:
    """Parse one orchestrator turn into tool calls, a message and thinking.

    Args:
        action: the model's text; or a structured action (see module docstring): a call dict,
            a list of call dicts / `ToolCall` objects, ``{"message": str}`` or
            ``{"tool_calls": [...], "message": str}``.
        plain_text_as_message: treat untagged text (when there is no call, no message and no
            error) as a message to the user. If False, such text is an error.
        think_open: the prompt already opened a ``<think>`` block (chat templates whose
            generation prompt ends in ``<think>\\n``): the text up to the first ``</think>`` is
            thinking. Without it, a ``</think>`` with no ``<think>`` is a stray-tag error.

    Returns:
        A `ParsedAction`. Never raises on any input: every problem becomes an entry of
        ``errors`` (text for the policy naming the problem and the expected format).
    """
    try:
        if isinstance(action, str):
            return _parse_text(scrub_text(action), plain_text_as_message, think_open)
        return _parse_structured(action)
    except Exception as e:  # pragma: no cover - defensive: a parser bug must not crash an episode
        raw = scrub_text(action) if isinstance(action, str) else _safe_repr(action)
        return ParsedAction(raw=raw, errors=[f"internal parser error ({type(e).__name__}: {e}). {FORMAT_HINT}"])


def _parse_text(text: str, plain_text_as_message: bool, think_open: bool) -> ParsedAction:
    out = ParsedAction(raw=text)
    thinking: list[str] = []
    messages: list[str] = []
    loose: list[str] = []
    pos = 0
    n = len(text)

    if think_open:
        end = text.find(_THINK_CLOSE)
        if end < 0:
            out.thinking = text.strip()
            out.truncated = True
            out.errors.append(
                "the thinking block is not closed: end your reasoning with </think> before any "
                f"tool call or message. {FORMAT_HINT}"
            )
            return out
        thinking.append(text[:end].strip())
        pos = end + len(_THINK_CLOSE)

    while pos < n:
        m = _TAG_RE.search(text, pos)
        if m is None:
            loose.append(text[pos:])
            break
        loose.append(text[pos : m.start()])
        tag = m.group()
        body = m.end()
        if tag == _THINK_OPEN:
            end = text.find(_THINK_CLOSE, body)
            if end < 0:
                thinking.append(text[body:].strip())
                out.truncated = True
                out.errors.append(
                    "<think> is not closed: end your reasoning with </think>; tool calls inside "
                    f"an open <think> block are not executed. {FORMAT_HINT}"
                )
                pos = n
            else:
                thinking.append(text[body:end].strip())
                pos = end + len(_THINK_CLOSE)
        elif tag == _CALL_OPEN:
            pos = _parse_call_block(text, body, out)
        elif tag == _MSG_OPEN:
            end = text.find(_MSG_CLOSE, body)
            if end < 0:
                content = text[body:]
                out.truncated = True
                stray = [t for t in (_CALL_CLOSE, _THINK_CLOSE) if t in content]
                if stray:
                    out.errors.append(
                        f"<message> is closed by {stray[0]}: mismatched tags; close a message with "
                        f"</message>. {FORMAT_HINT}"
                    )
                messages.append(content.strip())
                pos = n
            else:
                messages.append(text[body:end].strip())
                pos = end + len(_MSG_CLOSE)
        else:  # a closing tag with no opening tag
            opener = "<" + tag[2:]
            out.errors.append(
                f"stray {tag} at character {m.start()} with no matching {opener}: mismatched tags. "
                f"{FORMAT_HINT}"
            )
            pos = body

    if thinking:
        out.thinking = "\n\n".join(thinking)
    out.text = "\n".join(s.strip() for s in loose if s.strip())
    if messages:
        out.message = "\n\n".join(messages)
        if not out.message.strip():
            out.errors.append(f"empty <message>: write the text for the user between the tags. {FORMAT_HINT}")
    if not out.tool_calls and out.message is None and not out.errors:
        if out.text and plain_text_as_message:
            out.message = out.text
        elif out.text:
            out.errors.append(f"no tool call or message found (plain text is not an action here). {FORMAT_HINT}")
        else:
            out.errors.append(f"empty action: no tool call and no message (only whitespace or thinking). {FORMAT_HINT}")
    return out


def _scan_json_block(text: str, start: int) -> tuple[int, int, int | None, int]:
    """Find where a ``<tool_call>`` block that opens at `start` ends, JSON-aware.

    Returns ``(content_end, next_pos, tag_start, depth)``: the block's content is
    ``text[start:content_end]``; parsing resumes at ``next_pos``; ``tag_start`` is the index of
    the ``</tool_call>`` that closed the block, or None when the block is not closed (end of
    text, or another tag interrupted it); ``depth`` is the open-brace/bracket count at the end.
    Tags are recognised only outside JSON strings ('<' is never valid JSON outside a string).
    """
    n = len(text)
    i = start
    depth = 0
    while True:
        m = _JSON_OUTSIDE_RE.search(text, i)
        if m is None:
            return n, n, None, depth
        c = m.group()
        if c == '"':
            j = m.end()
            while True:
                s = _JSON_INSIDE_RE.search(text, j)
                if s is None:  # unterminated string: the first close tag after its quote ends the block
                    k = text.find(_CALL_CLOSE, m.start())
                    if k >= 0:
                        return k, k + len(_CALL_CLOSE), k, depth
                    return n, n, None, depth
                if s.group() == "\\":
                    j = s.end() + 1
                    continue
                i = s.end()
                break
        elif c in "{[":
            depth += 1
            i = m.end()
        elif c in "}]":
            depth -= 1
            i = m.end()
        else:  # '<'
            p = m.start()
            if text.startswith(_CALL_CLOSE, p):
                return p, p + len(_CALL_CLOSE), p, depth
            t = _TAG_RE.match(text, p)
            if t is not None:  # another tag interrupts the block: resume parsing at that tag
                return p, p, None, depth
            i = m.end()


def _parse_call_block(text: str, start: int, out: ParsedAction) -> int:
    """Parse the ``<tool_call>`` block whose content starts at `start`; return where to resume."""
    content_end, next_pos, close_at, depth = _scan_json_block(text, start)
    content = text[start:content_end]
    first = len(out.tool_calls) + 1  # 1-based number of this block's first call, for errors
    where = f"tool call {first}"
    if close_at is None:
        if content_end >= len(text):
            out.truncated = True
        else:
            tag = _TAG_RE.match(text, content_end)
            out.errors.append(
                f"{where}: <tool_call> is not closed before {tag.group() if tag else 'the next tag'}: "
                f"end each call with </tool_call>. {FORMAT_HINT}"
            )
            # still decode what is there so that the policy hears about JSON errors too
    objs, err = _decode_objects(content, depth)
    if err is not None:
        out.errors.append(f"{where}: {err} {FORMAT_HINT}")
    if not objs and err is None:
        out.errors.append(f"{where}: empty <tool_call> block; put one JSON object inside it. {FORMAT_HINT}")
    for obj in objs:
        items = obj if isinstance(obj, list) else [obj]
        if isinstance(obj, list) and not obj:
            out.errors.append(f"{where}: empty JSON array in <tool_call>; put one call object inside. {FORMAT_HINT}")
        _add_calls(out, items, FORMAT_HINT)
    return next_pos


def _add_calls(out: ParsedAction, items: Iterable[Any], hint: str) -> None:
    """Validate call objects in order; append good ones (id default = list position), report bad ones."""
    for item in items:
        call, err = _call_from_obj(item, len(out.tool_calls))
        if err is not None:
            out.errors.append(f"tool call {len(out.tool_calls) + 1}: {err} {hint}")
        else:
            out.tool_calls.append(call)


def _decode_objects(content: str, depth: int) -> tuple[list[Any], str | None]:
    """Decode whitespace-separated JSON values from a block's content."""
    objs: list[Any] = []
    i = _skip_ws(content, 0)
    n = len(content)
    while i < n:
        try:
            obj, end = _DECODER.raw_decode(content, i)
        except json.JSONDecodeError as e:
            hint = ""
            if depth > 0:
                hint = f" {depth} closing brace(s)/bracket(s) are missing."
            elif depth < 0:
                hint = f" there are {-depth} closing brace(s)/bracket(s) too many."
            return objs, f"invalid JSON ({e.msg} at line {e.lineno} column {e.colno}: {_snippet(content, e.pos)}).{hint}"
        except RecursionError:
            return objs, "invalid JSON (nested too deeply)."
        objs.append(obj)
        i = _skip_ws(content, end)
    return objs, None


def _call_from_obj(obj: Any, index: int) -> tuple[ToolCall | None, str | None]:
    """Validate one decoded call object; `index` is its position in the action (for the id)."""
    if isinstance(obj, ToolCall):
        obj = {"name": obj.name, "arguments": obj.arguments, "id": obj.id}
    if not isinstance(obj, dict):
        return None, f"a call must be a JSON object with \"name\" and \"arguments\", got {_json_type(obj)}."
    if "function" in obj and "name" not in obj and isinstance(obj["function"], dict):  # OpenAI entry
        fn = obj["function"]
        obj = {"name": fn.get("name"), "arguments": fn.get("arguments", {}), **({"id": obj["id"]} if "id" in obj else {})}
    if "name" not in obj:
        return None, 'the call object has no "name" key; write {"name": "<tool name>", "arguments": {...}}.'
    name = obj["name"]
    if not isinstance(name, str) or not name:
        return None, f'"name" must be a non-empty string (the tool name), got {_json_type(name)}.'
    if "arguments" in obj:
        args = obj["arguments"]
    elif "parameters" in obj:  # some models write Llama-style "parameters"
        args = obj["parameters"]
    else:
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except (json.JSONDecodeError, RecursionError):
            return None, (
                f'"arguments" of {name!r} is a string that is not valid JSON; '
                'give a JSON object like {"order_id": "#W1"}.'
            )
        if not isinstance(args, dict):
            return None, (
                f'"arguments" of {name!r} is a JSON string holding {_json_type(args)}; '
                'it must be a JSON object like {"order_id": "#W1"}.'
            )
    if not isinstance(args, dict):
        return None, (
            f'"arguments" of {name!r} must be a JSON object like {{"order_id": "#W1"}}, got {_json_type(args)}; '
            "use {} for a tool without arguments."
        )
    if _deeper_than(args, MAX_ARGUMENT_DEPTH):
        return None, (
            f'"arguments" of {name!r} nest more than {MAX_ARGUMENT_DEPTH} levels deep; '
            "tool arguments are flat objects of a few levels at most."
        )
    name, args = scrub_text(name), scrub_text(args)
    if "id" in obj:
        cid = obj["id"]
        if not isinstance(cid, str):
            return None, f'"id" of {name!r} must be a string, got {_json_type(cid)}; or leave it out.'
    else:
        cid = f"call_{index}"
    return ToolCall(name=name, arguments=args, id=scrub_text(cid)), None


def _parse_structured(action: Any) -> ParsedAction:
    out = ParsedAction()
    hint = (
        'A structured action is a call {"name": str, "arguments": dict}, a list of calls, '
        '{"message": str}, or {"tool_calls": [...], "message": str}.'
    )
    calls_in: list[Any] = []
    message: Any = None
    if isinstance(action, (list, tuple)):
        calls_in = list(action)
        if not calls_in:
            out.errors.append(f"empty list of tool calls. {hint}")
    elif isinstance(action, ToolCall):
        calls_in = [action]
    elif isinstance(action, dict):
        if ("name" in action or "function" in action) and ("message" in action or "tool_calls" in action):
            out.errors.append(f"a call dict cannot also carry \"message\" or \"tool_calls\". {hint}")
        elif "name" in action or "function" in action:
            calls_in = [action]
        elif "message" in action or "tool_calls" in action:
            unknown = sorted(set(map(str, action)) - {"message", "tool_calls"})
            if unknown:
                out.errors.append(f"unknown key(s) {unknown} in structured action. {hint}")
            message = action.get("message")
            tc = action.get("tool_calls") or []
            if not isinstance(tc, (list, tuple)):
                out.errors.append(f'"tool_calls" must be a list of calls, got {type(tc).__name__}. {hint}')
                tc = []
            calls_in = list(tc)
            if message is not None and not isinstance(message, str):
                out.errors.append(f'"message" must be a string, got {type(message).__name__}. {hint}')
                message = None
            if message is None and not calls_in and not out.errors:
                out.errors.append(f"structured action has neither a message nor tool calls. {hint}")
        else:
            keys = sorted(map(str, action))[:10]
            out.errors.append(f"structured action with keys {keys} is not an action. {hint}")
    else:
        out.errors.append(f"an action must be text or a dict/list, got {type(action).__name__}. {hint}")
    _add_calls(out, calls_in, hint)
    out.message = scrub_text(message)
    out.raw = render_action(out.tool_calls, message=out.message) if not out.errors else _safe_repr(action)
    return out


# --------------------------------------------------------------------------------------------
# action -> text


def render_tool_calls(calls: Iterable[ToolCall]) -> str:
    """Render calls as model text: ``<tool_call>\\n{json}\\n</tool_call>`` blocks joined by newlines.

    The inverse of `parse_action` for calls: ``parse_action(render_tool_calls(cs)).tool_calls ==
    cs`` for any names, JSON-serialisable argument dicts (finite floats) and ids. The ``"id"``
    key is written only when it differs from the default ``call_<i>`` (i = position), so the
    text of id-less calls is exactly what Qwen3's chat template produces.

    Raises:
        TypeError: an argument value is not JSON-serialisable.
    """
    blocks = []
    for i, c in enumerate(calls):
        obj: dict[str, Any] = {"name": c.name, "arguments": c.arguments}
        if c.id != f"call_{i}":
            obj["id"] = c.id
        blocks.append(f"{_CALL_OPEN}\n{json.dumps(obj, ensure_ascii=False)}\n{_CALL_CLOSE}")
    return "\n".join(blocks)


def render_action(calls: Iterable[ToolCall] = (), message: str | None = None, thinking: str | None = None) -> str:
    """Render a whole turn: ``<think>`` (if given), the tool calls, then ``<message>`` (if given).

    ``parse_action(render_action(cs, m)).tool_calls == cs`` and ``.message == m.strip()`` hold
    when `m` does not contain ``</message>`` and `thinking` does not contain ``</think>``.
    """
    parts = []
    if thinking is not None:
        parts.append(f"{_THINK_OPEN}{thinking}{_THINK_CLOSE}")
    rendered = render_tool_calls(calls)
    if rendered:
        parts.append(rendered)
    if message is not None:
        parts.append(f"{_MSG_OPEN}{message}{_MSG_CLOSE}")
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------
# helpers


def _skip_ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


def _snippet(s: str, pos: int, width: int = 20) -> str:
    lo, hi = max(0, pos - width), min(len(s), pos + width)
    frag = s[lo:hi].replace("\n", "\\n")
    return f"near {frag!r}" if frag else "at the end of the block"
