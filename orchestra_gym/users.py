"""User simulators for function-calling environments.

`ScriptedUser` is the offline default: deterministic rules over the task's user scenario (tau2 /
ToolScale schema: ``user_scenario.instructions`` with ``reason_for_call``, ``known_info``,
``unknown_info``, ``task_instructions``). It opens with the request and what the user knows,
answers confirmation questions with yes, gives its known information when asked, and ends the
conversation with tau2's stop token when the agent says the job is done.

Stop tokens follow tau2-bench's user simulator: ``###STOP###`` (done), ``###TRANSFER###``
(transferred to a human), ``###OUT-OF-SCOPE###`` (the scenario does not cover the question).

Dual control (tau2's telecom domain): the user also has tools of their own (their phone). Both
simulators then get an ``act(name, arguments) -> ToolResult`` callback from the environment: the
LLM user sees the tools and calls them itself; the scripted user recognises the agent's requests
through the domain's `UserToolRequest` table, carries out one action per turn and reports what
the tool showed (tau2's guidelines: one action at a time, answers grounded in tool output).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from orchestra_gym.errors import ConfigError

__all__ = ["ScriptedUser", "LLMUser", "UserReply", "UserToolRequest", "STOP", "TRANSFER", "OUT_OF_SCOPE",
           "scenario_fields"]

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"

_DONE = re.compile(
    r"\b(anything else|is there anything more|have a (great|nice|good) day|all set|request (is|has been) (complete|completed|done))\b",
    re.I,
)
_CONFIRM = re.compile(
    r"\b(confirm|proceed|go ahead|shall i|should i|would you like me to|do you want me to|is that (ok|okay|correct|right))\b|\(yes/no\)|\byes or no\b",
    re.I,
)
_TRANSFERRED = re.compile(r"\b(transfer(red|ring)? you|human agent|connect you (to|with))\b", re.I)


def scenario_fields(user_scenario: dict[str, Any]) -> dict[str, str]:
    """Flatten a tau2/ToolScale user scenario into ``reason_for_call``, ``known_info``,
    ``unknown_info``, ``task_instructions`` strings (missing fields become ``""``)."""
    instr = user_scenario.get("instructions", user_scenario) if isinstance(user_scenario, dict) else {}
    if isinstance(instr, str):
        return {"reason_for_call": instr, "known_info": "", "unknown_info": "", "task_instructions": instr}
    return {k: str(instr.get(k) or "") for k in ("reason_for_call", "known_info", "unknown_info", "task_instructions")}


@dataclass(frozen=True)
class UserToolRequest:
    """How the scripted user recognises a request to use one of its own tools.

    Attributes:
        tool: the user tool's name (an explicit mention of the name, e.g. ```toggle_data```, also counts).
        patterns: regular expressions (matched case-insensitively) of natural requests.
        arguments: reads the argument sets from the agent's text (several: one action each); None
            for a tool without arguments. Returning ``[]`` means the request is unclear.
        wants_on: for a toggle, reads from the text whether the agent wants the setting ON (True),
            OFF (False) or did not say (None); the user toggles once more when the tool reports
            the other state (``... is now ON.`` / ``... is now OFF.``).
    """

    tool: str
    patterns: tuple[str, ...] = ()
    arguments: Callable[[str], list[dict[str, Any]]] | None = None
    wants_on: Callable[[str], bool | None] | None = None


_NOW = re.compile(r"is now (ON|OFF)\b")


@dataclass
class UserReply:
    """A user turn: its text and whether the user ended the conversation (a stop token)."""

    text: str
    stop: bool = False


class ScriptedUser:
    """Deterministic offline user (no model, no randomness).

    Args:
        user_scenario: the task's user scenario (tau2 schema).
        max_repeats: after this many replies that add nothing new (no question, no confirmation,
            no completion), the user stops with ``###STOP###`` so a stuck agent cannot loop forever.
        requests: the user's own tools as `UserToolRequest`s (dual control); empty: no tools.
        act: ``act(name, arguments) -> ToolResult`` runs one of the user's tools (given by the env).
    """

    name = "scripted"

    def __init__(self, user_scenario: dict[str, Any], max_repeats: int = 3,
                 requests: Sequence[UserToolRequest] = (), act: Callable[[str, dict[str, Any]], Any] | None = None):
        self.fields = scenario_fields(user_scenario)
        self.max_repeats = max_repeats
        self._idle = 0
        self.requests = list(requests)
        self.act = act
        self._compiled = [(r, [re.compile(p, re.I) for p in r.patterns]
                           + [re.compile(rf"(?<![\w]){re.escape(r.tool)}(?![\w])")]) for r in self.requests]

    def requested_actions(self, agent_text: str) -> list[tuple[UserToolRequest, dict[str, Any] | None]]:
        """The user-tool actions the agent asks for, in the order the text mentions them.

        Each entry is ``(request, arguments)``; ``arguments`` is None when the text does not say
        which (e.g. which app). Duplicates (the same tool and arguments) are dropped.
        """
        found: list[tuple[int, int, UserToolRequest, dict[str, Any] | None]] = []
        for order, (req, patterns) in enumerate(self._compiled):
            starts = [m.start() for p in patterns for m in [p.search(agent_text)] if m]
            if not starts:
                continue
            sets: list[dict[str, Any] | None] = [{}] if req.arguments is None else list(req.arguments(agent_text))
            for args in sets or [None]:
                found.append((min(starts), order, req, args))
        found.sort(key=lambda f: (f[0], f[1]))
        out, seen = [], set()
        for _, _, req, args in found:
            key = (req.tool, repr(sorted(args.items())) if args is not None else None)
            if key not in seen:
                seen.add(key)
                out.append((req, args))
        return out

    def _use_tools(self, agent_text: str) -> UserReply | None:
        """Carry out the first requested user action (tau2's user does one at a time); None if none."""
        if self.act is None or not self.requests:
            return None
        wanted = self.requested_actions(agent_text)
        if not wanted:
            return None
        self._idle = 0
        req, args = wanted[0]
        if args is None:
            return UserReply(f"I'm not sure exactly what to do for {req.tool.replace('_', ' ')}; "
                             "could you tell me precisely which setting?")
        result = self.act(req.tool, args)
        content = result.content
        want = req.wants_on(agent_text) if req.wants_on is not None else None
        now = _NOW.search(content)
        if want is not None and now and (now.group(1) == "ON") != want and not result.error:
            content = self.act(req.tool, args).content  # toggled the wrong way: toggle back
        text = f"Okay, I did that. Here is what my phone shows:\n{content}"
        if len(wanted) > 1:
            text += "\nI can only do one thing at a time, so I did the first one. What should I do next?"
        return UserReply(text)

    def opening(self) -> str:
        """The first user message: the reason for the call, then the known information."""
        reason = self.fields["reason_for_call"] or self.fields["task_instructions"] or "I need help."
        known = self.fields["known_info"]
        return f"Hi! {reason}" + (f" {known}" if known else "")

    def reply(self, agent_text: str) -> UserReply:
        """Answer one agent message (rules in the module docstring)."""
        if _TRANSFERRED.search(agent_text) and "transfer" in agent_text.lower():
            return UserReply(TRANSFER, stop=True)
        acted = self._use_tools(agent_text)
        if acted is not None:
            return acted
        if _DONE.search(agent_text):
            return UserReply(f"No, that's all. Thank you! {STOP}", stop=True)
        if _CONFIRM.search(agent_text):
            self._idle = 0
            return UserReply("Yes, please go ahead.")
        if "?" in agent_text:
            self._idle = 0
            known = self.fields["known_info"]
            if known:
                return UserReply(f"Sure. {known}")
            return UserReply(f"I don't know that, sorry. {OUT_OF_SCOPE}", stop=True)
        self._idle += 1
        if self._idle >= self.max_repeats:
            return UserReply(f"Okay, thanks. {STOP}", stop=True)
        return UserReply("Okay. Please continue.")


class LLMUser:
    """A user played by a chat model, as tau2-bench's user simulator does.

    The model gets tau2's simulation guidelines (from the tau2 data directory:
    ``user_simulator/simulation_guidelines.md``) and the task's user scenario as its system
    prompt, sees the agent's messages as ``user`` turns and its own earlier replies as
    ``assistant`` turns (roles flipped, as in tau2), and ends the conversation by writing one of
    the stop tokens (``###STOP###``, ``###TRANSFER###``, ``###OUT-OF-SCOPE###``).

    Args:
        chat_model: any object with ``complete(messages, **sampling) -> ChatResponse``
            (`orchestra_gym.tools.llm.OpenAIChatModel`, a cached model, ...).
        user_scenario: the task's user scenario (tau2 schema).
        guidelines: the simulation guidelines text (tau2's ``simulation_guidelines_tools.md`` when
            the user has tools).
        tools: the user's own tools (`ToolSpec` list, dual control) offered to the model; its tool
            calls run through ``act`` and their results go back to it as tool messages until it
            writes a message for the agent (at most ``max_tool_rounds`` rounds per turn).
        act: ``act(name, arguments) -> ToolResult`` (given by the environment with ``tools``).
        sampling: sampling arguments for every call (e.g. ``temperature=0.0``).

    A failed model call ends the conversation (``stop=True``) with the error in the reply text and
    in ``self.errors``; it never raises.
    """

    name = "llm"
    FIRST_AGENT_MESSAGE = "Hi! How can I help you today?"

    def __init__(self, chat_model: Any, user_scenario: dict[str, Any], guidelines: str, tools: Sequence[Any] = (),
                 act: Callable[[str, dict[str, Any]], Any] | None = None, max_tool_rounds: int = 10, **sampling: Any):
        from orchestra_gym.types import Message

        if tools and act is None:
            raise ConfigError("LLMUser(tools=...) needs act= to run the user's tool calls")
        self.tools = list(tools)
        self.act = act
        self.max_tool_rounds = int(max_tool_rounds)
        self.model = chat_model
        self.sampling = sampling
        self.errors: list[str] = []
        instr = user_scenario.get("instructions", user_scenario) if isinstance(user_scenario, dict) else user_scenario
        if isinstance(instr, dict):
            scenario = "\n".join(f"{k}: {v}" for k, v in instr.items() if v)
        else:
            scenario = str(instr)
        persona = user_scenario.get("persona") if isinstance(user_scenario, dict) else None
        system = f"{guidelines.strip()}\n\n<scenario>\n{scenario}\n" + (f"persona: {persona}\n" if persona else "") + "</scenario>"
        self.history = [Message("system", system)]
        self.name = f"llm:{getattr(chat_model, 'model', type(chat_model).__name__)}"

    def _ask(self, agent_text: str) -> UserReply:
        from orchestra_gym.types import Message, ToolCall

        self.history.append(Message("user", agent_text))
        for _ in range(self.max_tool_rounds + 1):
            resp = self.model.complete(self.history, self.tools, **self.sampling) if self.tools \
                else self.model.complete(self.history, **self.sampling)
            if getattr(resp, "error", None):
                self.errors.append(str(resp.error))
                return UserReply(f"(the user simulator failed: {resp.error}) {STOP}", stop=True)
            calls = list(resp.message.tool_calls or []) if self.tools else []
            if not calls:
                break
            calls = [c if c.id else ToolCall(c.name, c.arguments, f"user_call_{len(self.history)}_{i}")
                     for i, c in enumerate(calls)]
            self.history.append(Message("assistant", resp.message.content or "", tool_calls=calls))
            for call in calls:
                result = self.act(call.name, dict(call.arguments))
                self.history.append(Message("tool", result.content, tool_call_id=call.id, name=call.name))
        else:
            self.errors.append(f"more than {self.max_tool_rounds} tool rounds in one turn")
            return UserReply(f"(the user simulator made too many tool calls) {STOP}", stop=True)
        text = resp.message.content or ""
        self.history.append(Message("assistant", text))
        return UserReply(text, stop=any(t in text for t in (STOP, TRANSFER, OUT_OF_SCOPE)))

    def opening(self) -> str:
        """The user's first message, in reply to tau2's fixed agent greeting."""
        return self._ask(self.FIRST_AGENT_MESSAGE).text

    def reply(self, agent_text: str) -> UserReply:
        """The user's reply to one agent message."""
        return self._ask(agent_text)
