"""Baseline agents for any orchestra environment.

An agent maps the observation (and ``info``) to an action: model text or a structured action.
Agents see the environment only through ``reset(env, observation, info)``; the oracle also reads
the golden next action the environment exposes (``env.unwrapped.oracle_action()``), which is why
it is an upper bound, not a policy.

Agents:
    * ``random``: a uniformly random tool with arguments drawn from its JSON schema, or a random
      message to the user (a lower bound: near-zero success).
    * ``oracle``: plays the env's golden next action: in function-calling envs the golden tool
      calls, then the result to the user (success 1.0 wherever the golden actions solve the task;
      tau2 mock has one task graded on an env assertion its gold actions do not meet); in QA envs
      the right sequence for the question (search each hop of its hidden evidence chain, code when
      the answer needs arithmetic, answer, each with the best model for the kind of question), whose
      simulated models are fallible, so below 1.0 there.
    * ``expert-<k>`` (e.g. ``expert-1``): always delegates the turn to expert k with ``call_expert``
      (function-calling envs: ToolScale, tau2); on the QA envs (HLE, FRAMES, models as tools) the
      fixed rule `QAPipelineAgent` with search-k, reasoner-k and answer-k (k = 1..3).
    * ``cascade``: cheapest-first; calls the cheapest expert, and escalates to the next dearer
      one for the rest of the episode after an expert's action fails (function-calling envs); on
      the QA envs the cheapest model of each tool, the search model escalating after a search
      that found nothing new (`QAPipelineAgent` with ``escalate``).
    * ``delegating``: every turn delegates to an expert drawn uniformly at random (seeded); the
      demonstrator of the trainer's supervised warm start (function-calling envs).
    * ``most-accurate``, ``cheapest``, ``fastest``, ``random-offered``: fixed rules on the offered experts'
      stated properties (`orchestra_gym.agents.rules`, for expert pools); there too the text router
      (`orchestra_gym.agents.rules.TextRouterAgent`, fitted on request text with scikit-learn).
    * ``router`` (`RouterAgent`): the classical router of RouterBench / RouteLLM, a lookup from task
      features (category, difficulty) to one expert, fitted on training tasks
      (`orchestra_gym.agents.fit.fit_router`); not built by name, since it needs a fit.
    * ``llm:<model id>`` (`LLMAgent`): a chat model behind any OpenAI-compatible endpoint named in
      the models file is the orchestrator (the paper's prompted baselines, ToolOrchestra Table 1).

`agent_factory(spec)` turns an agent spec into an `AgentFactory` (the agents of one evaluation, and
the setting an agent brings, e.g. a trained run's env); other packages add spec kinds with
`register_agent_kind` (``policy:<run dir>`` from `orchestra_jax`, which this package never imports).

`orchestra_gym.agents.fit` fits baseline agents on played episodes (`fit_router`); it is not imported
here, since it plays through `orchestra_gym.evaluation`, which builds its agents from this module.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.types import Message, ToolCall

__all__ = ["Agent", "RandomAgent", "OracleAgent", "ExpertAgent", "QAPipelineAgent", "qa_tool_models", "CascadeAgent", "DelegatingAgent", "RouterAgent",
           "LLMAgent", "make_agent", "check_agent_name", "llm_agent", "AgentFactory", "agent_factory",
           "register_agent_kind", "AGENT_NAMES"]


class Agent(Protocol):
    """What `orchestra eval` drives: ``reset`` once per episode, then ``act`` once per turn."""

    name: str

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> "str | dict | list": ...


def _tool_schemas(env: Any, info: dict[str, Any]) -> list[dict[str, Any]]:
    if "tools" in info:
        return list(info["tools"])
    specs = getattr(env.unwrapped, "tool_specs", None) or env.unwrapped._tool_specs()
    return [s.to_openai() for s in specs]


class RandomAgent:
    """Random tool calls with schema-shaped arguments, or a random message (seeded)."""

    name = "random"

    def __init__(self, seed: int = 0, message_prob: float = 0.2):
        self.rng = np.random.default_rng(seed)
        self.message_prob = message_prob

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.tools = _tool_schemas(env, info)

    def _value(self, schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            return schema["enum"][int(self.rng.integers(len(schema["enum"])))]
        t = schema.get("type", "string")
        if t == "integer":
            return int(self.rng.integers(0, 100))
        if t == "number":
            return float(np.round(self.rng.uniform(0, 100), 2))
        if t == "boolean":
            return bool(self.rng.integers(2))
        if t == "array":
            return [self._value(schema.get("items", {"type": "string"})) for _ in range(int(self.rng.integers(1, 3)))]
        if t == "object":
            return {}
        letters = np.array(list(string.ascii_lowercase + string.digits))
        return "".join(self.rng.choice(letters, size=6))

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if not self.tools or self.rng.random() < self.message_prob:
            return "<message>Could you tell me more about your request?</message>"
        fn = self.tools[int(self.rng.integers(len(self.tools)))]["function"]
        props = fn.get("parameters", {}).get("properties", {})
        args = {k: self._value(v) for k, v in props.items()}
        return render_tool_calls([ToolCall(fn["name"], args)])


class OracleAgent:
    """Plays the environment's golden next action each turn (an upper bound)."""

    name = "oracle"

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.env = env.unwrapped
        if not hasattr(self.env, "oracle_action"):
            raise ValueError(f"{type(self.env).__name__} exposes no oracle_action(); the oracle agent cannot run on it")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self.env.oracle_action()


