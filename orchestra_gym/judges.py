"""Graders for QA answers: normalised exact match first, then an LLM judge.

Two LLM judges, each a prompt written for this project that asks for the same decision as the
benchmark's own grader:

* HLE (Phan et al. 2025, the ``cais/hle`` judge): a structured judgement with the fields
  ``extracted_final_answer``, ``reasoning``, ``correct`` (yes/no) and ``confidence`` (0-100).
* FRAMES (Krishna et al. 2024, arXiv 2409.12941, Sec. 3 "auto-rater"): a short explanation and a
  TRUE/FALSE decision on whether the response contains the gold answer's meaning.

The judge model is any object with ``complete(messages, tools=None, **sampling)`` returning a
response with ``.message.content``, ``.usage`` and ``.error`` (duck-typed: the project's chat
models and their record/replay cache satisfy it). A judge reply that cannot be parsed, or a failed
call, counts as wrong, is logged (``logging``, logger ``orchestra_gym.judges``) and is reported in
``JudgeResult.details["malformed"]`` / ``["error"]``.
"""

from __future__ import annotations

import json
import logging
import re
import time
import unicodedata
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, Protocol

from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_gym.types import Message, Task, Usage

__all__ = [
    "JudgeResult",
    "ChatModel",
    "normalize_answer",
    "extract_final_answer",
    "extract_choice_letter",
    "exact_match",
    "hle_judge",
    "frames_autorater",
    "parse_hle_judgement",
    "parse_frames_decision",
    "Judge",
    "complete_text",
]

log = logging.getLogger(__name__)


@dataclass
class JudgeResult:
    """The verdict on one answer.

    Attributes:
        correct: True when the answer is judged correct.
        method: ``"exact"`` (decided by normalised matching), ``"llm"`` (decided by the judge
            model, including a malformed reply or failed call, which count as wrong) or
            ``"none"`` (no decision possible: empty answer, or no exact match and no judge model).
        details: machine-readable evidence: the normalised strings, the judge's parsed fields,
            ``raw`` judge text, ``malformed``/``error`` flags.
        usage: tokens, cost (USD) and latency (s) of the judge call (zero for exact match).
    """

    correct: bool
    method: Literal["exact", "llm", "none"]
    details: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


class ChatModel(Protocol):
    """What a judge needs from a chat model (duck-typed)."""

    def complete(self, messages: list[Message], tools: Any = None, **sampling: Any) -> Any: ...


# ----------------------------------------------------------------------------- exact match

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NUM = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?(?![\w])")


def _canon_number(tok: str) -> str:
    tok = tok.replace(",", "").lstrip("+")
    try:
        val = Fraction(tok)
    except (ValueError, ZeroDivisionError):
        return tok
    if val.denominator == 1:
        return str(val.numerator)
    if "/" in tok:
        return f"{val.numerator}/{val.denominator}"
    return format(float(val), ".12g")


def normalize_answer(text: str | None) -> str:
    """Normalise an answer for matching: Unicode NFKC, lower case, numbers in one form, no
    punctuation, no articles (a/an/the), single spaces.

    Numbers: thousands separators dropped (``1,000`` -> ``1000``), trailing decimal zeros dropped
    (``3.50`` -> ``3.5``, ``2.0`` -> ``2``), a leading ``+`` dropped, fractions reduced
    (``2/4`` -> ``1/2``). The sign and decimal point of a number survive punctuation removal.

    Source: SQuAD-style answer normalisation (articles, punctuation, whitespace), plus numbers.
    """
    if text is None:
        return ""
    s = unicodedata.normalize("NFKC", str(text)).lower().replace("\u2212", "-")
    parts = _NUM.split(s)
    nums = [_canon_number(m.group(0)) for m in _NUM.finditer(s)]
    out: list[str] = []
    for i, part in enumerate(parts):
        part = "".join(" " if unicodedata.category(c).startswith(("P", "S")) else c for c in part)
        out.append(_ARTICLES.sub(" ", part))
        if i < len(nums):
            out.append(f" {nums[i]} ")
    return " ".join("".join(out).split())


_ANSWER_LINE = re.compile(r"(?im)^\s*(?:\*\*)?(?:final\s+)?answer(?:\*\*)?\s*[:：]\s*(?:\*\*)?(.+?)(?:\*\*)?\s*$")
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")


def extract_final_answer(response: str | None) -> str:
    """The final answer inside a model response.

    Order: the last ``\\boxed{...}``; else the last ``Answer: ...`` line (HLE's answer format
    ``Explanation / Answer / Confidence``; also ``Final answer:`` and bold markers); else the
    whole response, stripped.
    """
    if not response:
        return ""
    boxed = _BOXED.findall(response)
    if boxed:
        return boxed[-1].strip()
    lines = _ANSWER_LINE.findall(response)
    if lines:
        return lines[-1].strip()
    return response.strip()


