"""Chat models over the OpenAI-compatible ``/v1/chat/completions`` API (httpx, sync and async).

Works against any server that speaks the OpenAI chat-completions schema: vLLM, SGLang, OpenAI,
Together, and the local test server in ``tests/servers.py``. One call sends ``messages``,
optional ``tools`` (OpenAI function-calling JSON schema) and sampling arguments, and returns a
`ChatResponse` whose assistant `Message` carries the parsed ``tool_calls`` of the reply.

Accounting (ToolOrchestra Sec. 3.2: every call has a cost and a latency):

* tokens: the ``usage`` object of the reply (``prompt_tokens``, ``completion_tokens``);
* cost (USD): ``usage x price`` through `orchestra_gym.pricing` (a price given explicitly, e.g.
  from the models file, overrides the pricing schedule);
* latency (s): wall-clock of the whole call, retries and back-off included (``time.perf_counter``).

Bounds (per attempt, `RetryPolicy`): ``timeout_s`` is an overall deadline for the whole attempt
(connect, send, and every byte of the body: a server that trickles its reply is cut off), and at
most ``max_response_bytes`` of (decoded) body are read (``Content-Length`` checked first); a
larger body fails the attempt, unretried. The body is decoded here, not by httpx, with the cap
applied inside the decompressor (one ``gzip`` or ``deflate`` coding; stacked or other codings are
refused), so a compressed bomb never inflates past the cap. The deadline is checked between reads, so a sync
attempt can run past it by at most one read timeout (``timeout_s``) when the server stalls
completely; the async path is cut at the deadline exactly (``asyncio.wait_for``). ``usage`` is
validated (`check_usage`: finite, non-negative, at most `MAX_TOKENS_PER_CALL` tokens each): a
reply with implausible usage is an error response holding the raw values, so no ``inf`` or NaN
cost ever reaches a reward. Lone surrogates in reply text are replaced (`parsing.scrub_text`),
so one bad reply cannot poison the conversation's later requests.

Failures never raise out of `OpenAIChatModel.complete`: timeouts, connection errors, HTTP 429 and
5xx are retried with exponential back-off and full jitter (``Retry-After`` seconds honoured for
429/503); when retries run out, or on a non-retryable failure, the response carries ``error`` text
naming the status and the attempt count. API keys are read from the environment variable named in
the configuration at call time and never appear in responses, errors, logs or ``repr``.

The retry loop (`send_with_retries`, `asend_with_retries`) is shared with the web search tool.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import random
import threading
import time
import weakref
import zlib
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import httpx

from orchestra_gym import pricing as _pricing
from orchestra_gym.errors import OrchestraError
from orchestra_gym.parsing import scrub_text
from orchestra_gym.types import Message, ToolCall, ToolResult, ToolSpec, Usage

__all__ = [
    "ChatModel",
    "ChatResponse",
    "OpenAIChatModel",
    "RetryPolicy",
    "HTTPOutcome",
    "send_with_retries",
    "asend_with_retries",
    "redact",
    "SAMPLING_KEYS",
    "MAX_TOKENS_PER_CALL",
    "ResponseTooLarge",
    "check_usage",
    "BadUsage",
]

log = logging.getLogger(__name__)

# Sampling arguments passed through to the chat-completions request body (OpenAI API reference).
SAMPLING_KEYS = frozenset(
    {"temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop", "tool_choice", "n",
     "presence_penalty", "frequency_penalty", "reasoning_effort", "extra_body"}
)


def redact(text: str, secrets: "list[str | None] | tuple[str | None, ...]") -> str:
    """Replace every occurrence of each non-empty secret in `text` by ``***``."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text


@dataclass(frozen=True)
class RetryPolicy:
    """Retries with exponential back-off and full jitter (AWS architecture blog, "Exponential
    Backoff And Jitter": sleep = uniform(0, min(max_backoff_s, base_backoff_s * 2**attempt))).

    Attributes:
        max_retries: retries after the first attempt (total attempts = max_retries + 1).
        base_backoff_s: back-off scale in seconds.
        max_backoff_s: cap of one back-off sleep in seconds.
        max_retry_after_s: cap on an honoured ``Retry-After`` header, in seconds.
        timeout_s: per-attempt deadline in seconds: connect, send and the whole body (not per
            read; see the module docstring for the bound).
        max_response_bytes: most bytes of (decoded) response body read per attempt; a larger
            body fails the attempt with `ResponseTooLarge` (not retried). Default 32 MiB.
    """

    max_retries: int = 3
    base_backoff_s: float = 0.5
    max_backoff_s: float = 20.0
    max_retry_after_s: float = 60.0
    timeout_s: float = 60.0
    max_response_bytes: int = 32 * 1024 * 1024

    def backoff(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to sleep before retry number `attempt` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after_s)
        return rng.uniform(0.0, min(self.max_backoff_s, self.base_backoff_s * (2.0**attempt)))


