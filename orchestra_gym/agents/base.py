"""What every agent shares: the `Agent` protocol and the helpers that read an env's offer.

Agents read the env through ``env.unwrapped.describe()`` (`orchestra_gym.description.EnvDescription`)
and the reset ``info``, never through the env's private attributes.
"""

from __future__ import annotations

from typing import Any, Protocol

from orchestra_gym.description import EnvDescription

__all__ = ["Agent", "tool_schemas", "qa_tool_models", "listed_price", "qa_price"]


class Agent(Protocol):
    """What `orchestra eval` drives: ``reset`` once per episode, then ``act`` once per turn."""

    name: str

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> "str | dict | list": ...


def tool_schemas(env: Any, info: dict[str, Any]) -> list[dict[str, Any]]:
    """The episode's tools as OpenAI schemas: the reset ``info["tools"]`` when the env reports them
    (function-calling envs, served envs), else the env description's tools."""
    if "tools" in info:
        return list(info["tools"])
    return [s.to_openai() for s in env.unwrapped.describe().tools]


def qa_tool_models(env: Any) -> "dict[str, list[str]]":
    """The models-as-tools of a QA env (`orchestra_gym.envs.qa`, ``mode="orchestra"``): tool name ->
    the ids its ``model`` argument takes, in listed order; empty for other envs
    (`EnvDescription.tool_models`)."""
    return env.unwrapped.describe().tool_models()


def listed_price(description: EnvDescription, expert: str, missing: float) -> float:
    """An expert's price as its tool description lists it: input plus output USD per 1M tokens in the
    episode's pricing schedule (``description.pricing``); `missing` for an expert without a priced
    ``model_id``."""
    model_id = getattr(description.experts[expert], "model_id", None)
    if not model_id:
        return missing
    p = description.pricing.price(model_id)
    return p.input_per_m + p.output_per_m


def qa_price(description: EnvDescription, model: str) -> float:
    """A QA model's listed price (input + output USD per 1M tokens) in the episode's schedule (with a
    models file's prices); inf if unpriced."""
    from orchestra_gym.envs.qa_tools import QA_MODELS

    for pid in (model, QA_MODELS.get(model, model)):
        try:
            p = description.pricing.price(pid)
        except KeyError:
            continue
        return p.input_per_m + p.output_per_m
    return float("inf")
