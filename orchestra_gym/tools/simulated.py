"""Simulated models for the offline default: priced, slow and fallible like real ones, but free.

**This is a simulator, not a model.** A `SimulatedModel` never reads the request's meaning: given
the right answer (the golden next action, or the gold answer of a QA task) it returns it with
probability ``accuracy[category][difficulty]`` and otherwise a plausible wrong one supplied by the
caller. Its usage follows simple models:

* tokens: ``prompt_tokens = ceil(len(request_text) / chars_per_token)`` (default 4 characters per
  token, the usual English average for BPE tokenizers); ``completion_tokens`` drawn uniformly from
  ``completion_tokens`` (a (low, high) range) and rounded.
* latency (logical seconds): ``ttft_s + prompt_tokens / prefill_tok_s + completion_tokens / decode_tok_s``.
* cost (USD): `orchestra_gym.pricing.cost_usd` of its ``model_id`` under the episode's schedule.

Every draw comes from a NumPy generator seeded with a SHA-256 of (episode seed, model name,
request text), so the same seed and the same request give the same reply, usage and latency in
any process (DESIGN.md Sec. 4: a logical clock keeps ``check_env`` determinism).

The default expert pool (`DEFAULT_EXPERTS`, function-calling envs) is the paper's
(`orchestra_gym.pricing.EXPERT_POOL`, shared with the models file): expert-1 gpt-5, expert-2
gpt-5-mini, expert-3 Qwen3-32B at their App. D prices, so switching to real endpoints keeps what
each expert is. The QA profiles (`QA_PROFILES`, the search / reasoning / answer models of the HLE
and FRAMES envs, made by `qa_model`) mirror the paper's price ladder (ToolOrchestra Sec. 4 /
App. D): strong expensive models, mid-priced open models and cheap small ones. The accuracy
tables below are our assumptions for the simulator (the paper gives no per-category accuracies
for its experts); they are chosen so that cost and accuracy trade off, which is what an orchestrator must learn.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, TypeVar

import numpy as np

from orchestra_gym import pricing as pricing_mod
from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_gym.types import Usage

__all__ = [
    "SimulatedModel",
    "SimulatedReply",
    "DEFAULT_EXPERTS",
    "DIFFICULTIES",
    "PROFILE_FIELDS",
    "with_profiles",
    "QA_PROFILES",
    "qa_model",
    "QA_SKILLS",
    "QA_SKILL_GROUPS",
    "qa_skill_group",
    "request_rng",
]

T = TypeVar("T")
DIFFICULTIES = ("easy", "medium", "hard")


def request_rng(*parts: Any) -> np.random.Generator:
    """A NumPy generator seeded by SHA-256 of the parts' reprs (stable across processes)."""
    h = hashlib.sha256("\x1f".join(repr(p) for p in parts).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(h[:16], "little"))


@dataclass
class SimulatedReply:
    """What a simulated model returned.

    Attributes:
        value: the right answer or the wrong one (whatever the caller passed in).
        correct: whether ``value`` is the right one.
        usage: tokens, USD and logical seconds of the call.
    """

    value: Any
    correct: bool
    usage: Usage