@dataclass
class HTTPOutcome:
    """Result of `send_with_retries`.

    Attributes:
        response: the final ``httpx.Response`` with a 2xx status, or None on failure.
        attempts: number of HTTP attempts made (>= 1).
        error: readable failure text (secrets redacted) when ``response`` is None.
        status: last HTTP status seen (0 if no response was ever received).
        latency_s: wall-clock seconds of the whole exchange, back-off included.
    """

    response: httpx.Response | None
    attempts: int
    error: str | None
    status: int
    latency_s: float


class ResponseTooLarge(OrchestraError):
    """A response body longer than `RetryPolicy.max_response_bytes` (the attempt fails, unretried)."""


class _DeadlineExceeded(httpx.TimeoutException):
    """The attempt's overall deadline passed while the body was still arriving (retried as a timeout)."""


ACCEPT_ENCODING = "gzip, deflate"  # the codings `_BodyReader` decodes (bounded); sent as Accept-Encoding


class _BodyReader:
    """Reads one response body from its raw (still encoded) bytes under the attempt's size cap and
    deadline, decoding ``Content-Encoding`` itself so that the decoded bytes are bounded while they
    are decoded: each zlib call may give at most the room left under the cap plus one byte, so a
    compressed bomb (1000:1 gzip, or gzip inside gzip) stops at the cap, never at a whole inflated
    chunk (httpx's own decoders inflate a read whole before a caller sees a byte).

    Codings: none / ``identity``, one ``gzip`` or ``deflate`` (zlib or raw). Anything else, stacked
    codings included, fails the attempt with `ResponseTooLarge` (it cannot be read within bounds).
    """

    def __init__(self, resp: httpx.Response, policy: RetryPolicy, deadline: float):
        self.cap, self.deadline, self.timeout_s = policy.max_response_bytes, deadline, policy.timeout_s
        declared = resp.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.cap:
            raise ResponseTooLarge(f"response body of {int(declared)} bytes (Content-Length) exceeds "
                                   f"max_response_bytes={self.cap}")
        codings = [c.strip().lower() for c in resp.headers.get("content-encoding", "").split(",")]
        codings = [c for c in codings if c and c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise ResponseTooLarge(f"response Content-Encoding {resp.headers.get('content-encoding')!r} is refused: "
                                   f"only one of {ACCEPT_ENCODING} (or none) is decoded within max_response_bytes "
                                   f"(the request said Accept-Encoding: {ACCEPT_ENCODING})")
        self.coding = codings[0] if codings else None
        # gzip: wbits 16+15; deflate: zlib header (15), raw deflate tried if that fails (as httpx does)
        self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS if self.coding in ("gzip", "x-gzip") else zlib.MAX_WBITS) \
            if self.coding else None
        self.body, self.resp, self.started = bytearray(), resp, False

    def feed(self, raw: bytes) -> None:
        """Decode and keep one raw chunk. Raises `ResponseTooLarge`, `_DeadlineExceeded`."""
        if self.inflate is None:
            self._keep(raw)
        else:
            data = raw
            while data:
                try:
                    self._keep(self.inflate.decompress(data, self.cap - len(self.body) + 1))
                except zlib.error as e:
                    if self.coding == "deflate" and not self.started:  # raw deflate, no zlib header
                        self.inflate, self.started = zlib.decompressobj(-zlib.MAX_WBITS), True
                        continue
                    raise httpx.DecodingError(f"bad {self.coding} body: {e}") from None
                self.started = True
                data = self.inflate.unconsumed_tail
        if time.monotonic() > self.deadline:
            raise _DeadlineExceeded(f"response not complete within the attempt's deadline of {self.timeout_s:g} s")

    def _keep(self, decoded: bytes) -> None:
        self.body += decoded
        if len(self.body) > self.cap:
            raise ResponseTooLarge(f"response body exceeds max_response_bytes={self.cap} (stopped reading at "
                                   f"{len(self.body)} bytes)")

    def response(self) -> httpx.Response:
        """A plain response holding the decoded body (encoding headers dropped)."""
        if self.inflate is not None:
            self._keep(self.inflate.flush(self.cap - len(self.body) + 1))
        headers = [(k, v) for k, v in self.resp.headers.items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return httpx.Response(self.resp.status_code, headers=headers, content=bytes(self.body), request=self.resp.request)


def _request_headers(headers: dict[str, str]) -> dict[str, str]:
    return {"Content-Type": "application/json", "Accept-Encoding": ACCEPT_ENCODING, **headers}


def _post_bounded(client: httpx.Client, url: str, payload: dict[str, Any], headers: dict[str, str],
                  policy: RetryPolicy) -> httpx.Response:
    """One attempt: POST and read the body under the policy's deadline and size cap (`_BodyReader`)."""
    deadline = time.monotonic() + policy.timeout_s
    with client.stream("POST", url, content=_json_bytes(payload), headers=_request_headers(headers),
                       timeout=policy.timeout_s) as resp:
        reader = _BodyReader(resp, policy, deadline)
        for chunk in resp.iter_raw():
            reader.feed(chunk)
        return reader.response()


async def _apost_bounded(client: httpx.AsyncClient, url: str, payload: dict[str, Any], headers: dict[str, str],
                         policy: RetryPolicy) -> httpx.Response:
    """Async twin of `_post_bounded`."""
    deadline = time.monotonic() + policy.timeout_s
    async with client.stream("POST", url, content=_json_bytes(payload), headers=_request_headers(headers),
                             timeout=policy.timeout_s) as resp:
        reader = _BodyReader(resp, policy, deadline)
        async for chunk in resp.aiter_raw():
            reader.feed(chunk)
        return reader.response()


def _json_bytes(payload: dict[str, Any]) -> bytes:
    """The request body; lone surrogates become U+FFFD (never a ``UnicodeEncodeError``)."""
    return json.dumps(scrub_text(payload), ensure_ascii=False).encode("utf-8")


def _retry_after_seconds(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # HTTP-date form: fall back to jittered back-off


def _classify(resp: httpx.Response | None, exc: BaseException | None) -> tuple[bool, str]:
    """(retryable, description) of one failed attempt."""
    if exc is not None:
        if isinstance(exc, _DeadlineExceeded):
            return True, f"timeout ({exc})"
        if isinstance(exc, httpx.TimeoutException):
            return True, f"timeout ({type(exc).__name__})"
        if isinstance(exc, httpx.TransportError):
            return True, f"connection error ({type(exc).__name__}: {exc})"
        return False, f"{type(exc).__name__}: {exc}"
    assert resp is not None
    body = resp.text[:300].replace("\n", " ")
    desc = f"HTTP {resp.status_code}: {body}"
    return (resp.status_code == 429 or resp.status_code >= 500), desc


class _Attempts:
    """Bookkeeping shared by the sync and async retry loops: classify a failed attempt, decide
    whether to retry and how long to sleep, and build the final `HTTPOutcome`."""

    def __init__(self, url: str, policy: RetryPolicy, rng: random.Random, secrets: tuple[str | None, ...], what: str):
        self.url, self.policy, self.rng, self.secrets, self.what = url, policy, rng, secrets, what
        self.t0 = time.perf_counter()
        self.status, self.desc, self.n = 0, "", 0

    def success(self, resp: httpx.Response) -> HTTPOutcome:
        return HTTPOutcome(resp, self.n, None, resp.status_code, time.perf_counter() - self.t0)

    def failed(self, resp: httpx.Response | None, exc: BaseException | None) -> float | None:
        """Record a failed attempt; seconds to sleep before the next one, or None to stop."""
        retryable, desc = _classify(resp, exc)
        self.status = resp.status_code if resp is not None else 0
        self.desc = redact(desc, self.secrets)
        if not retryable or self.n > self.policy.max_retries:
            return None
        sleep = self.policy.backoff(self.n - 1, self.rng, _retry_after_seconds(resp) if resp is not None else None)
        log.warning("%s to %s failed (%s); retry %d/%d in %.2fs", self.what, self.url, self.desc, self.n,
                    self.policy.max_retries, sleep)
        return sleep

    def failure(self) -> HTTPOutcome:
        err = f"{self.what} to {self.url} failed after {self.n} attempt{'s' if self.n > 1 else ''}: {self.desc}"
        return HTTPOutcome(None, self.n, err, self.status, time.perf_counter() - self.t0)


def send_with_retries(
    client: httpx.Client,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str],
    policy: RetryPolicy,
    rng: random.Random,
    secrets: tuple[str | None, ...] = (),
    what: str = "request",
) -> HTTPOutcome:
    """POST `payload` as JSON to `url`, retrying per `policy`; never raises for HTTP failures.

    Retried: timeouts (the attempt's overall deadline included), transport errors (refused or
    dropped connections), HTTP 429 and 5xx. Not retried: other 4xx, a body over
    ``policy.max_response_bytes``. ``secrets`` are redacted from every error text and log line.
    """
    st = _Attempts(url, policy, rng, secrets, what)
    while True:
        st.n += 1
        resp, exc = None, None
        try:
            resp = _post_bounded(client, url, payload, headers, policy)
        except (httpx.HTTPError, ResponseTooLarge) as e:  # timeouts, connect errors, dropped connections, bad URLs
            exc = e
        if resp is not None and resp.is_success:
            return st.success(resp)
        sleep = st.failed(resp, exc)
        if sleep is None:
            return st.failure()
        time.sleep(sleep)


async def asend_with_retries(
    client: httpx.AsyncClient,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str],
    policy: RetryPolicy,
    rng: random.Random,
    secrets: tuple[str | None, ...] = (),
    what: str = "request",
) -> HTTPOutcome:
    """Async twin of `send_with_retries` (same retry rules, ``asyncio.sleep`` for back-off)."""
    st = _Attempts(url, policy, rng, secrets, what)
    while True:
        st.n += 1
        resp, exc = None, None
        try:
            resp = await asyncio.wait_for(_apost_bounded(client, url, payload, headers, policy), policy.timeout_s)
        except asyncio.TimeoutError:
            exc = _DeadlineExceeded(f"response not complete within the attempt's deadline of {policy.timeout_s:g} s")
        except (httpx.HTTPError, ResponseTooLarge) as e:
            exc = e
        if resp is not None and resp.is_success:
            return st.success(resp)
        sleep = st.failed(resp, exc)
        if sleep is None:
            return st.failure()
        await asyncio.sleep(sleep)


