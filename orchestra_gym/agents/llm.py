"""`LLMAgent`: a chat model behind an OpenAI-compatible endpoint as the orchestrator (the paper's
prompted baselines, ToolOrchestra Table 1), and `llm_agent`, which builds one from a models file."""

from __future__ import annotations

import json
from typing import Any

from orchestra_gym.agents.base import tool_schemas
from orchestra_gym.env import OrchestraEnv
from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.types import Message, ToolCall

__all__ = ["LLMAgent", "llm_agent"]


class LLMAgent:
    """A chat model behind an OpenAI-compatible endpoint as the orchestrator.

    The conversation is kept per episode: `reset` starts it with the env's opening messages
    (``info["new_messages"]``: its system prompt and the user's first message), each `act` adds
    the env's messages of the last step (tool results, the user's reply, parse errors) after the
    model's own reply, then asks the model for the next turn.

    Tool calling (the models file's ``tool_calling``, see `orchestra_gym.tools.models`):
        * ``"native"``: the env's tools (``info["tools"]``, OpenAI schemas) go in the request's
          ``tools``; a reply with ``tool_calls`` becomes a structured action (the calls, with the
          reply's call ids, so that each tool message answers its call). A call whose arguments
          are not a JSON object is passed on as the text the server sent, and the env reports the
          parse error. A reply without ``tool_calls`` goes to the env's parser as text (tags or
          a plain message to the user). The history sent back holds only the calls the env
          answered, each followed by its tool message (OpenAI's rule).
        * ``"text"``: no ``tools`` are sent (the env's system prompt lists them); the reply's
          text, with its Hermes ``<tool_call>`` tags, is the action for the env's parser. Tool
          calls a server extracted from the text anyway (transformers serve does for Qwen3) are
          written back as ``<tool_call>`` blocks after the text. Tool results are sent as
          ``tool`` messages, which chat templates render for the model (Qwen3:
          ``<tool_response>``); endpoints that insist on OpenAI's pairing rule want ``native``.

    Accounting: the tokens, USD (the model's price from the models file or the pricing
    schedule) and seconds (wall clock, retries included) of each request are reported to the env
    with ``env.unwrapped.add_orchestrator_usage`` before the action is returned, so the step's
    ``info`` carries them as ``orchestrator_*`` and in the episode totals.

    Never raises on a bad reply: a malformed action is the env's parse error. When the endpoint
    fails after its retries (or answers what is not a chat completion), the failure is reported
    to the env with its error text and the empty action is returned: the env ends the episode
    there (truncated, ``end_reason="orchestrator_error"``, outcome 0), an infrastructure failure
    apart from the policy's own errors. ``last_error`` keeps the text.

    Args:
        model: a `orchestra_gym.tools.llm.ChatModel` (``complete(messages, tools, **sampling)``).
        tool_calling: ``"native"`` or ``"text"``.
        sampling: sampling arguments of every request (over the model's defaults).
        name: the agent's name in tables (default ``llm:<model.model>``).

    Raises:
        ValueError: unknown `tool_calling`.
    """

    def __init__(self, model: Any, tool_calling: str = "native", sampling: dict[str, Any] | None = None,
                 name: str | None = None):
        if tool_calling not in ("native", "text"):
            raise ValueError(f"tool_calling must be 'native' or 'text', got {tool_calling!r}")
        self.model = model
        self.tool_calling = tool_calling
        self.sampling = dict(sampling or {})
        self.name = name or f"llm:{getattr(model, 'model', 'model')}"
        self.messages: list[Message] = []
        self.last_error: str | None = None

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        """Start the episode's conversation with the env's opening messages."""
        self.env = env.unwrapped
        self.tools = tool_schemas(env, info) if self.tool_calling == "native" else None
        self.messages = [Message.from_dict(m) for m in info.get("new_messages", [])]
        self._reply: Message | None = None
        self.last_error = None

    def act(self, observation: str, info: dict[str, Any]) -> "str | dict":
        """Ask the model for the next turn; the action for ``env.step`` (text or structured)."""
        if self._reply is not None:
            self._absorb(self._reply, info.get("new_messages", []))
        response = self.model.complete(self.messages, tools=self.tools, **self.sampling)
        report = self.env.add_orchestrator_usage if isinstance(self.env, OrchestraEnv) else None
        if not response.ok:
            self.last_error = response.error
            self._reply = Message("assistant", "")
            if report is not None:
                report(response.usage, error=response.error)
            return ""
        if report is not None:
            report(response.usage)
        self._reply = response.message
        try:
            action = self._action(response.message, response.raw.get("bad_arguments") or {})
        except Exception:  # a reply this code did not foresee: let the env's parser judge its text
            action = response.message.content
        if isinstance(action, str):  # the history keeps the text the env parsed
            self._reply = Message("assistant", action)
        return action

    def _action(self, reply: Message, bad_arguments: dict[str, str]) -> "str | dict":
        calls = list(reply.tool_calls or [])
        if self.tool_calling == "native":
            if not calls:
                return reply.content
            return {"tool_calls": [{"name": c.name, "id": c.id,
                                    "arguments": bad_arguments.get(c.id, c.arguments)} for c in calls]}
        blocks = []
        for c in calls:  # calls a server extracted from the text: back to Hermes tags
            if c.id in bad_arguments:
                blocks.append(f'<tool_call>\n{{"name": {json.dumps(c.name)}, "arguments": {bad_arguments[c.id]}}}\n'
                              "</tool_call>")
            else:
                blocks.append(render_tool_calls([ToolCall(c.name, c.arguments, "call_0")]))
        return "\n".join(part for part in [reply.content, *blocks] if part) if blocks else reply.content

    def _absorb(self, reply: Message, new_messages: list[dict[str, Any]]) -> None:
        """Add the model's last reply and the env's answer to it to the conversation."""
        env_said = [Message.from_dict(m) for m in new_messages if m.get("role") != "assistant"]
        if self.tool_calling == "text":  # the calls stay in the text, as the model wrote them
            self.messages.append(Message("assistant", reply.content))
            self.messages.extend(env_said)
            return
        # native: keep the calls the env answered (its parse of our action), each answered right after
        executed = next((Message.from_dict(m) for m in new_messages if m.get("role") == "assistant"), None)
        answered = {m.tool_call_id for m in env_said if m.role == "tool"}
        calls = [c for c in (executed.tool_calls or [] if executed else []) if c.id in answered]
        self.messages.append(Message("assistant", reply.content, tool_calls=calls or None))
        self.messages.extend([m for m in env_said if m.role == "tool" and m.tool_call_id in answered])
        self.messages.extend([m for m in env_said if not (m.role == "tool" and m.tool_call_id in answered)])

    def close(self) -> None:
        """Close the model's HTTP client (if it has one)."""
        close = getattr(self.model, "close", None)
        if callable(close):
            close()


