"""User simulators for function-calling environments.

`ScriptedUser` is the offline default: deterministic rules over the task's user scenario (tau2 /
ToolScale schema: ``user_scenario.instructions`` with ``reason_for_call``, ``known_info``,
``unknown_info``, ``task_instructions``). It opens with the request and what the user knows,
answers confirmation questions with yes, gives its known information when asked, and ends the
conversation with tau2's stop token when the agent says the job is done.

Stop tokens follow tau2-bench's user simulator: ``###STOP###`` (done), ``###TRANSFER###``
(transferred to a human), ``###OUT-OF-SCOPE###`` (the scenario does not cover the question).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ScriptedUser", "LLMUser", "UserReply", "STOP", "TRANSFER", "OUT_OF_SCOPE", "scenario_fields"]

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
    """

    name = "scripted"

    def __init__(self, user_scenario: dict[str, Any], max_repeats: int = 3):
        self.fields = scenario_fields(user_scenario)
        self.max_repeats = max_repeats
        self._idle = 0

    def opening(self) -> str:
        """The first user message: the reason for the call, then the known information."""
        reason = self.fields["reason_for_call"] or self.fields["task_instructions"] or "I need help."
        known = self.fields["known_info"]
        return f"Hi! {reason}" + (f" {known}" if known else "")

    def reply(self, agent_text: str) -> UserReply:
        """Answer one agent message (rules in the module docstring)."""
        if _TRANSFERRED.search(agent_text) and "transfer" in agent_text.lower():
            return UserReply(TRANSFER, stop=True)
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
        guidelines: the simulation guidelines text.
        sampling: sampling arguments for every call (e.g. ``temperature=0.0``).

    A failed model call ends the conversation (``stop=True``) with the error in the reply text and
    in ``self.errors``; it never raises.
    """

    name = "llm"
    FIRST_AGENT_MESSAGE = "Hi! How can I help you today?"

    def __init__(self, chat_model: Any, user_scenario: dict[str, Any], guidelines: str, **sampling: Any):
        from orchestra_gym.types import Message

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
        from orchestra_gym.types import Message

        self.history.append(Message("user", agent_text))
        resp = self.model.complete(self.history, **self.sampling)
        if getattr(resp, "error", None):
            self.errors.append(str(resp.error))
            return UserReply(f"(the user simulator failed: {resp.error}) {STOP}", stop=True)
        text = resp.message.content or ""
        self.history.append(Message("assistant", text))
        return UserReply(text, stop=any(t in text for t in (STOP, TRANSFER, OUT_OF_SCOPE)))

    def opening(self) -> str:
        """The user's first message, in reply to tau2's fixed agent greeting."""
        return self._ask(self.FIRST_AGENT_MESSAGE).text

    def reply(self, agent_text: str) -> UserReply:
        """The user's reply to one agent message."""
        return self._ask(agent_text)
