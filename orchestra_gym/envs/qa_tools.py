"""The two tool sets of the QA environments (HLE, FRAMES): models as tools, or basic tools.

A `QAEnv` (`orchestra_gym.envs.qa`) holds one tool set, chosen by its ``mode`` argument:

* `ModelTools` (``mode="orchestra"``, the paper's, ToolOrchestra Sec. 2-4): ``search(query, model)``,
  ``enhance_reasoning(model)`` and ``answer(model)``. The orchestrator never does the work itself:
  the model it picks writes the search (from the orchestrator's query), Python code or the final
  answer from the context. Every model call goes through one path, `ModelTools._ask`: a
  `SimulatedModel` returns the right reply with a probability that follows the task's evidence
  chain and the model's skill (`ModelTools.chain_p`; else a plausible wrong one) on a logical
  clock; a real chat model gets
  the tool's instruction and the context as one user message, and a failed call is recorded as an
  earlier attempt and returned as an error result.
* `BasicTools` (``mode="basic"``): ``web_search(query)``, ``local_search(query)``, ``python(code)``
  and ``answer(answer)``; the policy writes queries, code and the answer itself.

Both share `QATools`: retrieval (the local index, then the web), new documents and sandbox runs.
A tool set is bound to one env and reads and writes its episode state: ``documents``,
``code_runs``, ``attempts`` (the rebuilt observation shows them), ``final_response`` and
``answer_model`` (graded at the end).
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Protocol

from orchestra_gym import pricing as pricing_mod
from orchestra_gym.domains.qa_corpus import EvidenceChain, evidence_chain, plausible_wrong_answer
from orchestra_gym.errors import did_you_mean
from orchestra_gym.judges import complete_text, normalize_answer
from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.tools.simulated import SimulatedModel, qa_model, qa_skill_group
from orchestra_gym.types import ToolCall, ToolResult, ToolSpec, Usage

__all__ = [
    "QA_MODELS",
    "TOOL_MODELS",
    "BASIC_TOOLS",
    "SIMULATED_QA_MODELS",
    "QATools",
    "ModelTools",
    "BasicTools",
    "TOOL_SETS",
    "docs_text",
]

# Anonymised id -> priced model id. Pools follow the paper (Sec. 4.1); the order within a pool
# (strongest first) is the same mapping as `orchestra_gym/tools/models_default.toml`.
QA_MODELS: dict[str, str] = {
    "search-1": "gpt-5",
    "search-2": "gpt-5-mini",
    "search-3": "Qwen/Qwen3-32B",
    "reasoner-1": "gpt-5",
    "reasoner-2": "gpt-5-mini",
    "reasoner-3": "Qwen/Qwen2.5-Coder-32B-Instruct",
    "answer-1": "gpt-5",
    "answer-2": "gpt-5-mini",
    "answer-3": "meta-llama/Llama-3.3-70B-Instruct",
    "answer-4": "Qwen/Qwen3-32B",
    "answer-math-1": "Qwen/Qwen2.5-Math-72B-Instruct",
    "answer-math-2": "Qwen/Qwen2.5-Math-7B-Instruct",
}
TOOL_MODELS: dict[str, tuple[str, ...]] = {
    "search": ("search-1", "search-2", "search-3"),
    "enhance_reasoning": ("reasoner-1", "reasoner-2", "reasoner-3"),
    "answer": ("answer-1", "answer-2", "answer-3", "answer-4", "answer-math-1", "answer-math-2"),
}
"""Model tool -> the anonymised ids its ``model`` argument may take."""
BASIC_TOOLS = ("web_search", "local_search", "python", "answer")
SIMULATED_QA_MODELS: dict[str, SimulatedModel] = {name: qa_model(name, mid) for name, mid in QA_MODELS.items()}
"""The offline default: each anonymised id's simulated model (profiles in `orchestra_gym.tools.simulated`)."""

_SIM_SANDBOX_S = 1.0  # logical seconds charged per simulated sandbox run (deterministic info)
_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def docs_text(docs: list[dict[str, str]]) -> str:
    """Documents as the observation and tool results show them: ``[id] title`` then the text."""
    return "\n\n".join(f"[{d['id']}] {d.get('title', '')}\n{d['text']}" for d in docs)