@dataclass
class SimulatedModel:
    """A priced, fallible stand-in for an expert model (see the module docstring for the numbers).

    Attributes:
        name: anonymised id the policy sees (e.g. ``"expert-1"``).
        model_id: priced model id in `orchestra_gym.pricing` (e.g. ``"gpt-5"``).
        accuracy: category -> difficulty -> probability of the right answer; the key ``"default"``
            serves categories not listed; difficulties not listed use ``"medium"``.
        ttft_s: time to first token (s).
        prefill_tok_s: prompt tokens processed per second.
        decode_tok_s: completion tokens generated per second.
        completion_tokens: (low, high) range of completion tokens per call.
        chars_per_token: characters per prompt token.
    """

    name: str
    model_id: str
    accuracy: dict[str, dict[str, float]] = field(default_factory=lambda: {"default": {"easy": 0.9, "medium": 0.8, "hard": 0.6}})
    ttft_s: float = 0.5
    prefill_tok_s: float = 5000.0
    decode_tok_s: float = 60.0
    completion_tokens: tuple[int, int] = (150, 600)
    chars_per_token: float = 4.0

    def p_correct(self, category: str, difficulty: str) -> float:
        """Probability of the right answer for a task of this category and difficulty."""
        table = self.accuracy.get(category, self.accuracy.get("default", {}))
        p = table.get(difficulty, table.get("medium", 0.0))
        return float(min(max(p, 0.0), 1.0))

    def usage(self, request_text: str, rng: np.random.Generator, schedule: Any = None) -> Usage:
        """Tokens, cost (USD) and logical latency (s) of one call on `request_text`."""
        prompt = float(math.ceil(len(request_text) / self.chars_per_token))
        lo, hi = self.completion_tokens
        completion = float(int(rng.integers(lo, hi + 1)))
        latency = self.ttft_s + prompt / self.prefill_tok_s + completion / self.decode_tok_s
        cost = pricing_mod.cost_usd(self.model_id, prompt, completion, schedule)
        return Usage(prompt, completion, cost, latency)

    def respond(
        self,
        request_text: str,
        right: T,
        wrong: Callable[[np.random.Generator], T],
        *,
        category: str = "default",
        difficulty: str = "medium",
        seed: Any = 0,
        schedule: Any = None,
        p: float | None = None,
    ) -> SimulatedReply:
        """Answer a request: `right` with probability `p_correct`, else ``wrong(rng)``.

        Args:
            request_text: the full request (conversation) text; it drives the token count and,
                with `seed`, the random draws.
            right: the right answer (golden next action, gold answer, ...).
            wrong: makes a plausible wrong answer from a generator.
            category, difficulty: select the accuracy.
            seed: the episode's seed (or any hashable mixing value).
            schedule: pricing schedule for the cost.
            p: the probability of the right answer, in place of `p_correct` (the QA envs'
                simulated models compute it from what the context holds); None: `p_correct`.

        Raises:
            KeyError: `model_id` has no price in the schedule.
        """
        rng = request_rng(seed, self.name, self.model_id, request_text)
        correct = bool(rng.random() < (self.p_correct(category, difficulty) if p is None else p))
        value = right if correct else wrong(rng)
        return SimulatedReply(value=value, correct=correct, usage=self.usage(request_text, rng, schedule))

    def describe(self, schedule: Any = None) -> str:
        """One line for a tool description: price (USD per 1M tokens) and typical latency (s)."""
        p = pricing_mod.get_schedule(schedule).price(self.model_id)
        return (f"{self.name}: ${p.input_per_m:g}/1M input tokens, ${p.output_per_m:g}/1M output tokens, "
                f"about {self.typical_latency_s():.0f} s per call")

    def typical_latency_s(self) -> float:
        """The latency (s) the description states: time to first token plus the mean completion at the
        decode rate (the prompt's prefill left out)."""
        lo, hi = self.completion_tokens
        return self.ttft_s + (lo + hi) / 2 / self.decode_tok_s


# Simulated behaviour of each expert id (accuracies assumed, latency profile); which priced model
# each one stands for comes from the one definition of the pool, `orchestra_gym.pricing.EXPERT_POOL`.
# Accuracy is per action. The paper's premise (Sec. 1, Fig. 1): small models handle simple requests
# about as well as the frontier model and fall behind as requests get harder, which is what makes
# routing worth learning; so on easy requests the cheaper experts are close to expert-1 (0.97, 0.93
# against 0.98; until 2026-12 they were 0.90 and 0.75, which made always-expert-2 a hard rule to beat)
# and the gap opens on medium and hard ones.
_EXPERT_PROFILES: dict[str, dict[str, Any]] = {
    "expert-1": dict(accuracy={"default": {"easy": 0.98, "medium": 0.95, "hard": 0.9}}, ttft_s=2.0,
                     decode_tok_s=50.0, completion_tokens=(400, 1200)),
    "expert-2": dict(accuracy={"default": {"easy": 0.97, "medium": 0.75, "hard": 0.55}}, ttft_s=0.6,
                     decode_tok_s=80.0, completion_tokens=(200, 600)),
    "expert-3": dict(accuracy={"default": {"easy": 0.93, "medium": 0.55, "hard": 0.3}}, ttft_s=0.3,
                     decode_tok_s=150.0, completion_tokens=(100, 400)),
}

# The offline expert pool for function-calling envs: `pricing.EXPERT_POOL`'s models (expert-1 gpt-5,
# expert-2 gpt-5-mini, expert-3 Qwen3-32B, paper App. D prices) with the profiles above.
DEFAULT_EXPERTS: tuple[SimulatedModel, ...] = tuple(
    SimulatedModel(name, model_id, **_EXPERT_PROFILES[name]) for name, model_id in pricing_mod.EXPERT_POOL.items()
)