@dataclass
class ChatResponse:
    """One chat-model reply.

    Attributes:
        message: the assistant `Message` (``content`` text, ``tool_calls`` parsed from the reply's
            OpenAI ``tool_calls``; arguments decoded from their JSON strings). Empty on error.
        usage: prompt/completion tokens, cost (USD) and latency (s, retries included).
        error: None on success, else readable text saying what failed (HTTP status, attempt
            count); never contains an API key.
        raw: a small dict for logs/caches: ``model``, ``finish_reason``, ``attempts``, ``status``,
            ``id`` and, when some tool-call arguments were not a JSON object, ``tool_call_errors``
            and ``bad_arguments`` (call id -> the arguments text as the server sent it; the call's
            parsed ``arguments`` are ``{}`` then).
    """

    message: Message
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the call succeeded (``error is None``)."""
        return self.error is None

    def to_tool_result(self) -> ToolResult:
        """The response as a `ToolResult`: content text (or the error text with ``error=True``),
        usage, and ``metadata`` with ``tool_calls`` (list of dicts) and ``raw``."""
        if self.error is not None:
            return ToolResult(content=self.error, error=True, usage=self.usage, metadata={"raw": dict(self.raw)})
        meta: dict[str, Any] = {"raw": dict(self.raw)}
        if self.message.tool_calls:
            meta["tool_calls"] = [c.to_dict() for c in self.message.tool_calls]
        return ToolResult(content=self.message.content, error=False, usage=self.usage, metadata=meta)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (message, usage, error, raw) for caches and logs."""
        return {"message": self.message.to_dict(), "usage": self.usage.to_dict(), "error": self.error,
                "raw": dict(self.raw)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ChatResponse":
        """Inverse of `to_dict`."""
        return cls(message=Message.from_dict(d["message"]), usage=Usage.from_dict(d.get("usage", {})),
                   error=d.get("error"), raw=dict(d.get("raw") or {}))

    @classmethod
    def failure(cls, error: str, latency_s: float = 0.0, **raw: Any) -> "ChatResponse":
        """An error response (empty assistant message, zero tokens and cost)."""
        return cls(message=Message(role="assistant", content=""), usage=Usage(latency_s=latency_s), error=error,
                   raw=raw)


@runtime_checkable
class ChatModel(Protocol):
    """What the environments need from a chat model (real endpoint, simulated, cached).

    ``model`` is the model id used for pricing and cache keys. ``complete`` and ``acomplete`` take
    chat `Message` objects (or OpenAI-shaped dicts), optional `ToolSpec` tools and sampling
    keyword arguments (`SAMPLING_KEYS`), and return a `ChatResponse`; they never raise for call
    failures.
    """

    model: str

    def complete(self, messages: list[Message], tools: list[ToolSpec] | None = None, **sampling: Any) -> ChatResponse:
        """One chat completion; never raises for call failures (see `ChatResponse.error`)."""
        ...

    async def acomplete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **sampling: Any
    ) -> ChatResponse:
        """Async `complete`."""
        ...


