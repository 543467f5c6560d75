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
cost ever reaches a reward. Lone surrogates in reply text are replaced (`argument_checks.scrub_text`),
so one bad reply cannot poison the conversation's later requests.

Failures never raise out of `OpenAIChatModel.complete`: timeouts, connection errors, HTTP 429 and
5xx are retried with exponential back-off and full jitter (``Retry-After`` seconds honoured for
429/503); when retries run out, or on a non-retryable failure, the response carries ``error`` text
naming the status and the attempt count. API keys are read from the environment variable named in
the configuration at call time and never appear in responses, errors, logs or ``repr``.

The bounded transport and the retry loop (`send_with_retries`, `asend_with_retries`, `RetryPolicy`) live in
`orchestra_gym.tools.http` (re-exported here), shared with the web search tool.
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
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import httpx

from orchestra_gym import pricing as _pricing
from orchestra_gym.argument_checks import scrub_text
from orchestra_gym.errors import OrchestraError
from orchestra_gym.tools.http import (HTTPOutcome, ResponseTooLarge, RetryPolicy, asend_with_retries, redact,
                                      send_with_retries)
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
