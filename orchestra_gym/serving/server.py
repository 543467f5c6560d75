"""`orchestra serve`: one registered env id served through OpenEnv's own server.

    orchestra serve --env ToolOrchestra-ToolScale-v0 [--env-kwargs JSON] [--host 127.0.0.1] [--port 8000]
                    [--max-sessions 64] [--idle-timeout 600] [--max-body-bytes 1048576] [--request-timeout 30]
                    [--token T] [--workers 1] [--step-in thread]

Built on ``openenv.core.env_server.http_server.HTTPEnvServer`` (OpenEnv 0.10, the library TRL's
GRPO trainer, SkyRL, Unsloth and torchforge speak to), not a hand-written protocol. Its routes:
``WS /ws`` (a session: one `OrchestraEnvironment`, i.e. one ``gym.make(env_id, **env_kwargs)``,
per connection, closed when the client goes; ``reset`` with its own ``seed`` and ``options``,
``step``, ``state``, ``close`` messages), ``GET /schema``, ``GET /health``, ``GET /metadata``.
This module's: ``POST /reset`` (stateless: a fresh env, counted as a session while it lives),
``POST /step`` (always 409: an HTTP call has no session to step; the answer points at ``WS /ws``
and ``Remote-v0``), ``GET /state`` (the sessionless state), ``GET /sessions`` (``{"active": n,
"max": m}``). OpenEnv's MCP and task routes are not served.

Limits (`_Guard`, `_RequestDeadline`): at most ``max_sessions`` live envs (a further session gets
OpenEnv's ``CAPACITY_REACHED`` error frame, a further ``POST /reset`` a 503); a session silent for
``idle_timeout_s`` seconds gets a ``SESSION_IDLE_TIMEOUT`` error frame and is closed (code 4408)
with its env; an HTTP body over ``max_body_bytes`` gets 413 unread, a WebSocket message over it
closes the session (1009); a client that has not sent a whole request ``request_timeout_s``
seconds after connecting (or after its last response) is dropped. Every client error is a 4xx
(HTTP) or an error frame (WS, the session kept) whose message names the field and the fix: a
message that is binary, not strict JSON (NaN, Infinity, nesting past the recursion limit) or not
an object; a bad reset field (`check_reset_fields`); an option the env refuses. With a token every
request needs ``Authorization: Bearer <token>`` (HTTP 401, WS close 1008); an empty token is
refused and an open bind to a non-loopback address is warned (`check_token`). Binds 127.0.0.1
unless told otherwise. Messages are not compressed (per-message deflate off: on loopback it cost
about 2 ms per step for nothing).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import sys
from typing import Any, Optional

import gymnasium as gym
import h11
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import ConcurrencyConfig
from uvicorn.protocols.http.h11_impl import H11Protocol

from orchestra_gym.serving.protocol import OrchestraAction, OrchestraObservation, OrchestraState, encode

__all__ = ["OrchestraEnvironment", "InLoopEnvironment", "build_app", "serve", "app_from_environ", "check_reset_fields",
           "check_token", "strict_json", "CONFIG_ENV", "MAX_BODY_BYTES", "REQUEST_TIMEOUT_S"]

CONFIG_ENV = "ORCHESTRA_SERVE_CONFIG"  # JSON of build_app's arguments, for uvicorn worker processes
_RESET_FIELDS = ("seed", "episode_id", "options")
MAX_BODY_BYTES = 1 << 20  # default --max-body-bytes: an HTTP body or a WebSocket message, at most (1 MiB)
REQUEST_TIMEOUT_S = 30.0  # default --request-timeout: seconds a client has to send one whole HTTP request
SESSIONLESS_STEP = ("POST /step has no session to step (OpenEnv's HTTP routes keep no episode between requests); "
                    "fix: open a session on WS /ws (OpenEnv's EnvClient, or gym.make('orchestra_gym:Remote-v0', "
                    "base_url=...)) and send reset then step there")


def check_reset_fields(seed: Any = None, episode_id: Any = None, options: Any = None, **unknown: Any) -> None:
    """Refuse a reset request's bad fields, each named with its fix (before the env is touched).

    Raises:
        ValueError: an unknown field, a seed that is not an integer >= 0 (NaN, a float, a bool, a
            string), an ``episode_id`` that is not a string, ``options`` that is not an object.
    """
    if unknown:
        raise ValueError(f"reset: unknown field(s) {sorted(unknown)}; accepted: {list(_RESET_FIELDS)}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"reset: field 'seed' must be an integer >= 0 or null, got {seed!r}")
    if episode_id is not None and not isinstance(episode_id, str):
        raise ValueError(f"reset: field 'episode_id' must be a string or null, got {type(episode_id).__name__}")
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"reset: field 'options' must be an object (the env's reset options, e.g. "
                         f"{{\"task_id\": ..., \"preference\": {{...}}}}), got {type(options).__name__}")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (RFC 8259); send a finite number")


def strict_json(raw: "str | bytes") -> Any:
    """`raw` parsed as strict JSON: no NaN / Infinity, nesting within Python's recursion limit.

    Raises:
        ValueError: not UTF-8, not JSON, a non-finite constant, or nested too deep (the message says which).
    """
    try:
        return json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("JSON nested too deep; send a message of ordinary depth") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"the body is not UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"Invalid JSON: {e}") from None


def _ws_message_problem(message: dict) -> "str | None":
    """Why a WebSocket message is refused before OpenEnv reads it (binary, not JSON, not an object), or None."""
    if message.get("text") is None:
        return "binary frames are not accepted; send text frames of JSON such as {\"type\": \"reset\", \"data\": {}}"
    try:
        parsed = strict_json(message["text"])
    except ValueError as e:
        return str(e)
    if not isinstance(parsed, dict):
        return (f"a message must be a JSON object {{\"type\": ..., \"data\": {{...}}}}, got "
                f"{'null' if parsed is None else type(parsed).__name__}")
    return None




class OrchestraEnvironment(Environment):
    """An OpenEnv `Environment` over one Gymnasium orchestra env (``gym.make(env_id, **env_kwargs)``).

    ``reset(seed, options)`` and ``step(OrchestraAction)`` return an `OrchestraObservation` with
    the env's text observation, float reward, terminated / truncated and `encode`d info.

    Raises (each turned into an error frame by OpenEnv, the session kept):
        ValueError: a bad reset field (`check_reset_fields`), an option the env refuses (its
            message, the env left usable), or a step after the episode ended or before any reset.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session its own env instance, no shared mutable state

    def __init__(self, env_id: str, env_kwargs: "dict[str, Any] | None" = None):
        super().__init__()
        self.env_id = env_id
        self.env = gym.make(env_id, **(env_kwargs or {}))
        self._state = OrchestraState(env_id=env_id)
        self._started = False

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, options: Optional[dict] = None,
              **kwargs: Any) -> OrchestraObservation:
        check_reset_fields(seed=seed, episode_id=episode_id, options=options, **kwargs)
        try:
            obs, info = self.env.reset(seed=seed, options=options)
        except (ValueError, TypeError, LookupError) as e:  # a refused option: a client error, named by the env
            raise ValueError(f"reset: {e}") from None
        self._started = True
        self._state = OrchestraState(env_id=self.env_id, episode_id=episode_id, task_id=info.get("task_id"))
        return OrchestraObservation(text=obs, info=encode(info), reward=None, done=False)

    def step(self, action: OrchestraAction, timeout_s: Optional[float] = None, **kwargs: Any) -> OrchestraObservation:
        if not self._started:
            raise ValueError("step: no episode yet; send a reset (with its seed) first")
        if self._state.ended:
            raise ValueError("step: the episode has ended (done was true); send a reset before the next step")
        obs, reward, terminated, truncated, info = self.env.step(action.env_action())
        self._state.step_count += 1
        self._state.ended = bool(terminated or truncated)
        return OrchestraObservation(text=obs, info=encode(info), reward=float(reward), done=self._state.ended,
                                    terminated=bool(terminated), truncated=bool(truncated))

    @property
    def state(self) -> OrchestraState:
        return self._state

    def close(self) -> None:
        self.env.close()


