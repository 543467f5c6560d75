"""Agents by name and by spec: `make_agent` (the baselines), `agent_factory` (``llm:<model id>`` and the
kinds other packages register, e.g. ``policy:<run dir>`` from `orchestra_jax`), `AgentFactory`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from orchestra_gym.agents.base import Agent
from orchestra_gym.agents.llm import LLMAgent, llm_agent
from orchestra_gym.agents.rules import StatedRuleAgent
from orchestra_gym.agents.scripted import CascadeAgent, DelegatingAgent, ExpertAgent, OracleAgent, RandomAgent

__all__ = ["AGENT_NAMES", "make_agent", "check_agent_name", "AgentFactory", "agent_factory", "register_agent_kind"]


AGENT_NAMES = ("random", "oracle", "cascade", "delegating", "expert-<k>", "most-accurate", "cheapest", "fastest",
               "random-offered", "llm:<model id>")
_STATED_RULES = ("most-accurate", "cheapest", "fastest", "random-offered")  # `orchestra_gym.agents.rules`


def make_agent(name: str, seed: int = 0) -> Agent:
    """Build a baseline agent by name (``random``, ``oracle``, ``cascade``, ``delegating``, ``expert-<k>``).

    For ``llm:<model id>`` and registered kinds (``policy:<run dir>``) use `agent_factory`.

    Raises:
        ValueError: unknown name (lists the known ones).
    """
    check_agent_name(name)
    if name == "random":
        return RandomAgent(seed)
    if name == "oracle":
        return OracleAgent()
    if name == "cascade":
        return CascadeAgent()
    if name == "delegating":
        return DelegatingAgent(seed)
    if name in _STATED_RULES:
        return StatedRuleAgent(name, seed)
    return ExpertAgent(name.replace("expert:", "", 1))


def check_agent_name(name: str) -> None:
    """Raise ValueError (listing the known agents) unless `make_agent` builds `name`."""
    if name in ("random", "oracle", "cascade", "delegating", *_STATED_RULES) or name.startswith("expert-") or name.startswith("expert:"):
        return
    known = list(AGENT_NAMES) + [f"{k}:<{hint}>" for k, (_, hint) in sorted(_AGENT_KINDS.items())]
    raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(known)}")



# ----------------------------------------------------------------------------------- agent specs
@dataclass
class AgentFactory:
    """The agents of one evaluation, from one agent spec (see `agent_factory`).

    Attributes:
        name: the spec (``oracle``, ``llm:gpt-5``, ``policy:runs/x``), for tables.
        make: episode index -> the agent of that episode (baselines: a fresh agent seeded
            ``seed + i``; ``llm:``: a fresh conversation over one shared chat model; a trained
            policy: one agent whose ``reset`` starts each episode, so one episode at a time).
        env_id, env_kwargs, reset_options: the setting the agent brings (a trained run's env, its
            ``gym.make`` kwargs and reset options), or None / empty for agents that play any env.
        close: releases what the agents hold (HTTP clients).
    """

    name: str
    make: Callable[[int], Any]
    env_id: str | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    reset_options: dict[str, Any] = field(default_factory=dict)
    close: Callable[[], None] = lambda: None

    def __call__(self, episode: int) -> Any:
        """The agent of episode `episode` (0-based)."""
        return self.make(episode)


# kind -> (builder(argument, seed, models) -> AgentFactory, what the argument is)
_AGENT_KINDS: dict[str, tuple[Callable[[str, int, Any], AgentFactory], str]] = {}


def register_agent_kind(kind: str, builder: Callable[[str, int, Any], AgentFactory], argument: str = "arg") -> None:
    """Make ``<kind>:<argument>`` agent specs build through `builder(argument, seed, models)`.

    Used by packages this one must not import (``orchestra_jax`` registers ``policy:<run dir>``).
    Registering a kind again replaces it.
    """
    _AGENT_KINDS[kind] = (builder, argument)


def agent_factory(spec: str, seed: int = 0, models: Any = None, cache: Any = None,
                  cache_mode: str = "record-missing") -> AgentFactory:
    """The `AgentFactory` of an agent spec.

    Specs: the baselines of `make_agent` (``random``, ``oracle``, ``cascade``, ``expert-<k>``);
    ``llm:<model id>`` (`llm_agent` with `models`, the models file, and the record/replay `cache` in
    `cache_mode` for its requests); and registered kinds
    (`register_agent_kind`, e.g. ``policy:<run dir>``).

    Raises:
        ValueError: unknown agent or kind (lists the known ones), a bad models file.
        KeyError: unknown model id (lists the file's ids).
    """
    kind, _, argument = spec.partition(":")
    if kind == "llm":
        if not argument:
            raise ValueError("agent 'llm:' needs a model id: --agent llm:<model id> with the id in --models FILE")
        first = llm_agent(argument, models, cache=cache, cache_mode=cache_mode)  # one chat model, a conversation per episode
        return AgentFactory(spec, lambda i: LLMAgent(first.model, first.tool_calling, first.sampling, first.name),
                            close=first.close)
    if argument and kind in _AGENT_KINDS:
        return _AGENT_KINDS[kind][0](argument, seed, models)
    check_agent_name(spec)  # fail early on an unknown name
    return AgentFactory(spec, lambda i: make_agent(spec, seed + i))
