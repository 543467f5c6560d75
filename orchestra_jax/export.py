"""A trained run as a Hugging Face model directory (``orchestra export RUN_DIR --hf DIR``).

`export_run(run_dir, out_dir)` writes what `transformers` (``AutoModelForCausalLM`` /
``AutoTokenizer``), ``transformers serve`` and vLLM load:

==========================  ==================================================================
file                        content
==========================  ==================================================================
config.json                 `Qwen3ForCausalLM`, or `LlamaForCausalLM` / `Qwen2ForCausalLM` for a policy
                            from such a checkpoint (`ModelConfig.to_hf_dict`), with the run's
                            tokenizer's ids as bos / eos / pad (``<|im_end|>`` is the eos)
model.safetensors           the checkpoint's parameters (`orchestra_jax.weights.save_hf_checkpoint`;
                            sharded with an index past 5 GiB), float32 unless asked otherwise
generation_config.json      eos ids ``[<|im_end|>, <|endoftext|>]``, pad, the run's
                            ``evaluation.temperature`` (greedy when 0), ``evaluation.top_k`` / ``top_p`` and ``rollout.max_new_tokens``
tokenizer.json              the run's tokenizer; the tool and think tags (``<tool_call>``,
                            ``<tool_response>``, ``<think>`` and their closers) are marked
                            non-special, as in Qwen3's own tokenizer.json, so that a server that
                            decodes with ``skip_special_tokens`` keeps them (same ids, same encoding)
tokenizer_config.json       eos ``<|im_end|>``, pad ``<|endoftext|>``, no bos, `CHAT_TEMPLATE` (or the
                            checkpoint's own template and bos / eos strings, `write_hf_tokenizer`) and
                            `RESPONSE_TEMPLATE`
chat_template.jinja         the same template, for servers that take ``--chat-template FILE``
orchestra_setting.json      the run's setting: ``env_id``, ``env_kwargs`` (`TrainConfig.make_env_kwargs`)
                            and ``reset_options`` (tools exposed, preference), for ``orchestra eval
                            --env-kwargs ... --reset-options ...`` with the served model
==========================  ==================================================================

`CHAT_TEMPLATE` is our own Jinja template with the layout of Qwen3's official chat template (the one
shipped with Qwen/Qwen3-8B): tools as JSON lines in ``<tools></tools>`` in the system turn, consecutive
tool results in one user turn as ``<tool_response>`` blocks, assistant tool calls as Hermes
``<tool_call>`` blocks, reasoning kept only after the last user query, and the generation prompt
(``enable_thinking=False`` adds an empty think block). It renders what `orchestra_jax.tokenizer.render_chat`
renders, so a conversation the server renders with it is the token sequence the policy was trained on
(the prompt of `orchestra_jax.rollout`, then each turn's environment blocks); tests compare it with the
official template and with the policy's own ids.

`RESPONSE_TEMPLATE` (transformers' ``response_template``, read by ``transformers serve``) makes the server
answer with the policy's text as written, ``<tool_call>`` blocks included, instead of extracting tool
calls: a trained policy is served in text tool calling (``tool_calling = "text"`` in the models file),
so the conversation sent back holds its turns verbatim. Extracted calls would come back re-rendered in
the template's form, which differs from the policy's own text wherever the policy writes more (e.g. an
``"id"`` key), and the next prompt would then not be the one it was trained on. (The template strips
whitespace around the text.) vLLM: serve without ``--enable-auto-tool-choice`` for the same effect.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestra_jax.tokenizer import TOOLS_FOOTER, TOOLS_HEADER, ChatTokenizer

__all__ = ["export_run", "write_hf_tokenizer", "CHAT_TEMPLATE", "RESPONSE_TEMPLATE", "NON_SPECIAL_TAGS"]

# the markup Qwen3's tokenizer.json lists as added but not special (kept by skip_special_tokens)
NON_SPECIAL_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")

_HEADER, _FOOTER = json.dumps(TOOLS_HEADER), json.dumps(TOOLS_FOOTER + "<|im_end|>\n")

CHAT_TEMPLATE = (
    "{#- orchestra: Qwen3's chat layout (tools in the system turn, Hermes tool calls, grouped tool results) -#}\n"
    "{%- set has_system = messages|length > 0 and messages[0].role == 'system' %}\n"
    "{%- if tools %}\n"
    "{{- '<|im_start|>system\\n' }}{%- if has_system %}{{- messages[0].content + '\\n\\n' }}{%- endif %}\n"
    "{{- " + _HEADER + " }}\n"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}\n"
    "{{- " + _FOOTER + " }}\n"
    "{%- elif has_system %}\n"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{#- the last real user query: reasoning of earlier assistant turns is dropped #}\n"
    "{%- set scan = namespace(found=false, last_query=messages|length - 1) %}\n"
    "{%- for i in range(messages|length - 1, -1, -1) %}\n"
    "{%- set text = messages[i].content %}\n"
    "{%- if not scan.found and messages[i].role == 'user' and text is string and not "
    "(text.startswith('<tool_response>') and text.endswith('</tool_response>')) %}\n"
    "{%- set scan.found = true %}{%- set scan.last_query = i %}\n"
    "{%- endif %}\n"
    "{%- endfor %}\n"
    "{%- for message in messages %}\n"
    "{%- set content = message.content if message.content is string else '' %}\n"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' }}\n"
    "{%- elif message.role == 'assistant' %}\n"
    "{%- set reasoning = message.reasoning_content if message.reasoning_content is string else '' %}\n"
    "{%- if message.reasoning_content is not string and '</think>' in content %}\n"
    "{%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}\n"
    "{%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
    "{%- endif %}\n"
    "{{- '<|im_start|>assistant\\n' }}\n"
    "{%- if loop.index0 > scan.last_query and (loop.last or reasoning) %}\n"
    "{{- '<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}\n"
    "{%- else %}{{- content }}{%- endif %}\n"
    "{%- for call in (message.tool_calls or []) %}\n"
    "{%- set fn = call.function if call.function else call %}\n"
    "{%- if content or not loop.first %}{{- '\\n' }}{%- endif %}\n"
    "{{- '<tool_call>\\n{\"name\": \"' + fn.name + '\", \"arguments\": ' }}\n"
    "{%- if fn.arguments is string %}{{- fn.arguments }}{%- else %}{{- fn.arguments | tojson }}{%- endif %}\n"
    "{{- '}\\n</tool_call>' }}\n"
    "{%- endfor %}\n"
    "{{- '<|im_end|>\\n' }}\n"
    "{%- elif message.role == 'tool' %}\n"
    "{%- if loop.first or loop.previtem.role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}\n"
    "{{- '\\n<tool_response>\\n' + content + '\\n</tool_response>' }}\n"
    "{%- if loop.last or loop.nextitem.role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}\n"
    "{%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "{{- '<|im_start|>assistant\\n' }}\n"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}\n"
    "{%- endif %}\n"
)

# transformers' response-template format: one content field from the assistant header to the EOS
RESPONSE_TEMPLATE = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n",
                     "fields": {"content": {"close_pattern": r"<\|im_end\|>|<\|endoftext\|>", "content": "text"}}}


def _tokenizer_json(spec: dict[str, Any]) -> dict[str, Any]:
    """The run's tokenizer.json with `NON_SPECIAL_TAGS` marked non-special (ids and encoding unchanged)."""
    for added in spec.get("added_tokens", []):
        if added.get("content") in NON_SPECIAL_TAGS:
            added["special"] = False
    return spec


