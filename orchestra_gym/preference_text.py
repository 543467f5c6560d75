"""Preferences as natural-language instructions (the paper's form), generated per vector, seeded, split.

ToolOrchestra states the user's preference to the orchestrator as an instruction in words concatenated to the
task, keeping the vector P in the reward only, and trains and evaluates on (instruction, vector) pairs split into
train and test (Sec. 3.3 / 6.4 and the appendix's preference example). We offer that form beside the numeric
line (`orchestra_gym.types.Preference.describe`): ``preference_form="text"`` on an env puts one of the
instructions below where the numeric line would go. Why words and not numbers: UC-MOA (2025, "UC-MOA:
Utility-Conditioned Multi-Objective Alignment") reports that raw numeric preference weights in prompts are a
fragile signal for language models (small changes of the numbers are read inconsistently), and conditions on
utilities in words / tokens instead.

An instruction is built from the vector's cost and latency levels (`Preference.level`: none / low / medium /
high, relative to the outcome weight), so held-out vectors of a level read like training ones of that level:
one phrase per level and objective from a bank of phrasings, joined by a template. Phrasings and templates are
split: ``split="train"`` uses the first `TRAIN_SHARE` of each bank, ``split="eval"`` only the rest (held-out
wordings), so an evaluation instruction is never a training one (`instruction_set` lists them all).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_gym.types import Preference

__all__ = ["instruction", "instruction_set", "SPLITS", "PHRASES", "TEMPLATES"]

SPLITS = ("train", "eval")

#: objective -> level -> phrasings (first part train, rest held out; see `TRAIN_SHARE`).
PHRASES: dict[str, dict[str, tuple[str, ...]]] = {
    "cost": {
        "none": ("Cost does not matter to me.", "Spend whatever it takes.", "I am not worried about the bill.",
                 "Price is no concern here."),
        "low": ("Keep an eye on cost, but it is secondary.", "A little saving would be nice.",
                "Cost matters only a little.", "Do not waste money, though it is not the main thing."),
        "medium": ("Cost matters to me: avoid expensive experts unless they are needed.",
                   "Please balance quality against price.", "I care about the bill about as much as the result.",
                   "Be reasonably frugal."),
        "high": ("Keep the cost as low as possible.", "I am on a tight budget: choose the cheapest option that works.",
                 "Minimise what this costs above all else.", "Every cent counts for me."),
    },
    "latency": {
        "none": ("I am in no hurry.", "Take your time.", "Speed does not matter.", "Waiting is fine."),
        "low": ("A quick answer would be a plus.", "Slightly faster is nicer.", "Speed matters a little.",
                "Try not to be slow."),
        "medium": ("I would like a fast answer.", "Please prefer quicker experts when they are good enough.",
                   "Response time matters to me.", "Do not keep me waiting long."),
        "high": ("I need this as fast as possible.", "Speed is my top priority.", "Answer quickly above all else.",
                 "Every second counts."),
    },
}
#: Templates joining the outcome clause and the two phrases (first part train, rest held out).
TEMPLATES: tuple[str, ...] = (
    "User preference: get my request right. {cost} {latency}",
    "Preference: {cost} {latency} The request must still be solved.",
    "My priorities: solving the request, then: {cost} {latency}",
    "Note from the user: {latency} {cost} Please solve it correctly.",
)
#: The share of each bank that is training wording (rounded up); the rest is held out.
TRAIN_SHARE = 0.5


def _part(bank: "tuple[str, ...]", split: str) -> "tuple[str, ...]":
    if split not in SPLITS:
        raise ConfigError(f"preference text split must be one of {SPLITS}, got {split!r}{did_you_mean(split, SPLITS)}")
    cut = max(1, int(np.ceil(len(bank) * TRAIN_SHARE)))
    return bank[:cut] if split == "train" else bank[cut:]


def _levels(preference: "Preference | dict[str, Any] | None") -> tuple[str, str]:
    p = Preference.from_dict(preference)
    lc, ll = p.level(p.cost, p.outcome), p.level(p.latency, p.outcome)
    for name, lv in (("cost", lc), ("latency", ll)):
        if lv == "negative":
            raise ConfigError(f"preference {name} weight is negative; the text form states non-negative weights only")
    return lc, ll


def instruction(preference: "Preference | dict[str, Any] | None", rng: np.random.Generator, split: str = "train") -> str:
    """One instruction for `preference`, drawn with `rng` from `split`'s wordings.

    Args:
        preference: the vector (dict, `Preference` or None for the default).
        rng: the draw's generator (the env's: seeded by ``reset(seed=...)``).
        split: ``"train"`` or ``"eval"`` (held-out wordings).

    Returns: one line of text (no numbers).

    Raises:
        ConfigError: unknown split, or a negative cost / latency weight.
    """
    lc, ll = _levels(preference)
    template = _part(TEMPLATES, split)
    cost, lat = _part(PHRASES["cost"][lc], split), _part(PHRASES["latency"][ll], split)
    t = template[int(rng.integers(len(template)))]
    return t.format(cost=cost[int(rng.integers(len(cost)))], latency=lat[int(rng.integers(len(lat)))])


def instruction_set(preference: "Preference | dict[str, Any] | None", split: str = "train") -> list[str]:
    """Every instruction `instruction` can draw for `preference` in `split` (sorted)."""
    lc, ll = _levels(preference)
    return sorted(t.format(cost=c, latency=lat) for t, c, lat in itertools.product(
        _part(TEMPLATES, split), _part(PHRASES["cost"][lc], split), _part(PHRASES["latency"][ll], split)))