def qa_tool_models(env: Any) -> "dict[str, list[str]]":
    """The models-as-tools of a QA env (`orchestra_gym.envs.qa`, ``mode="orchestra"``): tool name ->
    the ids its ``model`` argument takes, in listed order; empty for other envs."""
    out: dict[str, list[str]] = {}
    for s in getattr(env.unwrapped, "tool_specs", None) or []:
        enum = (s.parameters.get("properties", {}).get("model") or {}).get("enum")
        if s.kind == "model" and enum:
            out[s.name] = list(enum)
    return out


class QAPipelineAgent:
    """A fixed rule on the QA envs' models-as-tools: ``search`` `searches` times, then
    ``enhance_reasoning`` once, then ``answer``, each with a fixed model (or, with `escalate`, the
    cheapest model first and the next dearer one after a search that brought no new document).

    Its queries follow what it reads: the problem for the first search, then the best-ranked new
    document of the last search (which names the next entity to look up); after a search with no
    new document, the problem again. The rule never looks at the kind of question: it is the
    "always the same models" baseline of the QA envs (``expert-<k>``: search-k, reasoner-k,
    answer-k; ``cascade``: escalating).

    Args:
        models: tool -> model id (``{"search": "search-1", ...}``); with `escalate`, ignored.
        searches: searches before reasoning. escalate: the cascade. name: for tables.

    Raises (in `reset`): ValueError when the env has no models-as-tools or lacks a model named.
    """

    def __init__(self, models: "dict[str, str] | None" = None, searches: int = 3, escalate: bool = False,
                 name: str = "qa-pipeline"):
        self.models = dict(models or {})
        self.searches = int(searches)
        self.escalate = bool(escalate)
        self.name = name

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.env = env.unwrapped
        tools = qa_tool_models(env)
        if "answer" not in tools:
            raise ValueError(f"agent {self.name!r} needs a QA env with models as tools (search / enhance_reasoning / answer)")
        if self.escalate:  # cheapest first, by the listed price of each tool's models
            self.order = {t: sorted(ms, key=lambda m: _qa_price(self.env, m)) for t, ms in tools.items()}
            self.models = {t: ms[0] for t, ms in self.order.items()}
        for tool, model in self.models.items():
            if tool not in tools or model not in tools[tool]:
                raise ValueError(f"agent {self.name!r}: the environment has no {tool} model {model!r}; "
                                 f"{tool} models: {tools.get(tool, [])}")
        self.tools = tools
        self.done_searches, self.reasoned, self.before = 0, False, None

    def _query(self) -> str:
        docs = self.env.documents
        if self.before is not None and len(docs) > self.before:
            d = docs[self.before]
            return f"{d.get('title', '')} {d['text']}".strip()
        return self.env.task.prompt

    def act(self, observation: str, info: dict[str, Any]) -> str:
        docs = self.env.documents
        if self.escalate and self.before is not None and len(docs) == self.before and "search" in self.order:
            ms = self.order["search"]
            self.models["search"] = ms[min(ms.index(self.models["search"]) + 1, len(ms) - 1)]
        if "search" in self.tools and self.done_searches < self.searches:
            query = self._query()
            self.before = len(docs)
            self.done_searches += 1
            return render_tool_calls([ToolCall("search", {"query": query, "model": self.models.get("search", self.tools["search"][0])})])
        self.before = None
        if "enhance_reasoning" in self.tools and not self.reasoned:
            self.reasoned = True
            return render_tool_calls([ToolCall("enhance_reasoning", {"model": self.models.get(
                "enhance_reasoning", self.tools["enhance_reasoning"][0])})])
        return render_tool_calls([ToolCall("answer", {"model": self.models.get("answer", self.tools["answer"][0])})])


