"""The scripted baseline agents: random, oracle, always one expert, cheapest-first cascade, delegating.

Each reads the env's offer through ``env.unwrapped.describe()`` at ``reset`` (see
`orchestra_gym.agents` for what each one plays).
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from orchestra_gym.agents.base import listed_price, tool_schemas
from orchestra_gym.agents.qa import QAPipelineAgent
from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.types import ToolCall

__all__ = ["RandomAgent", "OracleAgent", "ExpertAgent", "CascadeAgent", "DelegatingAgent"]


class RandomAgent:
    """Random tool calls with schema-shaped arguments, or a random message (seeded)."""

    name = "random"

    def __init__(self, seed: int = 0, message_prob: float = 0.2):
        self.rng = np.random.default_rng(seed)
        self.message_prob = message_prob

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.tools = tool_schemas(env, info)

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
        if not self.env.describe().oracle:
            raise ValueError(f"{type(self.env).__name__} exposes no oracle_action(); the oracle agent cannot run on it")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self.env.oracle_action()


class ExpertAgent:
    """Always delegates the turn: ``call_expert(expert=<name>)``. On a QA env (no experts, models
    as tools) ``expert-<k>`` is the fixed rule `QAPipelineAgent` with search-k, reasoner-k and answer-k."""

    def __init__(self, expert: str):
        self.expert = expert
        self.name = expert
        self.qa: QAPipelineAgent | None = None

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        description = env.unwrapped.describe()
        experts, tools = description.experts, description.tool_models()
        if not experts and tools and self.expert.startswith("expert-"):
            k = self.expert.split("-", 1)[1]
            wanted = {t: f"{p}-{k}" for t, p in (("search", "search"), ("enhance_reasoning", "reasoner"), ("answer", "answer"))
                      if t in tools}
            self.qa = QAPipelineAgent(wanted, name=self.name)
            self.qa.reset(env, observation, info)
            return
        if self.expert not in experts:
            raise ValueError(f"agent {self.name!r}: the environment has no expert {self.expert!r}; experts: {list(experts)}")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.qa is not None:
            return self.qa.act(observation, info)
        return render_tool_calls([ToolCall("call_expert", {"expert": self.expert})])


class CascadeAgent:
    """Cheapest-first cascade: start with the cheapest expert, escalate after a failed action."""

    name = "cascade"

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        description = env.unwrapped.describe()
        experts = description.experts
        self.qa: QAPipelineAgent | None = None
        if not experts and description.tool_models():  # QA: cheapest models first, escalating after an empty search
            self.qa = QAPipelineAgent(escalate=True, name=self.name)
            self.qa.reset(env, observation, info)
            return
        if not experts:
            raise ValueError("the cascade agent needs an environment with experts (call_expert)")
        self.order = sorted(experts, key=lambda n: listed_price(description, n, missing=float("inf")))
        self.level = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.qa is not None:
            return self.qa.act(observation, info)
        failed = any(
            m.get("role") == "tool" and "\nResult:\nError" in m.get("content", "") for m in info.get("new_messages", [])
        )
        if failed:
            self.level = min(self.level + 1, len(self.order) - 1)
        return render_tool_calls([ToolCall("call_expert", {"expert": self.order[self.level]})])


class DelegatingAgent:
    """Delegates every turn to an expert drawn uniformly at random (``call_expert``), seeded.

    The trainer's warm-start demonstrator (`orchestra_jax.train`): a policy that imitates it writes
    valid tool calls with a uniform expert mix, and GRPO has to discover which experts are worth
    their price. The expert choice carries no knowledge of which expert is right for a task.

    Args:
        seed: the generator's seed.
        per_episode: draw one expert per episode and call it every turn (a pure strategy per
            rollout, so a group of rollouts compares experts cleanly) instead of one per turn.
        state_kind: open the first turn with ``<think>Request kind: <category>.</think>``, the
            task's category in words (``change item``, ``search and book``...), read from
            ``env.unwrapped.task.category``: the warm start teaches the policy to name what the
            user asks for before it acts, as a language-pretrained orchestrator would; the expert
            after it is still drawn at random.
        expert_weights: relative probabilities of the experts' draw (expert name -> weight >= 0;
            experts not listed get 0); empty or None draws uniformly (the guided rollouts' demonstrator
            pins one expert with it, `orchestra_jax.policy.guide`).

    Raises (in `reset`): ValueError when the environment has no experts, or `expert_weights`
    names an expert the environment lacks or gives no expert a positive weight.
    """

    name = "delegating"

    def __init__(self, seed: int = 0, per_episode: bool = False, state_kind: bool = False,
                 expert_weights: "dict[str, float] | None" = None):
        self.rng = np.random.default_rng(seed)
        self.per_episode = bool(per_episode)
        self.state_kind = bool(state_kind)
        self.expert_weights = dict(expert_weights or {})

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.experts = sorted(env.unwrapped.describe().experts)
        if not self.experts:
            raise ValueError("the delegating agent needs an environment with experts (call_expert)")
        self.p = None
        if self.expert_weights:
            unknown = sorted(set(self.expert_weights) - set(self.experts))
            if unknown:
                raise ValueError(f"expert_weights names {unknown}, not experts of this environment; known: {self.experts}")
            w = np.array([float(self.expert_weights.get(e, 0.0)) for e in self.experts])
            if not (np.all(w >= 0) and w.sum() > 0):
                raise ValueError(f"expert_weights must be >= 0 with a positive sum, got {self.expert_weights}")
            self.p = w / w.sum()
        self.fixed = self._draw() if self.per_episode else None
        task = env.unwrapped.task
        category = (task.category if task is not None else "") or ""
        parts = []
        if self.state_kind and category:
            parts.append(f"Request kind: {category.replace('_', ' ')}.")
        self.parts = parts
        self.first = True

    def _draw(self) -> str:
        if self.p is None:
            return self.experts[int(self.rng.integers(len(self.experts)))]
        return self.experts[int(self.rng.choice(len(self.experts), p=self.p))]

    def _render(self, expert: str, first: bool) -> str:
        parts = list(self.parts) if first else []
        thought = f"<think>{' '.join(parts)}</think>\n" if parts else ""
        return thought + render_tool_calls([ToolCall("call_expert", {"expert": expert})])

    def act(self, observation: str, info: dict[str, Any]) -> str:
        expert = self.fixed or self._draw()
        text = self._render(expert, self.first)
        self.first = False
        return text