#: The fields of a simulated expert's profile that `with_profiles` overrides.
PROFILE_FIELDS = ("ttft_s", "prefill_tok_s", "decode_tok_s", "chars_per_token", "accuracy")


def with_profiles(pool: "tuple[SimulatedModel, ...] | list[SimulatedModel]",
                  profiles: "Mapping[str, Mapping[str, Any]] | None") -> tuple[SimulatedModel, ...]:
    """`pool` with some experts' profiles changed: ``{name: {field: value}}``, field one of `PROFILE_FIELDS`.

    A number field (``ttft_s``, ``prefill_tok_s``, ``decode_tok_s`` in tokens/s, ``chars_per_token``) must be > 0.
    ``accuracy`` is ``{category: {difficulty: p}}``, p in [0, 1], merged into the expert's tables: the listed
    (category, difficulty) cells change, the rest stay; a category without a table of its own starts from the
    expert's ``"default"`` table. An expert not named keeps its profile. The priced model (``model_id``) is not a
    profile field: prices come from the pricing schedule. Used for settings such as a cheap but slow self-hosted
    model or a specialist (a math model right more often than the generalist on computation requests).

    Raises: ConfigError naming the expert and field, with the allowed ones, for an unknown expert or field, a
    number <= 0, a difficulty not in `DIFFICULTIES` or a probability outside [0, 1]."""
    out = {e.name: e for e in pool}
    for name, changes in dict(profiles or {}).items():
        if name not in out:
            raise ConfigError(f"expert_profiles: no expert {name!r} in the pool{did_you_mean(name, out)}; known: {sorted(out)}")
        if not isinstance(changes, Mapping):
            raise ConfigError(f"expert_profiles[{name!r}] must be a table of fields, e.g. {{decode_tok_s = 20}}")
        fields: dict[str, Any] = {}
        for key, value in changes.items():
            where = f"expert_profiles[{name!r}][{key!r}]"
            if key not in PROFILE_FIELDS:
                raise ConfigError(f"{where}: not a profile field{did_you_mean(key, PROFILE_FIELDS)}; use one of {list(PROFILE_FIELDS)}")
            if key != "accuracy":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                    raise ConfigError(f"{where} must be a number > 0, got {value!r}")
                fields[key] = float(value)
                continue
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where} must be {{category = {{difficulty = p}}}}, got {value!r}")
            table = {c: dict(t) for c, t in out[name].accuracy.items()}
            for category, cells in value.items():
                if not isinstance(cells, Mapping):
                    raise ConfigError(f"{where}[{category!r}] must be {{difficulty = p}}, e.g. {{hard = 0.95}}")
                row = table.setdefault(category, dict(table.get("default", {})))
                for difficulty, p in cells.items():
                    if difficulty not in DIFFICULTIES:
                        raise ConfigError(f"{where}[{category!r}]: difficulty {difficulty!r} is not one of {list(DIFFICULTIES)}"
                                          f"{did_you_mean(difficulty, DIFFICULTIES)}")
                    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
                        raise ConfigError(f"{where}[{category!r}][{difficulty!r}] must be a probability in [0, 1], got {p!r}")
                    row[difficulty] = float(p)
            fields["accuracy"] = table
        out[name] = replace(out[name], **fields)
    return tuple(out.values())


def _qa_profile(
    default: tuple[float, float, float],
    ttft_s: float,
    decode_tok_s: float,
    completion_tokens: tuple[int, int],
    math: tuple[float, float, float] | None = None,
) -> dict[str, Any]:
    """`SimulatedModel` keyword arguments: accuracy (easy, medium, hard), for ``"math"`` too if given."""
    accuracy = {"default": dict(zip(DIFFICULTIES, default))}
    if math is not None:
        accuracy["math"] = dict(zip(DIFFICULTIES, math))
    return {"accuracy": accuracy, "ttft_s": ttft_s, "decode_tok_s": decode_tok_s, "completion_tokens": completion_tokens}