def _qa_price(env: Any, model: str) -> float:
    """A QA model's listed price (input + output USD per 1M tokens) in the env's schedule; inf if unpriced."""
    from orchestra_gym.envs.qa_tools import QA_MODELS

    for pid in (model, QA_MODELS.get(model, model)):
        try:
            p = env._price_schedule().price(pid)
        except (KeyError, AttributeError):
            continue
        return p.input_per_m + p.output_per_m
    return float("inf")


class ExpertAgent:
    """Always delegates the turn: ``call_expert(expert=<name>)``. On a QA env (no experts, models
    as tools) ``expert-<k>`` is the fixed rule `QAPipelineAgent` with search-k, reasoner-k and answer-k."""

    def __init__(self, expert: str):
        self.expert = expert
        self.name = expert
        self.qa: QAPipelineAgent | None = None

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        experts = getattr(env.unwrapped, "experts", {})
        tools = qa_tool_models(env)
        if not experts and tools and self.expert.startswith("expert-"):
            k = self.expert.split("-", 1)[1]
            wanted = {t: f"{p}-{k}" for t, p in (("search", "search"), ("enhance_reasoning", "reasoner"), ("answer", "answer"))
                      if t in tools}
            self.qa = QAPipelineAgent(wanted, name=self.name)
            self.qa.reset(env, observation, info)
            return
        if self.expert not in experts:
            raise ValueError(f"agent {self.name!r}: the environment has no expert {self.expert!r}; experts: {list(experts)}")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.qa is not None:
            return self.qa.act(observation, info)
        return render_tool_calls([ToolCall("call_expert", {"expert": self.expert})])


def listed_price(env: Any, expert: str, missing: float) -> float:
    """An expert's price as its tool description lists it: input plus output USD per 1M tokens in the
    env's pricing schedule (``env.pricing``); `missing` for an expert without a priced ``model_id``."""
    model_id = getattr(env.experts[expert], "model_id", None)
    if not model_id:
        return missing
    p = env.pricing.price(model_id)
    return p.input_per_m + p.output_per_m