class QAToolHost(Protocol):
    """What a QA tool set reads and writes of the env that holds it (`orchestra_gym.envs.qa.QAEnv`).

    Declared here, on the side of the tool sets, so that `qa` imports `qa_tools` and never the
    other way round (dependency inversion: no import cycle, not even one for annotations).
    Episode state: ``task``, ``turn``, ``pricing``, ``tool_specs``, ``documents``, ``code_runs``,
    ``attempts``, ``final_response``, ``answer_model``; configuration: ``tasks``, ``benchmark``,
    ``qa_models``, ``all_simulated``, ``index``, ``web_search``, ``search_k``, ``min_local_docs``,
    ``python_timeout_s``, ``sandbox_isolation``; and five hooks.
    """

    task: Any
    turn: int
    pricing: Any
    tool_specs: list[ToolSpec]
    documents: list[dict[str, str]]
    code_runs: list[Any]
    attempts: list[Any]
    final_response: Any
    answer_model: Any
    tasks: Any
    benchmark: str
    qa_models: Any
    all_simulated: bool
    index: Any
    web_search: Any
    search_k: int
    min_local_docs: int
    python_timeout_s: float
    sandbox_isolation: Any

    def _context_text(self) -> str:
        """What a model reads: the task and the episode's documents, code runs and attempts."""

    def _seed(self) -> Any:
        """The seed of a simulated model's next draw (any hashable the simulated models mix)."""

    def _price_schedule(self) -> Any:
        """The episode's pricing schedule."""

    def _count(self, key: str) -> None:
        """Count one call of the model or tool ``key`` in the episode's tool-call counts."""

    def _end(self, reason: str) -> None:
        """End the episode (``reason``: what ended it, e.g. ``"answer"``)."""