class InLoopEnvironment(OrchestraEnvironment):
    """An `OrchestraEnvironment` whose ``reset`` / ``step`` run in the server's event loop (OpenEnv
    awaits an overridden ``reset_async`` / ``step_async`` directly) instead of a per-session thread:
    no thread hand-off per message (1.65 against 2.24 ms per call through one session, see
    benchmarks/RESULTS.md), for envs whose steps take well under a millisecond (simulated tools).
    A slow step (a real endpoint, the sandbox) holds every other session of the process meanwhile."""

    async def reset_async(self, seed: Optional[int] = None, episode_id: Optional[str] = None,
                          options: Optional[dict] = None, **kwargs: Any) -> OrchestraObservation:
        return self.reset(seed=seed, episode_id=episode_id, options=options, **kwargs)

    async def step_async(self, action: OrchestraAction, timeout_s: Optional[float] = None,
                         **kwargs: Any) -> OrchestraObservation:
        return self.step(action, timeout_s=timeout_s, **kwargs)


STEP_IN = {"thread": OrchestraEnvironment, "loop": InLoopEnvironment}


class _Guard:
    """ASGI middleware: what a client may send, checked before OpenEnv reads it.

    HTTP: the bearer token (401); a body over `max_body_bytes` is refused with 413 as soon as its
    ``Content-Length`` or its bytes so far exceed the limit (never read whole). WebSocket: the
    token (close 1008 at the handshake); a message that is binary, not strict JSON (NaN, too deep)
    or not an object gets an error frame and is not passed on (the session stays usable); a session
    that sends nothing for `idle_timeout_s` seconds is told (an error frame ``SESSION_IDLE_TIMEOUT``),
    closed with code 4408, and its env closed with it, so that no connection outlives its env's
    place in the session count. Message size is uvicorn's ``ws_max_size`` (close 1009).
    """

    def __init__(self, app: Any, token: "str | None", max_body_bytes: int, idle_timeout_s: "float | None"):
        self.app, self.max_body_bytes, self.idle_timeout_s = app, max_body_bytes, idle_timeout_s
        self.expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _authorized(self, scope: dict) -> bool:
        return self.expected is None or dict(scope.get("headers") or []).get(b"authorization") == self.expected

    async def _http(self, scope: dict, receive: Any, send: Any) -> None:
        if not self._authorized(scope):
            return await _json_response(send, 401, "missing or wrong bearer token: send Authorization: Bearer <token>")
        length = dict(scope.get("headers") or []).get(b"content-length", b"0")
        too_big = (f"the request body is over the server's limit of {self.max_body_bytes} bytes (--max-body-bytes); "
                   "send a smaller body")
        if not length.isdigit():
            return await _json_response(send, 400, f"Content-Length must be a decimal number, got {length[:40]!r}")
        if int(length) > self.max_body_bytes:
            return await _json_response(send, 413, too_big)
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                return await _json_response(send, 413, too_big)
            if not message.get("more_body"):
                break
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _websocket(self, scope: dict, receive: Any, send: Any) -> None:
        if not self._authorized(scope):
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"})
            return
        connected = False

        async def gated() -> dict:
            nonlocal connected
            while True:
                try:
                    message = await asyncio.wait_for(receive(), self.idle_timeout_s if connected else None)
                except asyncio.TimeoutError:
                    await _ws_error(send, f"session idle for {self.idle_timeout_s:g} s (--idle-timeout): closed with "
                                    "its env; open a new session to go on", "SESSION_IDLE_TIMEOUT")
                    await send({"type": "websocket.close", "code": 4408, "reason": "idle timeout"})
                    return {"type": "websocket.disconnect", "code": 4408}
                connected = connected or message["type"] == "websocket.connect"
                if message["type"] != "websocket.receive":
                    return message
                problem = _ws_message_problem(message)
                if problem is None:
                    return message
                await _ws_error(send, problem, "INVALID_JSON")

        await self.app(scope, gated, send)


