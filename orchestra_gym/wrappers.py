"""Gymnasium wrappers for orchestra environments: routing for classic RL, budgets, preferences.

Each wrapper does one job, composes with the others and with `gymnasium.make`, and reads only
the environment's public description (``env.unwrapped.describe()``: experts, tools, domains,
categories, reward layout), its ``task`` and ``max_turns``, and its ``info``::

    import gymnasium as gym
    import orchestra_gym
    from orchestra_gym.wrappers import Budget, Preference, ToolChoice

    env = gym.make("ToolOrchestra-ToolScale-v0")
    env = Preference(env, {"outcome": 1.0, "cost": 0.08})     # fix the user's preference vector
    env = Budget(env, max_cost_usd=0.20)                       # cut episodes dearer than 20 cents
    env = ToolChoice(env)                                      # Discrete(3): which expert acts
    obs, info = env.reset(seed=0)                              # obs: float32 task features
    obs, reward, terminated, truncated, info = env.step(1)     # call_expert(expert="expert-2")

* `ToolChoice`: a ``Discrete`` action over candidate model calls (``call_expert(expert-k)`` in
  the function-calling envs; each model of each ``kind="model"`` tool in the QA envs), a ``Box``
  observation of task features, and a per-episode scalar preference reward.
* `Budget`: truncates an episode once its cost (USD) or latency (s) passes a budget.
* `Preference`: fixes or samples the preference vector passed to ``reset``.
* `SleepLatency`: plays each step's simulated latency as a real sleep (benchmarks of rollout engines).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from orchestra_gym.errors import ResetNeeded
from orchestra_gym.types import Preference as PreferenceVector

__all__ = [
    "ToolChoice",
    "Budget",
    "Preference",
    "SleepLatency",
    "TaskFeatures",
    "candidate_actions",
    "preference_reward",
    "uniform_preference",
]


# ------------------------------------------------------------------------------------ helpers
def _model_tool_actions(tool_specs: Sequence[Any]) -> list[dict[str, Any]]:
    """One structured action per (model tool, value of its model argument) (`ToolSpec.model_choices`)."""
    actions = []
    for spec in tool_specs:
        choice = spec.model_choices()
        if choice is not None:
            arg, values = choice
            actions.extend({"name": spec.name, "arguments": {arg: v}} for v in values)
    return actions


def candidate_actions(env: gym.Env) -> list[dict[str, Any]]:
    """The model calls a routing policy chooses among, as structured actions ``{"name", "arguments"}``.

    Function-calling envs (ToolScale, tau2): ``call_expert(expert=k)`` for each expert the env
    offers (``env.unwrapped.describe().experts``), in pool order. Other envs (HLE, FRAMES): for each
    tool with ``kind == "model"`` in ``describe().tools``, one action per value of its model enum
    (e.g. ``search(model="search-1")``). Envs that list their tools only after ``reset`` must be
    reset first.

    Raises:
        ValueError: the env offers no model calls (names what was looked for).
    """
    description = env.unwrapped.describe()
    if description.experts and description.expert_tool:
        return [{"name": "call_expert", "arguments": {"expert": k}} for k in description.experts]
    specs = list(description.tools)
    if not specs:
        raise ValueError(
            f"{description.env_class} has no experts and no tool_specs yet; reset the env before wrapping it "
            "or pass actions=[{'name': ..., 'arguments': {...}}, ...] to ToolChoice"
        )
    actions = _model_tool_actions(specs)
    if not actions:
        raise ValueError(
            f"{description.env_class} offers no model calls: no experts and no tool with kind='model' and an enum "
            f"argument among {[s.name for s in specs]}; pass actions=[...] to ToolChoice"
        )
    return actions


def preference_reward(
    preference: "dict | PreferenceVector",
    outcome: float,
    cost_usd: float,
    latency_s: float,
    tool_calls: "dict[str, float] | None" = None,
    cost_scale_usd: float = 0.01,
    latency_scale_s: float = 60.0,
) -> float:
    """Per-episode scalarisation of the preference reward, for learners that see one episode.

    ToolOrchestra Sec. 3.2 min-max normalises the reward vector ``[calls..., outcome, -cost,
    -latency]`` over a *group* of rollouts of one task and weights it by the preference vector P;
    a learner that sees one episode at a time has no group. We replace the group normalisation by
    fixed scales::

        r = P.outcome * outcome - P.cost * cost_usd / cost_scale_usd
            - P.latency * latency_s / latency_scale_s + sum_t P.tools[t] * calls[t]

    Unlike the paper's reward, an unsolved episode is not zeroed: it still pays its cost, which
    is what makes cheap failures worse than no spending.

    Args:
        preference: P (`orchestra_gym.types.Preference` or its dict form).
        outcome: in [0, 1]. cost_usd: USD. latency_s: seconds. tool_calls: tool -> calls.
        cost_scale_usd: the cost that counts as one unit (default 0.01 USD = 1 cent).
        latency_scale_s: the latency that counts as one unit (default 60 s).

    Returns:
        The scalar reward (float).

    Raises:
        ValueError: non-positive scale, or a bad preference dict.
    """
    if cost_scale_usd <= 0 or latency_scale_s <= 0:
        raise ValueError(f"cost_scale_usd and latency_scale_s must be > 0, got {cost_scale_usd}, {latency_scale_s}")
    p = PreferenceVector.from_dict(preference)
    r = p.outcome * float(outcome) - p.cost * float(cost_usd) / cost_scale_usd - p.latency * float(latency_s) / latency_scale_s
    for t, w in p.tools.items():
        r += w * float((tool_calls or {}).get(t, 0.0))
    return float(r)


def _step_error(info: dict[str, Any]) -> bool:
    """Whether this step's action failed: a parse error, a tool error, or an expert's failed action."""
    if info.get("step_errors"):
        return True
    for m in info.get("new_messages", []):
        if m.get("role") == "tool":
            text = m.get("content") or ""
            if text.startswith("Error") or "\nResult:\nError" in text:
                return True
    return False


# ------------------------------------------------------------------------------------ features
class TaskFeatures:
    """The default `ToolChoice` observation: numeric features of the task and the episode so far.

    Features (float32, in this order; `names` labels them):
        ``domain=<d>`` one-hot over `domains` + ``domain=other``;
        ``category=<c>`` one-hot over `categories` + ``category=other``;
        ``difficulty=<x>`` one-hot over easy/medium/hard + ``difficulty=other``;
        ``turn_fraction``: turns taken / ``max_turns``, in [0, 1];
        ``last_error``: 1.0 when the last step's action failed (parse error, tool error, or an
        expert's failed action), else 0.0;
        ``cost``: episode cost / ``cost_scale_usd``, clipped to [0, ``clip``];
        ``latency``: episode latency / ``latency_scale_s``, clipped to [0, ``clip``].

    Args:
        domains, categories: the vocabularies (`for_env`: the env description's ``domains`` and
            ``categories``: a task list's, or ToolScale's domains and the generator's categories).
        cost_scale_usd, latency_scale_s: units of the cost and latency features (USD, s).
        clip: upper bound of the cost and latency features.

    Attributes:
        names: list[str] of length ``space.shape[0]``; space: the ``Box`` of the features.
    """

    DIFFICULTIES = ("easy", "medium", "hard")

    def __init__(
        self,
        domains: Sequence[str],
        categories: Sequence[str],
        cost_scale_usd: float = 0.01,
        latency_scale_s: float = 60.0,
        clip: float = 10.0,
    ):
        if cost_scale_usd <= 0 or latency_scale_s <= 0 or clip <= 0:
            raise ValueError("cost_scale_usd, latency_scale_s and clip must be > 0")
        self.domains, self.categories = list(domains), list(categories)
        self.cost_scale_usd, self.latency_scale_s, self.clip = float(cost_scale_usd), float(latency_scale_s), float(clip)
        self.names = (
            [f"domain={d}" for d in self.domains] + ["domain=other"]
            + [f"category={c}" for c in self.categories] + ["category=other"]
            + [f"difficulty={x}" for x in self.DIFFICULTIES] + ["difficulty=other"]
            + ["turn_fraction", "last_error", "cost", "latency"]
        )
        high = np.ones(len(self.names), dtype=np.float32)
        high[-2:] = self.clip
        self.space = spaces.Box(low=np.zeros_like(high), high=high, dtype=np.float32)

    @classmethod
    def for_env(cls, env: gym.Env, **kwargs: Any) -> "TaskFeatures":
        """Features with the env's vocabularies (see the class docstring for the defaults)."""
        description = env.unwrapped.describe()
        return cls(list(description.domains), list(description.categories), **kwargs)

    @staticmethod
    def _one_hot(value: Any, vocab: Sequence[str]) -> list[float]:
        """One-hot over vocab + other; ``"synthetic/railway"`` also matches ``"railway"``."""
        out = [0.0] * (len(vocab) + 1)
        if value not in vocab and isinstance(value, str):
            value = value.rsplit("/", 1)[-1]
        out[vocab.index(value) if value in vocab else len(vocab)] = 1.0
        return out

    def __call__(self, env: gym.Env, info: dict[str, Any]) -> np.ndarray:
        """float32 array [len(names)] for the current state (``info``: the last reset/step info)."""
        u = env.unwrapped
        task = u.task
        max_turns = float(u.max_turns or 1)
        feats = (
            self._one_hot(task.domain, self.domains)
            + self._one_hot(task.category, self.categories)
            + self._one_hot(task.difficulty, list(self.DIFFICULTIES))
            + [
                min(float(info.get("turn", 0.0)) / max_turns, 1.0),
                1.0 if _step_error(info) else 0.0,
                min(float(info.get("episode_cost_usd", 0.0)) / self.cost_scale_usd, self.clip),
                min(float(info.get("episode_latency_s", 0.0)) / self.latency_scale_s, self.clip),
            ]
        )
        return np.asarray(feats, dtype=np.float32)


# ------------------------------------------------------------------------------------ ToolChoice
class ToolChoice(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A ``Discrete`` routing action and a numeric observation, for classic RL algorithms.

    ## Action Space
    ``Discrete(len(actions))``: action i takes ``argument_policy(actions[i], info)`` as the turn's
    structured action. Default ``actions`` (`candidate_actions`): ``call_expert(expert=k)`` for
    each expert (ToolScale, tau2), or each model of each model tool (HLE, FRAMES).

    ## Observation Space
    ``Box`` float32 from ``feature_fn(env, info)``; default `TaskFeatures` (one-hot domain,
    category and difficulty, turn fraction, last-action-error flag, cost and latency so far).

    ## Rewards
    Dense, summing over the episode to `preference_reward` under the env's preference vector
    (``info["preference"]``): each step pays ``-P.cost * step_cost_usd / cost_scale_usd
    - P.latency * step_latency_s / latency_scale_s + sum_t P.tools[t] * new calls of t``, and the
    last step adds ``P.outcome * outcome``. The paper's group min-max normalisation (Sec. 3.2)
    needs a group of rollouts of one task, which a one-episode learner does not have; the fixed
    scales stand in for it. The wrapped env's own reward (the outcome) is in
    ``info["env_reward"]``.

    ## Info
    Everything the wrapped env reports, plus ``action`` (the structured action taken),
    ``env_reward``, and at the end ``preference_reward`` (the episode's total, float).

    ## Arguments
    feature_fn: ``(env, info) -> float32 array``; give ``observation_space`` too unless it has a
        ``space`` attribute (as `TaskFeatures` does).
    argument_policy: ``(candidate, info) -> structured action``; default: the candidate as is
        (the model tools' only argument is the model, fixed by the candidate).
    actions: the candidate structured actions (default `candidate_actions(env)`; envs that list
        their tools only after reset, such as HLE/FRAMES, are reset once here to read them).
    cost_scale_usd, latency_scale_s: the reward's units (default 1 cent, 60 s).

    Raises:
        ValueError: no candidate actions, or a feature_fn without a space.
    """

    def __init__(
        self,
        env: gym.Env,
        feature_fn: "Callable[[gym.Env, dict], np.ndarray] | None" = None,
        argument_policy: "Callable[[dict, dict], Any] | None" = None,
        actions: "Sequence[dict] | None" = None,
        observation_space: "spaces.Box | None" = None,
        cost_scale_usd: float = 0.01,
        latency_scale_s: float = 60.0,
    ):
        gym.utils.RecordConstructorArgs.__init__(
            self, feature_fn=feature_fn, argument_policy=argument_policy, actions=actions,
            observation_space=observation_space, cost_scale_usd=cost_scale_usd, latency_scale_s=latency_scale_s,
        )
        gym.Wrapper.__init__(self, env)
        if cost_scale_usd <= 0 or latency_scale_s <= 0:
            raise ValueError(f"cost_scale_usd and latency_scale_s must be > 0, got {cost_scale_usd}, {latency_scale_s}")
        if actions is None:
            description = env.unwrapped.describe()
            if not description.experts and not description.tools:
                env.reset()
            actions = candidate_actions(env)
        if not actions:
            raise ValueError("ToolChoice needs at least one candidate action")
        self.actions = [dict(a) for a in actions]
        self.feature_fn = feature_fn or TaskFeatures.for_env(
            env, cost_scale_usd=cost_scale_usd, latency_scale_s=latency_scale_s
        )
        space = observation_space or getattr(self.feature_fn, "space", None)
        if space is None:
            raise ValueError("a custom feature_fn needs observation_space=gymnasium.spaces.Box(...) (or a .space attribute)")
        self.observation_space = space
        self.action_space = spaces.Discrete(len(self.actions))
        self.argument_policy = argument_policy
        self.cost_scale_usd, self.latency_scale_s = float(cost_scale_usd), float(latency_scale_s)
        self._calls: dict[str, float] = {}
        self._last_info: dict[str, Any] = {}

    @property
    def action_names(self) -> list[str]:
        """Readable labels of the actions, e.g. ``call_expert(expert-1)``."""
        return [f"{a['name']}({', '.join(str(v) for v in a.get('arguments', {}).values())})" for a in self.actions]

    def _obs(self, info: dict[str, Any]) -> np.ndarray:
        return np.asarray(self.feature_fn(self.env, info), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Reset the wrapped env; the observation is the features of the new task."""
        _, info = self.env.reset(seed=seed, options=options)
        self._calls, self._last_info = {}, info
        return self._obs(info), info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Take candidate `action` (an int in ``[0, n)``).

        Raises:
            ValueError: `action` is not an integer in the action space.
        """
        if not self.action_space.contains(action):
            raise ValueError(f"action must be an int in [0, {self.action_space.n}), got {action!r}")
        candidate = self.actions[int(action)]
        structured = self.argument_policy(dict(candidate), self._last_info) if self.argument_policy else dict(candidate)
        _, env_reward, terminated, truncated, info = self.env.step(structured)
        pref = PreferenceVector.from_dict(info.get("preference"))
        reward = -pref.cost * float(info.get("cost_usd", 0.0)) / self.cost_scale_usd
        reward -= pref.latency * float(info.get("latency_s", 0.0)) / self.latency_scale_s
        calls = info.get("tool_calls", {})
        for t, w in pref.tools.items():
            reward += w * (float(calls.get(t, 0.0)) - self._calls.get(t, 0.0))
        self._calls = {k: float(v) for k, v in calls.items()}
        if terminated or truncated:
            reward += pref.outcome * float(info.get("outcome", 0.0))
            info["preference_reward"] = preference_reward(
                pref, info.get("outcome", 0.0), info.get("episode_cost_usd", 0.0), info.get("episode_latency_s", 0.0),
                calls, self.cost_scale_usd, self.latency_scale_s,
            )
        info["action"] = structured
        info["env_reward"] = float(env_reward)
        self._last_info = info
        return self._obs(info), float(reward), terminated, truncated, info


# ------------------------------------------------------------------------------------ Budget
class Budget(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Truncate an episode once its cost or latency passes a budget.

    After each step, if the episode's cost (``info["episode_cost_usd"]``) exceeds
    ``max_cost_usd`` or its latency (``info["episode_latency_s"]``) exceeds ``max_latency_s``
    and the episode has not ended, it is truncated: the step that crossed the budget has run and
    is charged. The outcome is 0 (a premature end, as for the turn limit) and the end-of-episode
    keys are filled like the env's own, by its ``reward_layout`` (`RewardLayout.end_info`):
    ``outcome``, ``solved``, ``reward_vector``, ``reward_vector_names``, ``reward_breakdown``
    (``{"premature_end": reason}``), ``end_reason`` (``"cost_budget"`` or ``"latency_budget"``).
    ``info["budget_exceeded"]`` names the budget ("cost" or "latency") and ``info["budget"]``
    gives both limits. The env must be reset after: a further step raises
    ``gymnasium.error.ResetNeeded``.

    Args:
        max_cost_usd: budget in USD (None: no cost budget).
        max_latency_s: budget in seconds (None: no latency budget).

    Raises:
        ValueError: both budgets None, or a budget <= 0.
    """

    def __init__(self, env: gym.Env, max_cost_usd: float | None = None, max_latency_s: float | None = None):
        gym.utils.RecordConstructorArgs.__init__(self, max_cost_usd=max_cost_usd, max_latency_s=max_latency_s)
        gym.Wrapper.__init__(self, env)
        if max_cost_usd is None and max_latency_s is None:
            raise ValueError("Budget needs max_cost_usd (USD) or max_latency_s (seconds)")
        for name, v in (("max_cost_usd", max_cost_usd), ("max_latency_s", max_latency_s)):
            if v is not None and not v > 0:
                raise ValueError(f"{name} must be > 0, got {v}")
        self.max_cost_usd = None if max_cost_usd is None else float(max_cost_usd)
        self.max_latency_s = None if max_latency_s is None else float(max_latency_s)
        self._cut = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Reset the wrapped env (and the budget's cut)."""
        self._cut = False
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step the env; truncate (outcome 0) once the episode's cost (USD) or latency (s) passes the budget.

        Raises:
            gymnasium.error.ResetNeeded: a step after the budget cut the episode; call ``reset``.
        """
        if self._cut:
            raise ResetNeeded("the episode was cut by the budget; call reset() to start a new one before step()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        info["budget"] = {"max_cost_usd": self.max_cost_usd, "max_latency_s": self.max_latency_s}
        if terminated or truncated:
            return obs, reward, terminated, truncated, info
        which = None
        if self.max_cost_usd is not None and info["episode_cost_usd"] > self.max_cost_usd:
            which = "cost"
        elif self.max_latency_s is not None and info["episode_latency_s"] > self.max_latency_s:
            which = "latency"
        if which is None:
            return obs, reward, terminated, truncated, info
        layout = self.env.unwrapped.reward_layout
        info["budget_exceeded"] = which
        info.update(layout.end_info(info, 0.0, {"premature_end": f"{which}_budget"}, f"{which}_budget"))
        self._cut = True
        return obs, 0.0, False, True, info


# ------------------------------------------------------------------------------------ Preference
def uniform_preference(rng: np.random.Generator) -> dict[str, Any]:
    """Default sampler: outcome weight 1, cost and latency weights uniform in [0, 1) (float)."""
    return {"outcome": 1.0, "cost": float(rng.uniform()), "latency": float(rng.uniform())}


class Preference(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Fix or sample the preference vector passed to ``reset`` (``options["preference"]``).

    With `preference`, every episode gets it. Otherwise `sampler(rng)` (default
    `uniform_preference`) draws one per episode from a generator that ``reset(seed=s)`` seeds
    from ``s`` (a stream separate from the env's task draws, so the task for a seed is the same
    with or without this wrapper); before any seed it is seeded from the env's ``np_random``.
    An explicit ``options["preference"]`` in ``reset`` wins over the wrapper. The vector in force
    is in ``info["preference"]`` (from the env).

    Args:
        preference: dict ``{"tools", "outcome", "cost", "latency"}`` or
            `orchestra_gym.types.Preference`.
        sampler: ``rng -> dict | Preference``.

    Raises:
        ValueError: both or a bad preference dict (the message names the key).
    """

    def __init__(
        self,
        env: gym.Env,
        preference: "dict | PreferenceVector | None" = None,
        sampler: "Callable[[np.random.Generator], Any] | None" = None,
    ):
        gym.utils.RecordConstructorArgs.__init__(self, preference=preference, sampler=sampler)
        gym.Wrapper.__init__(self, env)
        if preference is not None and sampler is not None:
            raise ValueError("pass preference= (fixed) or sampler= (drawn per episode), not both")
        self.fixed = None if preference is None else PreferenceVector.from_dict(preference)
        self.sampler = sampler or uniform_preference
        self._pref_rng: np.random.Generator | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Reset with the fixed or sampled preference vector in ``options["preference"]`` (an explicit one wins)."""
        options = dict(options or {})
        if "preference" not in options:
            if self.fixed is not None:
                pref = self.fixed
            else:
                if seed is not None:
                    self._pref_rng = np.random.default_rng([int(seed), 0x50524546])  # "PREF"
                elif self._pref_rng is None:
                    self._pref_rng = np.random.default_rng(int(self.env.np_random.integers(0, 2**63 - 1)))
                pref = PreferenceVector.from_dict(self.sampler(self._pref_rng))
            options["preference"] = pref.to_dict()
        return self.env.reset(seed=seed, options=options)


# ------------------------------------------------------------------------------------ SleepLatency
class SleepLatency(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Sleep, after each step, for the step's simulated latency (``info["latency_s"]``, seconds of the
    experts' and tools' calls) x `scale`, clipped to [min_s, max_s]: a simulated tool call then takes real
    wall time, as a served expert would, so that a rollout engine's overlap of tool calls with decoding
    can be measured (benchmarks/bench_async.py). Observations, rewards and infos are unchanged; the sleep
    releases the GIL.

    Args: scale (>= 0; 0 sleeps min_s only), min_s, max_s (seconds, 0 <= min_s <= max_s), sleep (the
    function called with the seconds: `time.sleep`; tests pass a recorder).
    Raises: ValueError for a negative scale or bounds out of order.
    """

    def __init__(self, env: gym.Env, scale: float = 0.01, min_s: float = 0.5, max_s: float = 3.0,
                 sleep: Callable[[float], Any] | None = None):
        gym.utils.RecordConstructorArgs.__init__(self, scale=scale, min_s=min_s, max_s=max_s)
        gym.Wrapper.__init__(self, env)
        if scale < 0 or not 0 <= min_s <= max_s:
            raise ValueError(f"need scale >= 0 and 0 <= min_s <= max_s; got {scale}, {min_s}, {max_s}")
        import time

        self.scale, self.min_s, self.max_s = float(scale), float(min_s), float(max_s)
        self.sleep = sleep or time.sleep

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        out = self.env.step(action)
        self.sleep(min(self.max_s, max(self.min_s, float(out[4].get("latency_s", 0.0)) * self.scale)))
        return out