class QATools:
    """What both QA tool sets share: retrieval, documents, sandbox runs. Bound to one `QAToolHost` (a `QAEnv`).

    A subclass sets ``mode`` (the env's ``mode`` argument) and ``role`` (the system prompt's
    opening) and implements `specs`, `execute` and `oracle_action` (the reward vector's tool components are
    `orchestra_gym.rewards.RewardLayout`'s).

    What it uses of the env, state and hooks, is declared by `QAToolHost`.
    """

    mode: str = ""
    role: str = ""

    def __init__(self, env: QAToolHost):
        self.env = env

    def specs(self) -> list[ToolSpec]:
        """Every tool of this set (before the ``tools`` reset option filters them)."""
        raise NotImplementedError

    def execute(self, call: ToolCall) -> ToolResult:
        """Run one call of a tool of this set (its name is known to be exposed). Never raises."""
        raise NotImplementedError

    def oracle_action(self) -> str:
        """A strong fixed next action as model text (the ``oracle`` baseline)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ retrieval
    def _add_docs(self, found: list[dict[str, str]]) -> list[dict[str, str]]:
        """Append the documents not already in the context; return those."""
        have = {d["id"] for d in self.env.documents}
        new = [d for d in found if d["id"] not in have]
        self.env.documents.extend(new)
        return new

    def _local_hits(self, query: str) -> list[dict[str, str]]:
        env = self.env
        if env.index is None or not query.strip():
            return []
        return [{"id": h.id, "title": h.title, "text": h.text} for h in env.index.search(query, env.search_k)]

    def _web_hits(self, query: str) -> tuple[list[dict[str, str]], Usage, str | None]:
        """Web documents, usage (fee + latency) and an error text (None when fine)."""
        env = self.env
        search = getattr(env.web_search, "search", None)
        if callable(search):  # orchestra_gym.tools.search.WebSearch
            env.web_search.pricing = env.pricing
            res = search(query, max_results=env.search_k)
            if res.error:
                return [], res.usage, res.content
            docs = [{"id": str(r.get("url") or f"web-{env.turn}-{i}"), "title": str(r.get("title") or ""),
                     "text": str(r.get("content") or "")} for i, r in enumerate(res.metadata.get("results", []))]
            return docs, res.usage, None
        t0 = time.perf_counter()
        try:
            found = list(env.web_search(query))[: env.search_k]
        except Exception as e:  # a failing search backend is reported, never a crash
            return [], Usage(latency_s=time.perf_counter() - t0), f"{type(e).__name__}: {e}"
        docs = [{"id": str(d.get("id") or f"web-{env.turn}-{i}"), "title": str(d.get("title", "")), "text": str(d.get("text", ""))}
                for i, d in enumerate(found)]
        return docs, Usage(cost_usd=pricing_mod.fee_usd("web_search_per_call", 1, env.pricing),
                           latency_s=time.perf_counter() - t0), None

    def _retrieve(self, query: str, allow_web: bool, force_web: bool = False) -> tuple[list[dict[str, str]], Usage, str]:
        """Documents for `query`: the local index, then the web when fewer than `min_local_docs`
        local documents came back (or always, with `force_web`). Returns (docs, usage, source)."""
        env = self.env
        usage, source, hits = Usage(), "local", []
        if not force_web:
            hits = self._local_hits(query)
            usage = Usage(cost_usd=pricing_mod.fee_usd("local_search_per_call", 1, env.pricing))
        if (force_web or len(hits) < env.min_local_docs) and allow_web and env.web_search is not None:
            web, u, err = self._web_hits(query)
            hits, usage, source = hits + web, usage + u, ("web" if err is None else f"web failed: {err}")
        elif force_web:
            # no web backend configured: serve the query from the local index, charged as a web search
            hits = self._local_hits(query)
            usage, source = Usage(cost_usd=pricing_mod.fee_usd("web_search_per_call", 1, env.pricing)), "local (no web backend)"
        return hits, usage, source

    # ------------------------------------------------------------------ sandbox
    def _run_code(self, code: str, simulated: bool) -> tuple[str, bool, Usage]:
        """Run code in `orchestra_gym.tools.sandbox.PythonSandbox`: (output, error, usage).

        Offline (`simulated`), usage is charged on a logical clock (`_SIM_SANDBOX_S` seconds) so
        that `info` is deterministic under a seed; otherwise CPU seconds x fee and wall-clock s.
        """
        from orchestra_gym.tools.sandbox import PythonSandbox

        env = self.env
        box = PythonSandbox(env.python_timeout_s, pricing=env.pricing, isolation=env.sandbox_isolation, name="python")
        res = box(code)
        usage = res.usage
        if simulated:
            usage = Usage(cost_usd=pricing_mod.fee_usd("code_interpreter_per_s", _SIM_SANDBOX_S, env.pricing),
                          latency_s=_SIM_SANDBOX_S)
        return res.content, bool(res.error), usage


def _first_line_or(default: str) -> Callable[[str], str]:
    """Parse a search model's reply: its first line without quotes; `default` for an empty reply."""
    return lambda text: text.strip().strip('"').splitlines()[0] if text.strip() else default


def _code_of(text: str) -> str:
    """Parse a reasoning model's reply: the first ```python block, else the whole reply."""
    m = _CODE_BLOCK.search(text)
    return m.group(1) if m else text


def _simulated_code(value: str) -> str:
    """The program a simulated reasoning model writes: it prints `value` as its candidate answer."""
    return f"candidate = {value!r}\nprint('candidate answer:', candidate)"


def _simulated_answer(value: str) -> str:
    """The reply of a simulated answer model giving `value`."""
    return f"Explanation: from the context.\nAnswer: {value}\nConfidence: 80%"