_LETTER_PATTERNS = (
    re.compile(r"^\s*\(?\**([A-Z])\**\)?\s*(?:[.):]\s*.*)?$", re.S | re.I),  # "B", "(B)", "B. Nitrogen", "**B**"
    re.compile(r"(?i)\b(?:answer|option|choice)\s*(?:is|:)?\s*\(?\**([A-Z])\**\)?(?![\w])"),  # "the answer is (C)"
)


def extract_choice_letter(text: str | None) -> str | None:
    """The multiple-choice letter (A-Z, upper case) a response picks, or None when unclear.

    Looks at the extracted final answer (see `extract_final_answer`): a bare letter, ``(B)``,
    ``B.``/``B)``/``B:`` followed by the option text, ``**B**``, or ``answer is C`` phrasing.
    """
    ans = extract_final_answer(text)
    if not ans:
        return None
    for pat in _LETTER_PATTERNS:
        m = pat.search(ans) if pat is _LETTER_PATTERNS[1] else pat.match(ans)
        if m:
            return m.group(1).upper()
    return None


def _as_number(s: str) -> Fraction | None:
    if not _NUM.fullmatch(s):
        return None
    try:
        return Fraction(s.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None


def exact_match(prediction: str | None, gold: str | None, answer_type: str = "exactMatch") -> bool:
    """Normalised exact match of a predicted answer against the gold answer.

    Args:
        prediction: the model's response (its final answer is extracted first) or a bare answer.
        gold: the gold answer (kept verbatim in `Task.answer`).
        answer_type: ``"multipleChoice"`` compares the extracted letters; anything else compares
            `normalize_answer` forms, and equal numeric values (``0.5`` vs ``1/2``).

    Returns:
        bool; False for an empty prediction or gold.
    """
    if not prediction or gold is None or not str(gold).strip():
        return False
    if answer_type == "multipleChoice":
        g = extract_choice_letter(gold) or normalize_answer(gold).upper()
        return extract_choice_letter(prediction) == g
    pred_n, gold_n = normalize_answer(extract_final_answer(prediction)), normalize_answer(gold)
    if not pred_n:
        return False
    if pred_n == gold_n:
        return True
    a, b = _as_number(pred_n), _as_number(gold_n)
    return a is not None and b is not None and a == b


# ----------------------------------------------------------------------------- LLM judges

_HLE_PROMPT = """You are grading an answer to an exam question. Compare the response with the correct answer.

[question]: {question}

[response]: {response}

[correct_answer]: {correct_answer}

Reply with one JSON object and nothing else, with exactly these keys:
- "extracted_final_answer": the final answer stated in the response, copied exactly; the string "None" if the response states no final answer.
- "reasoning": a short explanation of whether extracted_final_answer means the same as correct_answer. Judge only that; do not solve the question yourself and do not argue for another answer. Small numerical differences within the precision the question asks for are acceptable; any difference in meaning, a missing part, or an ambiguous answer is not.
- "correct": "yes" if extracted_final_answer matches correct_answer as explained above, otherwise "no".
- "confidence": the confidence score (0 to 100) that the response itself states; 100 if it states none."""

_FRAMES_PROMPT = """You check whether a response to a question contains the correct answer.

Question: {question}
Response: {response}
Ground-truth answer: {correct_answer}

The response is correct when its meaning includes the essential facts of the ground-truth answer, even if it is worded differently or adds details. It is incorrect when it misses, contradicts or hedges between answers on any essential fact. Numbers must agree up to the precision the question asks for.

First write one or two sentences explaining your check. Then write a final line of the form
Decision: TRUE
or
Decision: FALSE"""


def _usage_of(resp: Any) -> Usage:
    u = getattr(resp, "usage", None)
    if isinstance(u, Usage):
        return u
    if isinstance(u, dict):
        return Usage.from_dict(u)
    if u is not None and hasattr(u, "prompt_tokens"):
        return Usage(
            float(getattr(u, "prompt_tokens", 0) or 0),
            float(getattr(u, "completion_tokens", 0) or 0),
            float(getattr(u, "cost_usd", 0) or 0),
            float(getattr(u, "latency_s", 0) or 0),
        )
    return Usage()


def complete_text(model: ChatModel, prompt: str, sampling: dict[str, Any] | None = None) -> tuple[str | None, Usage, str | None]:
    """Send one user message to a chat model; return (reply text | None, usage, error text | None).

    Never raises for a failing model: an exception or a response with ``.error`` gives the error
    text (the usage of a failed call is kept; an exception's latency is measured).
    """
    t0 = time.perf_counter()
    try:
        resp = model.complete([Message(role="user", content=prompt)], tools=None, **(sampling or {}))
    except Exception as e:  # a model failure is reported, never a crash
        return None, Usage(latency_s=time.perf_counter() - t0), f"{type(e).__name__}: {e}"
    usage = _usage_of(resp)
    err = getattr(resp, "error", None)
    if err:
        return None, usage, str(err)
    msg = getattr(resp, "message", None)
    content = getattr(msg, "content", None) if msg is not None else None
    if content is None and isinstance(msg, dict):
        content = msg.get("content")
    return (content if isinstance(content, str) else None), usage, None


def _strip_fences(text: str) -> str:
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    m = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    return m.group(1) if m else text


def _json_object(text: str) -> dict | None:
    text = _strip_fences(text)
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[start:])
            if isinstance(obj, dict):
                return obj
        except json.JSONDecodeError:
            pass
        start = text.find("{", start + 1)
    return None


