"""Real chat models as the experts of the function-calling envs, built from a models file.

One job: turn the model ids a models file names into experts the policy calls through
``call_expert`` (`ModelExpert`: a chat model under an anonymised id, with its price line), and leave the
ids it does not name as the simulated experts (`experts_from_models_file`).
`orchestra_gym.envs.function_calling` uses them (and re-exports `ModelExpert`).
"""

from __future__ import annotations

from typing import Any

from orchestra_gym.pricing import EXPERT_POOL
from orchestra_gym.tools.simulated import DEFAULT_EXPERTS
from orchestra_gym.types import Message, ToolSpec

__all__ = ["ModelExpert", "experts_from_models_file"]


class ModelExpert:
    """A real chat model serving as an expert under an anonymised id (``expert-1`` ...).

    Args:
        name: the id the policy sees.
        model: a chat model (`orchestra_gym.tools.llm.OpenAIChatModel`, possibly wrapped in
            `orchestra_gym.tools.cache.CachedChatModel`).
        model_id: the priced model id behind `name` (for the price table in the tool description).
    """

    def __init__(self, name: str, model: Any, model_id: str):
        self.name, self.model, self.model_id = name, model, model_id

    def complete(self, messages: list[Message], tools: "list[ToolSpec] | None" = None, **sampling: Any) -> Any:
        """Forward to the chat model (``ChatResponse``: message, usage in tokens/USD/s, error)."""
        return self.model.complete(messages, tools, **sampling)

    def describe(self, schedule: Any = None) -> str:
        """One line with the price in USD per 1M tokens (from the models file or the schedule)."""
        from orchestra_gym import pricing as pricing_mod

        try:
            p = pricing_mod.get_schedule(schedule).price(self.model_id)
        except KeyError:
            return f"{self.name}: price unknown"
        return f"{self.name}: ${p.input_per_m:g}/1M input tokens, ${p.output_per_m:g}/1M output tokens"


def experts_from_models_file(
    models: Any, names: "list[str] | tuple[str, ...]" = tuple(EXPERT_POOL), cache: Any = None,
    cache_mode: str = "record-missing",
) -> tuple[list[ModelExpert], Any]:
    """Build the expert pool from a models file (path or `ModelsConfig`); `names` defaults to the expert
    pool's ids (`orchestra_gym.pricing.EXPERT_POOL`: expert-1..3).

    The ids the file names (`ModelsConfig.split`) become real chat models; the others stay the
    simulated experts of `orchestra_gym.tools.simulated.DEFAULT_EXPERTS` (the README's promise:
    the model tools read the file "when it names them").

    Returns the experts (in `names` order) and the pricing schedule with the file's prices (USD per 1M tokens).
    With `cache` (a path or `CallCache`) every expert call goes through the record/replay cache.

    Raises:
        orchestra_gym.tools.models.ModelsFileError / KeyError: bad file or unknown id.
    """
    from orchestra_gym.tools.cache import CachedChatModel, CallCache
    from orchestra_gym.tools.models import ModelsConfig, load_models

    cfg = models if isinstance(models, ModelsConfig) else load_models(models)
    schedule = cfg.pricing_schedule()
    if cache is not None and not isinstance(cache, CallCache):
        cache = CallCache(cache, mode=cache_mode)
    simulated = {e.name: e for e in DEFAULT_EXPERTS}
    experts = []
    for n in names:
        if not cfg.names(n) and n in simulated:
            experts.append(simulated[n])
            continue
        m = cfg.chat_model(n, pricing=schedule)
        if cache is not None:
            m = CachedChatModel(m, cache)
        experts.append(ModelExpert(n, m, cfg.resolve(n).id))
    return experts, schedule