async def _json_response(send: Any, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _ws_error(send: Any, message: str, code: str) -> None:
    await send({"type": "websocket.send", "text": json.dumps({"type": "error", "data": {"message": message, "code": code}})})


class _RequestDeadline(H11Protocol):
    """uvicorn's h11 protocol with a deadline on reading one request: a client that has not sent a
    whole request (headers and body) `request_timeout_s` seconds after the connection opened, or
    after the last response, is dropped (uvicorn itself waits for a half-sent request forever)."""

    request_timeout_s = REQUEST_TIMEOUT_S
    _deadline: "asyncio.TimerHandle | None" = None

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        if not self.transport.is_closing() and self.conn.their_state not in _READ_WHOLE:
            self.transport.close()

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: "Exception | None") -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in _READ_WHOLE:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()


_READ_WHOLE = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.MIGHT_SWITCH_PROTOCOL, h11.SWITCHED_PROTOCOL)
_OPENENV_ROUTES = {"/ws", "/schema", "/health", "/metadata"}  # kept from OpenEnv; /reset /step /state are ours


def build_app(env_id: str, env_kwargs: "dict[str, Any] | None" = None, max_sessions: int = 64,
              idle_timeout_s: "float | None" = 600.0, token: "str | None" = None, step_in: str = "thread",
              max_body_bytes: int = MAX_BODY_BYTES) -> Any:
    """The ASGI app serving `env_id`: a FastAPI app behind `_Guard` (token, body limit, message checks,
    idle timeout).

    Args:
        env_id: a registered id (`orchestra_gym.registration.ENV_IDS`).
        env_kwargs: keywords of every session's ``gym.make`` (checked now: one env is made and closed).
        max_sessions: live envs at most (>= 1): WebSocket sessions plus ``POST /reset`` calls in flight.
        idle_timeout_s: seconds without a message after which a session is closed with its env; None: never.
        token: the bearer token every request must carry, or None.
        step_in: ``"thread"`` (OpenEnv's per-session thread: a slow step holds only its session) or
            ``"loop"`` (`InLoopEnvironment`: less overhead per message, for simulated tools).
        max_body_bytes: an HTTP body at most (bytes; 413 beyond). WebSocket messages: `serve`'s ``ws_max_size``.

    Raises:
        gymnasium.error.Error / ConfigError / ValueError: unknown id or bad env kwargs (before serving).
    """
    if step_in not in STEP_IN:
        raise ValueError(f"step_in (--step-in) must be one of {sorted(STEP_IN)}, got {step_in!r}")
    kwargs, env_cls = dict(env_kwargs or {}), STEP_IN[step_in]
    env_cls(env_id, kwargs).close()  # a bad id or keyword fails here, not in the first session
    # OpenEnv's idle reaper is off (session_timeout None): it dropped a session from the count while its
    # connection kept stepping the env; `_Guard` closes an idle connection, and its env with it.
    server = HTTPEnvServer(lambda: env_cls(env_id, kwargs), OrchestraAction, OrchestraObservation,
                           concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=None),
                           env_name=env_id, state_cls=OrchestraState)
    app = FastAPI(title=f"orchestra serve {env_id}", docs_url=None, redoc_url=None, openapi_url=None)
    server.register_routes(app)
    # only the routes this server documents: the MCP and task routes are dropped (no orchestra env has MCP
    # tools), and OpenEnv's HTTP /reset /step /state (a fresh, uncounted env per request) are replaced
    app.router.routes = [r for r in app.router.routes if getattr(r, "path", None) in _OPENENV_ROUTES]

    def refuse(status: int, detail: str) -> JSONResponse:
        return JSONResponse({"detail": detail}, status_code=status)

    @app.post("/reset")
    async def reset(request: Request) -> Any:
        """A stateless reset: a fresh env (counted as a session while it lives), reset, closed."""
        body = await request.body()
        try:
            fields = strict_json(body) if body.strip() else {}
            if not isinstance(fields, dict):
                raise ValueError(f"the /reset body must be a JSON object {{\"seed\": ..., \"options\": {{...}}}}, "
                                 f"got {type(fields).__name__}")
            check_reset_fields(**fields)
        except ValueError as e:
            return refuse(422, str(e))
        try:
            session_id, env = await server._create_session()  # OpenEnv's count and cap  # noqa: SLF001
        except SessionCapacityError as e:
            return refuse(503, f"{e}; retry later or raise --max-sessions")
        try:
            observation = await server._run_in_session_executor(session_id, env.reset, **fields)  # noqa: SLF001
        except ValueError as e:
            return refuse(422, str(e))
        finally:
            await server._destroy_session(session_id)  # noqa: SLF001
        return serialize_observation(observation)

    @app.post("/step")
    async def step() -> JSONResponse:
        return refuse(409, SESSIONLESS_STEP)

    @app.get("/state")
    def state() -> dict[str, Any]:
        """OpenEnv's sessionless state: no episode (a session's state is the ``state`` message on WS /ws)."""
        return OrchestraState(env_id=env_id).model_dump()

    @app.get("/sessions")
    def sessions() -> dict[str, int]:
        return {"active": server.active_sessions, "max": server.max_concurrent_envs}

    app.state.openenv_server = server
    return _Guard(app, token, max_body_bytes, idle_timeout_s)


