"""Baseline agents for any orchestra environment.

An agent maps the observation (and ``info``) to an action: model text or a structured action.
Agents see the environment only through ``reset(env, observation, info)``; the oracle also reads
the golden next action the environment exposes (``env.unwrapped.oracle_action()``), which is why
it is an upper bound, not a policy.

Agents:
    * ``random``: a uniformly random tool with arguments drawn from its JSON schema, or a random
      message to the user (a lower bound: near-zero success).
    * ``oracle``: plays the env's golden next action: in function-calling envs the golden tool
      calls, then the result to the user (success 1.0 wherever the golden actions solve the task;
      tau2 mock has one task graded on an env assertion its gold actions do not meet); in QA envs
      the strongest search model then the strongest answer model, which are simulated and fallible,
      so below 1.0 there.
    * ``expert-<k>`` (e.g. ``expert-1``): always delegates the turn to expert k with ``call_expert``
      (function-calling envs: ToolScale, tau2).
    * ``cascade``: cheapest-first; calls the cheapest expert, and escalates to the next dearer
      one for the rest of the episode after an expert's action fails (function-calling envs).
    * ``delegating``: every turn delegates to an expert drawn uniformly at random (seeded); the
      demonstrator of the trainer's supervised warm start (function-calling envs).
"""

from __future__ import annotations

import string
from typing import Any, Protocol

import numpy as np

from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.types import ToolCall

__all__ = ["Agent", "RandomAgent", "OracleAgent", "ExpertAgent", "CascadeAgent", "DelegatingAgent", "make_agent",
           "AGENT_NAMES"]


class Agent(Protocol):
    """What `orchestra eval` drives: ``reset`` once per episode, then ``act`` once per turn."""

    name: str

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> "str | dict | list": ...


def _tool_schemas(env: Any, info: dict[str, Any]) -> list[dict[str, Any]]:
    if "tools" in info:
        return list(info["tools"])
    specs = getattr(env.unwrapped, "tool_specs", None) or env.unwrapped._tool_specs()
    return [s.to_openai() for s in specs]


class RandomAgent:
    """Random tool calls with schema-shaped arguments, or a random message (seeded)."""

    name = "random"

    def __init__(self, seed: int = 0, message_prob: float = 0.2):
        self.rng = np.random.default_rng(seed)
        self.message_prob = message_prob

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.tools = _tool_schemas(env, info)

    def _value(self, schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            return schema["enum"][int(self.rng.integers(len(schema["enum"])))]
        t = schema.get("type", "string")
        if t == "integer":
            return int(self.rng.integers(0, 100))
        if t == "number":
            return float(np.round(self.rng.uniform(0, 100), 2))
        if t == "boolean":
            return bool(self.rng.integers(2))
        if t == "array":
            return [self._value(schema.get("items", {"type": "string"})) for _ in range(int(self.rng.integers(1, 3)))]
        if t == "object":
            return {}
        letters = np.array(list(string.ascii_lowercase + string.digits))
        return "".join(self.rng.choice(letters, size=6))

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if not self.tools or self.rng.random() < self.message_prob:
            return "<message>Could you tell me more about your request?</message>"
        fn = self.tools[int(self.rng.integers(len(self.tools)))]["function"]
        props = fn.get("parameters", {}).get("properties", {})
        args = {k: self._value(v) for k, v in props.items()}
        return render_tool_calls([ToolCall(fn["name"], args)])


class OracleAgent:
    """Plays the environment's golden next action each turn (an upper bound)."""

    name = "oracle"

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.env = env.unwrapped
        if not hasattr(self.env, "oracle_action"):
            raise ValueError(f"{type(self.env).__name__} exposes no oracle_action(); the oracle agent cannot run on it")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self.env.oracle_action()


class ExpertAgent:
    """Always delegates the turn: ``call_expert(expert=<name>)``."""

    def __init__(self, expert: str):
        self.expert = expert
        self.name = expert

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        experts = getattr(env.unwrapped, "experts", {})
        if self.expert not in experts:
            raise ValueError(f"agent {self.name!r}: the environment has no expert {self.expert!r}; experts: {list(experts)}")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return render_tool_calls([ToolCall("call_expert", {"expert": self.expert})])


class CascadeAgent:
    """Cheapest-first cascade: start with the cheapest expert, escalate after a failed action."""

    name = "cascade"

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        unwrapped = env.unwrapped
        experts = getattr(unwrapped, "experts", {})
        if not experts:
            raise ValueError("the cascade agent needs an environment with experts (call_expert)")
        sched = unwrapped.pricing

        def price(e: Any) -> float:
            p = sched.price(e.model_id) if hasattr(e, "model_id") else None
            return (p.input_per_m + p.output_per_m) if p else float("inf")

        self.order = sorted(experts, key=lambda n: price(experts[n]))
        self.level = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        failed = any(
            m.get("role") == "tool" and "\nResult:\nError" in m.get("content", "") for m in info.get("new_messages", [])
        )
        if failed:
            self.level = min(self.level + 1, len(self.order) - 1)
        return render_tool_calls([ToolCall("call_expert", {"expert": self.order[self.level]})])


class DelegatingAgent:
    """Every turn delegates to an expert drawn uniformly at random (``call_expert``), seeded.

    The trainer's warm-start demonstrator (`orchestra_jax.train`): a policy that imitates it writes
    valid tool calls with a uniform expert mix, and GRPO has to discover which experts are worth
    their price.

    Raises (in `reset`): ValueError when the environment has no experts.
    """

    name = "delegating"

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.experts = sorted(getattr(env.unwrapped, "experts", {}))
        if not self.experts:
            raise ValueError("the delegating agent needs an environment with experts (call_expert)")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        expert = self.experts[int(self.rng.integers(len(self.experts)))]
        return render_tool_calls([ToolCall("call_expert", {"expert": expert})])


AGENT_NAMES = ("random", "oracle", "cascade", "delegating", "expert-<k>")


def make_agent(name: str, seed: int = 0) -> Agent:
    """Build a baseline agent by name (``random``, ``oracle``, ``cascade``, ``delegating``, ``expert-<k>``).

    Raises:
        ValueError: unknown name (lists the known ones).
    """
    if name == "random":
        return RandomAgent(seed)
    if name == "oracle":
        return OracleAgent()
    if name == "cascade":
        return CascadeAgent()
    if name == "delegating":
        return DelegatingAgent(seed)
    if name.startswith("expert-") or name.startswith("expert:"):
        return ExpertAgent(name.replace("expert:", "", 1))
    raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(AGENT_NAMES)}")