_HLE_KEYS = ("extracted_final_answer", "reasoning", "correct", "confidence")


def parse_hle_judgement(text: str | None) -> dict[str, Any] | None:
    """Parse an HLE-style judgement: a JSON object, or ``key: value`` labelled lines.

    Returns:
        ``{"extracted_final_answer": str, "reasoning": str, "correct": bool, "confidence": float}``
        (confidence in [0, 100], 100 when absent or unreadable), or None when no yes/no
        ``correct`` field can be read (a malformed reply).

    The ``correct`` field is read as strictly as HLE's own judge, whose structured-output schema
    allows exactly ``"yes"`` or ``"no"`` and whose score counts ``correct == "yes"`` (cais/hle,
    ``judge_with_output_parsers``): only those two strings (surrounding whitespace, and markdown
    emphasis around a labelled line's value, aside) are a verdict. ``"Yes."``, ``"y"``, ``true``
    or ``"correct"`` are malformed, so the caller counts the answer wrong and logs the reply.
    """
    if not text:
        return None
    obj = _json_object(text)
    fields: dict[str, Any] = {}
    if obj is not None:
        fields = {str(k).strip().lower(): v for k, v in obj.items()}
    else:
        key_re = "|".join(_HLE_KEYS)
        pat = re.compile(rf"(?im)^\s*[*#\s]*({key_re})[*\s]*[:=]\s*(.*?)(?=^\s*[*#\s]*(?:{key_re})[*\s]*[:=]|\Z)", re.S)
        for m in pat.finditer(_strip_fences(text)):
            fields[m.group(1).lower()] = m.group(2).strip().strip("*").strip()
    corr = fields.get("correct")
    if not isinstance(corr, str):
        return None
    verdict = corr.strip() if obj is not None else corr.strip().strip("*`").strip()
    if verdict not in ("yes", "no"):
        return None
    correct = verdict == "yes"
    conf_raw = fields.get("confidence", 100)
    m = re.search(r"-?\d+(?:\.\d+)?", str(conf_raw))
    confidence = min(100.0, max(0.0, float(m.group(0)))) if m else 100.0
    return {
        "extracted_final_answer": str(fields.get("extracted_final_answer", "None")),
        "reasoning": str(fields.get("reasoning", "")),
        "correct": correct,
        "confidence": confidence,
    }


def parse_frames_decision(text: str | None) -> bool | None:
    """Parse a FRAMES autorater reply: the TRUE/FALSE decision, or None when unreadable.

    Order: a ``Decision: TRUE|FALSE`` label (the last one wins); a JSON ``{"decision": ...}``;
    else the reply's only standalone TRUE/FALSE word (None if both or neither appear).
    """
    if not text:
        return None
    body = _strip_fences(text) if "```" in text else re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    labelled = re.findall(r"(?i)decision\W{0,5}(true|false)\b", body)
    if labelled:
        return labelled[-1].lower() == "true"
    obj = _json_object(text)
    if obj is not None:
        d = {str(k).lower(): v for k, v in obj.items()}.get("decision")
        if isinstance(d, bool):
            return d
        if isinstance(d, str) and d.strip().lower() in ("true", "false"):
            return d.strip().lower() == "true"
    words = {w.upper() for w in re.findall(r"\b(TRUE|FALSE)\b", body)}
    if len(words) == 1:
        return words.pop() == "TRUE"
    return None


