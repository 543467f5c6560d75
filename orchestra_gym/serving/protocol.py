"""The wire types of a served orchestra env: OpenEnv `Action` / `Observation` / `State` models.

An orchestra env's step takes text (the policy's raw output) or a structured action (a call dict
``{"name", "arguments"}``, a list of them, or ``{"message": ...}``; `orchestra_gym.env`); it returns
a text observation, a float reward, ``terminated`` / ``truncated`` and an ``info`` dict holding
cost (USD), latency (s), tokens, the reward vector (float32 NumPy array) and the preference.

`encode` / `decode` carry ``info`` faithfully over JSON: NumPy arrays travel as
``{"__ndarray__": list, "dtype": str}`` and come back as arrays of the same dtype and shape, NumPy
scalars as Python numbers, tuples as lists. Source: OpenEnv 0.10 ``openenv.core.env_server.types``.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from orchestra_gym.evaluation.records import jsonable

__all__ = ["OrchestraAction", "OrchestraObservation", "OrchestraState", "encode", "decode", "NDARRAY_TAG"]

NDARRAY_TAG = "__ndarray__"


class OrchestraAction(Action):
    """One orchestrator turn: exactly one of `text` (raw policy output) or `structured`
    (a call dict, a list of call dicts, or ``{"message": str}``)."""

    text: Optional[str] = Field(default=None, description="the policy's raw output (<tool_call> blocks, <message>)")
    structured: Optional[Union[dict[str, Any], list[dict[str, Any]]]] = Field(
        default=None, description='a tool call {"name", "arguments"}, a list of calls, or {"message": str}')

    @model_validator(mode="after")
    def _exactly_one(self) -> "OrchestraAction":
        if (self.text is None) == (self.structured is None):
            # a PydanticCustomError, not a ValueError: its error entry stays JSON (OpenEnv sends e.errors())
            raise PydanticCustomError("action_fields", "action: give exactly one of 'text' (raw policy output) or "
                                      "'structured' (a tool-call dict, a list of them, or {\"message\": ...})")
        return self

    def env_action(self) -> "str | dict | list":
        """The action as `orchestra_gym.env.OrchestraEnv.step` takes it."""
        return self.text if self.text is not None else self.structured


class OrchestraObservation(Observation):
    """A step's result: `text` (the observation), `info` (`encode`d), `terminated`, `truncated`;
    `reward` (float) and `done` (= terminated or truncated) from OpenEnv's base."""

    text: str = Field(default="", description="the observation: the rendered conversation so far")
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict, NumPy arrays tagged")
    terminated: bool = False
    truncated: bool = False


class OrchestraState(State):
    """`State` plus the env id, the episode's task id and whether the episode has ended."""

    env_id: str = ""
    task_id: Optional[str] = None
    ended: bool = False


def encode(x: Any) -> Any:
    """`x` as JSON-ready values (`orchestra_gym.evaluation.records.jsonable`), NumPy arrays tagged so
    that `decode` restores them exactly."""
    return jsonable(x, array=lambda a: {NDARRAY_TAG: a.tolist(), "dtype": str(a.dtype)})


def decode(x: Any) -> Any:
    """The inverse of `encode` (arrays back with their dtype; tuples stay lists)."""
    if isinstance(x, dict):
        if NDARRAY_TAG in x and set(x) == {NDARRAY_TAG, "dtype"}:
            return np.asarray(x[NDARRAY_TAG], dtype=x["dtype"])
        return {k: decode(v) for k, v in x.items()}
    if isinstance(x, list):
        return [decode(v) for v in x]
    return x
