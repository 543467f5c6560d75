"""A checkpoint's own Jinja chat template, rendered exactly as transformers' ``apply_chat_template`` does.

One job: turn chat messages (dicts or objects with role / content / tool_calls) and tools into the text a
checkpoint's stored template writes (`apply_chat_template`), and the environment messages of one turn into the
text that template writes after a sampled assistant turn (`template_turn_text`, for token-in/token-out
training). `orchestra_jax.tokenizer.ChatTokenizer` uses it when it carries a checkpoint's template; the
message / tool accessors here (`_get`, `_tool_json`) are shared with the tokenizer's Qwen3 rendering.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

__all__ = ["apply_chat_template", "template_turn_text", "IM_END"]

IM_END = "<|im_end|>"


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _tool_json(tool: Any) -> str:
    """One tool as the OpenAI function schema JSON line Qwen3 expects."""
    if isinstance(tool, Mapping):
        spec = dict(tool) if "function" in tool else {"type": "function", "function": dict(tool)}
    else:  # an object with name / description / parameters (e.g. orchestra_gym.types.ToolSpec)
        spec = {"type": "function", "function": {"name": tool.name, "description": tool.description,
                                                 "parameters": tool.parameters}}
    return json.dumps(spec, ensure_ascii=False)


# ------------------------------------------------------------- a checkpoint's own template
def _plain(m: Any) -> dict[str, Any]:
    """A message as the dict a Jinja chat template reads (objects with role / content / tool_calls too)."""
    if isinstance(m, Mapping):
        return dict(m)
    out = {"role": _get(m, "role"), "content": _get(m, "content")}
    for key in ("tool_calls", "reasoning_content", "name", "tool_call_id"):
        if _get(m, key) is not None:
            out[key] = _get(m, key)
    return out


def _tool_spec(tool: Any) -> dict[str, Any]:
    return json.loads(_tool_json(tool))


def apply_chat_template(template: str, messages: Sequence[Any], *, tools: Sequence[Any] | None = None,
                        add_generation_prompt: bool = False, **kwargs: Any) -> str:
    """Render `messages` with a Jinja chat `template` exactly as transformers' ``apply_chat_template`` does.

    Uses transformers' own renderer (``transformers.utils.chat_template_utils.render_jinja_template``: a
    sandboxed Jinja environment with ``trim_blocks``, ``lstrip_blocks``, ``tojson``, ``raise_exception``,
    ``strftime_now``), so tool-call and tool-response turns come out as the checkpoint's authors wrote them.

    Args:
        messages: dicts or objects with role, content and optionally tool_calls. tools: OpenAI function dicts
            or objects with name / description / parameters. **kwargs: further template variables
            (``bos_token``, ``eos_token``, ``enable_thinking``...).
    Returns:
        the text. Raises: ImportError without transformers; what the template raises (jinja2 errors).
    """
    try:
        from transformers.utils.chat_template_utils import render_jinja_template
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("rendering a checkpoint's chat template needs transformers: pip install transformers") from err
    rendered, _ = render_jinja_template(
        conversations=[[_plain(m) for m in messages]], tools=[_tool_spec(t) for t in tools] if tools else None,
        chat_template=template, add_generation_prompt=add_generation_prompt, **kwargs)
    return rendered[0]


_PROBE = "orchestra-template-probe"


def template_turn_text(template: str, messages: Sequence[Any], *, add_generation_prompt: bool = True,
                       after_assistant: bool = False, **kwargs: Any) -> str:
    """The environment messages of one turn as `template` renders them, for token-in/token-out training (what
    the module's `render_messages` is for Qwen3's layout, for any ChatML template).

    Without `after_assistant`: ``apply_chat_template(template, messages, add_generation_prompt=...)`` (the
    episode's opening). With it: the text the template writes after a sampled assistant turn that ended on
    ``<|im_end|>``, up to the next generation prompt: the chat ``[user, assistant(probe), *messages]``
    rendered, from right after the ``<|im_end|>`` that closes the probe turn (so, for a template that renders
    earlier turns the same way whatever follows, ``prompt + turn + "<|im_end|>" + this`` is what it renders for
    the whole chat; tests check this for the templates in use).

    Raises:
        ValueError: the template does not close an assistant turn with ``<|im_end|>`` (not ChatML): it cannot
            be rendered incrementally for token-in/token-out training.
    """
    msgs = list(messages)
    if not after_assistant:
        return apply_chat_template(template, msgs, add_generation_prompt=add_generation_prompt, **kwargs)
    head = [{"role": "user", "content": "?"}, {"role": "assistant", "content": _PROBE}]
    full = apply_chat_template(template, head + [_plain(m) for m in msgs],
                               add_generation_prompt=add_generation_prompt, **kwargs)
    end = full.find(_PROBE) + len(_PROBE)
    if end < len(_PROBE) or not full.startswith(IM_END, end):
        raise ValueError("the chat template does not end an assistant turn with <|im_end|> after its content; "
                         "it cannot be rendered incrementally for token-in/token-out training")
    return full[end + len(IM_END):]
