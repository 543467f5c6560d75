"""Expert pools: described, priced, simulated experts, of which each episode is offered a subset.

The paper trains its orchestrator over a distribution of tool sets and pricing schedules (ToolOrchestra
Sec. 3.3 / App. D: per training instance a subset of the tools and a pricing configuration) with every
model described in the prompt, so that it reads what is offered instead of memorising ids; it then tests on
models it never saw (Sec. 6.3, Table 2) and on prices it never saw (App. H, Table 4: DeepInfra's). This
module holds that distribution for the function-calling envs (``ToolScaleEnv(expert_pool=...)``):

* `PoolExpert`: a `orchestra_gym.tools.simulated.SimulatedModel` (so it is played exactly as the default
  experts are: right with its accuracy for the request's kind, else a plausible wrong action) with a stated
  ``description`` (what it is good and bad at, by kind of request) and a ``held_out`` flag. ``accuracy`` is
  per action (one tool call or one message), keyed by request kind (`orchestra_gym.domains.synthetic`
  categories: lookup, transfer, conditional_write, change_item, search_and_book, compute, several_writes),
  the same for every difficulty; an episode of n actions succeeds with about ``p ** n``.
* `ExpertPool`: the experts, `sample_offer` (a seeded subset, respecting held-out experts) and
  `resolve_schedule` (``"paper"``, ``"deepinfra"``, ``"random"``: a seeded `pricing.random_schedule` of the
  paper's prices; `pricing.py` owns the schedules).
* `POOLS`: ``"specialists"`` and ``"tradeoffs"``, six training experts and two held-out ones each (below).

The ``specialists`` pool was chosen by measurement (``benchmarks/bench_preference_headroom.py --pool
specialists``, recorded in benchmarks/RESULTS.md, "Expert pools and pricing schedules (issue 34)"): every
expert's price is a real model's paper price (`pricing.PAPER`; no absurdly dear model such as claude-opus,
whose cost would set the normalisation range of the group reward), the accuracies are our assumptions for the
simulator, chosen so that accuracy first, cost first and latency first ask for different experts per kind:

=============  ==========================  =================  ===============================================
name           priced model                paper $/1M in/out  profile (per-action accuracy, typical latency)
=============  ==========================  =================  ===============================================
gpt-5          gpt-5                       1.25 / 10          generalist 0.97 everywhere; slowest (~18 s)
gpt-5-mini     gpt-5-mini                  0.25 / 2           generalist 0.85 everywhere; ~6 s
qwen3-32b      Qwen/Qwen3-32B              0.8 / 0.8          lookups 0.99, transfers 0.93, 0.6 elsewhere; ~2 s
qwen2.5-math   Qwen/Qwen2.5-Math-72B       0.9 / 0.9          compute 0.99, 0.55 elsewhere; ~11 s
qwen3-8b       Qwen/Qwen3-8B               0.2 / 0.2          transfers, searches 0.91, writes 0.81; cheapest, ~21 s
llama-3.3-70b  meta-llama/Llama-3.3-70B    0.9 / 0.9          transfers, searches, compute 0.91; fastest (~1 s)
held out:
coder-32b      Qwen/Qwen2.5-Coder-32B      0.8 / 0.8          writes 0.95, 0.6 elsewhere; ~3 s
math-7b        Qwen/Qwen2.5-Math-7B        0.2 / 0.2          compute 0.97, 0.45 elsewhere; ~5 s
=============  ==========================  =================  ===============================================

The ``tradeoffs`` pool (the pool preset's, ``tiny-toolscale-pool``) gives each of two groups of kinds (A:
lookups, transfers, search-and-book; B: writes of every kind and computations) one expert per corner of the
trade-off, each weak on the other group (per-action accuracy A / B; latency per call; chosen by measurement,
RESULTS.md "The tradeoffs pool": the adherence ceiling is +0.072 there, against +0.019 for ``specialists``):

=================  ================  =========  ===================================================
name               paper $/1M        A / B      role
=================  ================  =========  ===================================================
gpt-5              1.25 / 10         .99 / .60  A: accurate, dearest per token, slow (~18 s)
gpt-5-mini         0.25 / 2          .60 / .99  B: accurate, long answers (dear per call), slowest (~29 s)
qwen3-8b           0.2 / 0.2         .80 / .45  A: cheap, slow (~21 s)
qwen2.5-math-7b    0.2 / 0.2         .45 / .85  B: cheap, slow (~21 s)
llama-3.3-70b      0.9 / 0.9         .75 / .45  A: the fastest (~1 s)
qwen3-32b          0.8 / 0.8         .45 / .80  B: fast (~1 s)
held out:
coder-32b          0.8 / 0.8         .50 / .97  B: accurate and fast (~2 s): a corner no training expert holds
qwen2.5-math-72b   0.9 / 0.9         .50 / .50  computations .99 only (~11 s)
=================  ================  =========  ===================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from orchestra_gym import pricing as pricing_mod
from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_gym.tools.simulated import DIFFICULTIES, SimulatedModel

__all__ = ["KINDS", "KIND_WORDS", "PoolExpert", "ExpertPool", "POOLS", "get_pool", "POOL_SCHEDULES", "TABLE_HEADER",
           "offer_table"]

#: Request kinds of the synthetic ToolScale tasks (`Task.category`), in a fixed order.
KINDS = ("lookup", "transfer", "conditional_write", "change_item", "search_and_book", "compute", "several_writes")
#: A kind in words, as descriptions and preference instructions say it.
KIND_WORDS = {"lookup": "lookups", "transfer": "transfers to a human", "conditional_write": "conditional writes",
              "change_item": "item changes", "search_and_book": "search-and-book requests",
              "compute": "computations over records", "several_writes": "multi-step writes"}
#: The pricing schedules a pool episode may be drawn at (``"random"``: seeded multipliers of the paper's).
POOL_SCHEDULES = ("paper", "deepinfra", "random")


@dataclass
class PoolExpert(SimulatedModel):
    """A simulated expert with a stated description (see the module docstring).

    Attributes (besides `SimulatedModel`'s):
        description: one sentence: what it is good and bad at, by kind of request.
        held_out: offered only in evaluation (``held_out_experts="include"`` or ``"only"``).
    """

    description: str = ""
    held_out: bool = False

    def stated_accuracy(self, kind: str) -> float:
        """The per-action accuracy the description states for `kind` (= the simulator's, medium difficulty)."""
        return self.p_correct(kind, "medium")

    def stated_table(self) -> dict[str, float]:
        """kind -> stated per-action accuracy, for every kind of `KINDS`."""
        return {k: self.stated_accuracy(k) for k in KINDS}

    def mean_accuracy(self) -> float:
        """The mean stated accuracy over `KINDS` (what "most accurate" rules rank by)."""
        return float(np.mean(list(self.stated_table().values())))

    def describe(self, schedule: Any = None) -> str:
        """The tool description line: name, description, price (USD per 1M tokens), typical latency (s) and the
        stated accuracy per kind, as the paper describes each model tool in the prompt (App. D)."""
        p = pricing_mod.get_schedule(schedule).price(self.model_id)
        acc = ", ".join(f"{k} {round(100 * v)}%" for k, v in self.stated_table().items())
        return (f"{self.name}: {self.description} ${p.input_per_m:.3g}/1M input tokens, ${p.output_per_m:.3g}/1M "
                f"output tokens, about {self.typical_latency_s():.0f} s per call; accuracy per step: {acc}")


    def describe_row(self, schedule: Any = None) -> str:
        """The same facts as `describe` in one table row (`offer_table`'s columns): name | input/output USD per
        1M tokens | typical seconds per call | stated accuracy % per kind in `KINDS` order, slash-separated.
        The description sentence is left out: it restates the accuracy columns in words."""
        p = pricing_mod.get_schedule(schedule).price(self.model_id)
        acc = "/".join(str(round(100 * v)) for v in self.stated_table().values())
        return f"{self.name} | {p.input_per_m:.3g}/{p.output_per_m:.3g} | {self.typical_latency_s():.0f} | {acc}"


#: The header of `offer_table` (column meanings and units; the kinds in `KINDS` order).
TABLE_HEADER = ("Experts: name | USD per 1M tokens in/out | seconds per call | accuracy % per step on "
                "lookup/transfer/conditional write/change item/search and book/compute/several writes")


def offer_table(experts: Sequence[Any], schedule: Any = None) -> str:
    """The compact offer (issue 51 item 3): `TABLE_HEADER` and one `PoolExpert.describe_row` per expert, one a
    line; about a third of `describe`'s tokens for the same prices, latencies and stated accuracies."""
    return "\n".join([TABLE_HEADER] + [e.describe_row(schedule) for e in experts])


def _expert(name: str, model_id: str, description: str, acc: Mapping[str, float], *, ttft_s: float,
            decode_tok_s: float, completion_tokens: tuple[int, int], held_out: bool = False) -> PoolExpert:
    table = {k: {d: float(acc[k]) for d in DIFFICULTIES} for k in KINDS}
    return PoolExpert(name, model_id, accuracy={**table, "default": table["lookup"]}, ttft_s=ttft_s,
                      decode_tok_s=decode_tok_s, completion_tokens=completion_tokens, description=description,
                      held_out=held_out)


def _acc(default: float, **kinds: float) -> dict[str, float]:
    return {k: kinds.get(k, default) for k in KINDS}


@dataclass(frozen=True)
class ExpertPool:
    """A named pool of `PoolExpert`s.

    Attributes:
        name: the pool's name (``"specialists"``).
        experts: the experts, training ones first (unique names).

    Raises:
        ConfigError: duplicate names, or no training expert.
    """

    name: str
    experts: tuple[PoolExpert, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        names = [e.name for e in self.experts]
        if len(set(names)) != len(names):
            raise ConfigError(f"pool {self.name!r}: duplicate expert names {names}")
        if not self.train_names:
            raise ConfigError(f"pool {self.name!r} has no training expert")

    @property
    def names(self) -> tuple[str, ...]:
        """Every expert's name (the reward vector counts all of them, offered or not)."""
        return tuple(e.name for e in self.experts)

    @property
    def train_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.experts if not e.held_out)

    @property
    def held_out_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.experts if e.held_out)

    def by_name(self) -> dict[str, PoolExpert]:
        return {e.name: e for e in self.experts}

    def sample_offer(self, rng: np.random.Generator, offer_size: "int | Sequence[int] | None" = None,
                     held_out: str = "exclude") -> list[str]:
        """A seeded offered subset, in a random order (the prompt lists it in this order).

        Args:
            rng: the env's generator (the draw is a function of its state).
            offer_size: how many experts: an int, or ``(low, high)`` inclusive drawn uniformly; None: all the
                experts the mode allows. Clipped to the experts available.
            held_out: ``"exclude"`` (training: held-out experts never offered), ``"include"`` (any expert), or
                ``"only"`` (evaluation of unseen experts: at least one held-out expert in every offer).

        Raises:
            ConfigError: unknown mode, or a size below 1.
        """
        if held_out not in ("exclude", "include", "only"):
            raise ConfigError(f"held_out_experts must be 'exclude', 'include' or 'only', got {held_out!r}"
                              f"{did_you_mean(held_out, ('exclude', 'include', 'only'))}")
        train, held = list(self.train_names), list(self.held_out_names)
        avail = train if held_out == "exclude" else train + held
        if offer_size is None:
            k = len(avail)
        elif isinstance(offer_size, (int, np.integer)):
            k = int(offer_size)
        else:
            lo, hi = (int(x) for x in offer_size)
            k = int(rng.integers(lo, hi + 1))
        if k < 1:
            raise ConfigError(f"offer_size must be >= 1, got {offer_size!r}")
        k = min(k, len(avail))
        if held_out == "only" and held:
            n_held = int(rng.integers(1, min(len(held), k) + 1))
            picked = [held[i] for i in rng.choice(len(held), n_held, replace=False)]
            picked += [train[i] for i in rng.choice(len(train), min(k - n_held, len(train)), replace=False)]
        else:
            picked = [avail[i] for i in rng.choice(len(avail), k, replace=False)]
        return [picked[i] for i in rng.permutation(len(picked))]

    @staticmethod
    def resolve_schedule(name: "str | int | pricing_mod.PricingSchedule", rng: np.random.Generator
                         ) -> pricing_mod.PricingSchedule:
        """A pool episode's schedule: ``"random"`` draws a seed from `rng` for `pricing.random_schedule` (paper
        prices, each multiplied by a log-uniform factor in [0.25, 4]); ``"random:<seed>"`` or an int fixes the
        seed; other names and schedules go through `pricing.get_schedule`.

        Raises:
            KeyError: unknown schedule name (lists the known ones).
        """
        if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
            return pricing_mod.random_schedule(int(name))
        if name == "random":
            return pricing_mod.random_schedule(int(rng.integers(0, 2**31 - 1)))
        if isinstance(name, str) and name.startswith("random:"):
            return pricing_mod.random_schedule(int(name.split(":", 1)[1]))
        return pricing_mod.get_schedule(name)


_SPECIALISTS = (
    _expert("gpt-5", "gpt-5", "A strong generalist: the most reliable on every kind of request, but the dearest and "
            "slowest.", _acc(0.97), ttft_s=2.0, decode_tok_s=50.0, completion_tokens=(400, 1200)),
    _expert("gpt-5-mini", "gpt-5-mini", "A mid-sized generalist: fair on every kind of request.", _acc(0.85),
            ttft_s=0.6, decode_tok_s=80.0, completion_tokens=(200, 600)),
    _expert("qwen3-32b", "Qwen/Qwen3-32B", "A lookup specialist: excellent on lookups, good on transfers, weak "
            "elsewhere; fast.", _acc(0.6, lookup=0.99, transfer=0.93), ttft_s=0.3, decode_tok_s=150.0,
            completion_tokens=(100, 400)),
    _expert("qwen2.5-math", "Qwen/Qwen2.5-Math-72B-Instruct", "A math specialist: excellent on computations over "
            "records, weak on everything else.", _acc(0.55, compute=0.99), ttft_s=0.7, decode_tok_s=60.0,
            completion_tokens=(300, 900)),
    _expert("qwen3-8b", "Qwen/Qwen3-8B", "A small self-hosted model: good on transfers and searches, fair on "
            "writes, weak on computations; the cheapest but slow.",
            _acc(0.81, transfer=0.91, search_and_book=0.91, compute=0.6), ttft_s=1.0, decode_tok_s=20.0,
            completion_tokens=(200, 600)),
    _expert("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", "The fastest: good on transfers, searches and "
            "computations, weak on lookups and writes.",
            _acc(0.6, transfer=0.91, search_and_book=0.91, compute=0.91), ttft_s=0.2, decode_tok_s=300.0,
            completion_tokens=(100, 300)),
    # held out: described like the others, never offered in training
    _expert("coder-32b", "Qwen/Qwen2.5-Coder-32B-Instruct", "A coding model: very good on writes of every kind, "
            "weak on the rest; fast.",
            _acc(0.6, conditional_write=0.95, change_item=0.95, several_writes=0.95), ttft_s=0.4,
            decode_tok_s=120.0, completion_tokens=(150, 450), held_out=True),
    _expert("math-7b", "Qwen/Qwen2.5-Math-7B-Instruct", "A small math model: very good on computations over "
            "records, weak on everything else; very cheap.", _acc(0.45, compute=0.97), ttft_s=0.3,
            decode_tok_s=100.0, completion_tokens=(200, 700), held_out=True),
)

#: The request kinds of the ``tradeoffs`` pool's first group (the rest are its second): the short ones (3-5
#: actions) against the writes and computations (3-9 actions, `orchestra_gym.domains.synthetic`).
_GROUP_A = ("lookup", "transfer", "search_and_book")


def _two_groups(a: float, b: float) -> dict[str, float]:
    """Per-action accuracy `a` on the kinds of `_GROUP_A` and `b` on the others."""
    return {k: (a if k in _GROUP_A else b) for k in KINDS}


# ``tradeoffs``: per group of kinds, one expert for each corner of the trade-off (accurate but dear and slow,
# cheap but slow and less accurate, fast at a middling price and less accurate), each weak on the other group,
# so that accuracy first, cost first and latency first ask for different experts on every kind and no single
# expert is best everywhere. Chosen by measurement (benchmarks/RESULTS.md, "The tradeoffs pool").
_TRADEOFFS = (
    _expert("gpt-5", "gpt-5", "Very reliable on lookups, transfers to a human and search-and-book requests, weak on "
            "writes and computations; the dearest per token and slow.", _two_groups(0.99, 0.6), ttft_s=2.0,
            decode_tok_s=50.0, completion_tokens=(400, 1200)),
    _expert("gpt-5-mini", "gpt-5-mini", "A reasoning model: very reliable on writes and computations, weak on "
            "lookups, transfers and searches; writes long answers, so dear per call, and the slowest.",
            _two_groups(0.6, 0.99), ttft_s=1.0, decode_tok_s=80.0, completion_tokens=(1500, 3000)),
    _expert("qwen3-8b", "Qwen/Qwen3-8B", "Cheap and slow: good on lookups, transfers and searches, weak on writes "
            "and computations.", _two_groups(0.8, 0.45), ttft_s=1.0, decode_tok_s=20.0,
            completion_tokens=(200, 600)),
    _expert("qwen2.5-math-7b", "Qwen/Qwen2.5-Math-7B-Instruct", "Cheap and slow: good on writes and computations, "
            "weak on lookups, transfers and searches.", _two_groups(0.45, 0.85), ttft_s=1.0, decode_tok_s=20.0,
            completion_tokens=(200, 600)),
    _expert("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", "The fastest: fair on lookups, transfers and "
            "searches, weak on writes and computations.", _two_groups(0.75, 0.45), ttft_s=0.2,
            decode_tok_s=300.0, completion_tokens=(100, 300)),
    _expert("qwen3-32b", "Qwen/Qwen3-32B", "Fast: good on writes and computations, weak on lookups, transfers and "
            "searches.", _two_groups(0.45, 0.8), ttft_s=0.2, decode_tok_s=250.0, completion_tokens=(100, 300)),
    # held out: described like the others, never offered in training
    _expert("coder-32b", "Qwen/Qwen2.5-Coder-32B-Instruct", "A coding model: very reliable and fast on writes and "
            "computations, weak on the rest.", _two_groups(0.5, 0.97), ttft_s=0.3, decode_tok_s=150.0,
            completion_tokens=(150, 450), held_out=True),
    _expert("qwen2.5-math-72b", "Qwen/Qwen2.5-Math-72B-Instruct", "A math model: excellent on computations over "
            "records, weak on everything else.", _acc(0.5, compute=0.99), ttft_s=0.7, decode_tok_s=60.0,
            completion_tokens=(300, 900), held_out=True),
)

POOLS: dict[str, ExpertPool] = {"specialists": ExpertPool("specialists", _SPECIALISTS),
                                "tradeoffs": ExpertPool("tradeoffs", _TRADEOFFS)}


def get_pool(pool: "str | ExpertPool") -> ExpertPool:
    """A pool by name (`POOLS`) or an `ExpertPool` passed through.

    Raises:
        KeyError: unknown name (lists the known ones).
    """
    if isinstance(pool, ExpertPool):
        return pool
    try:
        return POOLS[pool]
    except KeyError:
        raise KeyError(f"unknown expert pool {pool!r}; known: {sorted(POOLS)}") from None