def messages_to_openai(messages: list[Message | dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-shaped message dicts from `Message` objects (dicts pass through unchanged)."""
    return [m.to_openai() if isinstance(m, Message) else dict(m) for m in messages]


def tools_to_openai(tools: list[ToolSpec | dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """OpenAI ``tools`` entries from `ToolSpec` objects (dicts pass through unchanged)."""
    if not tools:
        return None
    return [t.to_openai() if isinstance(t, ToolSpec) else dict(t) for t in tools]


# each sampling argument's JSON type (OpenAI chat-completions API): the check of `check_sampling`
_FLOAT_ARGS = frozenset({"temperature", "top_p", "presence_penalty", "frequency_penalty"})
_INT_ARGS = frozenset({"max_tokens", "max_completion_tokens", "seed", "n"})


def _sampling_value_problem(key: str, value: Any) -> str | None:
    if value is None:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key in _FLOAT_ARGS and not (number and math.isfinite(value)):
        return f"{key} must be a finite number, got {value!r}"
    if key in _INT_ARGS and not (number and isinstance(value, int)):
        return f"{key} must be an integer, got {value!r}"
    if key == "stop" and not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
        return f"stop must be a string or a list of strings, got {value!r}"
    if key == "reasoning_effort" and not isinstance(value, str):
        return f"reasoning_effort must be a string, got {value!r}"
    if key == "tool_choice" and not isinstance(value, (str, dict)):
        return f"tool_choice must be a string or an object, got {value!r}"
    if key == "extra_body" and not isinstance(value, dict):
        return f"extra_body must be a table / object, got {value!r}"
    return None


def check_sampling(sampling: dict[str, Any]) -> str | None:
    """None if every key is a known sampling argument with a value of its type (finite numbers,
    integers where the API takes integers), else an error text naming the bad key."""
    bad = sorted(set(sampling) - SAMPLING_KEYS)
    if bad:
        return f"unknown sampling argument(s) {bad}; allowed: {sorted(SAMPLING_KEYS)}"
    return next((p for k, v in sampling.items() if (p := _sampling_value_problem(k, v))), None)


def parse_completion(data: Any) -> tuple[Message, dict[str, Any], int, int]:
    """Parse a chat-completions JSON body.

    Returns:
        (assistant message, raw-info dict, prompt_tokens, completion_tokens).

    Raises:
        ValueError: when the body does not have ``choices[0].message`` (message says which field);
            `BadUsage` (a ValueError) when ``usage`` fails `check_usage`.
    """
    if not isinstance(data, dict):
        raise ValueError(f"response body is {type(data).__name__}, expected a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("response has no 'choices[0]'")
    msg = choices[0].get("message")
    if not isinstance(msg, dict):
        raise ValueError("response has no 'choices[0].message'")
    raw: dict[str, Any] = {"id": data.get("id"), "model": data.get("model"),
                           "finish_reason": choices[0].get("finish_reason")}
    calls: list[ToolCall] = []
    errors: list[str] = []
    bad_arguments: dict[str, str] = {}
    for i, tc in enumerate(msg.get("tool_calls") or []):
        fn = (tc or {}).get("function") or {}
        name = str(fn.get("name") or "")
        call_id = scrub_text(str(tc.get("id") or f"call_{i}"))
        args_text = fn.get("arguments")
        args: Any
        if isinstance(args_text, dict):
            args = args_text
        else:
            try:
                args = json.loads(args_text) if args_text not in (None, "") else {}
            except (TypeError, json.JSONDecodeError) as e:
                errors.append(f"tool_calls[{i}] ({name}): arguments are not valid JSON: {e}")
                args = {}
                bad_arguments[call_id] = scrub_text(str(args_text))
        if not isinstance(args, dict):
            errors.append(f"tool_calls[{i}] ({name}): arguments must be a JSON object, got {type(args).__name__}")
            bad_arguments[call_id] = scrub_text(args_text if isinstance(args_text, str) else json.dumps(args_text))
            args = {}
        calls.append(ToolCall(name=scrub_text(name), arguments=scrub_text(args), id=call_id))
    if errors:
        raw["tool_call_errors"] = errors
        raw["bad_arguments"] = bad_arguments
    usage = data.get("usage") or {}
    if not isinstance(usage, dict):
        raise ValueError(f"'usage' is {type(usage).__name__}, expected an object with prompt_tokens, completion_tokens")
    pt, ct = check_usage(usage)
    message = Message(role="assistant", content=scrub_text(msg.get("content") or ""), tool_calls=calls or None)
    return message, raw, pt, ct


MAX_TOKENS_PER_CALL = 10_000_000  # far above any model's context window plus output: tokens


class BadUsage(OrchestraError, ValueError):
    """A reply's ``usage`` that cannot be billed; ``raw`` holds the values as received."""

    def __init__(self, message: str, raw: dict[str, Any]):
        super().__init__(message)
        self.raw = raw


def check_usage(usage: dict[str, Any]) -> tuple[int, int]:
    """Validate an OpenAI ``usage`` object at the boundary: (prompt_tokens, completion_tokens).

    Each count must be a finite, non-negative, whole number of at most `MAX_TOKENS_PER_CALL`
    tokens (a missing or null count is 0).

    Raises:
        BadUsage (a ``ValueError``): names the field and the value; ``.raw`` holds both counts as received.
    """
    raw = {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens")}
    out = []
    for key, v in raw.items():
        v = 0 if v is None else v
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 \
            and v <= MAX_TOKENS_PER_CALL and float(v).is_integer()
        if not ok:
            raise BadUsage(f"implausible usage.{key}={v!r} (must be a whole number of tokens in "
                           f"[0, {MAX_TOKENS_PER_CALL}]); usage not billed", {k: repr(x) for k, x in raw.items()})
        out.append(int(v))
    return out[0], out[1]


_SEMAPHORES: dict[tuple[str, str, int], threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()


def _shared_semaphore(url: str, model: str, limit: int) -> threading.BoundedSemaphore:
    """The process's one semaphore of (endpoint URL, model, limit): every `OpenAIChatModel` of the
    same model at the same endpoint with the same ``max_concurrency`` (each env of a concurrent
    evaluation builds its own from the models file) shares it, so the model's limit holds across
    them all."""
    with _SEMAPHORES_LOCK:
        sem = _SEMAPHORES.get((url, model, limit))
        if sem is None:
            sem = _SEMAPHORES[(url, model, limit)] = threading.BoundedSemaphore(limit)
        return sem


class OpenAIChatModel:
    """A chat model behind an OpenAI-compatible endpoint (POST ``{base_url}/chat/completions``).

    Args:
        model: model name sent in the request (e.g. ``"gpt-5"``, ``"Qwen/Qwen3-32B"``).
        base_url: endpoint root ending in ``/v1`` (e.g. ``"http://localhost:8000/v1"``).
        api_key_env: name of the environment variable holding the API key, read at each call;
            None for servers without authentication (a local vLLM).
        price: explicit price (USD per 1M tokens), e.g. from the models file; overrides `pricing`.
        pricing: pricing schedule (name or object) used when `price` is None; the model is
            looked up under `price_id` (default `model`). Settable later (``m.pricing = ...``).
        price_id: id to look the price up under, when it differs from the served model name.
        timeout_s: per-attempt HTTP timeout in seconds.
        max_retries: retries after the first attempt (timeouts, connection errors, 429, 5xx).
        max_concurrency: most requests in flight at once (sync: across every object of this model
            at this endpoint with this limit in the process, e.g. the experts of the envs of a
            concurrent evaluation; async: per object and event loop).
        retry: full `RetryPolicy` (overrides `timeout_s` / `max_retries`).
        default_sampling: sampling arguments merged under each call's own.

    Raises:
        ValueError: bad `base_url` or unknown default sampling keys.
        KeyError: `price` is None and the schedule has no price for the model (names the fix).
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str | None = None,
        *,
        price: _pricing.ModelPrice | None = None,
        pricing: "str | _pricing.PricingSchedule | None" = None,
        price_id: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        max_concurrency: int = 16,
        retry: RetryPolicy | None = None,
        default_sampling: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https:// (e.g. 'http://localhost:8000/v1'), "
                             f"got {base_url!r}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.price = price
        self.price_id = price_id or model
        self.pricing = pricing
        self.retry = retry or RetryPolicy(max_retries=max_retries, timeout_s=timeout_s)
        self.default_sampling = dict(default_sampling or {})
        bad = check_sampling(self.default_sampling)
        if bad:
            raise ValueError(f"default_sampling: {bad}")
        self.max_concurrency = max_concurrency
        self._price()  # fail early on a model without a price
        self._rng = random.Random(seed)
        self._sem = _shared_semaphore(self.url, model, max_concurrency)
        self._async_sems: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]" = (
            weakref.WeakKeyDictionary()
        )
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    # -- helpers ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r}, "
                f"api_key_env={self.api_key_env!r}, max_retries={self.retry.max_retries})")

    def __getstate__(self) -> dict[str, Any]:
        # picklable for async vector envs: drop clients, locks and semaphores (rebuilt on load)
        state = dict(self.__dict__)
        for k in ("_sem", "_async_sems", "_client", "_client_lock"):
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._sem = _shared_semaphore(self.url, self.model, self.max_concurrency)
        self._async_sems = weakref.WeakKeyDictionary()
        self._client = None
        self._client_lock = threading.Lock()

    @property
    def url(self) -> str:
        """The full chat-completions URL: ``{base_url}/chat/completions``."""
        return f"{self.base_url}/chat/completions"

    def _price(self) -> _pricing.ModelPrice:
        if self.price is not None:
            return self.price
        try:
            return _pricing.get_schedule(self.pricing).price(self.price_id)
        except KeyError as e:
            raise KeyError(f"{e.args[0]}; or pass price=ModelPrice(input_per_m, output_per_m) to "
                           f"OpenAIChatModel for {self.model!r}") from None

    def cost_usd(self, prompt_tokens: float, completion_tokens: float) -> float:
        """USD for the given token counts at this model's price."""
        return self._price().cost(prompt_tokens, completion_tokens)

    def _headers(self) -> tuple[dict[str, str] | None, str | None, str | None]:
        """(headers, api key, error)."""
        headers = {"Content-Type": "application/json"}
        if self.api_key_env is None:
            return headers, None, None
        key = os.environ.get(self.api_key_env)
        if not key:
            return None, None, (f"environment variable {self.api_key_env} is not set (API key for model "
                                f"{self.model!r}); export it, or set api_key_env to none in the models file "
                                f"for an endpoint without authentication")
        headers["Authorization"] = f"Bearer {key}"
        return headers, key, None

    def build_request(
        self, messages: list[Message | dict[str, Any]], tools: list[ToolSpec | dict[str, Any]] | None = None,
        **sampling: Any,
    ) -> dict[str, Any]:
        """The JSON request body (no secrets): ``model``, ``messages``, ``tools``, sampling args."""
        body: dict[str, Any] = {"model": self.model, "messages": messages_to_openai(messages)}
        oa_tools = tools_to_openai(tools)
        if oa_tools:
            body["tools"] = oa_tools
        merged = {**self.default_sampling, **sampling}
        extra = merged.pop("extra_body", None) or {}
        body.update({k: v for k, v in merged.items() if v is not None})
        body.update(extra)
        return body

    def _finish(self, out: HTTPOutcome, secrets: tuple[str | None, ...]) -> ChatResponse:
        raw = {"attempts": out.attempts, "status": out.status, "model": self.model}
        if out.response is None:
            return ChatResponse.failure(f"model {self.model!r}: {out.error}", out.latency_s, **raw)
        try:
            data = out.response.json()
            message, info, pt, ct = parse_completion(data)
        except BadUsage as e:
            log.warning("model %r at %s: %s; raw usage %s", self.model, self.url, e, e.raw)
            return ChatResponse.failure(f"model {self.model!r}: {e}; raw usage {e.raw}", out.latency_s,
                                        bad_usage=e.raw, **raw)
        except (ValueError, json.JSONDecodeError) as e:
            snippet = redact(out.response.text[:200], secrets)
            return ChatResponse.failure(
                f"model {self.model!r}: malformed response from {self.url} (HTTP {out.status}, attempt "
                f"{out.attempts}): {redact(str(e), secrets)}; body starts {snippet!r}", out.latency_s, **raw)
        raw.update({k: v for k, v in info.items() if v is not None})
        usage = Usage(prompt_tokens=float(pt), completion_tokens=float(ct), cost_usd=self.cost_usd(pt, ct),
                      latency_s=out.latency_s)
        return ChatResponse(message=message, usage=usage, error=None, raw=raw)

    def _client_sync(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                limits = httpx.Limits(max_connections=self.max_concurrency,
                                      max_keepalive_connections=self.max_concurrency)
                self._client = httpx.Client(limits=limits, timeout=self.retry.timeout_s)
            return self._client

    # -- public API --------------------------------------------------------------------------
    def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **sampling: Any
    ) -> ChatResponse:
        """Send one chat-completions request (blocking); see the class docstring.

        Returns:
            `ChatResponse`; on failure ``error`` says what failed and the message is empty.
        """
        t0 = time.perf_counter()
        bad = check_sampling(sampling)
        if bad:
            return ChatResponse.failure(f"model {self.model!r}: {bad}", 0.0, model=self.model, attempts=0)
        headers, key, err = self._headers()
        if err:
            return ChatResponse.failure(err, 0.0, model=self.model, attempts=0)
        try:
            body = self.build_request(messages, tools, **sampling)
            with self._sem:
                out = send_with_retries(self._client_sync(), self.url, body, headers, self.retry, self._rng,
                                        (key,), what=f"chat completion ({self.model})")
            return self._finish(out, (key,))
        except Exception as e:  # never raise into the env
            return ChatResponse.failure(
                f"model {self.model!r}: unexpected {type(e).__name__}: {redact(str(e), (key,))}",
                time.perf_counter() - t0, model=self.model)

    async def acomplete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **sampling: Any
    ) -> ChatResponse:
        """Async `complete` (an ``httpx.AsyncClient`` per call; an ``asyncio.Semaphore`` per event loop
        bounds concurrency)."""
        t0 = time.perf_counter()
        bad = check_sampling(sampling)
        if bad:
            return ChatResponse.failure(f"model {self.model!r}: {bad}", 0.0, model=self.model, attempts=0)
        headers, key, err = self._headers()
        if err:
            return ChatResponse.failure(err, 0.0, model=self.model, attempts=0)
        loop = asyncio.get_running_loop()
        sem = self._async_sems.get(loop)
        if sem is None:
            sem = self._async_sems[loop] = asyncio.Semaphore(self.max_concurrency)
        try:
            body = self.build_request(messages, tools, **sampling)
            async with sem:
                async with httpx.AsyncClient(timeout=self.retry.timeout_s) as client:
                    out = await asend_with_retries(client, self.url, body, headers, self.retry, self._rng,
                                                   (key,), what=f"chat completion ({self.model})")
            return self._finish(out, (key,))
        except Exception as e:
            return ChatResponse.failure(
                f"model {self.model!r}: unexpected {type(e).__name__}: {redact(str(e), (key,))}",
                time.perf_counter() - t0, model=self.model)

    def __call__(self, messages: list[Message], tools: list[ToolSpec] | None = None, **sampling: Any) -> ToolResult:
        """`complete` as a `ToolResult` (for use as a tool)."""
        return self.complete(messages, tools, **sampling).to_tool_result()

    def close(self) -> None:
        """Close the pooled sync HTTP client (idempotent)."""
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> "OpenAIChatModel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