class CascadeAgent:
    """Cheapest-first cascade: start with the cheapest expert, escalate after a failed action."""

    name = "cascade"

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        unwrapped = env.unwrapped
        experts = getattr(unwrapped, "experts", {})
        self.qa: QAPipelineAgent | None = None
        if not experts and qa_tool_models(env):  # QA: cheapest models first, escalating after an empty search
            self.qa = QAPipelineAgent(escalate=True, name=self.name)
            self.qa.reset(env, observation, info)
            return
        if not experts:
            raise ValueError("the cascade agent needs an environment with experts (call_expert)")
        self.order = sorted(experts, key=lambda n: listed_price(unwrapped, n, missing=float("inf")))
        self.level = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.qa is not None:
            return self.qa.act(observation, info)
        failed = any(
            m.get("role") == "tool" and "\nResult:\nError" in m.get("content", "") for m in info.get("new_messages", [])
        )
        if failed:
            self.level = min(self.level + 1, len(self.order) - 1)
        return render_tool_calls([ToolCall("call_expert", {"expert": self.order[self.level]})])


class DelegatingAgent:
    """Delegates every turn to an expert drawn uniformly at random (``call_expert``), seeded.

    The trainer's warm-start demonstrator (`orchestra_jax.train`): a policy that imitates it writes
    valid tool calls with a uniform expert mix, and GRPO has to discover which experts are worth
    their price. The expert choice carries no knowledge of which expert is right for a task.

    Args:
        seed: the generator's seed.
        per_episode: draw one expert per episode and call it every turn (a pure strategy per
            rollout, so a group of rollouts compares experts cleanly) instead of one per turn.
        state_kind: open the first turn with ``<think>Request kind: <category>.</think>``, the
            task's category in words (``change item``, ``search and book``...), read from
            ``env.unwrapped.task.category``: the warm start teaches the policy to name what the
            user asks for before it acts, as a language-pretrained orchestrator would; the expert
            after it is still drawn at random.
        expert_weights: relative probabilities of the experts' draw (expert name -> weight >= 0;
            experts not listed get 0); empty or None draws uniformly (the guided rollouts' demonstrator
            pins one expert with it, `orchestra_jax.policy.guide`).

    Raises (in `reset`): ValueError when the environment has no experts, or `expert_weights`
    names an expert the environment lacks or gives no expert a positive weight.
    """

    name = "delegating"

    def __init__(self, seed: int = 0, per_episode: bool = False, state_kind: bool = False,
                 expert_weights: "dict[str, float] | None" = None):
        self.rng = np.random.default_rng(seed)
        self.per_episode = bool(per_episode)
        self.state_kind = bool(state_kind)
        self.expert_weights = dict(expert_weights or {})

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.experts = sorted(getattr(env.unwrapped, "experts", {}))
        if not self.experts:
            raise ValueError("the delegating agent needs an environment with experts (call_expert)")
        self.p = None
        if self.expert_weights:
            unknown = sorted(set(self.expert_weights) - set(self.experts))
            if unknown:
                raise ValueError(f"expert_weights names {unknown}, not experts of this environment; known: {self.experts}")
            w = np.array([float(self.expert_weights.get(e, 0.0)) for e in self.experts])
            if not (np.all(w >= 0) and w.sum() > 0):
                raise ValueError(f"expert_weights must be >= 0 with a positive sum, got {self.expert_weights}")
            self.p = w / w.sum()
        self.fixed = self._draw() if self.per_episode else None
        task = getattr(env.unwrapped, "task", None)
        category = getattr(task, "category", "") or ""
        parts = []
        if self.state_kind and category:
            parts.append(f"Request kind: {category.replace('_', ' ')}.")
        self.parts = parts
        self.first = True

    def _draw(self) -> str:
        if self.p is None:
            return self.experts[int(self.rng.integers(len(self.experts)))]
        return self.experts[int(self.rng.choice(len(self.experts), p=self.p))]

    def _render(self, expert: str, first: bool) -> str:
        parts = list(self.parts) if first else []
        thought = f"<think>{' '.join(parts)}</think>\n" if parts else ""
        return thought + render_tool_calls([ToolCall("call_expert", {"expert": expert})])

    def act(self, observation: str, info: dict[str, Any]) -> str:
        expert = self.fixed or self._draw()
        text = self._render(expert, self.first)
        self.first = False
        return text


