"""Baselines that read what the policy reads: rules on the offered experts' stated properties, and a text router.

With an expert pool (``ToolScaleEnv(expert_pool=...)``, `orchestra_gym.tools.pools`) each episode offers a
different subset of experts at a different pricing schedule, and the prompt states each offered expert's
description, price (USD per 1M tokens), typical latency (s) and accuracy per kind of request. These agents decide
from exactly those stated properties (read from the offered experts, ``env.unwrapped.experts``, and the
episode's schedule, ``env.unwrapped.pricing``: the numbers the prompt prints), never from the task's labels:

* ``most-accurate``: always the offered expert with the highest mean stated accuracy;
* ``cheapest``: always the offered expert with the lowest listed price (input + output USD per 1M tokens);
* ``fastest``: always the offered expert with the lowest stated latency;
* ``random-offered``: one offered expert drawn uniformly per episode (seeded);
* (``cascade``, `orchestra_gym.agents.CascadeAgent`, is the cheapest-first cascade over the offered experts);
* `TextRouterAgent`: the router a user would deploy (RouteLLM, Ong et al. 2024; RouterBench, Hu et al. 2024:
  routers read the request text): a scikit-learn TF-IDF + logistic-regression classifier fitted on training
  requests' text (the user's opening message) predicting the request kind, then the offered expert with the
  best expected preference reward by its stated accuracy for the predicted kind, price and latency
  (`expected_utility`). `fit_text_router` fits it. Library: scikit-learn (the ``router`` extra).

Each rule picks one expert at reset and delegates every turn to it (``call_expert``), like ``expert-<k>``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from orchestra_gym.agents import listed_price
from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.types import Preference, ToolCall

__all__ = ["RULE_NAMES", "StatedRuleAgent", "TextRouterAgent", "fit_text_router", "expected_utility",
           "request_text", "TYPICAL_STEPS"]

RULE_NAMES = ("most-accurate", "cheapest", "fastest", "random-offered")
#: The actions a request typically takes (tool calls and the closing message), for `expected_utility`.
TYPICAL_STEPS = 3


def _offered(env: Any) -> dict[str, Any]:
    experts = getattr(env.unwrapped, "experts", {})
    if not experts:
        raise ValueError("this agent needs an environment with experts (call_expert)")
    return experts


def _stated_accuracy(expert: Any, kind: "str | None" = None) -> float:
    """The expert's stated accuracy for `kind` (or its mean over kinds); experts without stated
    accuracies (the default pool) read their simulator's medium-difficulty default."""
    if hasattr(expert, "stated_accuracy"):
        return expert.stated_accuracy(kind) if kind else expert.mean_accuracy()
    return float(expert.p_correct(kind or "default", "medium")) if hasattr(expert, "p_correct") else 0.0


def _stated_latency(expert: Any) -> float:
    return float(expert.typical_latency_s()) if hasattr(expert, "typical_latency_s") else float("inf")


def _call(expert: str) -> str:
    return render_tool_calls([ToolCall("call_expert", {"expert": expert})])


class StatedRuleAgent:
    """A fixed rule on the offered experts' stated properties (see the module docstring).

    Args:
        rule: one of `RULE_NAMES`.
        seed: the draw of ``random-offered``.

    Raises:
        ValueError: unknown rule; (in `reset`) an env without experts.
    """

    def __init__(self, rule: str, seed: int = 0):
        if rule not in RULE_NAMES:
            raise ValueError(f"unknown rule {rule!r}; known: {list(RULE_NAMES)}")
        self.name, self.rng, self.expert = rule, np.random.default_rng(seed), ""

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        experts, u = _offered(env), env.unwrapped
        names = list(experts)
        if self.name == "random-offered":
            self.expert = names[int(self.rng.integers(len(names)))]
            return
        key: Callable[[str], float] = {
            "most-accurate": lambda n: -_stated_accuracy(experts[n]),
            "cheapest": lambda n: listed_price(u, n, missing=float("inf")),
            "fastest": lambda n: _stated_latency(experts[n]),
        }[self.name]
        self.expert = min(sorted(names), key=key)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return _call(self.expert)


