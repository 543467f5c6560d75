"""`OrchestraEnv`: the turn loop, budgets and `info` accounting shared by every orchestra environment.

One step is one orchestrator turn: the policy's text (Qwen3/Hermes format, see
`orchestra_gym.parsing`) or a structured action is parsed into tool calls and/or a message to the
user; the calls run in order, each answered by its own tool message; a message goes to the user
simulator (function-calling envs). Usage of every call (tokens, USD, seconds) is accumulated. At
the end of the episode the subclass grades the outcome and the env reports the paper's reward
vector (ToolOrchestra Sec. 3.2), laid out by its ``reward_layout`` (`orchestra_gym.rewards.RewardLayout`).

Subclasses implement five hooks: `_sample_task`, `_start_episode`, `_execute`, `_user_turn`
(optional) and `_grade`.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np

from orchestra_gym import pricing as pricing_mod
from orchestra_gym.description import EnvDescription
from orchestra_gym.errors import ConfigError, ResetNeeded, did_you_mean
from orchestra_gym.parsing import ParsedAction, parse_action
from orchestra_gym.rewards import RewardLayout
from orchestra_gym.spaces import TextSpace
from orchestra_gym.types import Message, Preference, Task, ToolCall, ToolResult, ToolSpec, Usage

__all__ = ["OrchestraEnv", "render_transcript", "FORMAT_HELP"]

FORMAT_HELP = (
    "Reply with optional <think>...</think>, then either one or more "
    '<tool_call>{"name": "<tool name>", "arguments": {...}}</tool_call> blocks '
    "or one <message>text for the user</message>."
)

_OPTION_KEYS = ("task_id", "preference", "tools", "pricing", "user", "experts")


def render_transcript(messages: list[Message]) -> str:
    """Render messages as the plain-text observation: one ``### role`` header per message.

    Tool messages carry the tool name and call id: ``### tool get_order [call_0]``. The format
    is neutral (no model's chat template), so any policy can read it; token-level policies use
    ``info["new_messages"]`` with their own template instead.
    """
    parts = []
    for m in messages:
        head = f"### {m.role}"
        if m.role == "tool":
            head += f" {m.name or ''} [{m.tool_call_id or ''}]"
        parts.append(f"{head}\n{m.content}")
    return "\n\n".join(parts)


def _count(key: str, value: Any) -> int:
    """`value` as an int >= 1 (an int, or a float with an integral value).

    Raises:
        ConfigError: anything else (a string, a bool, 2.5, 0), naming `key` and the fix.
    """
    ok = isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer())
    if isinstance(value, (bool, np.bool_)) or not ok or value < 1:
        raise ConfigError(f"{key} must be an integer >= 1, got {value!r}; fix: e.g. {key}=6")
    return int(value)


class OrchestraEnv(gym.Env[str, str]):
    """Base class of orchestra environments: a multi-turn text environment with priced tools.

    Observation: ``str``, the conversation so far rendered by `render_transcript` (the newest
    ``max_observation_chars`` characters). Action: ``str`` (model text) or a structured action
    (``{"name", "arguments"}``, a list of them, or ``{"message": ...}``).

    Reward: the outcome in [0, 1] at termination, 0 before (DESIGN.md Sec. 4). The preference
    reward needs a group of rollouts: `orchestra_gym.rewards.group_preference_rewards` on the
    episodes' ``info["reward_vector"]``.

    Info (every step; floats for every number):
        cost_usd, latency_s, prompt_tokens, completion_tokens: this step's usage (USD, s, tokens).
        episode_cost_usd, episode_latency_s, episode_prompt_tokens, episode_completion_tokens:
            totals so far.
        orchestrator_cost_usd, orchestrator_latency_s, orchestrator_prompt_tokens,
        orchestrator_completion_tokens: the part of this step's usage that the orchestrator's own
            model call took (USD, s, tokens), as reported by the agent through
            `add_orchestrator_usage` (an LLM behind an endpoint); 0.0 for agents that report none.
            Included in the step's and the episode's totals above; the tools' part is the total
            minus this. episode_orchestrator_cost_usd, episode_orchestrator_latency_s,
            episode_orchestrator_prompt_tokens, episode_orchestrator_completion_tokens: its totals.
        tool_calls: dict tool name -> calls so far (float); a call of a model tool is counted
            under the tool (``call_expert``, ``answer``, ...) and under the model it used
            (``expert-2``, ``answer-1``, ...); calls an expert made on the agent's behalf are
            counted under their domain tool too.
        parse_errors: malformed actions so far (float), unknown tools and ignored unknown
            arguments (a call that ran with names its schema lacks) included; step_errors: this
            step's error texts (parse errors, unknown tools, ignored names, and each argument error
            as ``"<tool>: argument '<field>': <problem>"``); argument_errors: this step's calls'
            arguments that break their tool's schema (`ToolSpec.argument_errors`), as dicts
            ``{"tool", "field", "problem"}`` (a call the tool refused, such as ``call_expert`` with
            ``{"model": "expert-2"}``, included); argument_error_turns: steps so far with at least
            one (float; apart from parse_errors, so ``max_errors`` is not spent on them).
        tool_errors: tool calls so far whose tool failed (float): an error result (an endpoint
            down after its retries, a domain tool's refusal, the sandbox's timeout, memory limit,
            kill or full disk, a tool bug), or a model tool whose code failed in the sandbox
            (``metadata["sandbox_error"]``). Unknown tools count in parse_errors instead.
        turn: turns taken (float). preference: the preference vector as a dict.
        new_messages: the messages this step added, as dicts (role, content, ...), for policies
            that render their own chat template.
        At the end (terminated or truncated) also: outcome (float in [0, 1]), reward_vector
        (float64 array [K], paper Sec. 3.2: [calls per preference tool..., outcome, -cost,
        -latency], laid out by ``reward_layout``), reward_vector_names (list[str]), preference_weights (list[float]
        [K]: the episode's preference vector P aligned with reward_vector, `RewardLayout.preference_weights`; the
        preference reward is ``M_norm . P``), reward_breakdown (dict of the grader's
        checks), solved (bool), end_reason (str), answered (bool: the episode ended on the agent's
        valid actions with a graded outcome, see `turn_limit_graded` and `error_limit_graded`; False
        after an orchestrator error, or a turn limit or ``max_errors`` end where that is not graded: the
        paper's invalid-output filter, Sec. 3.2, drops rollouts without it), task_category and
        task_difficulty (str: the task's `Task.category` / `Task.difficulty` labels, for metrics per
        kind; never in the observation).

    Episode end: terminated when the task ends (answer given, user stops, transfer); truncated
    at ``max_turns`` turns, after ``max_errors`` malformed actions, or when the agent reported
    that its own model failed (`add_orchestrator_usage` with ``error``: end_reason
    ``"orchestrator_error"``, an infrastructure failure, not the policy's); outcome 0 then.

    Arguments:
        max_turns: turn limit (paper: 50).
        max_errors: malformed actions tolerated before the episode is cut (the limit-th error ends it).
        max_observation_chars: observation is the last this many characters of the transcript.
        preference: default preference vector (dict or `Preference`); `reset` options override.
        preference_in_prompt: state the episode's preference vector in the system prompt
            (`Preference.describe`, one line at its end), so that the orchestrator can follow it
            (paper Sec. 3.2 / 6.4: the preference is an input of the orchestrator). Default False
            (the prompt is unchanged).
        preference_levels: with `preference_in_prompt`, the line also says the cost and latency
            weights in words (`Preference.describe_levels`: ``(cost high, latency none)``), as the
            paper's preference instructions state a preference in language (Sec. 3.3); a held-out
            vector then reads like the training vectors of the same level. Default False.
        preference_form: with `preference_in_prompt`, how the line states the preference: ``"numeric"``
            (default: the weights, as above) or ``"text"`` (a natural-language instruction drawn per episode
            with the env's seeded RNG from `orchestra_gym.preference_text`, the paper's form; no numbers).
        preference_split: with ``preference_form="text"``, ``"train"`` (default) or ``"eval"`` (held-out
            wordings, never used in training).
        pricing: pricing schedule name, `PricingSchedule`, or an int seed for
            `pricing.random_schedule`; `reset` options override.
        render_mode: None or ``"ansi"`` (the transcript).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}
    #: Whether an episode cut at ``max_turns`` is a graded failure of valid actions (``info["answered"]``
    #: True) or an episode without a final answer (False). QA envs: False (the answer tool was never
    #: called). Function-calling envs: True, as tau2-bench scores a simulation that reached
    #: ``max_steps`` (reward 0): the agent's valid actions led there, so it is an outcome to learn from.
    turn_limit_graded: bool = False
    #: Whether an episode cut after ``max_errors`` malformed actions is a graded failure when the agent
    #: had taken at least one valid action before (``info["answered"]`` True, outcome 0). QA envs:
    #: False. Function-calling envs: True, as tau2-bench's evaluator scores every simulation that did
    #: not end by the agent or the user (``TOO_MANY_ERRORS`` as ``MAX_STEPS``: reward 0). An episode of
    #: malformed actions only stays unanswered (the paper's format filter, Sec. 3.2, drops it).
    error_limit_graded: bool = False
    #: The env's fixed task list, set by subclasses that have one (tau2: id -> `Task`; HLE, FRAMES: a list),
    #: and its ids in draw order; None for generated tasks (ToolScale). Read through `describe`.
    tasks: "list[Task] | dict[Any, Task] | None" = None
    task_ids: "list[Any] | None" = None

    def __init__(
        self,
        max_turns: int = 50,
        max_errors: int = 5,
        max_observation_chars: int = 200_000,
        preference: "dict | Preference | None" = None,
        pricing: "str | int | pricing_mod.PricingSchedule | None" = None,
        render_mode: str | None = None,
        preference_in_prompt: bool = False,
        preference_levels: bool = False,
        preference_form: str = "numeric",
        preference_split: str = "train",
    ):
        max_turns, max_errors = _count("max_turns", max_turns), _count("max_errors", max_errors)
        max_observation_chars = _count("max_observation_chars", max_observation_chars)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.max_turns = int(max_turns)
        self.max_errors = int(max_errors)
        self.max_observation_chars = int(max_observation_chars)
        self.default_preference = Preference.from_dict(preference)
        self.preference = self.default_preference  # the episode's, set by reset
        self.pricing: "pricing_mod.PricingSchedule | None" = None  # the episode's, set by reset
        self.preference_in_prompt = bool(preference_in_prompt)
        self.preference_levels = bool(preference_levels)
        if preference_form not in ("numeric", "text"):
            raise ValueError(f"preference_form must be 'numeric' or 'text', got {preference_form!r}")
        if preference_split not in ("train", "eval"):
            raise ValueError(f"preference_split must be 'train' or 'eval', got {preference_split!r}")
        self.preference_form, self.preference_split = preference_form, preference_split
        self.default_pricing = pricing
        self.render_mode = render_mode
        self.observation_space = TextSpace(max_length=self.max_observation_chars)
        self.action_space = TextSpace(max_length=1_000_000)
        self.messages: list[Message] = []
        self.task: Task | None = None
        self._started = False

    # ----------------------------------------------------------------- hooks for subclasses
    def _sample_task(self, task_id: Any | None) -> Task:
        """Return the task with `task_id`, or one drawn with ``self.np_random`` when None."""
        raise NotImplementedError

    def _start_episode(self, task: Task, options: dict[str, Any]) -> list[Message]:
        """Set up the episode's tools and state; return the opening messages (system, user...)."""
        raise NotImplementedError

    def _tool_specs(self) -> list[ToolSpec]:
        """The tools the policy may call this episode (after the ``tools`` option filter)."""
        raise NotImplementedError

    def _execute(self, call: ToolCall) -> tuple[ToolResult, list[Message]]:
        """Run one tool call. Return its result and any extra messages to append after the tool
        message (e.g. the user's reply when an expert's action was a message). Must not raise."""
        raise NotImplementedError

    def _user_turn(self, text: str) -> list[Message]:
        """Deliver a message to the user; return the user's reply messages. Default: no user."""
        return [Message("user", "There is no user to talk to in this environment; use the tools.")]

    def _grade(self) -> tuple[float, dict[str, Any]]:
        """Outcome in [0, 1] and a breakdown dict."""
        raise NotImplementedError

    @property
    def reward_layout(self) -> RewardLayout:
        """The layout of this episode's reward vector (paper Sec. 3.2): which tools' calls it counts,
        its component names, how it is built from ``info``. Default rule:
        `RewardLayout.from_tool_specs` over the episode's tools (the models of the model tools,
        else the tool names); subclasses may override. Read it after ``reset``."""
        return RewardLayout.from_tool_specs(self._tool_specs())

    def describe(self) -> EnvDescription:
        """What this env offers in the current episode (`orchestra_gym.description.EnvDescription`): tools,
        offered experts, reward layout, preference and its weights, pricing, task ids, domains and categories.

        The one public view callers read instead of the env's attributes; read it after ``reset`` (before
        the first ``reset`` the episode's fields are empty). Subclasses extend it (experts, pool, labels)."""
        preference = self.preference
        tools = tuple(self._tool_specs()) if self._started else ()
        layout = self.reward_layout if self._started else RewardLayout(())
        pricing = self.pricing
        domains, categories = self._task_labels()
        return EnvDescription(
            env_class=type(self).__name__, tools=tools, experts={}, expert_tool=False, expert_pool=None,
            reward_layout=layout, preference=preference,
            preference_weights=tuple(float(w) for w in layout.preference_weights(preference.to_dict())),
            pricing=pricing, pricing_schedule=pricing.name if pricing is not None else "",
            task_id=self.task.id if self.task is not None else None,
            task_ids=tuple(self.task_ids or ()), domains=domains, categories=categories, max_turns=self.max_turns,
            oracle=type(self).oracle_action is not OrchestraEnv.oracle_action)

    def oracle_action(self) -> str:
        """The golden next action (text), for the oracle agent: an upper bound, not a policy. Envs that
        know their tasks' golden actions override it (`describe().oracle` says whether one does).

        Raises:
            NotImplementedError: this env has no oracle.
        """
        raise NotImplementedError(f"{type(self).__name__} exposes no oracle_action()")

    def _task_labels(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(domains, categories) of the tasks the env draws, sorted: from `tasks` by default."""
        items = list(self.tasks.values()) if isinstance(self.tasks, dict) else list(self.tasks or [])
        return tuple(sorted({str(t.domain) for t in items})), tuple(sorted({str(t.category) for t in items}))

    def reward_vector_so_far(self) -> np.ndarray:
        """The reward vector M of the episode as it stands (paper Sec. 3.2): its tool calls, cost (USD)
        and latency (s) so far, outcome 0 (an episode cut before its end, e.g. by a trainer's token or
        turn limit, has no graded outcome). float64 [K], laid out by `reward_layout`; after the end it
        equals ``info["reward_vector"]`` except for the outcome.

        Raises:
            gymnasium.error.ResetNeeded: before `reset`.
        """
        if not self._started:
            raise ResetNeeded("reward_vector_so_far() was called before reset(); call reset() first")
        return self.reward_layout.vector(self.tool_call_counts, 0.0, float(self.usage.cost_usd),
                                         float(self.usage.latency_s))

    # ----------------------------------------------------------------- state set by subclasses
    def _end(self, reason: str) -> None:
        """Subclasses call this to terminate the episode (answer given, user stopped, transfer)."""
        if self._end_reason is None:
            self._end_reason = reason

    # ----------------------------------------------------------------- Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode.

        Options:
            task_id: which task (default: drawn with the env's seeded RNG).
            preference: preference vector dict ``{"tools": {...}, "outcome", "cost", "latency"}``.
            tools: list of tool names to expose (a subset of the env's tools).
            pricing: schedule name, `PricingSchedule`, or an int seed for a random schedule.
            user: user simulator (env-specific; ``"scripted"`` or a model id).
            experts: the offered experts' names (function-calling envs with an ``expert_pool`` only).

        Raises:
            ValueError: unknown option key or bad option value (the message names it).
        """
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - set(_OPTION_KEYS)
        if unknown:
            raise ValueError(f"unknown reset option(s) {sorted(unknown)}; allowed: {list(_OPTION_KEYS)}")
        if options.get("experts") is not None and not getattr(self, "accepts_experts_option", False):
            raise ValueError("options['experts'] needs an env built with expert_pool= (function-calling envs)")
        self.preference = Preference.from_dict(options.get("preference", self.default_preference))
        self.pricing = self._resolve_pricing(options.get("pricing", self.default_pricing))
        self.turn = 0
        self.error_count = 0
        self.tool_errors = 0  # tool calls whose tool failed (info["tool_errors"])
        self.argument_error_turns = 0  # steps with a call whose arguments break its tool's schema
        self._step_argument_errors: list[dict[str, str]] = []
        self.valid_actions = 0  # steps with at least one action that parsed (see error_limit_graded)
        self._end_reason: str | None = None
        self.usage = Usage()
        self.tool_call_counts: dict[str, float] = {}
        self.trajectory: list[ToolCall] = []
        self.agent_messages: list[str] = []
        self.orchestrator_usage = Usage()
        self._orchestrator_step = Usage()
        self._orchestrator_report: tuple[Usage, str | None] | None = None
        self.task = self._sample_task(options.get("task_id"))
        opening = self._start_episode(self.task, options)
        if self.preference_in_prompt and opening and opening[0].role == "system":
            if self.preference_form == "text":
                from orchestra_gym.preference_text import instruction

                line = instruction(self.preference, self.np_random, self.preference_split)
            else:
                line = self.preference.describe_levels() if self.preference_levels else self.preference.describe()
            opening[0] = Message("system", f"{opening[0].content}\n{line}")
        if "tools" in options and options["tools"] is not None:
            self._check_tool_subset(options["tools"])
        self.messages = list(opening)
        self._started = True
        info = self._info(Usage(), opening, [])
        return self._observation(), info

    def step(self, action: "str | dict | list") -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Take one orchestrator turn. Never raises for a malformed action (see class docstring).

        Raises:
            gymnasium.error.ResetNeeded: `step` before `reset`, or after the episode ended
                (terminated or truncated); call `reset` first.
        """
        if not self._started:
            raise ResetNeeded("step() was called before reset(); call reset() to start an episode")
        if self._end_reason is not None:
            raise ResetNeeded(
                f"the episode has ended ({self._end_reason}); call reset() to start a new one before step()"
            )
        self.turn += 1
        orchestrator, orchestrator_error = self._orchestrator_report or (Usage(), None)
        self._orchestrator_report = None
        self._orchestrator_step = orchestrator
        self.orchestrator_usage = self.orchestrator_usage + orchestrator
        self._step_argument_errors = []
        if orchestrator_error is not None:
            return self._orchestrator_failed(orchestrator, orchestrator_error)
        parsed: ParsedAction = parse_action(action)
        raw = parsed.raw  # the action's text, lone surrogates scrubbed (parsing.scrub_text)
        new: list[Message] = [Message("assistant", raw, tool_calls=list(parsed.tool_calls) or None)]
        step_usage = Usage()
        step_errors = list(parsed.errors)
        self._step_errors = step_errors

        if parsed.errors and not parsed.tool_calls and parsed.message is None:
            self.error_count += 1
            new.append(
                Message(
                    "user",
                    f"[environment] {parsed.error_text()}\n(malformed outputs so far: {self.error_count} of "
                    f"{self.max_errors} allowed)",
                )
            )
            if self.error_count >= self.max_errors:
                self._end_reason = "too_many_errors"
        else:
            self.valid_actions += 1
            if parsed.errors:  # partly valid: run what parsed, tell the policy what did not
                self.error_count += 1
                new.append(Message("user", f"[environment] Part of your output was ignored. {parsed.error_text()}"))
            for call in parsed.tool_calls:
                if self._end_reason is not None:
                    break
                result, extra = self._run_call(call)
                step_usage = step_usage + result.usage
                new.append(Message("tool", result.content, tool_call_id=call.id, name=call.name))
                new.extend(extra)
            if parsed.message is not None and self._end_reason is None:
                self.agent_messages.append(parsed.message)
                new.extend(self._user_turn(parsed.message))

        self.messages.extend(new)
        if self._step_argument_errors:
            self.argument_error_turns += 1
        step_usage = step_usage + orchestrator
        self.usage = self.usage + step_usage
        terminated = self._end_reason is not None and self._end_reason not in ("too_many_errors",)
        truncated = False
        if self._end_reason == "too_many_errors":
            truncated = True
        elif not terminated and self.turn >= self.max_turns:
            truncated = True
            self._end_reason = "turn_limit"
        info = self._info(step_usage, new, step_errors)
        reward = 0.0
        if terminated or truncated:
            reward = self._finish(info, premature=truncated)
        return self._observation(), reward, terminated, truncated, info

    def add_orchestrator_usage(self, usage: Usage, error: str | None = None) -> None:
        """Charge the orchestrator's own model call (tokens, USD, seconds) to the next `step`.

        An agent whose policy is a priced model (`orchestra_gym.agents.LLMAgent`) calls this
        before returning its action; the next step reports the usage as ``orchestrator_*`` and
        adds it to the step's and the episode's totals (and so to the reward vector's cost and
        latency). Reports before one step add up. With ``error`` (the model could not be reached
        after its retries) the next step ignores its action and ends the episode truncated, with
        end_reason ``"orchestrator_error"``, outcome 0 and the error text in ``step_errors``: an
        infrastructure failure, counted neither as a parse error nor as the policy's.

        Raises:
            RuntimeError: before `reset`.
        """
        if not self._started:
            raise RuntimeError("call reset() before add_orchestrator_usage()")
        before, before_error = self._orchestrator_report or (Usage(), None)
        self._orchestrator_report = (before + usage, error if error is not None else before_error)

    def _orchestrator_failed(self, usage: Usage, error: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """The step after the agent reported that its model failed: end the episode (truncated)."""
        self._end_reason = "orchestrator_error"
        self.usage = self.usage + usage
        new = [Message("user", f"[environment] the orchestrator's model failed: {error}")]
        self.messages.extend(new)
        info = self._info(usage, new, [error])
        return self._observation(), self._finish(info, premature=True), False, True, info

    def render(self) -> str | None:
        """The transcript as text (``render_mode="ansi"``)."""
        if self.render_mode == "ansi":
            return render_transcript(self.messages)
        return None

    # ----------------------------------------------------------------- internals
    def _run_call(self, call: ToolCall) -> tuple[ToolResult, list[Message]]:
        allowed = {t.name for t in self._tool_specs()}
        self.trajectory.append(call)
        if call.name not in allowed:
            self.error_count += 1
            msg = f"unknown tool {call.name!r}{did_you_mean(call.name, sorted(allowed))}; known tools: {sorted(allowed)}"
            self._step_errors.append(msg)
            return ToolResult(f"Error: {msg}", error=True), []
        self.tool_call_counts[call.name] = self.tool_call_counts.get(call.name, 0.0) + 1.0
        try:
            result, extra = self._execute(call)
        except Exception as e:  # a tool bug must not end the episode: report it as the result
            result, extra = ToolResult(f"Error: tool {call.name!r} failed: {type(e).__name__}: {e}", error=True), []
        if result.error or result.metadata.get("sandbox_error"):  # counted in info["tool_errors"]
            self.tool_errors += 1
        noted = self._note_ignored_arguments(call, result)
        self._count_argument_errors(call, noted_unknown=noted is not result)
        return noted, extra

    def _count_argument_errors(self, call: ToolCall, noted_unknown: bool) -> None:
        """Record where the call's arguments break its tool's schema (`ToolSpec.argument_errors`):
        ``info["argument_errors"]`` entries and ``step_errors`` texts naming the tool and the field.
        Counted apart from ``parse_errors`` (``argument_error_turns``): ``max_errors`` and the
        observation are unchanged. Unknown names that `_note_ignored_arguments` already reported
        get no second text."""
        spec = next((t for t in self._tool_specs() if t.name == call.name), None)
        errors = spec.argument_errors(call.arguments) if spec is not None else []
        for field_name, problem in errors:
            self._step_argument_errors.append({"tool": call.name, "field": field_name, "problem": problem})
            if not (noted_unknown and problem.startswith("unknown argument")):
                self._step_errors.append(f"{call.name}: argument {field_name!r}: {problem}")

    def _note_ignored_arguments(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """A call that ran with argument names its schema lacks: say so in the result and count
        an error, as a parse error would (a call that failed already says what was wrong)."""
        spec = next((t for t in self._tool_specs() if t.name == call.name), None)
        ignored = spec.unknown_arguments(call.arguments) if spec is not None and not result.error else []
        if not ignored:
            return result
        known = list(spec.parameters.get("properties", {}))
        msg = f"{call.name}: ignored unknown argument(s) {ignored}; {call.name} takes {known}"
        self.error_count += 1
        self._step_errors.append(msg)
        return ToolResult(f"{result.content}\n[environment] {msg}", result.error, result.usage, result.metadata)

    def _count(self, key: str) -> None:
        self.tool_call_counts[key] = self.tool_call_counts.get(key, 0.0) + 1.0

    def _check_tool_subset(self, names: Any) -> None:
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"options['tools'] must be a list of tool names, got {names!r}")

    def _resolve_pricing(self, p: Any) -> pricing_mod.PricingSchedule:
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool):
            return pricing_mod.random_schedule(int(p))
        try:
            return pricing_mod.get_schedule(p)
        except KeyError as e:
            raise ValueError(f"options['pricing']: {e.args[0]}") from None

    def _observation(self) -> str:
        text = render_transcript(self.messages)
        if len(text) > self.max_observation_chars:
            text = text[-self.max_observation_chars :]
        return text

    def _info(self, step_usage: Usage, new: list[Message], step_errors: list[str]) -> dict[str, Any]:
        return {
            "cost_usd": float(step_usage.cost_usd),
            "latency_s": float(step_usage.latency_s),
            "prompt_tokens": float(step_usage.prompt_tokens),
            "completion_tokens": float(step_usage.completion_tokens),
            "episode_cost_usd": float(self.usage.cost_usd),
            "episode_latency_s": float(self.usage.latency_s),
            "episode_prompt_tokens": float(self.usage.prompt_tokens),
            "episode_completion_tokens": float(self.usage.completion_tokens),
            "orchestrator_cost_usd": float(self._orchestrator_step.cost_usd),
            "orchestrator_latency_s": float(self._orchestrator_step.latency_s),
            "orchestrator_prompt_tokens": float(self._orchestrator_step.prompt_tokens),
            "orchestrator_completion_tokens": float(self._orchestrator_step.completion_tokens),
            "episode_orchestrator_cost_usd": float(self.orchestrator_usage.cost_usd),
            "episode_orchestrator_latency_s": float(self.orchestrator_usage.latency_s),
            "episode_orchestrator_prompt_tokens": float(self.orchestrator_usage.prompt_tokens),
            "episode_orchestrator_completion_tokens": float(self.orchestrator_usage.completion_tokens),
            "tool_calls": dict(self.tool_call_counts),
            "parse_errors": float(self.error_count),
            "step_errors": list(step_errors),
            "argument_errors": list(self._step_argument_errors),
            "argument_error_turns": float(self.argument_error_turns),
            "tool_errors": float(self.tool_errors),
            "turn": float(self.turn),
            "preference": self.preference.to_dict(),
            "new_messages": [m.to_dict() for m in new],
        }

    def _finish(self, info: dict[str, Any], premature: bool) -> float:
        if premature:
            outcome, breakdown = 0.0, {"premature_end": self._end_reason}
        else:
            outcome, breakdown = self._grade()
        info.update(self.reward_layout.end_info(info, outcome, copy.deepcopy(breakdown), str(self._end_reason)))
        info["answered"] = bool(
            not premature
            or (self._end_reason == "turn_limit" and self.turn_limit_graded)
            or (self._end_reason == "too_many_errors" and self.error_limit_graded and self.valid_actions > 0))
        # the task's labels, for metrics per kind (the orchestrator is never shown them)
        info["task_category"] = str(self.task.category)
        info["task_difficulty"] = str(self.task.difficulty)
        return float(outcome)