class ModelTools(QATools):
    """``search``, ``enhance_reasoning``, ``answer``: each takes ``model``, one of `TOOL_MODELS`.

    * ``search(query, model)``: the model turns the orchestrator's ``query`` into a search request
      (simulated: the query itself with the model's skill on the question's kind, else the query
      with its entities confused for near-identical ones); BM25 over the local index answers, and
      the web when too few local documents come back. New documents join the context. A missing
      or blank ``query`` is an error result (counted by the env as an argument error).
    * ``enhance_reasoning(model)``: the model writes Python (simulated: a program printing the gold
      answer with probability `chain_p`, else a distractor's answer); the sandbox runs it; code and
      output join the context.
    * ``answer(model)``: the model writes the final answer (simulated: right with probability
      `chain_p`: high only with the whole evidence chain in the context, and, for an answer that
      needs arithmetic, a right code output); the episode ends.

    Offline the simulated models follow the task's evidence chain
    (`orchestra_gym.domains.qa_corpus.evidence_chain`) and their skill per kind of question
    (`orchestra_gym.tools.simulated.QA_SKILLS`).

    Cost: the model's tokens x its price in the episode's schedule, plus the search fees and the
    sandbox's ``code_interpreter_per_s``.
    """

    mode = "orchestra"
    role = ("You orchestrate models to answer a hard question. You do not answer yourself: call `search` to "
            "gather documents, `enhance_reasoning` to have code written and run, and `answer` when the context "
            "is enough. Each tool takes one argument, `model`; models differ in skill, price and latency.")
    _MODEL_ROLE = {"search": "search", "enhance_reasoning": "reasoning", "answer": "answer"}  # "Error: <role> model ..."

    # ------------------------------------------------------------------ specs
    def _describe_model(self, name: str) -> str:
        prof = SIMULATED_QA_MODELS[name]
        sched = self.env._price_schedule()
        price = "price unknown"
        for pid in (name, QA_MODELS[name]):
            try:
                p = sched.price(pid)
            except KeyError:
                continue
            price = f"${p.input_per_m:g}/1M input tokens, ${p.output_per_m:g}/1M output tokens"
            break
        lo, hi = prof.completion_tokens
        typical = prof.ttft_s + (lo + hi) / 2 / prof.decode_tok_s
        return f"{name}: {price}, typical latency about {typical:.0f} s per call"

    def _model_spec(self, tool: str, what: str) -> ToolSpec:
        models = TOOL_MODELS[tool]
        table = "\n".join(self._describe_model(n) for n in models)
        props: dict[str, Any] = {"model": {"type": "string", "enum": list(models), "description": "which model does the work"}}
        required = ["model"]
        if tool == "search":
            props["query"] = {"type": "string", "minLength": 1, "pattern": "\\S",
                              "description": "what to look for: name the entity and the fact you need"}
            required = ["query", "model"]
        return ToolSpec(
            name=tool,
            description=f"{what}\nModels (price and typical latency):\n{table}",
            parameters={"type": "object", "properties": props, "required": required},
            kind="model",
        )

    def specs(self) -> list[ToolSpec]:
        """The three model tools; descriptions list each model's price (the episode's schedule)
        and typical latency (the simulator profile's figure, also shown for real endpoints)."""
        return [
            self._model_spec("search", "A search model turns your `query` into a search of the document index; the "
                                       "documents found are added to the context."),
            self._model_spec("enhance_reasoning", "A reasoning model writes Python code for the problem; the code is run "
                                                  "and the code and its output are added to the context."),
            self._model_spec("answer", "An answer model reads the problem and the context and gives the final answer. "
                                       "This ends the episode."),
        ]

    # ------------------------------------------------------------------ calls
    def execute(self, call: ToolCall) -> ToolResult:
        """Check ``model``, count the call under the model, run the tool."""
        env = self.env
        model = call.arguments.get("model")
        allowed = TOOL_MODELS[call.name]
        if model not in allowed:
            env.attempts.append(f"turn {env.turn}: {call.name}(model={model!r}) -> invalid model")
            return ToolResult(f"Error: {call.name} needs 'model' to be one of {list(allowed)}, got {model!r}"
                              f"{did_you_mean(model, allowed)}", error=True)
        if call.name == "search":
            query = call.arguments.get("query")
            if not isinstance(query, str) or not query.strip():
                env.attempts.append(f"turn {env.turn}: search(model={model!r}) -> no query")
                return ToolResult(f"Error: search needs 'query', a non-empty string naming what to look for, got {query!r}",
                                  error=True)
        env._count(model)
        if call.name == "search":
            return self.search(model, call.arguments["query"])
        tools = {"enhance_reasoning": self.enhance_reasoning, "answer": self.answer}
        return tools[call.name](model)

    def _ask(self, tool: str, name: str, instruction: str, right: str, wrong: Callable[[Any], str],
             parse: Callable[[str], str], p: float | None = None) -> tuple[str, Usage, ToolResult | None]:
        """Ask model `name` (a `QA_MODELS` id) for `tool`'s reply: the one path for every model.

        Args:
            tool: the tool asking (``"search"``, ...), for the failure record.
            name: the anonymised model id.
            instruction: what a real model is told; the context (`QAEnv._context_text`) follows.
            right, wrong: a simulated model's right reply and ``rng -> plausible wrong reply``.
            parse: turns a real model's reply text into the reply (query, code, answer).
            p: a simulated model's probability of the right reply (`chain_p`).

        Returns:
            (reply, usage in tokens/USD/s, None), or ("", usage, an error `ToolResult`) when a
            real model failed; the failure is also recorded as an earlier attempt.
        """
        env = self.env
        model = env.qa_models[name]
        context = env._context_text()
        if isinstance(model, SimulatedModel):
            r = model.respond(context, right, wrong, category=qa_skill_group(env.task.category),
                              difficulty=env.task.difficulty, seed=env._seed(), schedule=env._price_schedule(), p=p)
            return r.value, r.usage, None
        text, usage, err = complete_text(model, f"{instruction}\n\n{context}")
        if err is not None:
            env.attempts.append(f"turn {env.turn}: {tool}({name}) failed: {err}")
            return "", usage, ToolResult(f"Error: {self._MODEL_ROLE[tool]} model {name} failed: {err}", error=True, usage=usage)
        return parse(text or ""), usage, None

    def chain(self) -> EvidenceChain:
        """The episode task's evidence chain (`orchestra_gym.domains.qa_corpus.evidence_chain`, seed 0,
        the seed of the env's generated corpus)."""
        env = self.env
        if getattr(self, "_chain_for", None) is not env.task:
            self._chain_for, self._chain = env.task, evidence_chain(env.task)
        return self._chain

    def evidence_found(self) -> list[bool]:
        """Per hop of the chain: whether its evidence document is in the context."""
        have = {d["id"] for d in self.env.documents}
        return [i in have for i in self.chain().doc_ids]

    def skill(self, name: str) -> float:
        """Model `name`'s accuracy on this task's kind (`orchestra_gym.tools.simulated.QA_SKILLS`)."""
        return SIMULATED_QA_MODELS[name].p_correct(qa_skill_group(self.env.task.category), self.env.task.difficulty)

    def chain_p(self, tool: str, name: str) -> float:
        """A simulated model's probability of the right reply, from what the context holds:

        * reasoning: its skill when every evidence document is in the context, else 0.02 (a guess);
        * answer: with every evidence document, its skill when the answer needs no arithmetic or
          the latest code output printed the right answer, 0.15 x skill with no code run, 0.05 when
          the latest code printed a wrong one; 0.01 with evidence missing.
        """
        complete = all(self.evidence_found())
        s = self.skill(name)
        if tool == "enhance_reasoning":
            return s if complete else 0.02
        if not complete:
            return 0.01
        if not self.chain().needs_code:
            return s
        if not self.env.code_runs:
            return 0.15 * s
        return s if self.code_is_right() else 0.05

    def code_is_right(self) -> bool:
        """Whether the latest code run printed the gold answer (normalised, whole words)."""
        runs = self.env.code_runs
        if not runs:
            return False
        gold = normalize_answer(self.env.task.answer)
        return bool(gold) and f" {gold} " in f" {normalize_answer(runs[-1]['output'])} "

    def _confused(self, query: str, rng: Any) -> str:
        """The query a search model writes when it confuses entities: every chain entity the query
        names is replaced by a near-identical one (a distractor's subject)."""
        out = query
        for entity, variants in zip(self.chain().entities, self.chain().variants):
            if variants:
                pat = re.compile(rf"(?<!\w){re.escape(entity)}(?!\w)", re.IGNORECASE)
                out = pat.sub(str(variants[int(rng.integers(len(variants)))]), out)
        return out

    def search(self, name: str, query: str) -> ToolResult:
        """``search(query, model=name)``: the model's search request for the orchestrator's query
        (simulated: the query itself with the model's skill, else the query with its entities
        confused); documents from the index (and the web)."""
        env = self.env
        query, usage, failed = self._ask(
            "search", name, f"Write one search query for: {query}\\nUse the problem and the context below. "
            "Reply with the query only.", query, lambda rng: self._confused(query, rng),
            _first_line_or(query), p=self.skill(name) if isinstance(env.qa_models[name], SimulatedModel) else None)
        if failed is not None:
            return failed
        hits, u2, source = self._retrieve(query, allow_web=True)
        new = self._add_docs(hits)
        env.attempts.append(f"turn {env.turn}: search({name}) query {query!r} -> {len(new)} new document(s) ({source})")
        body = docs_text(new) if new else "No new documents."
        return ToolResult(f"Query: {query}\\n{body}", usage=usage + u2, metadata={"query": query, "new_documents": [d["id"] for d in new]})

    def _wrong(self, rng: Any) -> str:
        """A plausible wrong answer: a distractor's, else one drawn from the gold answer."""
        wrong = self.chain().wrong
        return str(wrong[int(rng.integers(len(wrong)))]) if wrong else plausible_wrong_answer(str(self.env.task.answer), rng)

    def enhance_reasoning(self, name: str) -> ToolResult:
        """``enhance_reasoning(model=name)``: code from the model, run in the sandbox."""
        env = self.env
        gold = str(env.task.answer or "").strip()
        code, usage, failed = self._ask(
            "enhance_reasoning", name, "Write a short Python program that helps answer the question below "
            "(computations, checks). Print the useful results. Reply with one ```python code block.",
            _simulated_code(gold), lambda rng: _simulated_code(self._wrong(rng)), _code_of,
            p=self.chain_p("enhance_reasoning", name))
        if failed is not None:
            return failed
        out, err, run_usage = self._run_code(code, simulated=isinstance(env.qa_models[name], SimulatedModel))
        env.code_runs.append({"model": name, "code": code, "output": out})
        env.attempts.append(f"turn {env.turn}: enhance_reasoning({name}) -> code ran{' with an error' if err else ''}")
        return ToolResult(f"```python\\n{code}\\n```\\nOutput:\\n{out}", error=False, usage=usage + run_usage,
                          metadata={"sandbox_error": err})

    def answer(self, name: str) -> ToolResult:
        """``answer(model=name)``: the model's final answer; ends the episode."""
        env = self.env
        gold = str(env.task.answer or "").strip()
        response, usage, failed = self._ask(
            "answer", name, "Answer the question using the context. Reply in the format\\nExplanation: <reasons>\\n"
            "Answer: <final answer>\\nConfidence: <0-100%>", _simulated_answer(gold),
            lambda rng: _simulated_answer(self._wrong(rng)), str, self.chain_p("answer", name))
        if failed is not None:
            return failed
        env.final_response, env.answer_model = response, name
        env._end("answer")
        return ToolResult(response, usage=usage)

    # ------------------------------------------------------------------ oracle
    def best_model(self, tool: str) -> str:
        """The model of `tool` with the highest skill on this task's kind (ties: the first listed)."""
        return max(TOOL_MODELS[tool], key=self.skill)

    def oracle_action(self) -> str:
        """The right sequence for this question (it reads the hidden evidence chain, so it is an
        upper bound): search for the first missing hop by its entity with the best search model for
        the kind (at most 8 searches), then, when the answer needs arithmetic and no code ran, have
        the best reasoner write it, then answer with the best answer model."""
        env = self.env
        names = {s.name for s in env.tool_specs}
        found = self.evidence_found()
        searches = sum(1 for a in env.attempts if ": search(" in a)
        if "search" in names and not all(found) and searches < 8:
            hop = found.index(False)
            return render_tool_calls([ToolCall("search", {"query": self.chain().query_for(hop),
                                                          "model": self.best_model("search")})])
        if "enhance_reasoning" in names and self.chain().needs_code and not env.code_runs and all(found):
            return render_tool_calls([ToolCall("enhance_reasoning", {"model": self.best_model("enhance_reasoning")})])
        return render_tool_calls([ToolCall("answer", {"model": self.best_model("answer")})])


