"""Reward vectors, the paper's group-normalised preference reward, and the App. L metric.

ToolOrchestra (arXiv 2511.21689) Sec. 3.2 describes each rollout ``tau`` by a reward vector

    M(tau) = [calls of tool_1, ..., calls of tool_n, outcome, -cost_usd, -latency_s]      (K = n + 3)

and, for a group of G rollouts of the same task, normalises every component by min-max over
the group and scores a rollout by the user's preference vector P::

    M_norm[g, k] = (M[g, k] - min_g' M[g', k]) / (max_g' M[g', k] - min_g' M[g', k])   (0 if max == min)
    R[g]         = M_norm[g] . P   if rollout g solved the task,   else 0

Cost and latency enter negated, so the cheapest / fastest rollout of the group gets 1 in those
components and a positive weight rewards being cheap / fast (`orchestra_gym.types.Preference`
documents the weights). The environment puts M in ``info["reward_vector"]`` at the end of each
episode; the trainer calls `group_preference_rewards` on the group.

`RewardLayout` is the one definition of M's components: which tools are counted (an env exposes
its layout as ``env.unwrapped.reward_layout``), their names (``calls/<tool>``, ``outcome``,
``-cost_usd``, ``-latency_s``), M built from an episode's ``info`` (finished or cut), the
end-of-episode ``info`` keys, and a preference dict as a weight vector P aligned with M.

Everything here is float64 NumPy and validates shapes, dtypes and finiteness with ValueErrors
that name the argument. No function returns NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from orchestra_gym.types import Preference, ToolSpec

__all__ = [
    "RewardLayout",
    "is_solved",
    "reward_vector",
    "reward_vector_names",
    "group_preference_rewards",
    "preference_scores",
    "preference_metric",
    "reference_group_scores",
    "episode_preference_weights",
]


#: The components after the tool-call counts, in order (names as in ``info["reward_vector_names"]``).
FIXED_COMPONENTS = ("outcome", "-cost_usd", "-latency_s")
_CALLS = "calls/"


def is_solved(outcome: float) -> bool:
    """Whether an outcome counts as solved: ``outcome >= 1 - 1e-9`` (``info["solved"]``)."""
    return bool(float(outcome) >= 1.0 - 1e-9)


@dataclass(frozen=True)
class RewardLayout:
    """The layout of the reward vector M (ToolOrchestra Sec. 3.2): the one definition of its components.

    ``M = [calls of tools[0], ..., calls of tools[n-1], outcome, -cost_usd, -latency_s]`` (K = n + 3,
    float64). Environments expose theirs as ``env.unwrapped.reward_layout`` (after ``reset``: the
    tools may depend on the episode's ``tools`` option); wrappers and trainers use it instead of
    rebuilding M or parsing names.

    Attributes:
        tools: the counted tools or models, in order (no duplicates). Which ones an env counts:
            `from_tool_specs` (the default rule) or the env's own (function-calling envs: the
            experts).

    Raises:
        ValueError: duplicate or non-string tool names.
    """

    tools: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_tool_names(self.tools)
        object.__setattr__(self, "tools", tuple(self.tools))

    @classmethod
    def from_tool_specs(cls, specs: Iterable[ToolSpec]) -> "RewardLayout":
        """The default rule: the models of the model tools (`ToolSpec.model_choices`: the QA envs'
        ``search-1``..., the experts behind ``call_expert``), in tool then enum order, each once;
        when no tool picks a model, the tool names themselves (QA basic tools, toy envs)."""
        specs = list(specs)
        models = [m for s in specs for m in ((s.model_choices() or ("", []))[1])]
        return cls(tuple(dict.fromkeys(models or [s.name for s in specs])))

    @classmethod
    def from_names(cls, names: Sequence[str]) -> "RewardLayout":
        """The layout whose `names` are `names` (e.g. ``info["reward_vector_names"]``).

        Raises:
            ValueError: `names` is not ``["calls/<tool>"..., "outcome", "-cost_usd", "-latency_s"]``.
        """
        names = list(names)
        tools = [n[len(_CALLS):] for n in names[: len(names) - len(FIXED_COMPONENTS)] if n.startswith(_CALLS)]
        layout = cls(tuple(tools))
        if layout.names != names:
            raise ValueError(
                f"reward vector names {names} do not have the layout ['calls/<tool>'..., 'outcome', '-cost_usd', "
                "'-latency_s']; pass info['reward_vector_names'] of an orchestra env"
            )
        return layout

    @property
    def names(self) -> list[str]:
        """Component names, ``["calls/<tool>"..., "outcome", "-cost_usd", "-latency_s"]`` (length K)."""
        return [f"{_CALLS}{t}" for t in self.tools] + list(FIXED_COMPONENTS)

    @property
    def size(self) -> int:
        """K = len(tools) + 3."""
        return len(self.tools) + len(FIXED_COMPONENTS)

    def vector(self, tool_calls: Mapping[str, float], outcome: float, cost_usd: float, latency_s: float) -> np.ndarray:
        """M for these totals: float64 [K]. Counts of tools outside the layout are ignored (an
        env's ``info["tool_calls"]`` also counts domain tools and ``call_expert``).

        Raises:
            ValueError: as `reward_vector` (negative or non-finite numbers, outcome outside [0, 1]).
        """
        counts = {t: tool_calls.get(t, 0.0) for t in self.tools}
        return reward_vector(counts, self.tools, outcome, cost_usd, latency_s)

    def vector_from_info(self, info: Mapping[str, Any], outcome: float | None = None) -> np.ndarray:
        """M from an episode's ``info``: ``tool_calls``, ``episode_cost_usd`` (USD) and
        ``episode_latency_s`` (s); the outcome is `outcome`, else ``info["outcome"]`` when the
        episode ended, else 0.0 (an episode cut before its end, e.g. by a trainer's token limit).

        Returns:
            float64 array [K].
        """
        if outcome is None:
            outcome = info.get("outcome", 0.0)
        return self.vector(info.get("tool_calls", {}), float(outcome), float(info.get("episode_cost_usd", 0.0)),
                           float(info.get("episode_latency_s", 0.0)))

    def end_info(self, info: Mapping[str, Any], outcome: float, breakdown: dict[str, Any], end_reason: str) -> dict[str, Any]:
        """The keys an env adds to ``info`` when an episode ends (terminated, truncated or cut by a wrapper):
        ``outcome`` (float), ``solved`` (`is_solved`), ``reward_vector`` (`vector_from_info`),
        ``reward_vector_names`` (`names`), ``reward_breakdown`` (`breakdown`, as given),
        ``end_reason`` (str), ``action_errors`` (`action_errors`; beside M, never in it) and
        ``preference_weights`` (`preference_weights` of ``info["preference"]``: P aligned with M, list of
        K floats; the one place P is derived from the layout, so consumers read it instead of rebuilding it
        from ``reward_vector_names``)."""
        outcome = float(outcome)
        return {
            "outcome": outcome,
            "solved": is_solved(outcome),
            "reward_vector": self.vector_from_info(info, outcome),
            "reward_vector_names": self.names,
            "reward_breakdown": breakdown,
            "end_reason": str(end_reason),
            "action_errors": self.action_errors(info),
            "preference_weights": [float(w) for w in self.preference_weights(info.get("preference"))],
        }

    @staticmethod
    def action_errors(info: Mapping[str, Any]) -> dict[str, float]:
        """The errors an episode's actions caused, from its ``info``: ``parse_errors`` (malformed
        actions, unknown tools, ignored argument names) and ``argument_error_turns`` (steps with a
        call whose arguments break its tool's schema, e.g. ``call_expert`` with ``{"model": ...}``;
        see `orchestra_gym.env.OrchestraEnv`), both float counts. A metric only: the reward
        vector M does not hold them (the paper's M has no error term)."""
        return {"parse_errors": float(info.get("parse_errors", 0.0)),
                "argument_error_turns": float(info.get("argument_error_turns", 0.0))}

    def preference_weights(self, preference: "Mapping[str, Any] | Preference | None") -> np.ndarray:
        """The preference vector P aligned with M: float64 [K], ``[tool weights..., outcome, cost,
        latency]`` (tools the preference does not name weigh 0; None: `Preference`'s defaults).

        Raises:
            ValueError: a bad preference dict (the message names the key).
        """
        return Preference.from_dict(dict(preference) if isinstance(preference, Mapping) else preference).as_vector(
            list(self.tools)
        )


def episode_preference_weights(info: Mapping[str, Any],
                               preference: "Mapping[str, Any] | Preference | None" = None) -> np.ndarray:
    """P aligned with an ended episode's reward vector (float64 [K]): the weights its env reported
    (``info["preference_weights"]``, `RewardLayout.end_info`); with `preference` given (scoring a run under
    another preference than it was played with), that preference laid out by ``info["reward_vector_names"]``.
    An episode recorded before envs reported the weights gets its own ``info["preference"]`` laid out the
    same way (the same numbers).

    Raises:
        KeyError: `info` has neither the weights nor ``reward_vector_names`` (not an ended episode's info).
        ValueError: a bad preference dict (the message names the key).
    """
    if preference is None and "preference_weights" in info:
        return np.asarray(info["preference_weights"], np.float64)
    layout = RewardLayout.from_names(info["reward_vector_names"])
    return layout.preference_weights(info.get("preference") if preference is None else preference)


def reward_vector_names(tool_names: Sequence[str]) -> list[str]:
    """Names of the reward-vector components, in order.

    Returns ``["calls/<tool_1>", ..., "calls/<tool_n>", "outcome", "-cost_usd", "-latency_s"]``
    (length K = n + 3), the labels for ``info["reward_vector"]`` and for logging.
    """
    return RewardLayout(tool_names).names  # type: ignore[arg-type]  (validated, then made a tuple)


def reward_vector(
    tool_calls: Mapping[str, float],
    tool_names: Sequence[str],
    outcome: float,
    cost_usd: float,
    latency_s: float,
) -> np.ndarray:
    """One episode's reward vector M (ToolOrchestra Sec. 3.2).

    Args:
        tool_calls: tool name -> number of calls in the episode (tools not listed: 0 calls).
        tool_names: the tools of the preference vector, in order (no duplicates).
        outcome: task outcome in [0, 1] (1 = solved).
        cost_usd: the episode's total cost in USD (>= 0).
        latency_s: the episode's total latency in seconds (>= 0).

    Returns:
        float64 array of shape [len(tool_names) + 3]:
        ``[calls per tool in tool_names order..., outcome, -cost_usd, -latency_s]``.

    Raises:
        ValueError: a call count for a tool not in `tool_names` (named, with the known tools), a
            negative or non-finite count, outcome outside [0, 1], or negative / non-finite cost
            or latency, or duplicate tool names.
    """
    _check_tool_names(tool_names)
    known = set(tool_names)
    unknown = sorted(str(k) for k in tool_calls if k not in known)
    if unknown:
        raise ValueError(
            f"tool_calls has counts for tool(s) {unknown} that are not in tool_names {list(tool_names)}; "
            "add them to tool_names or drop their counts"
        )
    counts = []
    for t in tool_names:
        c = _finite_float(tool_calls.get(t, 0.0), f"tool_calls[{t!r}]")
        if c < 0:
            raise ValueError(f"tool_calls[{t!r}] = {c} is negative; call counts are >= 0")
        counts.append(c)
    outcome = _finite_float(outcome, "outcome")
    if not 0.0 <= outcome <= 1.0:
        raise ValueError(f"outcome = {outcome} must be in [0, 1]")
    cost_usd = _finite_float(cost_usd, "cost_usd")
    latency_s = _finite_float(latency_s, "latency_s")
    if cost_usd < 0:
        raise ValueError(f"cost_usd = {cost_usd} must be >= 0 (USD)")
    if latency_s < 0:
        raise ValueError(f"latency_s = {latency_s} must be >= 0 (seconds)")
    return np.array(counts + [outcome, -cost_usd, -latency_s], dtype=np.float64)


def group_preference_rewards(vectors: np.ndarray, solved: np.ndarray, preference: np.ndarray) -> np.ndarray:
    """Preference-aware rewards of one group of rollouts (ToolOrchestra Sec. 3.2).

    Every component k is min-max normalised over the group's G rollouts (0 where the group's
    max equals its min), then ``R[g] = M_norm[g] . preference`` for solved rollouts and
    ``R[g] = 0`` for unsolved ones. The normalisation uses all G rollouts, solved or not.

    Note: the released ToolOrchestra code normalises the cost and latency components with a
    sign error (the most expensive rollout scores best). We follow the paper: M holds -cost and
    -latency, so after normalisation the cheapest / fastest rollout has 1.

    Args:
        vectors: float array [G, K], rows from `reward_vector` (G >= 1 rollouts, K >= 1).
        solved: bool array [G], whether each rollout solved the task.
        preference: float array [K], the preference vector P in reward-vector order
            (`orchestra_gym.types.Preference.as_vector`).

    Returns:
        float64 array [G]. Never NaN; 0.0 for unsolved rollouts; a group with G = 1 or with
        every component constant gets all zeros.

    Raises:
        ValueError: wrong rank, mismatched G or K, `solved` not boolean, a non-finite value, or
            weights so large that the dot product overflows.
    """
    v = _as_float_matrix(vectors, "vectors")
    g, k = v.shape
    s = np.asarray(solved)
    if s.dtype != np.bool_:
        raise ValueError(f"solved must be a bool array, got dtype {s.dtype}; pass solved.astype(bool) or outcome >= 1")
    if s.shape != (g,):
        raise ValueError(f"solved must have shape [G] = ({g},) to match vectors [G, K] = {v.shape}, got {s.shape}")
    p = _as_float_vector(preference, "preference", k)
    norm = _minmax_columns(v)
    with np.errstate(over="ignore", invalid="ignore"):
        r = norm @ p
    if not np.all(np.isfinite(r)):
        raise ValueError("preference weights are too large: the weighted sum overflows float64; scale the preference down")
    return np.where(s, r, 0.0).astype(np.float64)


def preference_scores(vectors: np.ndarray, baseline_vectors: np.ndarray, preference: np.ndarray) -> np.ndarray:
    """Per-example preference scores for evaluation (ToolOrchestra App. L, as implemented here).

    At test time there is no group of rollouts to min-max over, so each example's reward
    vector is normalised by a baseline run's vector on the same example::

        M_norm[i, k] = M[i, k] / |B[i, k]|   where B[i, k] != 0
                     = M[i, k]               where B[i, k] == 0   (left in its own unit)
        score[i]     = M_norm[i] . P[i]

    Dividing by ``|B|`` keeps the sign, so ``-cost / |baseline cost|`` is the run's cost in
    units of the baseline's (-1 = as expensive as the baseline). Unsolved examples are not
    zeroed: the outcome component carries success. This follows the paper's summary in
    DESIGN.md Sec. 5 ("normalise by a baseline run's vector; benchmark score = sum"); the full
    App. L text was not available to check the treatment of zero baseline components, which is
    our choice.

    Args:
        vectors: float array [N, K], the evaluated run's reward vectors, one row per example.
        baseline_vectors: float array [N, K], the baseline run's vectors for the same examples.
        preference: float array [K] (one P for all examples) or [N, K] (one P per example).

    Returns:
        float64 array [N] of per-example scores (never NaN).

    Raises:
        ValueError: shape mismatch, non-finite value, or an overflowing result.
    """
    v = _as_float_matrix(vectors, "vectors")
    b = _as_float_matrix(baseline_vectors, "baseline_vectors")
    if b.shape != v.shape:
        raise ValueError(f"baseline_vectors shape {b.shape} must equal vectors shape {v.shape} (same examples, same tools)")
    p = np.asarray(preference)
    if p.ndim == 1:
        p = _as_float_vector(p, "preference", v.shape[1])[None, :]
    else:
        p = _as_float_matrix(p, "preference")
        if p.shape != v.shape:
            raise ValueError(f"preference must have shape [K] = ({v.shape[1]},) or [N, K] = {v.shape}, got {p.shape}")
    denom = np.where(b != 0.0, np.abs(b), 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        scores = np.sum((v / denom) * p, axis=1)
    if not np.all(np.isfinite(scores)):
        raise ValueError(
            "preference scores overflow float64 (a baseline component is tiny or the weights are huge); "
            "check baseline_vectors and preference"
        )
    return scores.astype(np.float64)


def preference_metric(vectors: np.ndarray, baseline_vectors: np.ndarray, preference: np.ndarray) -> float:
    """Benchmark preference score (ToolOrchestra App. L): the sum of `preference_scores`.

    Args and errors as `preference_scores`. Returns a Python float (higher is better).
    """
    total = float(math.fsum(preference_scores(vectors, baseline_vectors, preference).tolist()))
    if not math.isfinite(total):
        raise ValueError("the summed preference metric overflows float64")
    return total


def reference_group_scores(vectors: np.ndarray, solved: np.ndarray, reference_vectors: np.ndarray,
                           reference_solved: np.ndarray, preference: np.ndarray) -> np.ndarray:
    """Per-example preference scores in the group form of the paper's reward (ToolOrchestra Sec. 3.2,
    used for App. L's test-time comparison; our construction, see below).

    Example i's group is the evaluated run's episode and the R reference runs' episodes on the same
    example (e.g. always expert-1, expert-2, expert-3); its score is the evaluated episode's
    `group_preference_rewards` in that group: each component min-max normalised over the R + 1
    episodes, weighted by the preference, and 0 when the evaluated episode did not solve the example::

        score[i] = group_preference_rewards([B[0, i], ..., B[R-1, i], M[i]], [...], P[i])[R]

    This is the reward the trainer maximises, with the fixed reference runs standing in for the group
    of rollouts, so a preference means the same thing in training and in evaluation: under it, a
    policy's score beats every fixed reference run's only by choosing, per example, what the
    preference pays for. (`preference_scores`, which divides by one baseline's vector and does not
    zero unsolved examples, scores a different utility: an unbounded linear penalty on cost and
    latency against the training reward's bounded, success-gated bonus.)

    Args:
        vectors: float [N, K], the evaluated run's reward vectors. solved: bool [N].
        reference_vectors: float [R, N, K], R >= 1 reference runs on the same N examples, same layout.
        reference_solved: bool [R, N].
        preference: float [K] (one P for all examples) or [N, K].

    Returns:
        float64 [N] (never NaN).

    Raises:
        ValueError: shape or dtype mismatches (the argument is named), non-finite values.
    """
    v = _as_float_matrix(vectors, "vectors")
    n, k = v.shape
    ref = np.asarray(reference_vectors)
    if ref.ndim != 3 or ref.shape[1:] != (n, k) or ref.shape[0] < 1:
        raise ValueError(f"reference_vectors must have shape [R, N, K] = [R >= 1, {n}, {k}], got {ref.shape}")
    ref = np.stack([_as_float_matrix(r, "reference_vectors") for r in ref])
    s = np.asarray(solved)
    rs = np.asarray(reference_solved)
    if s.dtype != np.bool_ or s.shape != (n,):
        raise ValueError(f"solved must be a bool array of shape [N] = ({n},), got {s.dtype} {s.shape}")
    if rs.dtype != np.bool_ or rs.shape != ref.shape[:2]:
        raise ValueError(f"reference_solved must be a bool array of shape [R, N] = {ref.shape[:2]}, got {rs.dtype} {rs.shape}")
    p = np.asarray(preference)
    p = _as_float_vector(p, "preference", k)[None, :].repeat(n, 0) if p.ndim == 1 else _as_float_matrix(p, "preference")
    if p.shape != (n, k):
        raise ValueError(f"preference must have shape [K] = ({k},) or [N, K] = ({n}, {k}), got {p.shape}")
    out = np.empty(n, np.float64)
    for i in range(n):
        group = np.concatenate([ref[:, i], v[i][None]], axis=0)
        out[i] = group_preference_rewards(group, np.append(rs[:, i], s[i]), p[i])[-1]
    return out


# --------------------------------------------------------------------------------------------
# helpers


def _minmax_columns(v: np.ndarray) -> np.ndarray:
    """Min-max normalise each column of v [G, K] to [0, 1]; constant columns give 0.

    Columns are first divided by their largest magnitude so that ``max - min`` cannot overflow
    for finite inputs near the float64 limit (the result is the same up to rounding).
    """
    scale = np.max(np.abs(v), axis=0)
    scale = np.where(scale > 0.0, scale, 1.0)
    u = v / scale
    lo = u.min(axis=0)
    span = u.max(axis=0) - lo
    safe = np.where(span > 0.0, span, 1.0)
    return np.where(span > 0.0, (u - lo) / safe, 0.0)


def _check_tool_names(tool_names: Sequence[str]) -> None:
    if isinstance(tool_names, str):
        raise ValueError(f"tool_names must be a list of names, got the string {tool_names!r}")
    seen: set[str] = set()
    for t in tool_names:
        if not isinstance(t, str):
            raise ValueError(f"tool_names must hold strings, got {t!r} ({type(t).__name__})")
        if t in seen:
            raise ValueError(f"duplicate tool name {t!r} in tool_names; each tool appears once")
        seen.add(t)


def _finite_float(x: object, name: str) -> float:
    try:
        f = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"{name} must be finite, got {f}")
    return f


def _as_float_matrix(x: object, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must be a real-valued (float or int) array, got dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name} must have shape [G, K] (2-D), got shape {a.shape}")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{name} must have at least one row and one column, got shape {a.shape}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
        raise ValueError(f"{name} must be finite; {name}[{bad[0]}, {bad[1]}] = {a[bad]}")
    return a


def _as_float_vector(x: object, name: str, k: int) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must be a real-valued (float or int) array, got dtype {a.dtype}")
    if a.shape != (k,):
        raise ValueError(f"{name} must have shape [K] = ({k},) to match the reward vectors, got {a.shape}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {a.tolist()}")
    return a
