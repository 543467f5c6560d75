"""Price tables for models and tools, and seeded random pricing schedules.

All prices are in US dollars (USD): model prices per 1M tokens (input and output separately),
tool fees per call or per second.

Source: ToolOrchestra (arXiv 2511.21689) Sec. 4 / App. D price table (see the project's
DESIGN.md section 5): gpt-5 1.25/10, gpt-5-mini 0.25/2, Qwen3-32B 0.8/0.8, ...; code interpreter
8.3e-6 USD per second; Tavily web search 0.01 USD per call. The paper randomises prices per
training instance so that the orchestrator learns to read prices from tool descriptions rather than
memorising them; `random_schedule` does the same, deterministically under a seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from orchestra_gym.errors import ConfigError, did_you_mean

__all__ = [
    "EXPERT_POOL",
    "ModelPrice",
    "PricingSchedule",
    "PAPER",
    "UNSEEN",
    "DEEPINFRA",
    "SCHEDULES",
    "get_schedule",
    "cost_usd",
    "fee_usd",
    "random_schedule",
]


@dataclass(frozen=True)
class ModelPrice:
    """Price of one model in USD per 1M tokens.

    Attributes:
        input_per_m: USD per 1,000,000 prompt tokens.
        output_per_m: USD per 1,000,000 completion tokens.
    """

    input_per_m: float
    output_per_m: float

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """USD for the given token counts."""
        return (float(prompt_tokens) * self.input_per_m + float(completion_tokens) * self.output_per_m) / 1e6


@dataclass(frozen=True)
class PricingSchedule:
    """A named set of model prices and per-call / per-second tool fees.

    Attributes:
        name: schedule name (e.g. ``"paper"``).
        models: model id -> `ModelPrice`.
        fees: fee name -> USD. Known fees: ``"code_interpreter_per_s"`` (USD per CPU second of the
            Python sandbox), ``"web_search_per_call"`` (USD per web search), ``"local_search_per_call"``.
    """

    name: str
    models: dict[str, ModelPrice] = field(default_factory=dict)
    fees: dict[str, float] = field(default_factory=dict)

    def price(self, model: str) -> ModelPrice:
        """Return the price of `model`.

        Raises:
            KeyError: for an unknown model; the message suggests the closest known id.
        """
        try:
            return self.models[model]
        except KeyError:
            raise KeyError(
                f"no price for model {model!r} in pricing schedule {self.name!r}{did_you_mean(model, self.models)}; "
                f"known models: {sorted(self.models)}; add it to your models file or schedule"
            ) from None

    def with_models(self, extra: dict[str, ModelPrice]) -> "PricingSchedule":
        """A copy with `extra` prices added (or overriding existing ones)."""
        return replace(self, models={**self.models, **extra})


# Paper prices, USD per 1M tokens (input, output). Source: ToolOrchestra App. D / DESIGN.md Sec. 5.
_PAPER_MODELS = {
    "gpt-5": ModelPrice(1.25, 10.0),
    "gpt-5-mini": ModelPrice(0.25, 2.0),
    "Qwen/Qwen3-32B": ModelPrice(0.8, 0.8),
    "Qwen/Qwen2.5-Coder-32B-Instruct": ModelPrice(0.8, 0.8),
    "Qwen/Qwen2.5-Math-72B-Instruct": ModelPrice(0.9, 0.9),
    "Qwen/Qwen2.5-Math-7B-Instruct": ModelPrice(0.2, 0.2),
    "meta-llama/Llama-3.3-70B-Instruct": ModelPrice(0.9, 0.9),
    "Qwen/Qwen3-8B": ModelPrice(0.2, 0.2),
    "claude-opus-4-1": ModelPrice(15.0, 75.0),
}
# Short aliases used throughout the paper's tables.
_ALIASES = {
    "Qwen3-32B": "Qwen/Qwen3-32B",
    "Qwen2.5-Coder-32B": "Qwen/Qwen2.5-Coder-32B-Instruct",
    "Qwen2.5-Math-72B": "Qwen/Qwen2.5-Math-72B-Instruct",
    "Qwen2.5-Math-7B": "Qwen/Qwen2.5-Math-7B-Instruct",
    "Llama-3.3-70B": "meta-llama/Llama-3.3-70B-Instruct",
    "Qwen3-8B": "Qwen/Qwen3-8B",
    "claude-opus-4.1": "claude-opus-4-1",
}
# The expert pool of call_expert (tau2 / ToolScale): anonymised expert id -> priced model id, strongest
# first. The one definition, used by the simulated experts (`orchestra_gym.tools.simulated.DEFAULT_EXPERTS`)
# and by every models file (`orchestra_gym.tools.models`: the default for expert ids a file does not alias).
# The paper's generalist pool (Sec. 4.1: GPT-5, GPT-5-mini, an open model); the ids are our choice.
EXPERT_POOL: dict[str, str] = {
    "expert-1": "gpt-5",
    "expert-2": "gpt-5-mini",
    "expert-3": "Qwen/Qwen3-32B",
}
_PAPER_FEES = {
    "code_interpreter_per_s": 8.3e-6,  # USD per second of code execution (paper App. D)
    "web_search_per_call": 0.01,  # Tavily, USD per search (paper App. D)
    "local_search_per_call": 0.0,  # a local index costs nothing per query
}

PAPER = PricingSchedule(
    name="paper",
    models={**_PAPER_MODELS, **{a: _PAPER_MODELS[m] for a, m in _ALIASES.items()}},
    fees=dict(_PAPER_FEES),
)

# A second schedule for "unseen pricing" tests (the paper evaluates generalisation to pricing
# configurations not seen in training). Synthetic, not a real provider's list: the open-weight
# models are cheaper and the proprietary ones dearer than in `PAPER`, which reverses some
# cost orderings (e.g. Qwen3-32B becomes cheaper than gpt-5-mini on output tokens).
UNSEEN = PricingSchedule(
    name="unseen",
    models={
        **{k: ModelPrice(v.input_per_m * 1.6, v.output_per_m * 1.6) for k, v in PAPER.models.items()},
        **{
            k: ModelPrice(v.input_per_m * 0.35, v.output_per_m * 0.35)
            for k, v in PAPER.models.items()
            if k.startswith(("Qwen", "meta-llama", "Llama"))
        },
    },
    fees={"code_interpreter_per_s": 2.0e-5, "web_search_per_call": 0.005, "local_search_per_call": 0.0},
)

# A DeepInfra-style schedule (ToolOrchestra App. H / Table 4 evaluates under DeepInfra's prices instead of the
# training ones). Source of the open-weight prices, USD per 1M tokens (input, output): DeepInfra's price table as
# listed by the Lava AI gateway's DeepInfra provider page (lava.so docs, "gateway/providers/deepinfra", read
# 2026-12): Qwen/Qwen3-32B 0.10/0.30, meta-llama/Llama-3.3-70B-Instruct 0.23/0.40, Qwen/Qwen2.5-72B-Instruct
# 0.12/0.39 (used for Qwen2.5-Math-72B, which that table does not list). Not on that page, so OUR ASSUMPTIONS of
# the same provider's scale: Qwen2.5-Coder-32B 0.06/0.15, Qwen2.5-Math-7B and Qwen3-8B 0.035/0.14. DeepInfra does
# not serve gpt-5 / gpt-5-mini / claude: they keep their list prices (as in `PAPER`). The App. H table itself was
# not available here to check against. Fees as in `PAPER`.
DEEPINFRA = PricingSchedule(
    name="deepinfra",
    models={
        **PAPER.models,
        **{k: ModelPrice(*v) for k, v in {
            "Qwen/Qwen3-32B": (0.10, 0.30),
            "meta-llama/Llama-3.3-70B-Instruct": (0.23, 0.40),
            "Qwen/Qwen2.5-Math-72B-Instruct": (0.12, 0.39),
            "Qwen/Qwen2.5-Coder-32B-Instruct": (0.06, 0.15),
            "Qwen/Qwen2.5-Math-7B-Instruct": (0.035, 0.14),
            "Qwen/Qwen3-8B": (0.035, 0.14),
        }.items()},
    },
    fees=dict(_PAPER_FEES),
)
DEEPINFRA.models.update({a: DEEPINFRA.models[m] for a, m in _ALIASES.items()})

SCHEDULES: dict[str, PricingSchedule] = {"paper": PAPER, "unseen": UNSEEN, "deepinfra": DEEPINFRA}


def get_schedule(schedule: "str | PricingSchedule | None" = None) -> PricingSchedule:
    """Resolve a schedule name (``"paper"``, ``"unseen"``, ``"deepinfra"``) or pass a `PricingSchedule` through.

    Raises:
        KeyError: unknown schedule name (lists the known ones).
    """
    if schedule is None:
        return PAPER
    if isinstance(schedule, PricingSchedule):
        return schedule
    try:
        return SCHEDULES[schedule]
    except KeyError:
        raise KeyError(f"unknown pricing schedule {schedule!r}; known: {sorted(SCHEDULES)}") from None


def cost_usd(
    model: str,
    prompt_tokens: float,
    completion_tokens: float,
    schedule: "str | PricingSchedule | None" = None,
) -> float:
    """Cost in USD of one model call: (prompt x input + completion x output) / 1e6.

    Args:
        model: model id in the schedule (e.g. ``"gpt-5"``, ``"Qwen/Qwen3-32B"``).
        prompt_tokens: prompt tokens (tokens).
        completion_tokens: completion tokens (tokens).
        schedule: schedule name or object; default the paper's.

    Raises:
        KeyError: unknown model (with the closest known id).
        ConfigError: negative token counts.
    """
    if prompt_tokens < 0 or completion_tokens < 0:
        raise ConfigError(f"token counts must be >= 0, got prompt={prompt_tokens}, completion={completion_tokens}")
    return get_schedule(schedule).price(model).cost(prompt_tokens, completion_tokens)


def fee_usd(fee: str, amount: float = 1.0, schedule: "str | PricingSchedule | None" = None) -> float:
    """A tool fee in USD: ``fees[fee] * amount`` (amount = seconds or calls).

    Raises:
        KeyError: unknown fee name (lists the known ones).
    """
    sched = get_schedule(schedule)
    if fee not in sched.fees:
        raise KeyError(f"unknown fee {fee!r} in schedule {sched.name!r}; known fees: {sorted(sched.fees)}")
    return sched.fees[fee] * float(amount)


def random_schedule(
    seed: int,
    base: "str | PricingSchedule | None" = None,
    low: float = 0.25,
    high: float = 4.0,
) -> PricingSchedule:
    """A seeded random pricing schedule (paper Sec. 3.3: prices randomised per training instance).

    Every model's input and output price and every non-zero fee is multiplied by its own factor
    drawn log-uniformly from [low, high]. Aliases of the same model keep one price. The same seed
    always gives the same schedule.

    Args:
        seed: integer seed.
        base: schedule to perturb (default the paper's).
        low, high: range of the multiplicative factors, 0 < low <= high.

    Raises:
        ConfigError: if not 0 < low <= high.
    """
    if not (0 < low <= high):
        raise ConfigError(f"need 0 < low <= high, got low={low}, high={high}")
    sched = get_schedule(base)
    rng = np.random.default_rng(seed)
    lo, hi = math.log(low), math.log(high)
    models: dict[str, ModelPrice] = {}
    for name in sorted(sched.models):
        p = sched.models[name]
        key = _ALIASES.get(name, name)
        if key in models:
            models[name] = models[key]
            continue
        f_in, f_out = np.exp(rng.uniform(lo, hi, size=2))
        models[name] = ModelPrice(p.input_per_m * float(f_in), p.output_per_m * float(f_out))
    # Make aliases consistent with their canonical ids (aliases sort after or before; fix both ways).
    for alias, target in _ALIASES.items():
        if alias in models and target in models:
            models[alias] = models[target]
    fees = {k: (v * float(np.exp(rng.uniform(lo, hi))) if v else 0.0) for k, v in sorted(sched.fees.items())}
    return PricingSchedule(name=f"{sched.name}-random-{seed}", models=models, fees=fees)