class RouterAgent:
    """The classical router baseline: a lookup from task features to one expert, used for every turn.

    RouterBench (Hu et al. 2024) and RouteLLM (Ong et al. 2024) route each query to one model from
    features of the query; here the features are the task's ``category`` and ``difficulty``
    (`orchestra_gym.types.Task`), read from ``env.unwrapped.task`` at reset. The table is fitted on
    training tasks with `RouterAgent.fit`: every expert is played on every training task (always
    that expert), and each feature cell gets the expert with the best mean utility
    ``success - cost_weight * cost_usd``. A cell not seen in training falls back to the expert that is
    best over all training tasks. The features are the task generator's labels, which the policy
    never sees (it reads only the request): the router is a strong baseline, not a fair policy.

    Args:
        table: (category, difficulty) -> expert name.
        default: the expert for unseen cells.
        cost_weight: the utility's price of one USD, in success units (kept for the record).
    """

    name = "router"

    def __init__(self, table: "dict[tuple[str, str], str]", default: str, cost_weight: float = 0.0):
        self.table = dict(table)
        self.default = default
        self.cost_weight = float(cost_weight)
        self.expert = default

    @staticmethod
    def features(task: Any) -> "tuple[str, str]":
        """The lookup key of a task: (category, difficulty)."""
        return (str(getattr(task, "category", "") or ""), str(getattr(task, "difficulty", "") or ""))

    @classmethod
    def fit(cls, records: "Sequence[dict[str, Any]]", cost_weight: float) -> "RouterAgent":
        """Fit the table from per-episode records of the fixed experts on training tasks.

        Args:
            records: dicts with ``expert`` (name), ``features`` ((category, difficulty)),
                ``solved`` (bool or 0/1) and ``cost_usd`` (float, USD): one per (expert, task).
            cost_weight: success units per USD in the utility ``success - cost_weight * cost_usd``.

        Raises:
            ValueError: no records.
        """
        if not records:
            raise ValueError("records is empty: play every expert on some training tasks first")
        cells: dict[Any, dict[str, list[float]]] = {}
        overall: dict[str, list[float]] = {}
        for r in records:
            u = float(r["solved"]) - cost_weight * float(r["cost_usd"])
            cells.setdefault(tuple(r["features"]), {}).setdefault(r["expert"], []).append(u)
            overall.setdefault(r["expert"], []).append(u)

        def best(d: "dict[str, list[float]]") -> str:
            return max(sorted(d), key=lambda e: float(np.mean(d[e])))

        table = {k: best(v) for k, v in cells.items()}
        return cls(table, best(overall), cost_weight)

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.expert = self.table.get(self.features(env.unwrapped.task), self.default)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return render_tool_calls([ToolCall("call_expert", {"expert": self.expert})])


AGENT_NAMES = ("random", "oracle", "cascade", "delegating", "expert-<k>", "most-accurate", "cheapest", "fastest",
               "random-offered", "llm:<model id>")
_STATED_RULES = ("most-accurate", "cheapest", "fastest", "random-offered")  # `orchestra_gym.agents.rules`


def make_agent(name: str, seed: int = 0) -> Agent:
    """Build a baseline agent by name (``random``, ``oracle``, ``cascade``, ``delegating``, ``expert-<k>``).

    For ``llm:<model id>`` and registered kinds (``policy:<run dir>``) use `agent_factory`.

    Raises:
        ValueError: unknown name (lists the known ones).
    """
    check_agent_name(name)
    if name == "random":
        return RandomAgent(seed)
    if name == "oracle":
        return OracleAgent()
    if name == "cascade":
        return CascadeAgent()
    if name == "delegating":
        return DelegatingAgent(seed)
    if name in _STATED_RULES:
        from orchestra_gym.agents.rules import StatedRuleAgent

        return StatedRuleAgent(name, seed)
    return ExpertAgent(name.replace("expert:", "", 1))