def app_from_environ() -> Any:
    """`build_app` with the arguments in ``$ORCHESTRA_SERVE_CONFIG`` (JSON; ``request_timeout_s`` sets
    this worker's `_RequestDeadline`): uvicorn's factory for workers."""
    config = json.loads(os.environ[CONFIG_ENV])
    _RequestDeadline.request_timeout_s = float(config.pop("request_timeout_s", REQUEST_TIMEOUT_S))
    return build_app(**config)


def check_token(token: "str | None", host: str) -> "str | None":
    """The start-up warning for `token` and `host`, or None.

    Raises:
        ValueError: an empty or blank token (``ORCHESTRA_SERVE_TOKEN=""`` would open the server silently).
    """
    if token is not None and not token.strip():
        raise ValueError("--token / $ORCHESTRA_SERVE_TOKEN is empty: an empty token would leave the server open; "
                         "fix: set a non-empty token, or unset ORCHESTRA_SERVE_TOKEN to serve without one")
    if token is None and not _loopback(host):
        return (f"orchestra serve: WARNING: binding {host} (not loopback) with no token: anyone who reaches this "
                "address can play and step envs; set --token or $ORCHESTRA_SERVE_TOKEN")
    if token is None:
        return "orchestra serve: no token (open to this machine only: loopback)"
    return None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(env_id: str, env_kwargs: "dict[str, Any] | None" = None, host: str = "127.0.0.1", port: int = 8000,
          max_sessions: int = 64, idle_timeout_s: "float | None" = 600.0, token: "str | None" = None,
          workers: int = 1, log_level: str = "warning", step_in: str = "thread",
          max_body_bytes: int = MAX_BODY_BYTES, request_timeout_s: float = REQUEST_TIMEOUT_S) -> None:
    """Serve `env_id` with uvicorn until interrupted (`build_app`'s arguments; `workers` processes,
    each with ``ceil(max_sessions / workers)`` sessions at most; a WebSocket message over
    `max_body_bytes` closes its session with code 1009; a client that does not send a whole HTTP
    request within `request_timeout_s` seconds is dropped). Blocks.

    Raises:
        ValueError: a limit < 1 or an empty token (`check_token`).
    """
    import uvicorn

    if max_sessions < 1 or workers < 1 or max_body_bytes < 1 or not request_timeout_s > 0:
        raise ValueError(f"--max-sessions, --workers, --max-body-bytes and --request-timeout must be >= 1 (> 0 for the "
                         f"timeout), got {max_sessions}, {workers}, {max_body_bytes} and {request_timeout_s}")
    warning = check_token(token, host)
    config = dict(env_id=env_id, env_kwargs=env_kwargs or {}, max_sessions=-(-max_sessions // workers),
                  idle_timeout_s=idle_timeout_s, token=token, step_in=step_in, max_body_bytes=max_body_bytes)
    _RequestDeadline.request_timeout_s = float(request_timeout_s)  # this process's; workers: app_from_environ
    common = dict(host=host, port=port, log_level=log_level, ws="websockets-sansio", ws_max_size=max_body_bytes,
                  ws_ping_interval=None, ws_per_message_deflate=False, access_log=False,
                  http="orchestra_gym.serving.server:_RequestDeadline")  # by name: workers import it
    if warning:
        print(warning, file=sys.stderr, flush=True)
    if workers == 1:
        app = build_app(**config)
        print(f"orchestra serve: {env_id} on http://{host}:{port} (OpenEnv: WS /ws, POST /reset, GET /state "
              f"/schema /health /sessions), at most {max_sessions} sessions", flush=True)
        uvicorn.run(app, **common)
    else:
        build_app(**config)  # fail before the workers start
        os.environ[CONFIG_ENV] = json.dumps({**config, "request_timeout_s": float(request_timeout_s)})
        print(f"orchestra serve: {env_id} on http://{host}:{port}, {workers} workers, at most {config['max_sessions']} "
              f"sessions each", flush=True)
        uvicorn.run("orchestra_gym.serving.server:app_from_environ", factory=True, workers=workers, **common)
