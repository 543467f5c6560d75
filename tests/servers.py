"""Real HTTP servers on 127.0.0.1 (random port, in a thread) for offline tests of HTTP tools.

* `OpenAIServer`: an OpenAI-compatible ``POST /v1/chat/completions`` that returns scripted replies
  (text or tool calls) with ``usage``, and counts and records requests.
* `TavilyServer`: Tavily-shaped ``POST /search`` and ``POST /extract`` over a small in-memory
  set of pages.
* `transformers_serve`: a real third-party server (``transformers serve``) started as a subprocess.
* Both scripted servers inject faults on demand (queued, one per request): a delay past the client's timeout,
  HTTP 429 with ``Retry-After``, HTTP 500, a malformed JSON body, a dropped connection.

Usage (context manager; fixture-friendly)::

    with OpenAIServer() as srv:
        srv.queue_reply(tool_calls=[{"name": "get_order", "arguments": {"id": "1"}}], usage=(12, 5))
        srv.queue_fault("429", retry_after=0.1)
        model = OpenAIChatModel("gpt-5", srv.base_url)   # srv.base_url == "http://127.0.0.1:PORT/v1"
        ...
        assert srv.count == 2

Formats follow the OpenAI chat-completions API reference and the Tavily REST API reference
(``/search``: ``query``, ``max_results`` -> ``results[{title, url, content, score}]``;
``/extract``: ``urls`` -> ``results[{url, raw_content}]``, ``failed_results``).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

__all__ = ["Fault", "RecordedRequest", "LocalServer", "OpenAIServer", "TavilyServer", "transformers_serve"]

FAULT_KINDS = ("delay", "429", "500", "503", "malformed", "drop", "401", "trickle", "huge", "bomb")


@dataclass
class Fault:
    """One injected failure.

    kind: ``"delay"`` (sleep `seconds`, then answer normally), ``"429"`` (with ``Retry-After:
    retry_after`` when given), ``"500"``/``"503"``, ``"malformed"`` (200 with a non-JSON body),
    ``"drop"`` (close the socket without answering), ``"401"`` (echoes the request headers in the
    body: for testing that clients redact keys), ``"trickle"`` (a valid reply sent one byte per
    `seconds`), ``"huge"`` (200 with a JSON body of `size` bytes; ``declare_length=False`` sends
    it chunked, without ``Content-Length``), ``"bomb"`` (200 with a JSON body of `size` bytes sent
    compressed by each coding of `encoding` in turn, e.g. ``"gzip, gzip"``, as ``Content-Encoding``).
    """

    kind: str
    seconds: float = 0.0
    retry_after: float | None = None
    size: int = 0
    declare_length: bool = True
    encoding: str = "gzip"
    payload: bytes = b""  # "bomb": the encoded body, built when queued (not while the client reads)

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; known: {FAULT_KINDS}")


@dataclass
class RecordedRequest:
    """A request the server received: path, headers (lower-case names) and parsed JSON body."""

    path: str
    headers: dict[str, str]
    body: Any
    time: float = field(default_factory=time.monotonic)


class LocalServer:
    """Base: a ThreadingHTTPServer on 127.0.0.1:0 with fault injection and request recording.

    Subclasses implement ``handle(path, body) -> (status, json_obj)``.
    """

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.in_flight = 0
        self.max_in_flight = 0

    # -- control ---------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Number of requests received (faulted ones included)."""
        with self._lock:
            return len(self.requests)

    def queue_fault(self, kind: str, seconds: float = 0.0, retry_after: float | None = None, times: int = 1,
                    size: int = 0, declare_length: bool = True, encoding: str = "gzip") -> None:
        """Make the next `times` requests fail with `kind` (see `Fault`)."""
        payload = b""
        if kind == "bomb":
            payload = b'{"pad": "' + b"x" * size + b'"}'
            for coding in encoding.split(","):
                payload = gzip.compress(payload, mtime=0) if coding.strip() == "gzip" else zlib.compress(payload)
        with self._lock:
            for _ in range(times):
                self._faults.append(Fault(kind, seconds, retry_after, size, declare_length, encoding, payload))

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "LocalServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once: no 40 ms delayed-ACK stall per reply

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                self._send(404, {"error": {"message": f"no GET route {self.path}"}})

            def do_POST(self) -> None:
                # a request is in flight from its arrival until its reply starts: the client may send its
                # next request as soon as it has read this reply, before this handler thread returns
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                self._counted = True
                try:
                    self._post()
                finally:
                    self._leave()

            def _leave(self) -> None:
                if getattr(self, "_counted", False):
                    self._counted = False
                    with server._lock:
                        server.in_flight -= 1

            def send_response(self, code: int, message: str | None = None) -> None:
                self._leave()
                super().send_response(code, message)

            def _post(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(data) if data else None
                except json.JSONDecodeError:
                    body = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append(RecordedRequest(self.path, headers, body))
                    fault = server._faults.popleft() if server._faults else None
                if fault is not None:
                    if fault.kind == "drop":
                        self.close_connection = True
                        try:
                            self.connection.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        return
                    if fault.kind == "delay":
                        time.sleep(fault.seconds)
                    elif fault.kind == "429":
                        extra = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
                        self._send(429, {"error": {"message": "rate limited"}}, extra)
                        return
                    elif fault.kind in ("500", "503"):
                        self._send(int(fault.kind), {"error": {"message": "server error"}})
                        return
                    elif fault.kind == "401":
                        self._send(401, {"error": {"message": "bad key", "headers": headers}})
                        return
                    elif fault.kind == "malformed":
                        self._send_bytes(200, b'{"choices": [ this is not json', "application/json")
                        return
                    elif fault.kind == "huge":
                        self._send_huge(fault.size, fault.declare_length)
                        return
                    elif fault.kind == "bomb":
                        self._send_bytes(200, fault.payload, "application/json", {"Content-Encoding": fault.encoding})
                        return
                try:
                    status, obj = server.handle(self.path, body, headers)
                except Exception as e:  # a bug in a scripted reply: answer 500 so the test sees it
                    status, obj = 500, {"error": {"message": f"test server error: {e!r}"}}
                if fault is not None and fault.kind == "trickle":
                    self._send_trickle(status, json.dumps(obj).encode(), fault.seconds)
                    return
                self._send(status, obj)

            def _send_trickle(self, status: int, payload: bytes, seconds: float) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    for i in range(len(payload)):
                        self.wfile.write(payload[i:i + 1])
                        self.wfile.flush()
                        time.sleep(seconds)
                except OSError:  # the client gave up: expected
                    self.close_connection = True

            def _send_huge(self, size: int, declare_length: bool) -> None:
                head, tail = b'{"pad": "', b'"}'
                n = max(size - len(head) - len(tail), 0)
                block = b"x" * 65536
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if declare_length:
                        self.send_header("Content-Length", str(len(head) + n + len(tail)))
                    else:
                        self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    parts = [head] + [block] * (n // len(block)) + [block[: n % len(block)], tail]
                    for part in parts:
                        if not part:
                            continue
                        if declare_length:
                            self.wfile.write(part)
                        else:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    if not declare_length:
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client stopped reading: expected
                    self.close_connection = True

            def _send(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
                self._send_bytes(status, json.dumps(obj).encode(), "application/json", extra)

            def _send_bytes(self, status: int, payload: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in (extra or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # client went away (e.g. it timed out during a delay fault)
                    self.close_connection = True

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port (idempotent)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def handle(self, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:  # pragma: no cover
        raise NotImplementedError


def _count_tokens(text: str) -> int:
    """Crude deterministic token count for scripted usage: whitespace-separated words."""
    return len(text.split())


class OpenAIServer(LocalServer):
    """OpenAI-compatible chat-completions server with scripted replies.

    Replies are taken from a FIFO queue (`queue_reply`); when it is empty, `responder` (if given)
    builds the reply from the request body, else the default reply is ``"echo: <last user text>"``.
    Default usage: prompt tokens = words in all message contents, completion tokens = words in the
    reply content (+ 10 per tool call).

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1``.
        requests: list of `RecordedRequest` (``.body`` is the parsed chat-completions request).
        max_in_flight: most requests handled at the same time (for concurrency-limit tests).
        api_key: when set, requests without ``Authorization: Bearer <api_key>`` get HTTP 401.
        delay_s: seconds every chat completion waits before it is answered (a slow server).
    """

    def __init__(self, responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                 api_key: str | None = None, model_name: str | None = None, delay_s: float = 0.0) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.responder = responder
        self.api_key = api_key
        self.model_name = model_name
        self._replies: deque[dict[str, Any]] = deque()

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat-completion requests received."""
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def queue_reply(self, content: str | None = "", tool_calls: list[dict[str, Any]] | None = None,
                    usage: tuple[int, int] | None = None, finish_reason: str | None = None) -> None:
        """Queue one reply. `tool_calls`: ``[{"name", "arguments": dict | str, "id"?}]``;
        `usage`: ``(prompt_tokens, completion_tokens)`` (default: word counts)."""
        with self._lock:
            self._replies.append({"content": content, "tool_calls": tool_calls, "usage": usage,
                                  "finish_reason": finish_reason})

    def handle(self, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        if not path.rstrip("/").endswith("/v1/chat/completions"):
            return 404, {"error": {"message": f"unknown route {path}"}}
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, {"error": {"message": "missing or wrong API key"}}
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return 400, {"error": {"message": "body must be a JSON object with 'messages'"}}
        if self.delay_s:
            time.sleep(self.delay_s)
        with self._lock:
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            if self.responder is not None:
                reply = self.responder(body)
            else:
                last = next((m.get("content") or "" for m in reversed(body["messages"]) if m.get("role") == "user"), "")
                reply = {"content": f"echo: {last}"}
        content = reply.get("content")
        calls = []
        for i, tc in enumerate(reply.get("tool_calls") or []):
            args = tc.get("arguments", {})
            calls.append({"id": tc.get("id", f"call_{i}"), "type": "function",
                          "function": {"name": tc["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
        usage = reply.get("usage")
        if usage is None:
            pt = sum(_count_tokens(str(m.get("content") or "")) for m in body["messages"])
            usage = (pt, _count_tokens(content or "") + 10 * len(calls))
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        return 200, {
            "id": f"chatcmpl-{self.count}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model_name or body.get("model"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": reply.get("finish_reason") or ("tool_calls" if calls else "stop")}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1]},
        }


class TavilyServer(LocalServer):
    """Tavily-shaped search/extract server over `pages` (``{url: (title, text)}``).

    ``/search`` scores pages by the number of query words they contain (ties by url) and returns
    the top ``max_results`` (default 5) with ``content`` = first 200 characters; ``/extract``
    returns the full text of known urls and lists unknown ones in ``failed_results``. Requests
    without ``Authorization: Bearer <api_key>`` (or ``api_key`` in the body) get HTTP 401.
    """

    def __init__(self, pages: dict[str, tuple[str, str]], api_key: str = "tvly-test-key") -> None:
        super().__init__()
        self.pages = dict(pages)
        self.api_key = api_key

    @property
    def base_url(self) -> str:
        return self.root_url

    def handle(self, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        if not isinstance(body, dict):
            return 400, {"detail": {"error": "body must be a JSON object"}}
        if headers.get("authorization") != f"Bearer {self.api_key}" and body.get("api_key") != self.api_key:
            return 401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}
        if path == "/search":
            query = str(body.get("query") or "")
            if not query:
                return 400, {"detail": {"error": "Query is missing."}}
            words = set(query.lower().split())
            scored = []
            for url, (title, text) in self.pages.items():
                hay = set(f"{title} {text}".lower().split())
                s = len(words & hay)
                if s:
                    scored.append((-s, url, title, text))
            scored.sort()
            n = int(body.get("max_results") or 5)
            results = [{"title": t, "url": u, "content": x[:200], "score": round(-s / max(len(words), 1), 4),
                        "raw_content": x if body.get("include_raw_content") else None}
                       for s, u, t, x in scored[:n]]
            return 200, {"query": query, "answer": None, "images": [], "results": results, "response_time": 0.01}
        if path == "/extract":
            urls = body.get("urls")
            urls = [urls] if isinstance(urls, str) else list(urls or [])
            ok = [{"url": u, "raw_content": self.pages[u][1], "images": []} for u in urls if u in self.pages]
            failed = [{"url": u, "error": "Failed to fetch url"} for u in urls if u not in self.pages]
            return 200, {"results": ok, "failed_results": failed, "response_time": 0.01}
        return 404, {"detail": {"error": f"unknown route {path}"}}


@contextlib.contextmanager
def transformers_serve(log_path: "str | os.PathLike[str]", startup_s: float = 90.0) -> Iterator[str]:
    """``transformers serve`` (the `transformers[serving]` extra) on 127.0.0.1, a free port, CPU, offline.

    Yields the base URL (``http://127.0.0.1:PORT/v1``); a request's ``model`` is a local model folder.
    The server's output goes to `log_path`. Skips the calling test (pytest.skip, with the log's tail)
    when the CLI is missing, exits, or does not answer ``/health`` within `startup_s` seconds. The
    server is terminated (then killed) on exit.
    """
    import httpx
    import pytest

    exe = shutil.which("transformers") or str(Path(sys.executable).with_name("transformers"))
    if not Path(exe).exists():
        pytest.skip("the `transformers` CLI is not installed (pip install 'transformers[serving]')")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_path = Path(log_path)
    log = open(log_path, "w")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1")
    proc = subprocess.Popen([exe, "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
                             "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                pytest.skip(f"transformers serve exited ({proc.returncode}): {log_path.read_text()[-500:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.skip(f"transformers serve did not answer /health in {startup_s:.0f} s: "
                            f"{log_path.read_text()[-500:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
