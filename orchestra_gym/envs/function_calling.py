"""Function-calling environments: domain tools + ``call_expert`` + messages to a user simulator.

The paper's function-calling setting (ToolOrchestra Sec. 4, tau2-bench and ToolScale): the
orchestrator serves a user through a domain's tools (databases behind a policy document). Besides
the domain tools it may call an expert model, ``call_expert(expert)``, which reads the
conversation and proposes the next action; the proposal (a tool call or a message to the user) is
carried out as the orchestrator's action for the turn, and the expert's tokens, price and latency
are charged.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import numpy as np

from orchestra_gym.description import EnvDescription
from orchestra_gym.domains.backend import DomainBackend
from orchestra_gym.env import FORMAT_HELP, OrchestraEnv, render_transcript
from orchestra_gym.envs.model_experts import ModelExpert, experts_from_models_file
from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.pricing import EXPERT_POOL
from orchestra_gym.rewards import RewardLayout
from orchestra_gym.tools.pools import offer_table
from orchestra_gym.tools.simulated import DEFAULT_EXPERTS, SimulatedModel, with_profiles
from orchestra_gym.types import Message, Task, ToolCall, ToolResult, ToolSpec, Usage
from orchestra_gym.users import STOP, TRANSFER, ScriptedUser

__all__ = ["FunctionCallingEnv", "ToolScaleEnv", "ModelExpert", "CLOSING_LINE"]

CLOSING_LINE = "Your request has been completed. Is there anything else I can help you with?"


def _canonical(call: ToolCall) -> str:
    return json.dumps([call.name, call.arguments], sort_keys=True, ensure_ascii=False, default=str)


EXPERT_SCOPES = ("action", "turn")
MAX_EXPERT_ACTIONS = 16  # with expert_scope="turn": the most actions one call_expert carries out


class FunctionCallingEnv(OrchestraEnv):
    """Base of the tau2 and ToolScale environments (see `ToolScaleEnv` for the full docstring).

    Subclasses implement `_sample_task` and `_new_backend(task) -> DomainBackend`.

    Arguments (besides `OrchestraEnv`'s):
        experts: the expert pool: `SimulatedModel`s (offline) or chat models with a
            ``complete(messages, tools=...)`` method (``name`` attribute = the anonymised id).
            Default: `orchestra_gym.tools.simulated.DEFAULT_EXPERTS`.
        expert_tool: expose ``call_expert`` (True, the paper's setting).
        models: a models file (path or `ModelsConfig`): the experts become the real chat models
            behind ``expert-1..3`` (the file's aliases) and the file's prices join the schedule.
        cache: with `models`, a record/replay cache (SQLite path or `CallCache`) for expert calls;
            cache_mode: its mode (``off``, ``record``, ``replay``, ``record-missing``).
        system_prompt: ``"full"`` (policy document + every tool's JSON schema, the paper's
            prompt) or ``"compact"`` (one line per tool and the expert price table, no policy:
            for small policies and fast CPU training).
        expert_scope: what one ``call_expert`` hands over. ``"action"`` (default): the expert
            chooses and carries out the next action only (one tool call or one message).
            ``"turn"``: the expert carries out the agent's whole turn in tau2-bench's sense: tool
            calls, each seeing the results before it, until it sends a message to the user (at
            most `MAX_EXPERT_ACTIONS` actions; each action is charged like a call and counts as
            a step toward ``max_turns``, as tau2-bench's ``max_steps`` counts every message). The
            orchestrator then decides per turn whom to delegate to, not per action.
        expert_profiles: changes to the simulated experts' profiles, ``{name: {field: value}}``
            (`orchestra_gym.tools.simulated.with_profiles`: latency fields and per-category
            accuracies), e.g. ``{"expert-3": {"decode_tok_s": 20}}`` for a cheap but slow
            self-hosted model; simulated experts only (not with `models`). Default: none.
        expert_pool: None (default: the fixed `experts` above, today's behaviour) or a pool name / `ExpertPool`
            (`orchestra_gym.tools.pools`, e.g. ``"specialists"``): each episode offers a seeded subset of it at a
            pricing schedule, the prompt describes what is offered (description, price, latency, accuracy per
            kind) and ``call_expert``'s enum lists only it. Not with `experts`, `models` or `expert_profiles`.
        offer_size: with a pool, how many experts an episode offers: an int or ``[low, high]`` (inclusive);
            None: every expert the held-out mode allows.
        held_out_experts: with a pool, ``"exclude"`` (default, training: the pool's held-out experts are never
            offered), ``"include"`` or ``"only"`` (every offer holds at least one held-out expert: the unseen-
            experts test).
        pricing_schedules: with a pool, the schedules an episode is drawn at: a list of names (uniform) or
            ``{name: weight}``; names of `orchestra_gym.pricing.SCHEDULES` or ``"random"`` (seeded multipliers of
            the paper's prices). Default ``["paper"]``. ``reset(options={"experts": [...], "pricing": name})``
            fixes both for an episode; ``info`` reports ``offered_experts``, ``offered_prices`` ({name:
            {"input_per_m", "output_per_m"}} USD per 1M tokens) and ``pricing_schedule`` (its name).
        offer_format: how a pool's offered experts are described: ``"text"`` (default: a sentence and the prices,
            latency and accuracy per kind in words, `PoolExpert.describe`) or ``"table"`` (the same prices,
            latency and stated accuracies as one table row each, `orchestra_gym.tools.pools.offer_table`: far
            fewer tokens, for small pretrained policies on CPU). Pool experts only.
    """

    MODEL_TOOL_IDS: tuple[str, ...] = tuple(EXPERT_POOL)  # the model tools a models file may make real
    turn_limit_graded = True  # tau2-bench: a simulation that reaches max_steps is scored (reward 0)
    error_limit_graded = True  # and one that ends by too many errors (reward 0), after a valid action

    def __init__(
        self,
        experts: "list[Any] | None" = None,
        expert_tool: bool = True,
        system_prompt: str = "full",
        models: Any = None,
        cache: Any = None,
        cache_mode: str = "record-missing",
        expert_scope: str = "action",
        expert_profiles: "dict[str, dict[str, Any]] | None" = None,
        expert_pool: Any = None,
        offer_size: Any = None,
        held_out_experts: str = "exclude",
        pricing_schedules: Any = None,
        offer_format: str = "text",
        **kwargs: Any,
    ):
        if offer_format not in ("text", "table"):
            raise ValueError(f"offer_format must be 'text' or 'table', got {offer_format!r}")
        if offer_format == "table" and expert_pool is None:
            raise ValueError("offer_format='table' describes a pool's experts; it needs expert_pool=")
        self.offer_format = offer_format
        self.pool = None
        if expert_pool is not None:
            from orchestra_gym.tools.pools import get_pool

            if experts is not None or models is not None or expert_profiles:
                raise ValueError("expert_pool= replaces experts=, models= and expert_profiles=; pass one of them")
            self.pool = get_pool(expert_pool)
            experts = list(self.pool.experts)
            self.pool.sample_offer(np.random.default_rng(0), offer_size, held_out_experts)  # validate early
            self.offer_size, self.held_out_experts = offer_size, held_out_experts
            sched = ["paper"] if pricing_schedules is None else pricing_schedules
            weights = dict(sched) if isinstance(sched, dict) else {n: 1.0 for n in sched}
            if not weights or any(not (float(w) >= 0) for w in weights.values()) or sum(weights.values()) <= 0:
                raise ValueError(f"pricing_schedules must name schedules with weights >= 0, got {pricing_schedules!r}")
            for n in weights:
                self.pool.resolve_schedule(n, np.random.default_rng(0))  # unknown names fail here
            self.pricing_schedules = {str(n): float(w) for n, w in weights.items()}
        elif pricing_schedules is not None or offer_size is not None or held_out_experts != "exclude":
            raise ValueError("offer_size, held_out_experts and pricing_schedules need expert_pool=")
        self.accepts_experts_option = self.pool is not None
        if expert_scope not in EXPERT_SCOPES:
            raise ValueError(f"expert_scope must be one of {EXPERT_SCOPES}, got {expert_scope!r}")
        self.expert_scope = expert_scope
        if expert_profiles and models is not None:
            raise ValueError("expert_profiles changes simulated experts only; drop it or models= (real experts take "
                             "their latency and accuracy from their endpoints)")
        if models is not None:
            if experts is not None:
                raise ValueError("pass either experts= or models=, not both")
            experts, schedule = experts_from_models_file(models, cache=cache, cache_mode=cache_mode)
            kwargs.setdefault("pricing", schedule)
        elif cache is not None:
            raise ValueError("cache= needs models= (simulated experts are free and deterministic; nothing to cache)")
        super().__init__(**kwargs)
        if system_prompt not in ("full", "compact"):
            raise ValueError(f"system_prompt must be 'full' or 'compact', got {system_prompt!r}")
        self.system_prompt_mode = system_prompt
        pool = list(DEFAULT_EXPERTS if experts is None else experts)
        if expert_profiles:
            if not all(isinstance(e, SimulatedModel) for e in pool):
                raise ValueError("expert_profiles changes simulated experts only; drop it or models= (real "
                                 "experts take their latency and accuracy from their endpoints)")
            pool = list(with_profiles(pool, expert_profiles))
        names = [getattr(e, "name", None) for e in pool]
        if any(not isinstance(n, str) for n in names) or len(set(names)) != len(names):
            raise ValueError(f"experts need unique string .name attributes, got {names}")
        self.experts = {e.name: e for e in pool}
        self.all_experts = dict(self.experts)
        self.expert_tool = bool(expert_tool) and bool(self.experts)
        self.backend: DomainBackend | None = None

    # ------------------------------------------------------------------ subclass hooks
    def _new_backend(self, task: Task) -> DomainBackend:
        raise NotImplementedError

    def _user_for(self, task: Task, options: dict[str, Any]) -> Any:
        user = options.get("user", "scripted")
        if user not in (None, "scripted"):
            raise ValueError(f"options['user']={user!r}: this environment has only the 'scripted' user")
        return ScriptedUser(task.user_scenario)

    # ------------------------------------------------------------------ episode
    def _start_episode(self, task: Task, options: dict[str, Any]) -> list[Message]:
        self.backend = self._new_backend(task)
        self.user = self._user_for(task, options)
        self._golden_done = 0
        self._seed_mix = (task.id, int(self.np_random.integers(0, 2**31 - 1)))
        if self.pool is not None:
            self._offer(options)
        specs = list(self.backend.tools)
        if self.expert_tool:
            specs.append(self._expert_spec())
        subset = options.get("tools")
        if subset is not None:
            self._check_tool_subset(subset)
            known = {s.name for s in specs}
            bad = [n for n in subset if n not in known]
            if bad:
                raise ValueError(f"options['tools'] names unknown tool(s) {bad}; known tools: {sorted(known)}")
            specs = [s for s in specs if s.name in set(subset)]
        self.tool_specs = specs
        return [Message("system", self._system_prompt()), Message("user", self.user.opening())]

    def _offer(self, options: dict[str, Any]) -> None:
        """Pool mode: this episode's offered experts and pricing schedule (options fix them, else drawn)."""
        fixed = options.get("experts")
        if fixed is not None:
            bad = [n for n in fixed if n not in self.all_experts]
            if bad or not fixed or len(set(fixed)) != len(fixed):
                raise ValueError(f"options['experts'] must be distinct names of pool {self.pool.name!r}, got "
                                 f"{fixed!r}; known: {list(self.all_experts)}")
            offered = list(fixed)
        else:
            offered = self.pool.sample_offer(self.np_random, self.offer_size, self.held_out_experts)
        request = self._pricing_request
        if request is None:
            names = list(self.pricing_schedules)
            w = np.array([self.pricing_schedules[n] for n in names])
            request = names[int(self.np_random.choice(len(names), p=w / w.sum()))]
        try:
            self.pricing = self.pool.resolve_schedule(request, self.np_random)
        except KeyError as e:
            raise ValueError(f"options['pricing']: {e.args[0]}") from None
        self.pricing_name = request if isinstance(request, str) else self.pricing.name
        self.experts = {n: self.all_experts[n] for n in offered}

    def _resolve_pricing(self, p: Any) -> Any:
        if self.pool is None:
            return super()._resolve_pricing(p)
        self._pricing_request = p  # resolved with the offer (`_offer`): "random" draws from the episode's RNG
        return super()._resolve_pricing(None)

    def _info(self, step_usage: Usage, new: list[Message], step_errors: list[str]) -> dict[str, Any]:
        info = super()._info(step_usage, new, step_errors)
        if self.pool is not None and self.task is not None:
            prices = {n: self.pricing.price(e.model_id) for n, e in self.experts.items()}
            info["offered_experts"] = list(self.experts)
            info["offered_prices"] = {n: {"input_per_m": p.input_per_m, "output_per_m": p.output_per_m}
                                      for n, p in prices.items()}
            info["pricing_schedule"] = self.pricing_name
        return info

    def _tool_specs(self) -> list[ToolSpec]:
        return self.tool_specs

    def close(self) -> None:
        """Release HTTP clients of real experts and of an LLM user."""
        users_model = getattr(getattr(self, "user", None), "model", None)
        for obj in [*(getattr(e, "model", e) for e in self.experts.values()), users_model]:
            close = getattr(obj, "close", None)
            if callable(close):
                close()
        super().close()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """`OrchestraEnv.reset`; ``info`` also has ``tools`` (OpenAI schemas) and ``task_id``."""
        obs, info = super().reset(seed=seed, options=options)
        info["tools"] = [s.to_openai() for s in self.tool_specs]
        info["task_id"] = self.task.id
        return obs, info

    def describe(self) -> EnvDescription:
        """`OrchestraEnv.describe` with the offered experts (this episode's offer in pool mode; all of them
        before the first ``reset``), whether ``call_expert`` is exposed, the pool's name and the schedule's
        name as requested (``"random"`` for a drawn one)."""
        d = super().describe()
        name = self.pricing_name if (self.pool is not None and self._started) else d.pricing_schedule
        return dataclasses.replace(d, experts=dict(self.experts), expert_tool=self.expert_tool,
                                   expert_pool=self.pool.name if self.pool is not None else None,
                                   pricing_schedule=name)

    @property
    def reward_layout(self) -> RewardLayout:
        """The reward vector counts the calls of each expert of the pool (paper Sec. 3.2; kept
        with ``expert_tool=False``, where every count is 0)."""
        return RewardLayout(tuple(self.all_experts))  # a pool's every expert, offered or not (K is fixed)

    def _expert_spec(self) -> ToolSpec:
        if self.offer_format == "table":
            table = offer_table(list(self.experts.values()), self.pricing)
        else:
            table = "\n".join(
                e.describe(self.pricing) if hasattr(e, "describe") else f"{e.name}: chat model" for e in self.experts.values()
            )
        what = (
            "choose and carry out the next action (a tool call or a message to the user)"
            if self.expert_scope == "action"
            else "carry out your turn (the tool calls it needs, then a message to the user)"
        )
        return ToolSpec(
            name="call_expert",
            description=(
                f"Ask an expert model to {what} for this conversation. Its tokens are charged at its price.\n" + table
            ),
            parameters={
                "type": "object",
                "properties": {"expert": {"type": "string", "enum": list(self.experts), "description": "which expert"}},
                "required": ["expert"],
            },
            kind="model",
        )

    def _system_prompt(self) -> str:
        if self.system_prompt_mode == "compact":
            lines = [f"- {s.name}: {s.description.splitlines()[0]}" for s in self.tool_specs]
            if self.offer_format == "table":
                experts = [offer_table(list(self.experts.values()), self.pricing)]
            else:
                experts = [e.describe(self.pricing) for e in self.experts.values() if hasattr(e, "describe")]
            return "Serve the user with these tools.\n" + "\n".join(lines + experts) + f"\n{FORMAT_HELP}"
        tools = json.dumps([s.to_openai() for s in self.tool_specs], ensure_ascii=False, indent=1)
        return (
            "You are a customer service agent. Follow the policy below, use the tools to act on the "
            "database, and talk to the user with messages. When the user's request is done, tell them "
            "the outcome and ask whether there is anything else.\n\n"
            f"# Policy\n{self.backend.policy}\n\n# Tools\n{tools}\n\n# Output format\n{FORMAT_HELP}"
        )

    # ------------------------------------------------------------------ turns
    def _execute(self, call: ToolCall) -> tuple[ToolResult, list[Message]]:
        if call.name == "call_expert" and self.expert_tool:
            return self._call_expert(call)
        return self._domain_call(call), []

    def _domain_call(self, call: ToolCall) -> ToolResult:
        result = self.backend.call_tool(call.name, call.arguments)
        # Progress along the golden actions counts the call even when it failed: some golden
        # actions fail by design (tau2 v0.2.0 retail tasks 12 and 13), and replaying them is right.
        golden = self.task.golden_actions
        if self._golden_done < len(golden) and _canonical(golden[self._golden_done]) == _canonical(call):
            self._golden_done += 1
        if call.name == "transfer_to_human_agents" and not result.error:
            self._end("transfer")
        return result

    def _user_turn(self, text: str) -> list[Message]:
        reply = self.user.reply(text)
        if reply.stop:
            self._end("user_stop" if TRANSFER not in reply.text else "user_transfer")
        return [Message("user", reply.text)]

    # ------------------------------------------------------------------ experts
    def golden_next_action(self) -> ToolCall | str:
        """The right next action now: the next golden tool call, or the closing message."""
        golden = self.task.golden_actions
        if self._golden_done < len(golden):
            g = golden[self._golden_done]
            # a fresh neutral id: the golden id ("gold_<i>") would tell the policy where it stands
            return ToolCall(g.name, dict(g.arguments), "call_0")
        info = " ".join(self.task.communicate_info)
        return (info + " " if info else "") + CLOSING_LINE

    def _wrong_action(self, right: "ToolCall | str", rng: np.random.Generator) -> "ToolCall | str":
        if isinstance(right, ToolCall):
            wrong = getattr(self.backend, "plausible_wrong_action", None) or getattr(self, "_plausible_wrong", None)
            if wrong is not None:
                return wrong(right, rng)
            return ToolCall(right.name, {k: f"{v}-x" if isinstance(v, str) else v for k, v in right.arguments.items()})
        # a premature or empty closing message: the user hears nothing useful
        return CLOSING_LINE

    def _call_expert(self, call: ToolCall) -> tuple[ToolResult, list[Message]]:
        name = call.arguments.get("expert")
        if name not in self.experts:
            return ToolResult(
                f"Error: call_expert needs 'expert' to be one of {list(self.experts)}, got {name!r}", error=True
            ), []
        self._count(f"{name}")
        if self.expert_scope == "action":
            return self._expert_action(name, "")
        # "turn": act until a message to the user (or the episode ends); each action sees the
        # results of the ones before it (they are part of the expert's request text)
        parts: list[ToolResult] = []
        extra: list[Message] = []
        for i in range(MAX_EXPERT_ACTIONS):
            if i:
                # every action after the first counts as a step toward max_turns, as tau2-bench's
                # max_steps counts every message of the conversation: a turn that retries a
                # failed action spends the episode's budget the same way in either scope
                if self.turn >= self.max_turns:
                    break
                self.turn += 1
            result, extra = self._expert_action(name, "\n".join(r.content for r in parts))
            parts.append(result)
            if "expert_action" not in result.metadata or self._end_reason is not None:
                break
        usage = sum((r.usage for r in parts), Usage())
        metadata = {"expert_actions": [r.metadata["expert_action"] for r in parts if "expert_action" in r.metadata]}
        if "expert_message" in parts[-1].metadata:
            metadata["expert_message"] = parts[-1].metadata["expert_message"]
        text = "\n".join(r.content for r in parts)
        return ToolResult(text, error=any(r.error for r in parts), usage=usage, metadata=metadata), extra

    def _expert_action(self, name: str, done_text: str) -> tuple[ToolResult, list[Message]]:
        """One action by expert `name`; `done_text` is what it already did this turn (scope "turn")."""
        expert = self.experts[name]
        if isinstance(expert, SimulatedModel):
            request = render_transcript(self.messages) + (f"\n{done_text}" if done_text else "")
            reply = expert.respond(
                request,
                self.golden_next_action(),
                lambda rng: self._wrong_action(self.golden_next_action(), rng),
                category=self.task.category,
                difficulty=self.task.difficulty,
                seed=(self._seed_mix, self.turn),
                schedule=self.pricing,
            )
            proposal, usage = reply.value, reply.usage
        else:
            proposal, usage, err = self._real_expert(expert, done_text)
            if err is not None:
                return ToolResult(f"Error: expert {name} failed: {err}", error=True, usage=usage), []
        return self._carry_out(name, proposal, usage)

    def _real_expert(self, expert: Any, done_text: str = "") -> tuple["ToolCall | str", Usage, str | None]:
        domain_specs = [s for s in self.tool_specs if s.name != "call_expert"]
        msgs = [Message("system", self._system_prompt())] + [m for m in self.messages if m.role != "system"]
        if done_text:
            msgs.append(Message("user", f"You have already done this in your turn:\n{done_text}\nContinue."))
        resp = expert.complete(msgs, tools=domain_specs)
        usage = getattr(resp, "usage", Usage())
        if getattr(resp, "error", None):
            return "", usage, str(resp.error)
        msg: Message = resp.message
        if msg.tool_calls:
            return msg.tool_calls[0], usage, None
        return msg.content or "", usage, None

    def _carry_out(self, name: str, proposal: "ToolCall | str", usage: Usage) -> tuple[ToolResult, list[Message]]:
        if isinstance(proposal, ToolCall):
            self._count(proposal.name)
            self.trajectory.append(proposal)
            inner = self._domain_call(proposal)
            text = f"{name} called {render_tool_calls([proposal])}\nResult:\n{inner.content}"
            return ToolResult(text, error=inner.error, usage=usage + inner.usage, metadata={"expert_action": proposal.to_dict()}), []
        self.agent_messages.append(proposal)
        extra = self._user_turn(proposal)
        text = f"{name} sent the user this message:\n{proposal}"
        return ToolResult(text, usage=usage, metadata={"expert_message": proposal}), extra

    def _grade(self) -> tuple[float, dict[str, Any]]:
        domain_calls = [c for c in self.trajectory if c.name != "call_expert"]
        return self.backend.grade(list(self.agent_messages), domain_calls)

    def oracle_action(self) -> "str":
        """The golden next action as model text (for the oracle agent and tests)."""
        nxt = self.golden_next_action()
        if isinstance(nxt, ToolCall):
            return render_tool_calls([nxt])
        return f"<message>{nxt}</message>"


_TASK_ID = re.compile(r"^(?P<domain>[a-z_\-]+)-(?P<seed>\d+)$")


class ToolScaleEnv(FunctionCallingEnv):
    """ToolScale-synthetic: procedurally generated multi-domain customer-service tasks, offline.

    ## Description
    The paper's ToolScale data (ToolOrchestra Sec. 3.3) made procedural: each task is drawn from
    a seed by `orchestra_gym.domains.synthetic` (a domain database, tools with business rules, a
    policy document, golden actions, information to communicate and a user scenario). The
    orchestrator serves a scripted user with the domain tools and may delegate turns to priced,
    fallible simulated experts through ``call_expert``.

    ## Action Space
    ``TextSpace``: the model's text (``<think>``, ``<tool_call>`` JSON blocks, or ``<message>``);
    structured actions (dicts) are accepted too (see `orchestra_gym.parsing`).

    ## Observation Space
    ``TextSpace``: the transcript so far (system prompt with policy and tool schemas, user,
    assistant and tool messages); ``info["new_messages"]`` has this step's messages as dicts.

    ## Rewards
    The outcome at termination (1.0 if all three checks pass, else 0.0); 0 before.
    The preference reward over a group of rollouts: `orchestra_gym.rewards`.

    ## Starting State
    A task drawn with the env's seeded RNG (or ``options["task_id"]`` = ``"<domain>-<seed>"``).

    ## Episode End
    Terminated when the user stops (the agent said the job is done), the agent transfers to a
    human, or the user has nothing more to say; truncated at ``max_turns`` or ``max_errors``.

    ## Arguments
    ``domains``: restrict to these synthetic domains (default all); ``experts``; ``max_turns``
    (default 30, the released code's limit); ``max_errors``; ``preference``; ``pricing``;
    ``expert_scope`` (``"action"``: a call_expert carries out the next action; ``"turn"``: the
    expert's whole turn up to its message to the user, each action a step toward ``max_turns``);
    plus every other keyword of `FunctionCallingEnv` (``expert_tool``, ``system_prompt``, ``models``,
    ``cache``, ``cache_mode``, ``expert_profiles``, ``expert_pool``, ``offer_size``, ``held_out_experts``,
    ``pricing_schedules``) and of `OrchestraEnv` (``max_observation_chars``, ``render_mode``,
    ``preference_in_prompt``, ``preference_levels``, ``preference_form``, ``preference_split``), as documented there.

    ## Info
    See `OrchestraEnv` (usage per step and per episode in tokens, USD, seconds; tool-call counts;
    parse errors); ``reward_breakdown`` has ``execution_correctness``, ``process_fidelity``,
    ``operation_completeness``. ``tools`` (reset only): the tools as OpenAI schemas.

    ## Tools
    Domain tools cost nothing. ``call_expert(expert)``: a simulated expert (the pool
    `orchestra_gym.pricing.EXPERT_POOL`: expert-1 gpt-5, expert-2 gpt-5-mini, expert-3 Qwen3-32B
    prices; accuracies and latency models in `orchestra_gym.tools.simulated`); its proposal is executed as the turn's action.

    ## Version History
    * v0: initial release.
    """

    def __init__(self, domains: "list[str] | None" = None, max_turns: int = 30, **kwargs: Any):
        super().__init__(max_turns=max_turns, **kwargs)
        from orchestra_gym.domains import synthetic

        self._synthetic = synthetic
        known = list(synthetic.DOMAIN_NAMES)
        if domains is not None:
            bad = [d for d in domains if d not in known]
            if bad:
                raise ValueError(f"unknown ToolScale domain(s) {bad}; known: {known}")
        self.domains = list(domains) if domains is not None else known
        self.instance = None

    def _task_labels(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The generator's domains (as given) and its task categories (`orchestra_gym.domains.synthetic.CATEGORIES`)."""
        return tuple(self.domains), tuple(self._synthetic.CATEGORIES)

    def _sample_task(self, task_id: Any | None) -> Task:
        if task_id is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
            domain = self.domains[int(self.np_random.integers(0, len(self.domains)))]
        elif isinstance(task_id, (int, np.integer)):
            seed, domain = int(task_id), None
        else:
            m = _TASK_ID.match(str(task_id))
            if not m:
                raise ValueError(
                    f"options['task_id']={task_id!r}: expected '<domain>-<seed>' (e.g. 'railway-12') or an int seed; "
                    f"domains: {list(self._synthetic.DOMAIN_NAMES)}"
                )
            seed, domain = int(m["seed"]), m["domain"]
            if domain not in self._synthetic.DOMAIN_NAMES:
                raise ValueError(f"options['task_id']={task_id!r}: unknown domain {domain!r}; known: {list(self._synthetic.DOMAIN_NAMES)}")
        self.instance = self._synthetic.make_instance(seed, domain)
        return self.instance.task

    def _new_backend(self, task: Task) -> DomainBackend:
        return self.instance.new_backend()

    def _plausible_wrong(self, call: ToolCall, rng: np.random.Generator) -> ToolCall:
        return self.instance.plausible_wrong_action(call, rng)