def request_text(info: dict[str, Any]) -> str:
    """The user's opening request from a reset ``info`` (its first ``user`` message; "" if none)."""
    return next((m.get("content", "") for m in info.get("new_messages", []) if m.get("role") == "user"), "")


def expected_utility(accuracy: Sequence[float], prices: Sequence[float], latencies: Sequence[float],
                     preference: "Preference | dict[str, Any] | None", steps: int = TYPICAL_STEPS) -> np.ndarray:
    """Expected group-form preference reward of each offered expert (a float64 [E] array), from stated numbers.

    ``success = accuracy ** steps``; cost and latency are min-max normalised over the offered experts (the
    cheapest / fastest gets 1, as the group reward of ToolOrchestra Sec. 3.2 gives it); the reward is paid on
    success only: ``success * (outcome + cost_w * cost_norm + latency_w * latency_norm)``.

    Args: accuracy in [0, 1] per action, prices (USD per 1M tokens, input + output), latencies (s), one per
    offered expert; preference: its outcome, cost and latency weights.
    """
    p = Preference.from_dict(preference)
    acc = np.asarray(accuracy, np.float64)

    def norm(x: Sequence[float]) -> np.ndarray:
        a = -np.asarray(x, np.float64)
        span = a.max() - a.min()
        return (a - a.min()) / span if span > 0 else np.zeros_like(a)

    return acc ** steps * (p.outcome + p.cost * norm(prices) + p.latency * norm(latencies))


class TextRouterAgent:
    """Route by the request text: predicted kind -> the offered expert of best `expected_utility`.

    Args:
        classifier: a fitted scikit-learn estimator (``predict([text]) -> [kind]``), e.g. `fit_text_router`'s.
        preference: the preference to route for; None: the episode's own (``info["preference"]``).
    """

    name = "text-router"

    def __init__(self, classifier: Any, preference: "dict[str, Any] | None" = None):
        self.classifier, self.preference, self.expert, self.kind = classifier, preference, "", ""

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        experts, u = _offered(env), env.unwrapped
        self.kind = str(self.classifier.predict([request_text(info)])[0])
        names = sorted(experts)
        util = expected_utility([_stated_accuracy(experts[n], self.kind) for n in names],
                                [listed_price(u, n, missing=float("inf")) for n in names],
                                [_stated_latency(experts[n]) for n in names],
                                self.preference if self.preference is not None else info.get("preference"))
        self.expert = names[int(np.argmax(util))]

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return _call(self.expert)


def fit_text_router(texts: Sequence[str], kinds: Sequence[str], seed: int = 0) -> Any:
    """Fit the text router's classifier: TF-IDF of word 1-2 grams (sublinear tf) + multinomial logistic regression.

    Args:
        texts: training requests (the user's opening messages); kinds: their request kinds (`Task.category`),
            the training labels (read at fit time only, as a router's training set has them).
        seed: the logistic regression's random_state.

    Returns: a fitted `sklearn.pipeline.Pipeline` (``predict``, ``score``).

    Raises:
        ImportError: scikit-learn is missing (``pip install -e ".[router]"`` from the clone).
        ValueError: no texts, mismatched lengths, or a single kind.
    """
    if not texts or len(texts) != len(kinds) or len(set(kinds)) < 2:
        raise ValueError(f"fit_text_router needs matching texts and kinds with >= 2 kinds; got {len(texts)} texts, "
                         f"{len(kinds)} kinds, {len(set(kinds))} distinct")
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
    except ImportError as e:  # pragma: no cover - the extra is installed in dev
        raise ImportError('the text router needs scikit-learn: pip install -e ".[router]" from the clone') from e
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1),
                          LogisticRegression(max_iter=2000, C=10.0, random_state=seed))
    return model.fit(list(texts), list(kinds))