def check_agent_name(name: str) -> None:
    """Raise ValueError (listing the known agents) unless `make_agent` builds `name`."""
    if name in ("random", "oracle", "cascade", "delegating", *_STATED_RULES) or name.startswith("expert-") or name.startswith("expert:"):
        return
    known = list(AGENT_NAMES) + [f"{k}:<{hint}>" for k, (_, hint) in sorted(_AGENT_KINDS.items())]
    raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(known)}")


# ----------------------------------------------------------------------------------- LLM agent
class LLMAgent:
    """A chat model behind an OpenAI-compatible endpoint as the orchestrator.

    The conversation is kept per episode: `reset` starts it with the env's opening messages
    (``info["new_messages"]``: its system prompt and the user's first message), each `act` adds
    the env's messages of the last step (tool results, the user's reply, parse errors) after the
    model's own reply, then asks the model for the next turn.

    Tool calling (the models file's ``tool_calling``, see `orchestra_gym.tools.models`):
        * ``"native"``: the env's tools (``info["tools"]``, OpenAI schemas) go in the request's
          ``tools``; a reply with ``tool_calls`` becomes a structured action (the calls, with the
          reply's call ids, so that each tool message answers its call). A call whose arguments
          are not a JSON object is passed on as the text the server sent, and the env reports the
          parse error. A reply without ``tool_calls`` goes to the env's parser as text (tags or
          a plain message to the user). The history sent back holds only the calls the env
          answered, each followed by its tool message (OpenAI's rule).
        * ``"text"``: no ``tools`` are sent (the env's system prompt lists them); the reply's
          text, with its Hermes ``<tool_call>`` tags, is the action for the env's parser. Tool
          calls a server extracted from the text anyway (transformers serve does for Qwen3) are
          written back as ``<tool_call>`` blocks after the text. Tool results are sent as
          ``tool`` messages, which chat templates render for the model (Qwen3:
          ``<tool_response>``); endpoints that insist on OpenAI's pairing rule want ``native``.

    Accounting: the tokens, USD (the model's price from the models file or the pricing
    schedule) and seconds (wall clock, retries included) of each request are reported to the env
    with ``env.unwrapped.add_orchestrator_usage`` before the action is returned, so the step's
    ``info`` carries them as ``orchestrator_*`` and in the episode totals.

    Never raises on a bad reply: a malformed action is the env's parse error. When the endpoint
    fails after its retries (or answers what is not a chat completion), the failure is reported
    to the env with its error text and the empty action is returned: the env ends the episode
    there (truncated, ``end_reason="orchestrator_error"``, outcome 0), an infrastructure failure
    apart from the policy's own errors. ``last_error`` keeps the text.

    Args:
        model: a `orchestra_gym.tools.llm.ChatModel` (``complete(messages, tools, **sampling)``).
        tool_calling: ``"native"`` or ``"text"``.
        sampling: sampling arguments of every request (over the model's defaults).
        name: the agent's name in tables (default ``llm:<model.model>``).

    Raises:
        ValueError: unknown `tool_calling`.
    """

    def __init__(self, model: Any, tool_calling: str = "native", sampling: dict[str, Any] | None = None,
                 name: str | None = None):
        if tool_calling not in ("native", "text"):
            raise ValueError(f"tool_calling must be 'native' or 'text', got {tool_calling!r}")
        self.model = model
        self.tool_calling = tool_calling
        self.sampling = dict(sampling or {})
        self.name = name or f"llm:{getattr(model, 'model', 'model')}"
        self.messages: list[Message] = []
        self.last_error: str | None = None

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        """Start the episode's conversation with the env's opening messages."""
        self.env = env.unwrapped
        self.tools = _tool_schemas(env, info) if self.tool_calling == "native" else None
        self.messages = [Message.from_dict(m) for m in info.get("new_messages", [])]
        self._reply: Message | None = None
        self.last_error = None

    def act(self, observation: str, info: dict[str, Any]) -> "str | dict":
        """Ask the model for the next turn; the action for ``env.step`` (text or structured)."""
        if self._reply is not None:
            self._absorb(self._reply, info.get("new_messages", []))
        response = self.model.complete(self.messages, tools=self.tools, **self.sampling)
        report = getattr(self.env, "add_orchestrator_usage", None)
        if not response.ok:
            self.last_error = response.error
            self._reply = Message("assistant", "")
            if report is not None:
                report(response.usage, error=response.error)
            return ""
        if report is not None:
            report(response.usage)
        self._reply = response.message
        try:
            action = self._action(response.message, response.raw.get("bad_arguments") or {})
        except Exception:  # a reply this code did not foresee: let the env's parser judge its text
            action = response.message.content
        if isinstance(action, str):  # the history keeps the text the env parsed
            self._reply = Message("assistant", action)
        return action

    def _action(self, reply: Message, bad_arguments: dict[str, str]) -> "str | dict":
        calls = list(reply.tool_calls or [])
        if self.tool_calling == "native":
            if not calls:
                return reply.content
            return {"tool_calls": [{"name": c.name, "id": c.id,
                                    "arguments": bad_arguments.get(c.id, c.arguments)} for c in calls]}
        blocks = []
        for c in calls:  # calls a server extracted from the text: back to Hermes tags
            if c.id in bad_arguments:
                blocks.append(f'<tool_call>\n{{"name": {json.dumps(c.name)}, "arguments": {bad_arguments[c.id]}}}\n'
                              "</tool_call>")
            else:
                blocks.append(render_tool_calls([ToolCall(c.name, c.arguments, "call_0")]))
        return "\n".join(part for part in [reply.content, *blocks] if part) if blocks else reply.content

    def _absorb(self, reply: Message, new_messages: list[dict[str, Any]]) -> None:
        """Add the model's last reply and the env's answer to it to the conversation."""
        env_said = [Message.from_dict(m) for m in new_messages if m.get("role") != "assistant"]
        if self.tool_calling == "text":  # the calls stay in the text, as the model wrote them
            self.messages.append(Message("assistant", reply.content))
            self.messages.extend(env_said)
            return
        # native: keep the calls the env answered (its parse of our action), each answered right after
        executed = next((Message.from_dict(m) for m in new_messages if m.get("role") == "assistant"), None)
        answered = {m.tool_call_id for m in env_said if m.role == "tool"}
        calls = [c for c in (executed.tool_calls or [] if executed else []) if c.id in answered]
        self.messages.append(Message("assistant", reply.content, tool_calls=calls or None))
        self.messages.extend([m for m in env_said if m.role == "tool" and m.tool_call_id in answered])
        self.messages.extend([m for m in env_said if not (m.role == "tool" and m.tool_call_id in answered)])

    def close(self) -> None:
        """Close the model's HTTP client (if it has one)."""
        close = getattr(self.model, "close", None)
        if callable(close):
            close()


