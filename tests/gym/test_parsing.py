"""Tests for orchestra_gym.parsing: the Qwen3/Hermes tool-call format, both directions."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestra_gym.parsing import FORMAT_HINT, ParsedAction, parse_action, render_action, render_tool_calls
from orchestra_gym.types import ToolCall


def call_text(obj) -> str:
    return f"<tool_call>\n{json.dumps(obj)}\n</tool_call>"


# ------------------------------------------------------------------ required behaviours


def test_single_call_qwen3_layout():
    text = '<think>I need the order.</think>\n\n<tool_call>\n{"name": "get_order", "arguments": {"order_id": "#W1"}}\n</tool_call>'
    r = parse_action(text)
    assert r.tool_calls == [ToolCall("get_order", {"order_id": "#W1"}, "call_0")]
    assert r.thinking == "I need the order."
    assert r.message is None and r.errors == [] and not r.truncated and r.valid
    assert r.raw == text


def test_two_objects_in_one_block_are_two_calls():
    # Documented: several JSON objects in one block are several calls, in order.
    r = parse_action('<tool_call>{"name": "a", "arguments": {}} {"name": "b", "arguments": {"x": 1}}</tool_call>')
    assert r.tool_calls == [ToolCall("a", {}, "call_0"), ToolCall("b", {"x": 1}, "call_1")]
    assert r.message is None and r.errors == []


def test_json_array_in_one_block_is_several_calls():
    r = parse_action('<tool_call>[{"name": "a", "arguments": {}}, {"name": "b"}]</tool_call>')
    assert [c.name for c in r.tool_calls] == ["a", "b"]
    assert [c.id for c in r.tool_calls] == ["call_0", "call_1"]
    assert r.errors == []


def test_two_objects_one_broken_is_an_error_not_chat_text():
    r = parse_action('<tool_call>{"name": "a", "arguments": {}} {"name": "b", "arguments": {</tool_call>')
    assert r.message is None  # never silently treated as a message
    assert len(r.errors) == 1 and "invalid JSON" in r.errors[0]
    assert not r.valid


def test_unclosed_last_block_is_parsed_and_truncated():
    r = parse_action('<think>ok</think><tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n')
    assert r.tool_calls == [ToolCall("search", {"query": "x"}, "call_0")]
    assert r.truncated is True
    assert r.errors == [] and r.valid


def test_unclosed_last_block_with_incomplete_json_is_truncated_error():
    r = parse_action('<tool_call>{"name": "search", "arguments": {"query": "x')
    assert r.truncated is True
    assert r.tool_calls == [] and len(r.errors) == 1 and "invalid JSON" in r.errors[0]


def test_missing_closing_brace_is_an_error_entry():
    r = parse_action('<tool_call>{"name": "a", "arguments": {"x": 1}</tool_call>')
    assert r.tool_calls == []
    assert len(r.errors) == 1
    err = r.errors[0]
    assert err.startswith("tool call 1: invalid JSON")
    assert "1 closing brace(s)/bracket(s) are missing" in err
    assert FORMAT_HINT in err  # names the fix
    assert "problem" in r.error_text() and err in r.error_text()


def test_missing_brace_then_good_block_keeps_going():
    r = parse_action('<tool_call>{"name": "a", "arguments": {"x": 1}</tool_call>\n<tool_call>{"name": "b", "arguments": {}}</tool_call>')
    assert r.tool_calls == [ToolCall("b", {}, "call_0")]
    assert len(r.errors) == 1 and r.errors[0].startswith("tool call 1:")


def test_tool_call_inside_think_is_thinking():
    text = '<think>maybe <tool_call>{"name": "gpt5", "arguments": {}}</tool_call> is too costly</think><tool_call>{"name": "qwen", "arguments": {}}</tool_call>'
    r = parse_action(text)
    assert [c.name for c in r.tool_calls] == ["qwen"]
    assert r.thinking == 'maybe <tool_call>{"name": "gpt5", "arguments": {}}</tool_call> is too costly'


def test_only_thinking_with_a_call_inside_is_no_action():
    r = parse_action('<think><tool_call>{"name": "a", "arguments": {}}</tool_call></think>')
    assert r.tool_calls == [] and r.message is None
    assert len(r.errors) == 1 and r.errors[0].startswith("empty action")


def test_arguments_as_json_string_are_decoded():
    r = parse_action('<tool_call>{"name": "a", "arguments": "{\\"city\\": \\"Paris\\", \\"n\\": 2}"}</tool_call>')
    assert r.tool_calls == [ToolCall("a", {"city": "Paris", "n": 2}, "call_0")]
    assert r.errors == []


@pytest.mark.parametrize(
    "args, kind",
    [("[1, 2]", "a list"), ("3", "a number"), ("null", "null"), ("true", "a boolean"), ('"[1]"', "holding a list"), ('"{bad"', "not valid JSON")],
)
def test_arguments_not_an_object_are_a_clear_error(args, kind):
    r = parse_action('<tool_call>{"name": "get_x", "arguments": %s}</tool_call>' % args)
    assert r.tool_calls == [] and len(r.errors) == 1
    assert kind in r.errors[0] and "'get_x'" in r.errors[0] and "JSON object" in r.errors[0]


def test_two_blocks_with_text_between_are_two_calls_in_order():
    text = call_text({"name": "first", "arguments": {"i": 1}}) + "\nNow the second one:\n" + call_text({"name": "second", "arguments": {"i": 2}})
    r = parse_action(text)
    assert r.tool_calls == [ToolCall("first", {"i": 1}, "call_0"), ToolCall("second", {"i": 2}, "call_1")]
    assert r.text == "Now the second one:"
    assert r.message is None and r.errors == []


def test_unclosed_think_is_reported():
    r = parse_action('<think>still reasoning <tool_call>{"name": "a", "arguments": {}}</tool_call>')
    assert r.tool_calls == []
    assert r.truncated is True and not r.valid
    assert len(r.errors) == 1 and "<think> is not closed" in r.errors[0]
    assert r.thinking == 'still reasoning <tool_call>{"name": "a", "arguments": {}}</tool_call>'


@pytest.mark.parametrize(
    "text, needle",
    [
        ('<tool_call>{"name": "a", "arguments": {}}</message>', "stray </message>"),
        ('</tool_call><tool_call>{"name": "a", "arguments": {}}</tool_call>', "stray </tool_call>"),
        ('reasoning</think><message>hi</message>', "stray </think>"),
        ('<tool_call>{"name": "a", "arguments": {}}<message>hi</message>', "is not closed before <message>"),
        ("<message>hello</tool_call>", "mismatched tags"),
    ],
)
def test_mismatched_tags_are_reported(text, needle):
    r = parse_action(text)
    assert not r.valid
    assert any(needle in e for e in r.errors), r.errors


def test_think_open_flag_accepts_template_opened_thinking():
    r = parse_action('reasoning here</think><message>hi</message>', think_open=True)
    assert r.thinking == "reasoning here" and r.message == "hi" and r.errors == []
    r2 = parse_action("reasoning that never ends", think_open=True)
    assert r2.truncated and r2.errors and r2.thinking == "reasoning that never ends"


def test_message_with_tool_calls_both_kept():
    # Documented: both allowed; the env executes the calls first, then delivers the message.
    r = parse_action('<tool_call>{"name": "cancel", "arguments": {"id": 3}}</tool_call>\n<message> Done, cancelled. </message>')
    assert r.tool_calls == [ToolCall("cancel", {"id": 3}, "call_0")]
    assert r.message == "Done, cancelled."
    assert r.valid


def test_message_content_is_free_text():
    r = parse_action('<message>Use {"a": 1} and <tool_call> is literal here</message>')
    assert r.message == 'Use {"a": 1} and <tool_call> is literal here'
    assert r.tool_calls == [] and r.errors == []


def test_two_messages_are_joined_and_empty_message_is_error():
    assert parse_action("<message>a</message><message>b</message>").message == "a\n\nb"
    r = parse_action("<message>  </message>")
    assert r.errors and "empty <message>" in r.errors[0]


def test_unclosed_message_at_end_is_truncated():
    r = parse_action("<message>Your refund is on its way")
    assert r.message == "Your refund is on its way" and r.truncated and r.errors == []


def test_plain_text_is_a_message_by_default():
    r = parse_action("  Could you give me your order id?  ")
    assert r.message == "Could you give me your order id?" and r.valid
    r = parse_action("<think>ask</think>Could you give me your order id?")
    assert r.message == "Could you give me your order id?" and r.thinking == "ask"


def test_plain_text_is_an_error_when_flag_off():
    r = parse_action("Could you give me your order id?", plain_text_as_message=False)
    assert r.message is None and len(r.errors) == 1 and "no tool call or message" in r.errors[0]


def test_plain_text_with_broken_call_is_not_a_message():
    r = parse_action('Let me look. <tool_call>{"name": "a", "arguments": {]}</tool_call>')
    assert r.message is None and r.errors and r.text == "Let me look."


def test_empty_and_whitespace_actions_are_errors():
    for text in ("", "   \n"):
        r = parse_action(text)
        assert not r.valid and r.errors[0].startswith("empty action")


def test_ids_read_or_assigned_by_position():
    text = call_text({"name": "a", "arguments": {}, "id": "tool-xyz"}) + call_text({"name": "b", "arguments": {}})
    r = parse_action(text)
    assert [c.id for c in r.tool_calls] == ["tool-xyz", "call_1"]
    bad = parse_action(call_text({"name": "a", "arguments": {}, "id": 7}))
    assert bad.errors and '"id"' in bad.errors[0]


@pytest.mark.parametrize(
    "obj, needle",
    [({"arguments": {}}, 'no "name"'), ({"name": "", "arguments": {}}, "non-empty string"), ({"name": 3}, "non-empty string"), ("just a string", "got a string")],
)
def test_bad_call_objects(obj, needle):
    r = parse_action(call_text(obj))
    assert r.tool_calls == [] and needle in r.errors[0]


def test_parameters_alias_and_missing_arguments():
    r = parse_action('<tool_call>{"name": "a", "parameters": {"x": 1}}</tool_call><tool_call>{"name": "b"}</tool_call>')
    assert r.tool_calls == [ToolCall("a", {"x": 1}, "call_0"), ToolCall("b", {}, "call_1")]


def test_tags_and_braces_inside_json_strings_do_not_end_the_call():
    args = {"code": 'print("}</tool_call>{")', "note": "<message>x</message> \\\" <think>"}
    r = parse_action(call_text({"name": "python", "arguments": args}) + "<message>ran it</message>")
    assert r.tool_calls == [ToolCall("python", args, "call_0")]
    assert r.message == "ran it" and r.errors == []


def test_deeply_nested_json_does_not_crash():
    r = parse_action("<tool_call>" + "[" * 100_000 + "</tool_call>")
    assert not r.valid and r.errors


# ------------------------------------------------------------------ structured actions


def test_structured_call_list_and_message():
    r = parse_action({"name": "a", "arguments": {"x": 1}})
    assert r.tool_calls == [ToolCall("a", {"x": 1}, "call_0")] and r.valid
    assert parse_action(r.raw).tool_calls == r.tool_calls
    r = parse_action([{"name": "a", "arguments": "{}"}, ToolCall("b", {"y": 2}, "id9")])
    assert r.tool_calls == [ToolCall("a", {}, "call_0"), ToolCall("b", {"y": 2}, "id9")]
    r = parse_action({"message": "hello"})
    assert r.message == "hello" and r.tool_calls == [] and r.raw == "<message>hello</message>"
    r = parse_action({"tool_calls": [{"name": "a"}], "message": "after"})
    assert [c.name for c in r.tool_calls] == ["a"] and r.message == "after"


def test_structured_openai_entry():
    call = ToolCall("get", {"k": "v"}, "abc")
    r = parse_action(call.to_openai())
    assert r.tool_calls == [call]


@pytest.mark.parametrize(
    "action, needle",
    [
        ({"foo": 1}, "is not an action"),
        ([], "empty list"),
        ([{"name": "a", "arguments": [1]}], "got a list"),
        ({"message": 5}, '"message" must be a string'),
        ({"tool_calls": "x"}, '"tool_calls" must be a list'),
        ({"message": "hi", "extra": 1}, "unknown key"),
        ({"tool_calls": []}, "neither a message nor tool calls"),
        ({"name": "a", "arguments": {}, "message": "hi"}, "cannot also carry"),
        (42, "got int"),
        (None, "got NoneType"),
        ([3], "got a number"),
    ],
)
def test_bad_structured_actions_are_errors(action, needle):
    r = parse_action(action)
    assert not r.valid
    assert any(needle in e for e in r.errors), r.errors


# ------------------------------------------------------------------ round trip (property)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.sampled_from(["</tool_call>", "<tool_call>", "{", "}", '"}', "\\", "</think>", "<message>", "\u2028", "🙂"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
tool_names = st.one_of(st.text(min_size=1, max_size=20), st.sampled_from(["get_order", "</tool_call>", "{}", "名前"]))
ids = st.one_of(st.none(), st.text(max_size=10))


@st.composite
def tool_call_lists(draw):
    n = draw(st.integers(min_value=0, max_value=4))
    calls = []
    for i in range(n):
        cid = draw(ids)
        args = draw(st.dictionaries(st.text(max_size=8), json_values, max_size=4))
        calls.append(ToolCall(draw(tool_names), args, f"call_{i}" if cid is None else cid))
    return calls


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_call_lists())
def test_parse_render_round_trip(calls):
    text = render_tool_calls(calls)
    r = parse_action(text)
    if calls:
        assert r.errors == []
        assert r.tool_calls == calls
        assert r.truncated is False
    else:
        assert text == "" and r.tool_calls == []


@settings(max_examples=200, deadline=None)
@given(tool_call_lists(), st.text().filter(lambda s: "</message>" not in s and s.strip()))
def test_render_action_round_trip_with_message(calls, message):
    r = parse_action(render_action(calls, message=message, thinking="plan"))
    assert r.tool_calls == calls and r.message == message.strip() and r.thinking == "plan"


def test_render_omits_default_ids():
    text = render_tool_calls([ToolCall("a", {"x": "é"}, "call_0"), ToolCall("b", {}, "call_0")])
    assert text == (
        '<tool_call>\n{"name": "a", "arguments": {"x": "é"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "b", "arguments": {}, "id": "call_0"}\n</tool_call>'
    )


# ------------------------------------------------------------------ fuzz: never raises

# Fragments are drawn as single letters of a small alphabet and expanded afterwards: drawing a
# text is much cheaper for hypothesis than drawing a list, which keeps 10,000 examples fast.
_FRAGMENTS = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<message>", "</message>",
              '{"name": "a", "arguments": {', '{"name": "b", "arguments": {"s": "}"}}', '"arguments": ', "null",
              "1e999", "</"]
_EXPAND = {chr(ord("A") + i): f for i, f in enumerate(_FRAGMENTS)}
_KEYS = "".join(_EXPAND) + '{}[]"\\,: \nxé<>'
_fuzz_text = st.one_of(
    st.text(max_size=200),
    st.text(alphabet=_KEYS, max_size=60).map(lambda s: "".join(_EXPAND.get(c, c) for c in s)),
)


@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_fuzz_text, st.booleans(), st.booleans())
def test_fuzz_arbitrary_strings_never_raise(text, plain, think_open):
    r = parse_action(text, plain_text_as_message=plain, think_open=think_open)
    assert isinstance(r, ParsedAction)
    assert r.raw == text
    # invariants: valid iff no errors and some action; errors are non-empty strings
    assert r.valid == (not r.errors and (bool(r.tool_calls) or r.message is not None))
    assert all(isinstance(e, str) and e for e in r.errors)
    assert not any(e.startswith("internal parser error") for e in r.errors)  # the safety net never fires
    assert all(isinstance(c.arguments, dict) and isinstance(c.name, str) and c.name for c in r.tool_calls)


def test_error_text_is_capped_and_to_dict_is_json():
    r = parse_action("<tool_call>[1]</tool_call>" * 30)
    assert len(r.errors) == 30
    text = r.error_text(max_errors=5)
    assert text.count("\n- tool call") == 5 and text.endswith("- ... and 25 more")
    ok = parse_action('<think>t</think><tool_call>{"name": "a", "arguments": {"x": [1]}}</tool_call>')
    d = json.loads(json.dumps(ok.to_dict()))
    assert d == {
        "tool_calls": [{"id": "call_0", "name": "a", "arguments": {"x": [1]}}],
        "message": None, "thinking": "t", "errors": [], "truncated": False, "text": "", "valid": True,
    }


def test_thinking_is_stripped_like_qwen3_output():
    r = parse_action('<think>\nFirst, cost matters.\n</think>\n\n<message>ok</message>')
    assert r.thinking == "First, cost matters." and r.message == "ok"


# ------------------------------------------------------------------ deep nesting (issue 16, item 1)


def _nested(depth: int) -> dict:
    root: dict = {}
    node = root
    for _ in range(depth):
        node["k"] = {}
        node = node["k"]
    return root


@pytest.mark.parametrize("depth", [40, 1000, 5000])
def test_deeply_nested_structured_arguments_are_an_error_not_an_exception(depth):
    action = {"name": "call_expert", "arguments": {"expert": "expert-1", "x": _nested(depth)}}
    r = parse_action(action)
    assert r.tool_calls == []
    assert len(r.errors) == 1 and "nest more than 32 levels deep" in r.errors[0]
    assert isinstance(r.raw, str) and len(r.raw) < 10_000


def test_deeply_nested_text_arguments_are_an_error():
    text = '<tool_call>{"name": "f", "arguments": ' + '{"k": ' * 900 + "1" + "}" * 900 + "}</tool_call>"
    r = parse_action(text)
    assert r.tool_calls == [] and "nest more than 32 levels deep" in r.errors[0]


def test_arguments_at_the_depth_limit_are_accepted_and_cycles_rejected():
    from orchestra_gym.parsing import MAX_ARGUMENT_DEPTH

    ok = parse_action({"name": "f", "arguments": _nested(MAX_ARGUMENT_DEPTH - 1)})
    assert ok.errors == [] and len(ok.tool_calls) == 1
    cyclic: dict = {}
    cyclic["self"] = cyclic
    bad = parse_action({"name": "f", "arguments": cyclic})
    assert bad.tool_calls == [] and "nest more than" in bad.errors[0]