def llm_agent(model_id: str, models: Any = None, sampling: dict[str, Any] | None = None, cache: Any = None,
              cache_mode: str = "record-missing") -> LLMAgent:
    """An `LLMAgent` for `model_id` (model id or alias) of a models file.

    Args:
        model_id: the id under ``[models]`` or ``[aliases]``.
        models: a models file path or `ModelsConfig`; None reads ``$ORCHESTRA_MODELS`` or the
            packaged default (`orchestra_gym.tools.models.load_models`).
        sampling: sampling arguments over the file's ``sampling`` for the model.
        cache: a SQLite path or `orchestra_gym.tools.cache.CallCache`: the orchestrator's requests go
            through the record/replay cache (`CachedChatModel`): ``record`` stores every reply,
            ``replay`` answers only from the file and sends no request, ``record-missing`` both.
        cache_mode: the cache's mode when `cache` is a path.

    Raises:
        orchestra_gym.tools.models.ModelsFileError (a ValueError): the file is missing or invalid
            (e.g. the model has no ``base_url``; the message names the key and the fix).
        KeyError: unknown model id (with the ids the file has), or no price for it in the file
            nor in the pricing schedule.
    """
    from orchestra_gym.tools.models import ModelsConfig, load_models

    cfg = models if isinstance(models, ModelsConfig) else load_models(models)
    entry = cfg.resolve(model_id)
    model = cfg.chat_model(model_id)
    if cache is not None:
        from orchestra_gym.tools.cache import CachedChatModel, CallCache

        model = CachedChatModel(model, cache if isinstance(cache, CallCache) else CallCache(cache, mode=cache_mode))
    return LLMAgent(model, tool_calling=entry.tool_calling, sampling=sampling, name=f"llm:{model_id}")


