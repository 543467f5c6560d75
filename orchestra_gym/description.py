"""`EnvDescription`: what an orchestra environment offers in its current episode, in one public record.

Agents, wrappers, evaluation and the trainer read ``env.unwrapped.describe()`` instead of probing an
env's attributes (Gymnasium 1.x forwards no attributes through wrappers; callers read
``env.unwrapped.<public name>``). Built by `orchestra_gym.env.OrchestraEnv.describe`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from orchestra_gym.rewards import RewardLayout
from orchestra_gym.types import Preference, ToolSpec

__all__ = ["EnvDescription"]


@dataclass(frozen=True)
class EnvDescription:
    """One episode's offer, as the env states it after ``reset`` (before the first ``reset`` the
    episode fields are empty: ``tools == ()``, ``task_id is None``).

    Attributes:
        env_class: the env's class name (for messages).
        tools: the tools the policy may call this episode (after the ``tools`` reset option), in
            prompt order (`orchestra_gym.types.ToolSpec`).
        experts: the experts ``call_expert`` offers this episode, name -> expert object (a
            `orchestra_gym.tools.simulated.SimulatedModel` or a chat model with ``model_id``), in
            pool order; empty in envs without experts (HLE, FRAMES: models as tools).
        expert_tool: whether ``call_expert`` is exposed.
        expert_pool: the name of the env's expert pool (`orchestra_gym.tools.pools`), None without one.
        reward_layout: the layout of this episode's reward vector M (paper Sec. 3.2).
        preference: the episode's preference vector.
        preference_weights: P aligned with M (float [K], `RewardLayout.preference_weights`); the
            same numbers the env reports as ``info["preference_weights"]`` at the episode's end.
        pricing: the episode's pricing schedule (`orchestra_gym.pricing.PricingSchedule`; a QA env
            with a models file: with the file's prices); None before ``reset``.
        pricing_schedule: its name.
        task_id: the episode's task id (None before ``reset``).
        task_ids: the env's fixed task list (tau2, HLE, FRAMES), empty for generated tasks (ToolScale).
        domains: the task domains the env draws from (a fixed task list: sorted; ToolScale: its
            ``domains`` as given).
        categories: the task categories (`orchestra_gym.types.Task.category`) it may draw (a fixed
            task list: sorted; ToolScale: the generator's order); labels for metrics and routing
            features, never shown to the orchestrator.
        max_turns: the env's turn limit.
        oracle: whether the env exposes ``oracle_action()`` (its golden next action, for the oracle agent).
    """

    env_class: str
    tools: tuple[ToolSpec, ...]
    experts: Mapping[str, Any]
    expert_tool: bool
    expert_pool: str | None
    reward_layout: RewardLayout
    preference: Preference
    preference_weights: tuple[float, ...]
    pricing: Any
    pricing_schedule: str
    task_id: Any
    task_ids: tuple[Any, ...]
    domains: tuple[str, ...]
    categories: tuple[str, ...]
    max_turns: int
    oracle: bool = False

    @property
    def reward_vector_names(self) -> list[str]:
        """``info["reward_vector_names"]``: the reward vector's component names (length K)."""
        return self.reward_layout.names

    def tool_models(self) -> dict[str, list[str]]:
        """The models-as-tools: tool name -> the model ids its ``model`` argument takes (tools with
        ``kind="model"`` and a ``model`` enum, the QA envs' search / enhance_reasoning / answer), in
        listed order; empty where no tool picks a model."""
        out: dict[str, list[str]] = {}
        for s in self.tools:
            enum = (s.parameters.get("properties", {}).get("model") or {}).get("enum")
            if s.kind == "model" and enum:
                out[s.name] = list(enum)
        return out
