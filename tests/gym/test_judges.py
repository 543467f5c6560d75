"""Judges: normalised exact match, multiple-choice letters, HLE judgement and FRAMES autorater parsing."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pytest

from orchestra_gym.judges import (
    Judge,
    exact_match,
    extract_choice_letter,
    extract_final_answer,
    frames_autorater,
    hle_judge,
    normalize_answer,
    parse_frames_decision,
    parse_hle_judgement,
)
from orchestra_gym.types import Message, Task, Usage


@dataclass
class _Msg:
    content: str | None


@dataclass
class _Resp:
    message: _Msg
    usage: Usage = field(default_factory=lambda: Usage(100.0, 20.0, 0.0003, 1.5))
    error: str | None = None


class ScriptedChat:
    """A tiny in-test chat model: returns scripted replies and records the prompts it saw."""

    def __init__(self, *replies: str | None, error: str | None = None):
        self.replies, self.error, self.calls = list(replies), error, []

    def complete(self, messages, tools=None, **sampling):
        self.calls.append((messages, tools, sampling))
        return _Resp(_Msg(self.replies.pop(0) if self.replies else None), error=self.error)


@pytest.mark.parametrize(
    "a,b",
    [
        ("The Eiffel Tower.", "eiffel tower"),
        ("  1,000,000 ", "1000000"),
        ("3.50", "3.5"),
        ("+2.0", "2"),
        ("2/4", "1/2"),
        ("Marie   Curie and Grazia Deledda", "marie curie and grazia deledda"),
        ("An Apple!", "apple"),
        ("\u22125", "-5"),
        ("$5", "5"),
    ],
)
def test_normalize_equal(a, b):
    assert normalize_answer(a) == normalize_answer(b)


def test_normalize_values():
    assert normalize_answer("The 1,234.50 Euros, roughly.") == "1234.5 euros roughly"
    assert normalize_answer("pi ≈ 3.14") == "pi 3.14"
    assert normalize_answer(None) == ""
    assert normalize_answer("10") != normalize_answer("100")


def test_extract_final_answer():
    r = "Explanation: 17 times 3.\nAnswer: 51\nConfidence: 90%"
    assert extract_final_answer(r) == "51"
    assert extract_final_answer("so it is \\boxed{\\frac{1}{2}} done") == "\\frac{1}{2}"
    assert extract_final_answer("**Final Answer:** Jane Ballou") == "Jane Ballou"
    assert extract_final_answer("  just text ") == "just text"


@pytest.mark.parametrize(
    "text,letter",
    [("B", "B"), ("(c)", "C"), ("B. Nitrogen", "B"), ("**D**", "D"), ("Explanation: x\nAnswer: E\nConfidence: 3", "E"),
     ("I think the answer is (A) because", "A"), ("Nitrogen", None), ("", None)],
)
def test_choice_letter(text, letter):
    assert extract_choice_letter(text) == letter


def test_exact_match():
    assert exact_match("Answer: 1,000", "1000")
    assert exact_match("0.5", "1/2")
    assert exact_match("Answer: The Vorn", "The Vorn ")  # gold trailing space stored verbatim, ignored in matching
    assert not exact_match("Answer: 51.1", "51")
    assert not exact_match("", "x") and not exact_match("x", "  ")
    assert exact_match("Answer: B. Nitrogen", "B", "multipleChoice")
    assert not exact_match("Answer: C", "B", "multipleChoice")


def test_parse_hle_json_and_labelled():
    j = parse_hle_judgement('```json\n{"extracted_final_answer": "51", "reasoning": "same", "correct": "yes", "confidence": "85%"}\n```')
    assert j == {"extracted_final_answer": "51", "reasoning": "same", "correct": True, "confidence": 85.0}
    lab = parse_hle_judgement(
        "extracted_final_answer: 52\n\nreasoning: differs from 51,\nby one.\n\ncorrect: no\n\nconfidence: 100"
    )
    assert lab == {"extracted_final_answer": "52", "reasoning": "differs from 51,\nby one.", "correct": False, "confidence": 100.0}
    assert parse_hle_judgement("<think>hmm</think>**correct**: yes")["correct"] is True
    assert parse_hle_judgement('{"correct": "yes", "confidence": 250}')["confidence"] == 100.0
    assert parse_hle_judgement("I believe it is right.") is None
    assert parse_hle_judgement('{"correct": "maybe"}') is None
    assert parse_hle_judgement(None) is None


@pytest.mark.parametrize("verdict", ['"Yes."', '"y"', "true", '"correct"', '"Yes"', '"YES"', '"yes!"', "1", '"true"'])
def test_parse_hle_accepts_only_exact_yes_or_no_as_the_benchmark_does(verdict, caplog):
    assert parse_hle_judgement('{"extracted_final_answer": "51", "correct": %s}' % verdict) is None
    assert parse_hle_judgement(f"correct: {verdict.strip(chr(34))}") is None
    chat = ScriptedChat('{"extracted_final_answer": "51", "reasoning": "same", "correct": %s}' % verdict)
    with caplog.at_level("WARNING", logger="orchestra_gym.judges"):
        r = hle_judge("What is 17*3?", "51", "51", chat)
    assert r.correct is False and r.details["malformed"] is True
    assert "malformed hle judge reply counted as wrong" in caplog.text
    assert parse_hle_judgement('{"correct": " no "}')["correct"] is False


def test_parse_frames_decision():
    assert parse_frames_decision("The response names Jane Ballou.\nDecision: TRUE") is True
    assert parse_frames_decision("Mentions TRUE facts but wrong.\n**Decision:** FALSE") is False
    assert parse_frames_decision('{"explanation": "x", "decision": "TRUE"}') is True
    assert parse_frames_decision("FALSE") is False
    assert parse_frames_decision("It could be TRUE or FALSE") is None
    assert parse_frames_decision("no verdict here") is None


def test_hle_judge_call_and_usage():
    chat = ScriptedChat('{"extracted_final_answer": "fifty-one", "reasoning": "equal", "correct": "yes", "confidence": 70}')
    r = hle_judge("What is 17*3?", "Answer: fifty-one", "51", chat)
    assert (r.correct, r.method) == (True, "llm")
    assert r.details["extracted_final_answer"] == "fifty-one" and r.details["confidence"] == 70.0
    assert r.usage == Usage(100.0, 20.0, 0.0003, 1.5)
    (messages, tools, sampling), = chat.calls
    assert tools is None and sampling == {"temperature": 0.0}
    assert isinstance(messages[0], Message) and messages[0].role == "user"
    for needle in ("What is 17*3?", "Answer: fifty-one", "[correct_answer]: 51", "extracted_final_answer", "confidence"):
        assert needle in messages[0].content


def test_malformed_and_failed_replies_count_wrong_and_log(caplog):
    with caplog.at_level(logging.WARNING, logger="orchestra_gym.judges"):
        r = hle_judge("q", "a", "b", ScriptedChat("looks fine to me"))
        f = frames_autorater("q", "a", "b", ScriptedChat("TRUE and FALSE"))
        e = frames_autorater("q", "a", "b", ScriptedChat(None, error="HTTP 503"))
    assert (r.correct, r.method, r.details["malformed"], r.details["raw"]) == (False, "llm", True, "looks fine to me")
    assert (f.correct, f.details["malformed"]) == (False, True)
    assert (e.correct, e.details["error"]) == (False, "HTTP 503")
    msgs = [rec.getMessage() for rec in caplog.records]
    assert sum("malformed" in m for m in msgs) == 2 and sum("HTTP 503" in m for m in msgs) == 1


class Boom:
    def complete(self, messages, tools=None, **sampling):
        raise ConnectionError("refused")


def test_judge_pipeline():
    hle = Task(id="1", domain="hle", prompt="What is 17*3?", answer="51", metadata={"answer_type": "exactMatch"})
    mc = Task(id="2", domain="hle", prompt="Pick", answer="B", metadata={"answer_type": "multipleChoice"})
    fr = Task(id="3", domain="frames", prompt="Who?", answer="Jane Ballou ")
    chat = ScriptedChat("Decision: TRUE", '{"correct": "no"}')
    j = Judge(chat)
    r = j(hle, "Explanation: easy\nAnswer: 51\nConfidence: 99")
    assert (r.correct, r.method, r.usage) == (True, "exact", Usage())
    assert j(mc, "Answer: C").method == "exact" and not j(mc, "Answer: C").correct
    assert j(mc, "B").correct
    assert chat.calls == []  # exact decisions make no judge call
    r = j(fr, "Her name would be Jane Ballou, after Eliza Ballou.")
    assert (r.correct, r.method, r.details["decision"]) == (True, "llm", True)
    assert "Ground-truth answer: Jane Ballou" in chat.calls[0][0][0].content
    r = j(hle, "Answer: 52")
    assert (r.correct, r.method, r.details["normalized_prediction"]) == (False, "llm", "52")
    assert Judge(None)(hle, "Answer: 52").method == "none"
    assert Judge(chat)(hle, "   ").details["reason"] == "empty response"
    r = Judge(Boom())(hle, "Answer: 52")
    assert (r.correct, r.method) == (False, "llm") and "refused" in r.details["error"]
    with pytest.raises(ValueError, match="unknown judge kind 'gaia'"):
        Judge(None, kind="gaia")


def test_judges_against_local_http_server(caplog):
    """The judge through the project's OpenAI-compatible client and a real server on 127.0.0.1."""
    from tests.servers import OpenAIServer
    from orchestra_gym.pricing import ModelPrice
    from orchestra_gym.tools.llm import OpenAIChatModel

    with OpenAIServer() as srv:
        model = OpenAIChatModel("judge-model", srv.base_url, price=ModelPrice(1.0, 4.0), max_retries=0)
        srv.queue_reply('{"extracted_final_answer": "52", "reasoning": "off by one", "correct": "no", "confidence": 90}',
                        usage=(1000, 50))
        srv.queue_reply("Decision: TRUE", usage=(10, 2))
        srv.queue_reply("I cannot decide.")
        task = Task(id="1", domain="hle", prompt="What is 17*3?", answer="51")
        r = Judge(model)(task, "Answer: 52")
        assert (r.correct, r.method, r.details["extracted_final_answer"]) == (False, "llm", "52")
        assert r.usage.prompt_tokens == 1000 and r.usage.cost_usd == pytest.approx((1000 * 1.0 + 50 * 4.0) / 1e6)
        fr = Task(id="2", domain="frames", prompt="Who?", answer="Jane Ballou")
        assert Judge(model)(fr, "It is Jane Ballou's namesake").correct is True
        with caplog.at_level(logging.WARNING, logger="orchestra_gym.judges"):
            bad = Judge(model)(fr, "Someone else")
        assert (bad.correct, bad.details["malformed"]) == (False, True) and "malformed" in caplog.text
        body = srv.chat_requests[0]
        assert body["model"] == "judge-model" and body["temperature"] == 0.0
        assert "[response]: Answer: 52" in body["messages"][0]["content"]
        model.close()