def llm_agent(model_id: str, models: Any = None, sampling: dict[str, Any] | None = None, cache: Any = None,
              cache_mode: str = "record-missing") -> LLMAgent:
    """An `LLMAgent` for `model_id` (model id or alias) of a models file.

    Args:
        model_id: the id under ``[models]`` or ``[aliases]``.
        models: a models file path or `ModelsConfig`; None reads ``$ORCHESTRA_MODELS`` or the
            packaged default (`orchestra_gym.tools.models.load_models`).
        sampling: sampling arguments over the file's ``sampling`` for the model.
        cache: a SQLite path or `orchestra_gym.tools.cache.CallCache`: the orchestrator's requests go
            through the record/replay cache (`CachedChatModel`): ``record`` stores every reply,
            ``replay`` answers only from the file and sends no request, ``record-missing`` both.
        cache_mode: the cache's mode when `cache` is a path.

    Raises:
        orchestra_gym.tools.models.ModelsFileError (a ValueError): the file is missing or invalid
            (e.g. the model has no ``base_url``; the message names the key and the fix).
        KeyError: unknown model id (with the ids the file has), or no price for it in the file
            nor in the pricing schedule.
    """
    from orchestra_gym.tools.models import ModelsConfig, load_models

    cfg = models if isinstance(models, ModelsConfig) else load_models(models)
    entry = cfg.resolve(model_id)
    model = cfg.chat_model(model_id)
    if cache is not None:
        from orchestra_gym.tools.cache import CachedChatModel, CallCache

        model = CachedChatModel(model, cache if isinstance(cache, CallCache) else CallCache(cache, mode=cache_mode))
    return LLMAgent(model, tool_calling=entry.tool_calling, sampling=sampling, name=f"llm:{model_id}")