def _llm_verdict(kind: str, text: str | None, usage: Usage, err: str | None, details: dict[str, Any]) -> JudgeResult:
    details = dict(details, raw=text)
    if err is not None:
        log.warning("%s judge call failed (%s); counting the answer as wrong", kind, err)
        return JudgeResult(False, "llm", dict(details, error=err, malformed=False), usage)
    if kind == "hle":
        parsed = parse_hle_judgement(text)
        if parsed is not None:
            return JudgeResult(bool(parsed["correct"]), "llm", dict(details, malformed=False, **parsed), usage)
    else:
        decision = parse_frames_decision(text)
        if decision is not None:
            return JudgeResult(decision, "llm", dict(details, malformed=False, decision=decision), usage)
    log.warning("malformed %s judge reply counted as wrong: %r", kind, (text or "")[:300])
    return JudgeResult(False, "llm", dict(details, malformed=True), usage)


def hle_judge(
    question: str, response: str, correct_answer: str, model: ChatModel, **sampling: Any
) -> JudgeResult:
    """Ask `model` for HLE's structured judgement of `response` against `correct_answer`.

    Args:
        question, response, correct_answer: texts (the gold answer verbatim).
        model: a chat model (``complete(messages, tools=None, **sampling)``).
        **sampling: passed to ``complete`` (default ``temperature=0.0``).

    Returns:
        `JudgeResult` with method ``"llm"``; details hold ``extracted_final_answer``,
        ``reasoning``, ``correct``, ``confidence`` or ``malformed=True`` / ``error``.
    """
    sampling = {"temperature": 0.0, **sampling}
    prompt = _HLE_PROMPT.format(question=question, response=response, correct_answer=correct_answer)
    text, usage, err = complete_text(model, prompt, sampling)
    return _llm_verdict("hle", text, usage, err, {"judge": "hle"})


def frames_autorater(
    question: str, response: str, correct_answer: str, model: ChatModel, **sampling: Any
) -> JudgeResult:
    """Ask `model` for FRAMES' TRUE/FALSE decision on `response` against `correct_answer`.

    Returns:
        `JudgeResult` with method ``"llm"``; details hold ``decision`` or ``malformed=True`` /
        ``error``. Sampling defaults to ``temperature=0.0``.
    """
    sampling = {"temperature": 0.0, **sampling}
    prompt = _FRAMES_PROMPT.format(question=question, response=response, correct_answer=correct_answer)
    text, usage, err = complete_text(model, prompt, sampling)
    return _llm_verdict("frames", text, usage, err, {"judge": "frames"})


class Judge:
    """Grade a response to a `Task`: normalised exact match, then the LLM judge of its domain.

    Args:
        model: judge chat model (e.g. a cached OpenAI-compatible model), or None for exact match
            only (a non-matching answer then gets method ``"none"``).
        kind: ``"hle"`` or ``"frames"``; default from ``task.domain`` (``"frames"`` for FRAMES,
            ``"hle"`` otherwise).
        **sampling: passed to the judge model.

    Multiple-choice tasks (``task.metadata["answer_type"] == "multipleChoice"``) with a readable
    letter in the response are decided by the letter alone, without a judge call.
    """

    def __init__(self, model: ChatModel | None = None, kind: str | None = None, **sampling: Any):
        if kind not in (None, "hle", "frames"):
            raise ConfigError(f"unknown judge kind {kind!r}{did_you_mean(kind, ('hle', 'frames'))}; use 'hle', 'frames' or None (from the task's domain)")
        self.model, self.kind, self.sampling = model, kind, sampling

    def __call__(self, task: Task, response: str | None) -> JudgeResult:
        """Return the `JudgeResult` for `response` (the answer text) to `task`."""
        answer_type = str(task.metadata.get("answer_type", "exactMatch"))
        gold = task.answer or ""
        pred = extract_final_answer(response)
        details: dict[str, Any] = {
            "prediction": pred,
            "normalized_prediction": normalize_answer(pred),
            "normalized_gold": normalize_answer(gold),
        }
        if not pred:
            return JudgeResult(False, "none", dict(details, reason="empty response"))
        if answer_type == "multipleChoice":
            letter = extract_choice_letter(response)
            if letter is not None:
                return JudgeResult(exact_match(response, gold, answer_type), "exact", dict(details, letter=letter))
        if exact_match(response, gold, answer_type):
            return JudgeResult(True, "exact", details)
        if self.model is None:
            return JudgeResult(False, "none", dict(details, reason="no exact match and no judge model"))
        kind = self.kind or ("frames" if task.domain == "frames" else "hle")
        fn = frames_autorater if kind == "frames" else hle_judge
        res = fn(task.prompt, response or "", gold, self.model, **self.sampling)
        res.details = {**details, **res.details}
        return res
