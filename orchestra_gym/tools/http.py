"""Bounded JSON POSTs over HTTP with retries: the transport of the chat models and the web search tool.

One job: send one JSON request and get one response back within bounds, or a readable failure.
`send_with_retries` / `asend_with_retries` POST under a `RetryPolicy`: each attempt has an overall
deadline (connect, send and every byte of the body) and a cap on the decoded body, which is decoded here
(`_BodyReader`: one ``gzip`` or ``deflate`` coding, the cap applied inside the decompressor, so a
compressed bomb stops at the cap); timeouts, transport errors, HTTP 429 and 5xx are retried with
exponential back-off and full jitter (``Retry-After`` honoured); the result is an `HTTPOutcome`, never an
exception for an HTTP failure, and `redact` keeps secrets out of every error text and log line.
Used by `orchestra_gym.tools.llm` (which re-exports these names) and `orchestra_gym.tools.search`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
import zlib
from dataclasses import dataclass
from typing import Any

import httpx

from orchestra_gym.argument_checks import scrub_text
from orchestra_gym.errors import OrchestraError

__all__ = [
    "RetryPolicy",
    "HTTPOutcome",
    "ResponseTooLarge",
    "send_with_retries",
    "asend_with_retries",
    "redact",
    "ACCEPT_ENCODING",
]

log = logging.getLogger(__name__)


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