# ----------------------------------------------------------------------------------- agent specs
@dataclass
class AgentFactory:
    """The agents of one evaluation, from one agent spec (see `agent_factory`).

    Attributes:
        name: the spec (``oracle``, ``llm:gpt-5``, ``policy:runs/x``), for tables.
        make: episode index -> the agent of that episode (baselines: a fresh agent seeded
            ``seed + i``; ``llm:``: a fresh conversation over one shared chat model; a trained
            policy: one agent whose ``reset`` starts each episode, so one episode at a time).
        env_id, env_kwargs, reset_options: the setting the agent brings (a trained run's env, its
            ``gym.make`` kwargs and reset options), or None / empty for agents that play any env.
        close: releases what the agents hold (HTTP clients).
    """

    name: str
    make: Callable[[int], Any]
    env_id: str | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    reset_options: dict[str, Any] = field(default_factory=dict)
    close: Callable[[], None] = lambda: None

    def __call__(self, episode: int) -> Any:
        """The agent of episode `episode` (0-based)."""
        return self.make(episode)


# kind -> (builder(argument, seed, models) -> AgentFactory, what the argument is)
_AGENT_KINDS: dict[str, tuple[Callable[[str, int, Any], AgentFactory], str]] = {}


def register_agent_kind(kind: str, builder: Callable[[str, int, Any], AgentFactory], argument: str = "arg") -> None:
    """Make ``<kind>:<argument>`` agent specs build through `builder(argument, seed, models)`.

    Used by packages this one must not import (``orchestra_jax`` registers ``policy:<run dir>``).
    Registering a kind again replaces it.
    """
    _AGENT_KINDS[kind] = (builder, argument)


def agent_factory(spec: str, seed: int = 0, models: Any = None, cache: Any = None,
                  cache_mode: str = "record-missing") -> AgentFactory:
    """The `AgentFactory` of an agent spec.

    Specs: the baselines of `make_agent` (``random``, ``oracle``, ``cascade``, ``expert-<k>``);
    ``llm:<model id>`` (`llm_agent` with `models`, the models file, and the record/replay `cache` in
    `cache_mode` for its requests); and registered kinds
    (`register_agent_kind`, e.g. ``policy:<run dir>``).

    Raises:
        ValueError: unknown agent or kind (lists the known ones), a bad models file.
        KeyError: unknown model id (lists the file's ids).
    """
    kind, _, argument = spec.partition(":")
    if kind == "llm":
        if not argument:
            raise ValueError("agent 'llm:' needs a model id: --agent llm:<model id> with the id in --models FILE")
        first = llm_agent(argument, models, cache=cache, cache_mode=cache_mode)  # one chat model, a conversation per episode
        return AgentFactory(spec, lambda i: LLMAgent(first.model, first.tool_calling, first.sampling, first.name),
                            close=first.close)
    if argument and kind in _AGENT_KINDS:
        return _AGENT_KINDS[kind][0](argument, seed, models)
    check_agent_name(spec)  # fail early on an unknown name
    return AgentFactory(spec, lambda i: make_agent(spec, seed + i))