# QA simulator profiles per priced model (HLE, FRAMES): accuracy (easy, medium, hard), time to first
# token (s), decode speed (tokens/s) and completion tokens per call. Our assumptions (the paper
# reports no per-category accuracies); they keep the paper's ordering (GPT-5 > GPT-5-mini > open
# models; the math specialists strong on the "math" category only) and make context matter.
QA_PROFILES: dict[str, dict[str, Any]] = {
    "gpt-5": _qa_profile((0.95, 0.85, 0.45), 2.0, 50.0, (400, 1500)),
    "gpt-5-mini": _qa_profile((0.9, 0.75, 0.3), 1.0, 80.0, (300, 1000)),
    "Qwen/Qwen3-32B": _qa_profile((0.85, 0.65, 0.2), 0.6, 80.0, (200, 800)),
    "Qwen/Qwen2.5-Coder-32B-Instruct": _qa_profile((0.8, 0.6, 0.2), 0.6, 80.0, (200, 700)),
    "meta-llama/Llama-3.3-70B-Instruct": _qa_profile((0.8, 0.6, 0.15), 0.6, 70.0, (150, 600)),
    "Qwen/Qwen2.5-Math-72B-Instruct": _qa_profile((0.6, 0.4, 0.1), 0.7, 60.0, (300, 900), math=(0.95, 0.8, 0.4)),
    "Qwen/Qwen2.5-Math-7B-Instruct": _qa_profile((0.4, 0.25, 0.05), 0.3, 150.0, (200, 700), math=(0.85, 0.65, 0.25)),
}
"""Priced model id -> `SimulatedModel` keyword arguments for the QA envs' simulated models."""


#: Question kind (a task's ``category`` slug: FRAMES' first reasoning type, HLE's category) -> skill group.
QA_SKILL_GROUPS: dict[str, str] = {
    "numerical_reasoning": "quantitative", "tabular_reasoning": "quantitative", "math": "quantitative",
    "physics": "quantitative", "chemistry": "quantitative", "engineering": "quantitative",
    "multiple_constraints": "lookup", "biology_medicine": "lookup", "humanities_social_science": "lookup",
    "other": "lookup", "general": "lookup",
    "temporal_reasoning": "temporal", "post_processing": "temporal", "computer_science_ai": "temporal",
}
_S, _W = 0.97, 0.3  # strong / weak per-step accuracy


def _skills(quantitative: float, lookup: float, temporal: float) -> dict[str, dict[str, float]]:
    return {g: dict.fromkeys(DIFFICULTIES, p) for g, p in
            (("quantitative", quantitative), ("lookup", lookup), ("temporal", temporal), ("default", lookup))}


# Per anonymised QA model id: accuracy of one step (search: keeps the query's entities right; reasoning: right
# code from complete evidence; answer: right answer from complete evidence) by skill group. Our assumptions
# (the paper gives no per-kind accuracies): every search, reasoning and answer model is strong on two groups and
# weak on the third, a different third for each model of a tool, so that no fixed choice of models is right for
# every question and an orchestrator has to match models to the kind of question. The math specialists are
# the best answer models on quantitative questions only; answer-4 is middling everywhere.
QA_SKILLS: dict[str, dict[str, dict[str, float]]] = {
    "search-1": _skills(_S, _S, _W), "search-2": _skills(_W, _S, _S), "search-3": _skills(_S, _W, _S),
    "reasoner-1": _skills(_S, _W + 0.05, _S), "reasoner-2": _skills(_S, _S, _W + 0.05),
    "reasoner-3": _skills(_W + 0.05, _S, _S),
    "answer-1": _skills(0.95, 0.95, 0.4), "answer-2": _skills(0.9, 0.4, 0.95), "answer-3": _skills(0.4, 0.95, 0.9),
    "answer-4": _skills(0.7, 0.7, 0.7), "answer-math-1": _skills(0.98, 0.3, 0.3), "answer-math-2": _skills(0.9, 0.2, 0.2),
}


def qa_skill_group(category: str) -> str:
    """The skill group (`QA_SKILL_GROUPS`) of a question kind; ``"default"`` for a kind not listed."""
    return QA_SKILL_GROUPS.get(category, "default")


def qa_model(name: str, model_id: str) -> SimulatedModel:
    """The simulated QA model shown to the policy as `name` (``"search-1"``...) for priced `model_id`:
    latency and tokens from `QA_PROFILES` (by priced model), accuracy by skill group from `QA_SKILLS`
    (by `name`, when listed; category keys are the groups of `qa_skill_group`).

    Raises:
        KeyError: `model_id` has no profile in `QA_PROFILES` (the message lists the known ids).
    """
    if model_id not in QA_PROFILES:
        raise KeyError(f"no QA simulator profile for model {model_id!r}; known: {sorted(QA_PROFILES)}")
    profile = dict(QA_PROFILES[model_id])
    if name in QA_SKILLS:
        profile["accuracy"] = QA_SKILLS[name]
    return SimulatedModel(name, model_id, **profile)