def write_hf_tokenizer(tok: ChatTokenizer, out_dir: str | Path, *, model_max_length: int) -> Path:
    """Write the tokenizer files of an exported model into `out_dir`: tokenizer.json (`NON_SPECIAL_TAGS` marked
    non-special), tokenizer_config.json (eos ``<|im_end|>``, pad ``<|endoftext|>``, the chat template,
    `RESPONSE_TEMPLATE`) and chat_template.jinja. The chat template is the policy's own: the checkpoint's stored
    template when the tokenizer carries one (`ChatTokenizer.chat_template`, e.g. SmolLM2's, with its
    bos / eos strings), else `CHAT_TEMPLATE` (Qwen3's layout, no bos). transformers' ``AutoTokenizer`` loads the
    folder and its ``apply_chat_template`` renders what the policy was trained on. Returns out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    template = tok.chat_template or CHAT_TEMPLATE
    spec = _tokenizer_json(json.loads(tok.tk.to_str()))
    (out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": model_max_length,
        "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None, "add_bos_token": False,
        "clean_up_tokenization_spaces": False, "split_special_tokens": False, "errors": "replace",
        **tok.template_tokens, "chat_template": template, "response_template": RESPONSE_TEMPLATE}, indent=2))
    (out / "chat_template.jinja").write_text(template)
    return out


def export_run(run_dir: str | Path, out_dir: str | Path, *, phase: str | None = None, step: int | None = None,
               dtype: str = "float32") -> Path:
    """Write a trained run (its newest checkpoint, or `phase` / `step`) as a Hugging Face model directory.

    Args:
      run_dir: an `orchestra train` output folder (train_config.json, tokenizer, checkpoints/).
      out_dir: the directory to write (created; files in it are overwritten). See the module doc.
      phase, step: which checkpoint, as `orchestra_jax.runs.load_run`.
      dtype: storage dtype of the weights ("float32", "bfloat16", "float16"); float32 keeps the
        trained weights exactly (the logits equal the JAX policy's to float32 rounding).

    Returns:
      out_dir as a Path.

    Raises:
      FileNotFoundError: no train_config.json or no finalized checkpoint in `run_dir`.
      ValueError / ConfigError: an unknown phase or dtype.
    """
    from orchestra_jax.policy import run_setting  # lazy: JAX only when a run is exported
    from orchestra_jax.runs import load_run
    from orchestra_jax.weights import save_hf_checkpoint

    cfg, tok, model = load_run(run_dir, phase, step)
    out = Path(out_dir)
    save_hf_checkpoint(model, None, out, dtype=dtype)
    im_end, endoftext = tok.eos_ids
    hf_config = json.loads((out / "config.json").read_text())
    hf_config.update(bos_token_id=endoftext, eos_token_id=im_end, pad_token_id=endoftext)
    (out / "config.json").write_text(json.dumps(hf_config, indent=2))
    greedy = cfg.evaluation.temperature == 0
    generation = {"bos_token_id": endoftext, "eos_token_id": [im_end, endoftext], "pad_token_id": endoftext,
                  "do_sample": not greedy, "max_new_tokens": cfg.rollout.max_new_tokens}
    if not greedy:
        generation["temperature"] = cfg.evaluation.temperature
        if cfg.evaluation.top_k:
            generation["top_k"] = cfg.evaluation.top_k
        if cfg.evaluation.top_p < 1:
            generation["top_p"] = cfg.evaluation.top_p
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2))
    write_hf_tokenizer(tok, out, model_max_length=cfg.rollout.max_seq_len)
    run_setting(cfg).write(out)  # orchestra_setting.json
    return out