class BasicTools(QATools):
    """``web_search(query)``, ``local_search(query)``, ``python(code)``, ``answer(answer)``.

    Cost: ``web_search_per_call`` per web search (served by the local index at that fee when no
    web backend is configured), ``local_search_per_call`` per local search,
    ``code_interpreter_per_s`` per sandbox second (a logical second when every model is simulated).
    """

    mode = "basic"
    role = ("Answer the question. Use the search and python tools as needed, then call `answer` with your "
            "final answer.")
    _ARGUMENT = {"web_search": "query", "local_search": "query", "python": "code", "answer": "answer"}

    def specs(self) -> list[ToolSpec]:
        """The four basic tools; descriptions state the fees of the episode's schedule."""
        env = self.env
        fee = env.pricing.fees
        q = {"type": "object", "properties": {"query": {"type": "string", "description": "search query"}}, "required": ["query"]}
        return [
            ToolSpec("web_search", f"Search the web; returns up to {env.search_k} documents. "
                                   f"${fee.get('web_search_per_call', 0):g} per call.", q, kind="read"),
            ToolSpec("local_search", f"Search the local document index (BM25); returns up to {env.search_k} documents. "
                                     f"${fee.get('local_search_per_call', 0):g} per call.", q, kind="read"),
            ToolSpec("python", f"Run Python code and return its printed output. "
                               f"${fee.get('code_interpreter_per_s', 0):g} per second of run time.",
                     {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}, kind="generic"),
            ToolSpec("answer", "Give your final answer; this ends the episode.",
                     {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}, kind="generic"),
        ]

    def execute(self, call: ToolCall) -> ToolResult:
        """Check the tool's one string argument, run the tool."""
        arg = self._ARGUMENT[call.name]
        value = call.arguments.get(arg)
        if not isinstance(value, str) or not value.strip():
            return ToolResult(f"Error: {call.name} needs a non-empty string argument {arg!r}", error=True)
        tools = {"web_search": self.web_search, "local_search": self.local_search, "python": self.python,
                 "answer": self.answer}
        return tools[call.name](value)

    def web_search(self, query: str) -> ToolResult:
        """``web_search(query)``: the web backend, or the local index at the web fee."""
        hits, usage, source = self._retrieve(query, allow_web=True, force_web=True)
        new = self._add_docs(hits)
        self.env.attempts.append(f"turn {self.env.turn}: web_search {query!r} -> {len(new)} new document(s) ({source})")
        return ToolResult(docs_text(hits) or "No results.", usage=usage, metadata={"source": source})

    def local_search(self, query: str) -> ToolResult:
        """``local_search(query)``: the local index only."""
        hits, usage, _ = self._retrieve(query, allow_web=False)
        new = self._add_docs(hits)
        self.env.attempts.append(f"turn {self.env.turn}: local_search {query!r} -> {len(new)} new document(s)")
        return ToolResult(docs_text(hits) or "No results.", usage=usage)

    def python(self, code: str) -> ToolResult:
        """``python(code)``: the sandbox's printed output."""
        env = self.env
        out, err, usage = self._run_code(code, simulated=env.all_simulated)
        env.code_runs.append({"model": "policy", "code": code, "output": out})
        env.attempts.append(f"turn {env.turn}: python -> {'error' if err else 'ok'}")
        return ToolResult(out, error=err, usage=usage)

    def answer(self, answer: str) -> ToolResult:
        """``answer(answer)``: the policy's final answer; ends the episode."""
        env = self.env
        env.final_response, env.answer_model = f"Answer: {answer}", "policy"
        env._end("answer")
        return ToolResult("Answer recorded.")

    def oracle_action(self) -> str:
        """Answer with the gold answer."""
        return render_tool_calls([ToolCall("answer", {"answer": str(self.env.task.answer or "")})])


TOOL_SETS: dict[str, type[QATools]] = {ModelTools.mode: ModelTools, BasicTools.mode: BasicTools}
"""The env's ``mode`` argument -> its tool set."""
