"""`orchestra serve`: one registered env id served through OpenEnv's own server.

    orchestra serve --env ToolOrchestra-ToolScale-v0 [--env-kwargs JSON] [--host 127.0.0.1] [--port 8000]
                    [--max-sessions 64] [--idle-timeout 600] [--token T] [--workers 1] [--step-in thread]

Built on ``openenv.core.env_server.http_server.HTTPEnvServer`` (OpenEnv 0.10, the library TRL's
GRPO trainer, SkyRL, Unsloth and torchforge speak to), not a hand-written protocol. Its routes:
``WS /ws`` (a session: one `OrchestraEnvironment`, i.e. one ``gym.make(env_id, **env_kwargs)``,
per connection, closed when the client goes; ``reset`` with its own ``seed`` and ``options``,
``step``, ``state``, ``close`` messages), ``POST /reset`` and ``POST /step`` (OpenEnv's stateless
HTTP calls: a fresh env per request), ``GET /state``, ``GET /schema``, ``GET /health``; plus
``GET /sessions`` (``{"active": n, "max": m}``, this module's). At most ``max_sessions`` sessions
at once (a further one gets OpenEnv's ``CAPACITY_REACHED`` error frame); a session idle for
``idle_timeout_s`` seconds is reaped by OpenEnv's reaper. A bad message gets an error frame (a
pydantic error list whose ``loc`` names the field, or a message naming it) and the session stays
usable. With a token every request needs ``Authorization: Bearer <token>`` (HTTP 401 otherwise).
Binds 127.0.0.1 unless told otherwise. Messages are not compressed (per-message deflate off: on
loopback it cost about 2 ms per step for nothing).
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import gymnasium as gym
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import ConcurrencyConfig

from orchestra_gym.serving.protocol import OrchestraAction, OrchestraObservation, OrchestraState, encode

__all__ = ["OrchestraEnvironment", "InLoopEnvironment", "build_app", "serve", "app_from_environ", "CONFIG_ENV"]

CONFIG_ENV = "ORCHESTRA_SERVE_CONFIG"  # JSON of build_app's arguments, for uvicorn worker processes
_RESET_FIELDS = ("seed", "episode_id", "options")


class OrchestraEnvironment(Environment):
    """An OpenEnv `Environment` over one Gymnasium orchestra env (``gym.make(env_id, **env_kwargs)``).

    ``reset(seed, options)`` and ``step(OrchestraAction)`` return an `OrchestraObservation` with
    the env's text observation, float reward, terminated / truncated and `encode`d info.

    Raises (each turned into an error frame by OpenEnv, the session kept):
        ValueError: an unknown reset field (named, with the accepted ones), or a step after the
            episode ended or before any reset.
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
        if kwargs:
            raise ValueError(f"reset: unknown field(s) {sorted(kwargs)}; accepted: {list(_RESET_FIELDS)}")
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"reset: field 'options' must be an object (the env's reset options), got "
                             f"{type(options).__name__}")
        obs, info = self.env.reset(seed=seed, options=options)
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


class _BearerToken:
    """ASGI middleware: HTTP requests and WebSocket handshakes need ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str):
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and dict(scope.get("headers") or []).get(b"authorization") != self.expected:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"})
                return
            body = json.dumps({"detail": "missing or wrong bearer token: send Authorization: Bearer <token>"}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def build_app(env_id: str, env_kwargs: "dict[str, Any] | None" = None, max_sessions: int = 64,
              idle_timeout_s: "float | None" = 600.0, token: "str | None" = None, step_in: str = "thread") -> Any:
    """The ASGI app serving `env_id` (a FastAPI app, wrapped by the token check when `token` is set).

    Args:
        env_id: a registered id (`orchestra_gym.registration.ENV_IDS`).
        env_kwargs: keywords of every session's ``gym.make`` (checked now: one env is made and closed).
        max_sessions: concurrent WebSocket sessions at most (>= 1).
        idle_timeout_s: seconds without a message after which a session is reaped; None: never.
        token: the bearer token every request must carry, or None.
        step_in: ``"thread"`` (OpenEnv's per-session thread: a slow step holds only its session) or
            ``"loop"`` (`InLoopEnvironment`: less overhead per message, for simulated tools).

    Raises:
        gymnasium.error.Error / ConfigError / ValueError: unknown id or bad env kwargs (before serving).
    """
    from fastapi import FastAPI

    if step_in not in STEP_IN:
        raise ValueError(f"step_in (--step-in) must be one of {sorted(STEP_IN)}, got {step_in!r}")
    kwargs, env_cls = dict(env_kwargs or {}), STEP_IN[step_in]
    env_cls(env_id, kwargs).close()  # a bad id or keyword fails here, not in the first session
    server = HTTPEnvServer(lambda: env_cls(env_id, kwargs), OrchestraAction, OrchestraObservation,
                           concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                                session_timeout=idle_timeout_s),
                           env_name=env_id, state_cls=OrchestraState)
    app = FastAPI(title=f"orchestra serve {env_id}", docs_url=None, redoc_url=None)
    server.register_routes(app)

    @app.get("/sessions")
    def sessions() -> dict[str, int]:
        return {"active": server.active_sessions, "max": server.max_concurrent_envs}

    app.state.openenv_server = server
    return _BearerToken(app, token) if token else app


def app_from_environ() -> Any:
    """`build_app` with the arguments in ``$ORCHESTRA_SERVE_CONFIG`` (JSON): uvicorn's factory for workers."""
    return build_app(**json.loads(os.environ[CONFIG_ENV]))


def serve(env_id: str, env_kwargs: "dict[str, Any] | None" = None, host: str = "127.0.0.1", port: int = 8000,
          max_sessions: int = 64, idle_timeout_s: "float | None" = 600.0, token: "str | None" = None,
          workers: int = 1, log_level: str = "warning", step_in: str = "thread") -> None:
    """Serve `env_id` with uvicorn until interrupted (`build_app`'s arguments; `workers` processes,
    each with ``ceil(max_sessions / workers)`` sessions at most). Blocks."""
    import uvicorn

    if max_sessions < 1 or workers < 1:
        raise ValueError(f"--max-sessions and --workers must be >= 1, got {max_sessions} and {workers}")
    config = dict(env_id=env_id, env_kwargs=env_kwargs or {}, max_sessions=-(-max_sessions // workers),
                  idle_timeout_s=idle_timeout_s, token=token, step_in=step_in)
    common = dict(host=host, port=port, log_level=log_level, ws="websockets-sansio", ws_max_size=1 << 27,
                  ws_ping_interval=None, ws_per_message_deflate=False, access_log=False)
    if workers == 1:
        app = build_app(**config)
        print(f"orchestra serve: {env_id} on http://{host}:{port} (OpenEnv: WS /ws, POST /reset /step, GET /state "
              f"/schema /health /sessions), at most {max_sessions} sessions", flush=True)
        uvicorn.run(app, **common)
    else:
        build_app(**config)  # fail before the workers start
        os.environ[CONFIG_ENV] = json.dumps(config)
        print(f"orchestra serve: {env_id} on http://{host}:{port}, {workers} workers, at most {config['max_sessions']} "
              f"sessions each", flush=True)
        uvicorn.run("orchestra_gym.serving.server:app_from_environ", factory=True, workers=workers, **common)
