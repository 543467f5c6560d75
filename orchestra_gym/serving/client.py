"""Clients of `orchestra serve`: OpenEnv's ``EnvClient`` typed for orchestra envs, and a Gymnasium env.

    env = gym.make("orchestra_gym:Remote-v0", base_url="http://127.0.0.1:8000")   # a WebSocket session
    obs, info = env.reset(seed=3)                        # the served env's reset, with its own seed
    obs, reward, terminated, truncated, info = env.step("<message>Done.</message>")

`RemoteEnv` is a ``gymnasium.Env`` over one session (so ``orchestra eval --env orchestra_gym:Remote-v0
--env-kwargs '{"base_url": ...}'``, the notebooks and our trainer run against a served env): text
observations and actions (`orchestra_gym.spaces.TextSpace`), ``info`` decoded with its NumPy
arrays (`orchestra_gym.serving.protocol.decode`). `OrchestraClient` is the OpenEnv client
(async or sync, OpenEnv 0.10 ``openenv.core.env_client.EnvClient``) for trainers that speak OpenEnv.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gymnasium as gym
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from orchestra_gym.errors import OrchestraError
from orchestra_gym.serving.protocol import OrchestraAction, OrchestraObservation, OrchestraState, decode
from orchestra_gym.spaces import OBSERVATION_MAX_CHARS, TextSpace
from orchestra_gym.types import Message

__all__ = ["OrchestraClient", "RemoteEnv", "ServerError", "as_action"]


class ServerError(OrchestraError, RuntimeError):
    """An error frame of the server: its message, code and (for a malformed message) the fields' errors."""


def as_action(action: "str | dict | list | OrchestraAction") -> OrchestraAction:
    """An env action (text, a call dict, a list of calls, ``{"message": ...}``) as an `OrchestraAction`."""
    if isinstance(action, OrchestraAction):
        return action
    return OrchestraAction(text=action) if isinstance(action, str) else OrchestraAction(structured=action)


class OrchestraClient(EnvClient[OrchestraAction, OrchestraObservation, OrchestraState]):
    """OpenEnv client of `orchestra serve` (``base_url`` http(s) or ws(s); ``headers`` for a bearer token).

    ``reset(seed=..., options=...)`` / ``step(OrchestraAction)`` return OpenEnv ``StepResult``s whose
    ``observation`` is an `OrchestraObservation` (``info`` still `encode`d). Raises `ServerError`
    for an error frame (message, code, and each bad field's ``loc``)."""

    def _step_payload(self, action: OrchestraAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[OrchestraObservation]:
        obs = OrchestraObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                   done=bool(payload.get("done", False)))
        return StepResult(observation=obs, reward=payload.get("reward"), done=obs.done)

    def _parse_state(self, payload: dict[str, Any]) -> OrchestraState:
        return OrchestraState(**payload)

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        await self._send(message)
        response = await self._receive()
        if response.get("type") == "error":
            data = response.get("data", {})
            fields = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in data.get("errors") or [])
            raise ServerError(f"server error {data.get('code', 'UNKNOWN')}: {data.get('message')}"
                              + (f" ({fields})" if fields else ""))
        return response


class RemoteEnv(gym.Env):
    """A Gymnasium env over one session of `orchestra serve` (the id ``orchestra_gym:Remote-v0``).

    Args:
        base_url: the server root, e.g. ``http://127.0.0.1:8000``.
        token: the server's bearer token, or None.
        message_timeout_s: seconds to wait for a reply to one message.

    ``reset(seed, options)`` and ``step(action)`` behave as the served env's (same observations,
    rewards and info for the same seeds); ``close()`` ends the session (the server closes its env).
    Raises `ServerError` for a server error frame (a refused session at capacity, a bad message).
    """

    metadata = {"render_modes": []}

    def __init__(self, base_url: str, token: "str | None" = None, message_timeout_s: float = 600.0):
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self.client = OrchestraClient(base_url=base_url, headers=headers, message_timeout_s=message_timeout_s).sync()
        self.observation_space = TextSpace(max_length=OBSERVATION_MAX_CHARS)
        self.action_space = TextSpace(max_length=1_000_000)
        self.base_url = base_url
        self.messages: list[Message] = []  # the episode's conversation, from info["new_messages"]
        self.task: "SimpleNamespace | None" = None  # .id: the episode's task id
        self.experts: dict[str, None] = {}  # the expert ids call_expert offers (for agents that check them)

    def _track(self, info: dict[str, Any]) -> None:
        self.messages += [Message.from_dict(m) for m in info.get("new_messages") or []]

    def reset(self, *, seed: "int | None" = None, options: "dict[str, Any] | None" = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        kwargs: dict[str, Any] = {"seed": seed} if seed is not None else {}
        if options is not None:
            kwargs["options"] = options
        obs = self.client.reset(**kwargs).observation
        info = decode(obs.info)
        self.messages, self.task = [], SimpleNamespace(id=info.get("task_id"))
        spec = next((t["function"] for t in info.get("tools") or [] if t.get("function", {}).get("name") == "call_expert"), {})
        self.experts = dict.fromkeys(spec.get("parameters", {}).get("properties", {}).get("expert", {}).get("enum", []))
        self._track(info)
        return obs.text, info

    def step(self, action: "str | dict | list") -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs = self.client.step(as_action(action)).observation
        info = decode(obs.info)
        self._track(info)
        return obs.text, float(obs.reward or 0.0), obs.terminated, obs.truncated, info

    def state(self) -> OrchestraState:
        """The session's `OrchestraState` (env id, task id, step count, whether the episode ended)."""
        return self.client.state()

    def close(self) -> None:
        self.client.close()
        super().close()
