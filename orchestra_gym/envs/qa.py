"""QA environments: ``ToolOrchestra-HLE-v0`` and ``ToolOrchestra-FRAMES-v0``.

The paper's QA protocol (ToolOrchestra, arXiv 2511.21689, Sec. 2-4 and its released evaluation):
the orchestrator never answers by itself; it calls three tools, each with one argument ``model``
that picks an anonymised model whose price and typical latency the tool description lists:

* ``search(model)``: the model writes a search query from the context; the local index answers;
  a web search backend (when configured) is asked when too few local documents come back. New
  documents join the context.
* ``enhance_reasoning(model)``: the model writes Python; the sandbox runs it; code and output join
  the context.
* ``answer(model)``: the model writes the final answer; the episode ends and the judge grades it.

The observation is rebuilt every turn from the episode state, as in the paper: problem,
documents, code and outputs, earlier attempts, truncated to a token budget with the policy's
tokenizer. A chat mode (tool results appended as messages) and a "basic tools" mode
(``web_search``, ``local_search``, ``python``, ``answer(answer)``) are also offered.

Offline default: simulated models (`orchestra_gym.tools.simulated.SimulatedModel`, accuracy by
category and difficulty, logical latency) and BM25 over a corpus generated from the tasks
(`orchestra_gym.domains.qa_corpus`). Grading: normalised exact match, then the benchmark's LLM
judge when a judge model is given (`orchestra_gym.judges`).
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import time
from typing import Any, Callable, Sequence

from orchestra_gym import pricing as pricing_mod
from orchestra_gym.domains.qa_corpus import build_corpus, plausible_wrong_answer
from orchestra_gym.env import OrchestraEnv

# QA has no user to talk to: every turn is a tool call (the last one is `answer`).
QA_FORMAT_HELP = (
    "Reply with optional <think>...</think>, then one or more "
    '<tool_call>{"name": "<tool name>", "arguments": {...}}</tool_call> blocks; the episode ends with a call of `answer`.'
)
from orchestra_gym.judges import Judge, JudgeResult, complete_text, normalize_answer
from orchestra_gym.tools.simulated import SimulatedModel, qa_model
from orchestra_gym.types import Message, Task, ToolCall, ToolResult, ToolSpec, Usage

__all__ = [
    "QAEnv",
    "HLEEnv",
    "FRAMESEnv",
    "QA_MODELS",
    "TOOL_MODELS",
    "SIMULATED_QA_MODELS",
    "estimate_tokens",
    "qa_metrics",
    "format_qa_table",
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
BASIC_TOOLS = ("web_search", "local_search", "python", "answer")


SIMULATED_QA_MODELS: dict[str, SimulatedModel] = {name: qa_model(name, mid) for name, mid in QA_MODELS.items()}
"""The offline default: each anonymised id's simulated model (profiles in `orchestra_gym.tools.simulated`)."""
_EASIER = {"hard": "medium", "medium": "easy", "easy": "easy"}
_SIM_SANDBOX_S = 1.0  # logical seconds charged per simulated sandbox run (deterministic info)


def estimate_tokens(text: str) -> int:
    """Cheap token estimate: max(whitespace words, ceil(characters / 4)) (no tokenizer needed)."""
    return max(len(text.split()), math.ceil(len(text) / 4))


def _count_with(tokenizer: Any) -> Callable[[str], int]:
    """A token counter from a tokenizer: an object with ``encode`` (tiktoken, `tokenizers`,
    transformers) or a callable text -> token ids / count / encoding."""
    fn = getattr(tokenizer, "encode", None) or tokenizer
    if not callable(fn):
        raise ValueError(f"tokenizer must have an encode(text) method or be callable, got {type(tokenizer).__name__}")

    def count(text: str) -> int:
        n = fn(text)
        if isinstance(n, int):
            return n
        if hasattr(n, "ids"):  # tokenizers.Encoding
            return len(n.ids)
        if isinstance(n, dict) or hasattr(n, "keys"):  # transformers BatchEncoding
            return len(n["input_ids"])
        return len(n)

    return count


_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


class QAEnv(OrchestraEnv):
    """Question answering by orchestrating search, reasoning and answer models.

    Description:
        One task = one question (HLE or FRAMES). Each turn the orchestrator calls tools; the
        episode ends when an answer model (or, in basic mode, the policy) answers.

    Action Space:
        ``str``: model text with ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
        blocks (`orchestra_gym.parsing`), or a structured action ``{"name", "arguments"}``.

    Observation Space:
        ``str``. ``observation="rebuilt"`` (default, the paper's): instructions and tools, then
        ``## Problem``, ``## Documents``, ``## Code and outputs``, ``## Earlier attempts`` (and the
        environment's feedback on a malformed last output), rebuilt each turn and truncated to
        ``max_observation_tokens`` (oldest documents, then oldest code, then oldest attempts are
        dropped first). ``observation="chat"``: the transcript with tool results appended as
        messages (`OrchestraEnv`), oldest turns left out beyond the token budget. Tool
        descriptions list each model's price (from the episode's pricing schedule) and its
        typical latency (the simulator profile's figure, also shown for real endpoints).

    Rewards:
        Outcome 1.0 when the judge finds the answer correct, else 0.0, given at termination.

    Simulated models (offline): a search model writes the question as its query with its
        accuracy, else two of its words; a reasoning model's code prints the gold answer with its
        accuracy, else a plausible wrong one; an answer model is right with its accuracy at the
        difficulty from `_answer_difficulty` (retrieval and code that surface the answer help).

    Starting State:
        A task drawn with the env's seeded RNG (or ``options["task_id"]``).

    Episode End:
        Terminated by ``answer``; truncated at ``max_turns`` (paper: 50) or ``max_errors``.

    Info:
        `OrchestraEnv`'s keys; ``tool_calls`` also counts each anonymised model (``search-2``...);
        the reward vector's tool components are the models (orchestra mode) or tool names (basic
        mode). ``reward_breakdown`` holds ``judge_method``, ``correct``, ``response``,
        ``judge_details`` and ``judge_usage`` (judge cost is not charged to the episode).

    Tools (orchestra mode): ``search``, ``enhance_reasoning``, ``answer``; cost = the model's
        tokens x its price in the episode's pricing schedule, plus ``local_search_per_call`` /
        ``web_search_per_call`` per search and ``code_interpreter_per_s`` per sandbox second.
        Basic mode: ``web_search(query)``, ``local_search(query)``, ``python(code)``,
        ``answer(answer)``.

    Arguments:
        benchmark: ``"hle"`` or ``"frames"`` (task loader, judge kind).
        data_path: local data file (see `load_hle` / `load_frames`); None uses the default source.
        tasks: a list of `Task` to use instead of loading.
        mode: ``"orchestra"`` (the paper's three model tools) or ``"basic"``.
        observation: ``"rebuilt"`` or ``"chat"``.
        models: None (simulated models), a models-file path (`orchestra_gym.tools.models`), or a
            dict anonymised id -> chat model (``complete(messages, tools=None, **sampling)``) or
            `SimulatedModel`; ids not given stay simulated.
        judge_model: chat model (or id in the models file) for the LLM judge; None = exact match.
        corpus_path: JSONL corpus (``id``, ``title``, ``text``). None: a corpus generated from the
            tasks when every model is simulated (it states gold answers: simulation only), else
            no local corpus. Indexed by `orchestra_gym.tools.search.LocalSearch`.
        search_method: ``"bm25"`` (default), ``"dense"`` or ``"hybrid"`` (`LocalSearch`).
        web_search: a `orchestra_gym.tools.search.WebSearch` (Tavily), or a callable
            ``query -> list of {"id"?, "title", "text"}``; None = no web search (offline,
            ``web_search`` in basic mode is then served by the local index at the web fee).
        tokenizer: the policy's tokenizer for the observation budget: an object with
            ``encode(text)`` (tiktoken, `tokenizers`, transformers) or a callable text -> token
            ids or count; default `estimate_tokens` (no tokenizer needed).
        max_observation_tokens: token budget of the rebuilt observation (our default 24,000).
        search_k: documents per search; min_local_docs: fewer local hits than this asks the web.
        python_timeout_s: sandbox time limit per run (s); sandbox_isolation: ``"full"`` or
            ``"none"`` (`orchestra_gym.tools.sandbox`; None reads ``ORCHESTRA_SANDBOX_ISOLATION``).
        cache: record/replay cache for every real model call and the judge: a SQLite path or an
            `orchestra_gym.tools.cache.CallCache`; cache_mode: its mode when a path is given
            (``"record-missing"``, ``"record"``, ``"replay"``, ``"off"``).
        max_turns, max_errors, preference, pricing, render_mode: see `OrchestraEnv`.

    Version History:
        v0: initial version.
    """

    def __init__(
        self,
        benchmark: str = "hle",
        data_path: str | os.PathLike[str] | None = None,
        tasks: Sequence[Task] | None = None,
        mode: str = "orchestra",
        observation: str = "rebuilt",
        models: "str | os.PathLike[str] | dict[str, Any] | None" = None,
        judge_model: Any = None,
        corpus_path: str | os.PathLike[str] | None = None,
        search_method: str = "bm25",
        web_search: Any = None,
        tokenizer: Callable[[str], Any] | None = None,
        max_observation_tokens: int = 24_000,
        search_k: int = 5,
        min_local_docs: int = 1,
        python_timeout_s: float = 10.0,
        sandbox_isolation: str | None = None,
        cache: Any = None,
        cache_mode: str = "record-missing",
        max_turns: int = 50,
        max_observation_chars: int = 400_000,
        **kwargs: Any,
    ):
        super().__init__(max_turns=max_turns, max_observation_chars=max_observation_chars, **kwargs)
        if benchmark not in ("hle", "frames"):
            raise ValueError(f"benchmark must be 'hle' or 'frames', got {benchmark!r}")
        if mode not in ("orchestra", "basic"):
            raise ValueError(f"mode must be 'orchestra' (search/enhance_reasoning/answer) or 'basic', got {mode!r}")
        if observation not in ("rebuilt", "chat"):
            raise ValueError(f"observation must be 'rebuilt' (the paper's) or 'chat', got {observation!r}")
        if max_observation_tokens < 64:
            raise ValueError(f"max_observation_tokens must be >= 64, got {max_observation_tokens}")
        self.benchmark, self.mode, self.observation_mode = benchmark, mode, observation
        self.tasks = list(tasks) if tasks is not None else self._load(benchmark, data_path)
        if not self.tasks:
            raise ValueError(f"no {benchmark} tasks loaded from {data_path!r}; the file is empty or every row was filtered out")
        self._by_id = {t.id: t for t in self.tasks}
        self.task_ids = [t.id for t in self.tasks]
        self.models_config = None
        self.qa_models: dict[str, Any] = dict(SIMULATED_QA_MODELS)
        if isinstance(models, (str, os.PathLike)):
            from orchestra_gym.tools.models import load_models  # only with a models file

            self.models_config = load_models(models)
            self.qa_models.update({name: self.models_config.chat_model(name) for name in QA_MODELS})
        elif isinstance(models, dict):
            unknown = sorted(set(models) - set(QA_MODELS))
            if unknown:
                raise ValueError(f"models: unknown id(s) {unknown}; known ids: {list(QA_MODELS)}")
            self.qa_models.update(models)
        elif models is not None:
            raise ValueError(f"models must be None, a models-file path or a dict id -> chat model, got {type(models).__name__}")
        self.all_simulated = all(isinstance(m, SimulatedModel) for m in self.qa_models.values())
        if isinstance(judge_model, str):
            if self.models_config is None:
                raise ValueError(f"judge_model={judge_model!r} is a model id but no models file was given; pass models=FILE")
            judge_model = self.models_config.chat_model(judge_model)
        self.cache = None
        if cache is not None:
            from orchestra_gym.tools.cache import CachedChatModel, CallCache

            self.cache = cache if isinstance(cache, CallCache) else CallCache(cache, mode=cache_mode)
            self.qa_models = {k: m if isinstance(m, SimulatedModel) else CachedChatModel(m, self.cache)
                              for k, m in self.qa_models.items()}
            if judge_model is not None:
                judge_model = CachedChatModel(judge_model, self.cache)
        self.judge = Judge(judge_model, kind=benchmark)
        from orchestra_gym.tools.search import LocalSearch

        if corpus_path is not None:
            self.index: LocalSearch | None = LocalSearch.from_corpus(corpus_path, search_method)
        elif self.all_simulated:
            self.index = LocalSearch(build_corpus(self.tasks), search_method)
        else:
            self.index = None
        self.web_search = web_search
        self.count_tokens = _count_with(tokenizer) if tokenizer is not None else estimate_tokens
        self.max_observation_tokens = int(max_observation_tokens)
        self.search_k, self.min_local_docs = int(search_k), int(min_local_docs)
        self.python_timeout_s = float(python_timeout_s)
        self.sandbox_isolation = sandbox_isolation
        self.tool_specs: list[ToolSpec] = []

    # ------------------------------------------------------------------ data
    @staticmethod
    def _load(benchmark: str, data_path: Any) -> list[Task]:
        if benchmark == "hle":
            from orchestra_gym.tasks.hle import load_hle

            return load_hle(data_path=data_path)
        from orchestra_gym.tasks.frames import load_frames

        return load_frames(data_path=data_path)

    def _sample_task(self, task_id: Any | None) -> Task:
        if task_id is None:
            return self.tasks[int(self.np_random.integers(len(self.tasks)))]
        key = str(task_id)
        if key not in self._by_id:
            close = difflib.get_close_matches(key, list(self._by_id), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"options['task_id']={task_id!r} is not a task of this env{hint}; {len(self.tasks)} tasks loaded")
        return self._by_id[key]

    # ------------------------------------------------------------------ episode
    def _start_episode(self, task: Task, options: dict[str, Any]) -> list[Message]:
        if options.get("user") not in (None,):
            raise ValueError("options['user']: QA environments have no user simulator; leave it out")
        self._seed_mix = (task.id, int(self.np_random.integers(0, 2**31 - 1)))
        self.documents: list[dict[str, str]] = []
        self.code_runs: list[dict[str, Any]] = []
        self.attempts: list[str] = []
        self.final_response: str | None = None
        self.answer_model: str | None = None
        specs = self._orchestra_specs() if self.mode == "orchestra" else self._basic_specs()
        subset = options.get("tools")
        if subset is not None:
            self._check_tool_subset(subset)
            bad = [n for n in subset if n not in {s.name for s in specs}]
            if bad:
                raise ValueError(f"options['tools'] names unknown tool(s) {bad}; known tools: {[s.name for s in specs]}")
            if "answer" not in subset:
                raise ValueError("options['tools'] must keep 'answer' (the only way to end a QA episode)")
            specs = [s for s in specs if s.name in set(subset)]
        self.tool_specs = specs
        system = self._system_prompt()
        if self.observation_mode == "rebuilt":
            need = self.count_tokens(system) + 32
            if need > self.max_observation_tokens:
                raise ValueError(
                    f"max_observation_tokens={self.max_observation_tokens} is smaller than the instructions and tool "
                    f"list alone (~{need} tokens with this tokenizer); raise it to at least {need} (default 24000)"
                )
        return [Message("system", system), Message("user", self._problem_text())]

    def _tool_specs(self) -> list[ToolSpec]:
        return self.tool_specs

    def _preference_tools(self) -> list[str]:
        if self.mode == "orchestra":
            return [m for s in self.tool_specs for m in TOOL_MODELS[s.name]]
        return [s.name for s in self.tool_specs]

    def _problem_text(self) -> str:
        return self.task.prompt

    # ------------------------------------------------------------------ tool specs
    def _describe_model(self, name: str) -> str:
        prof = SIMULATED_QA_MODELS[name]
        sched = self._price_schedule()
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
        return ToolSpec(
            name=tool,
            description=f"{what}\nModels (price and typical latency):\n{table}",
            parameters={
                "type": "object",
                "properties": {"model": {"type": "string", "enum": list(models), "description": "which model does the work"}},
                "required": ["model"],
            },
            kind="model",
        )

    def _orchestra_specs(self) -> list[ToolSpec]:
        return [
            self._model_spec("search", "A search model writes a query from the problem and the context; the documents "
                                       "found are added to the context."),
            self._model_spec("enhance_reasoning", "A reasoning model writes Python code for the problem; the code is run "
                                                  "and the code and its output are added to the context."),
            self._model_spec("answer", "An answer model reads the problem and the context and gives the final answer. "
                                       "This ends the episode."),
        ]

    def _basic_specs(self) -> list[ToolSpec]:
        fee = self.pricing.fees
        q = {"type": "object", "properties": {"query": {"type": "string", "description": "search query"}}, "required": ["query"]}
        return [
            ToolSpec("web_search", f"Search the web; returns up to {self.search_k} documents. "
                                   f"${fee.get('web_search_per_call', 0):g} per call.", q, kind="read"),
            ToolSpec("local_search", f"Search the local document index (BM25); returns up to {self.search_k} documents. "
                                     f"${fee.get('local_search_per_call', 0):g} per call.", q, kind="read"),
            ToolSpec("python", f"Run Python code and return its printed output. "
                               f"${fee.get('code_interpreter_per_s', 0):g} per second of run time.",
                     {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}, kind="generic"),
            ToolSpec("answer", "Give your final answer; this ends the episode.",
                     {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}, kind="generic"),
        ]

    def _system_prompt(self) -> str:
        tools = json.dumps([s.to_openai() for s in self.tool_specs], ensure_ascii=False, indent=1)
        if self.mode == "orchestra":
            role = ("You orchestrate models to answer a hard question. You do not answer yourself: call `search` to "
                    "gather documents, `enhance_reasoning` to have code written and run, and `answer` when the context "
                    "is enough. Each tool takes one argument, `model`; models differ in skill, price and latency.")
        else:
            role = ("Answer the question. Use the search and python tools as needed, then call `answer` with your "
                    "final answer.")
        return f"{role}\n\n# Tools\n{tools}\n\n# Output format\n{QA_FORMAT_HELP}"

    # ------------------------------------------------------------------ observation
    def _observation(self) -> str:
        if self.task is None:
            return super()._observation()
        if self.observation_mode == "chat":
            return self._chat_observation()
        return self._fitted(include_system=True)[: self.max_observation_chars]

    def _fitted(self, include_system: bool) -> str:
        """The rebuilt context within ``max_observation_tokens``: oldest documents, then oldest
        code runs, then oldest attempts are dropped, then the problem is shortened."""
        docs, code, attempts = list(self.documents), list(self.code_runs), list(self.attempts)
        problem = self.task.prompt
        text = self._render(problem, docs, code, attempts, include_system)
        while self.count_tokens(text) > self.max_observation_tokens and (docs or code or attempts):
            (docs or code or attempts).pop(0)
            text = self._render(problem, docs, code, attempts, include_system)
        while self.count_tokens(text) > self.max_observation_tokens and len(problem) > 20:
            problem = problem[: int(len(problem) * 0.8)] + " ...[truncated]"
            text = self._render(problem, docs, code, attempts, include_system)
        return text

    def _chat_observation(self) -> str:
        """The transcript; over the token budget, the oldest messages after the system prompt and
        the problem are left out (a note says how many)."""
        from orchestra_gym.env import render_transcript

        head, rest = self.messages[:2], self.messages[2:]
        text = render_transcript(self.messages)
        dropped = 0
        while rest and self.count_tokens(text) > self.max_observation_tokens:
            rest = rest[1:]
            dropped += 1
            note = [Message("user", f"[environment] {dropped} earlier message(s) left out to fit the context budget.")]
            text = render_transcript(head + note + rest)
        return text[-self.max_observation_chars:]

    def _render(self, problem: str, docs: list, code: list, attempts: list, include_system: bool = True) -> str:
        parts = [self.messages[0].content if self.messages else self._system_prompt()] if include_system else []
        parts.append(f"## Problem\n{problem}")
        if docs:
            parts.append("## Documents\n" + "\n\n".join(f"[{d['id']}] {d.get('title', '')}\n{d['text']}" for d in docs))
        if code:
            parts.append("## Code and outputs\n" + "\n\n".join(
                f"# by {c['model']}\n```python\n{c['code']}\n```\nOutput:\n{c['output']}" for c in code))
        if attempts:
            parts.append("## Earlier attempts\n" + "\n".join(attempts))
        feedback = self._last_feedback() if include_system else []
        if feedback:
            parts.append("## Feedback on your last output\n" + "\n".join(feedback))
        return "\n\n".join(parts)

    def _last_feedback(self) -> list[str]:
        """Environment notes and tool errors of the latest turn (rebuilt mode shows them)."""
        out: list[str] = []
        for m in reversed(self.messages):
            if m.role == "assistant":
                break
            if (m.role == "user" and m.content.startswith("[environment]")) or (m.role == "tool" and m.content.startswith("Error")):
                out.append(m.content)
        return out[::-1]

    def _user_turn(self, text: str) -> list[Message]:
        return [Message("user", "[environment] There is no user in this task; call a tool (`answer` ends the episode).")]

    # ------------------------------------------------------------------ tools
    def _execute(self, call: ToolCall) -> tuple[ToolResult, list[Message]]:
        if self.mode == "orchestra":
            model = call.arguments.get("model")
            allowed = TOOL_MODELS[call.name]
            if model not in allowed:
                close = difflib.get_close_matches(str(model), allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                self.attempts.append(f"turn {self.turn}: {call.name}(model={model!r}) -> invalid model")
                return ToolResult(f"Error: {call.name} needs 'model' to be one of {list(allowed)}, got {model!r}{hint}",
                                  error=True), []
            self._count(model)
            result = {"search": self._search_model, "enhance_reasoning": self._reason_model, "answer": self._answer_model}[call.name](model)
        else:
            arg = {"web_search": "query", "local_search": "query", "python": "code", "answer": "answer"}[call.name]
            value = call.arguments.get(arg)
            if not isinstance(value, str) or not value.strip():
                return ToolResult(f"Error: {call.name} needs a non-empty string argument {arg!r}", error=True), []
            result = {"web_search": self._web_tool, "local_search": self._local_tool, "python": self._python_tool,
                      "answer": self._answer_tool}[call.name](value)
        return result, []

    def _context_text(self) -> str:
        """What a search/reasoning/answer model reads: problem, documents, code, attempts (no
        orchestrator instructions), within the same token budget."""
        return self._fitted(include_system=False)

    def _seed(self) -> Any:
        return (self._seed_mix, self.turn, len(self.attempts))

    def _simulated(self, name: str, right: Any, wrong: Callable, difficulty: str | None = None) -> tuple[Any, bool, Usage]:
        m: SimulatedModel = self.qa_models[name]
        r = m.respond(self._context_text(), right, wrong, category=self.task.category,
                      difficulty=difficulty or self.task.difficulty, seed=self._seed(), schedule=self._price_schedule())
        return r.value, r.correct, r.usage

    def _price_schedule(self) -> pricing_mod.PricingSchedule:
        if self.models_config is not None:
            return self.models_config.pricing_schedule(self.pricing)
        return self.pricing

    def _chat(self, name: str, prompt: str) -> tuple[str | None, Usage, str | None]:
        return complete_text(self.qa_models[name], prompt)

    def _add_docs(self, found: list[dict[str, str]]) -> list[dict[str, str]]:
        have = {d["id"] for d in self.documents}
        new = [d for d in found if d["id"] not in have]
        self.documents.extend(new)
        return new

    def _local_hits(self, query: str) -> list[dict[str, str]]:
        if self.index is None or not query.strip():
            return []
        return [{"id": h.id, "title": h.title, "text": h.text} for h in self.index.search(query, self.search_k)]

    def _web_hits(self, query: str) -> tuple[list[dict[str, str]], Usage, str | None]:
        """Web documents, usage (fee + latency) and an error text (None when fine)."""
        search = getattr(self.web_search, "search", None)
        if callable(search):  # orchestra_gym.tools.search.WebSearch
            self.web_search.pricing = self.pricing
            res = search(query, max_results=self.search_k)
            if res.error:
                return [], res.usage, res.content
            docs = [{"id": str(r.get("url") or f"web-{self.turn}-{i}"), "title": str(r.get("title") or ""),
                     "text": str(r.get("content") or "")} for i, r in enumerate(res.metadata.get("results", []))]
            return docs, res.usage, None
        t0 = time.perf_counter()
        try:
            found = list(self.web_search(query))[: self.search_k]
        except Exception as e:  # a failing search backend is reported, never a crash
            return [], Usage(latency_s=time.perf_counter() - t0), f"{type(e).__name__}: {e}"
        docs = [{"id": str(d.get("id") or f"web-{self.turn}-{i}"), "title": str(d.get("title", "")), "text": str(d.get("text", ""))}
                for i, d in enumerate(found)]
        return docs, Usage(cost_usd=pricing_mod.fee_usd("web_search_per_call", 1, self.pricing),
                           latency_s=time.perf_counter() - t0), None

    def _retrieve(self, query: str, allow_web: bool, force_web: bool = False) -> tuple[list[dict[str, str]], Usage, str]:
        """Documents for `query`: the local index, then the web when fewer than `min_local_docs`
        local documents came back (or always, with `force_web`). Returns (docs, usage, source)."""
        usage, source, hits = Usage(), "local", []
        if not force_web:
            hits = self._local_hits(query)
            usage = Usage(cost_usd=pricing_mod.fee_usd("local_search_per_call", 1, self.pricing))
        if (force_web or len(hits) < self.min_local_docs) and allow_web and self.web_search is not None:
            web, u, err = self._web_hits(query)
            hits, usage, source = hits + web, usage + u, ("web" if err is None else f"web failed: {err}")
        elif force_web:
            # no web backend configured: serve the query from the local index, charged as a web search
            hits = self._local_hits(query)
            usage, source = Usage(cost_usd=pricing_mod.fee_usd("web_search_per_call", 1, self.pricing)), "local (no web backend)"
        return hits, usage, source

    def _docs_text(self, new: list[dict[str, str]]) -> str:
        return "\n\n".join(f"[{d['id']}] {d.get('title', '')}\n{d['text']}" for d in new)

    def _search_model(self, name: str) -> ToolResult:
        model = self.qa_models[name]
        if isinstance(model, SimulatedModel):
            words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]+", self.task.prompt)] or ["question"]

            def poor_query(rng: Any) -> str:
                return " ".join(str(w) for w in rng.choice(words, size=min(2, len(words)), replace=False))

            query, _, usage = self._simulated(name, self.task.prompt, poor_query)
        else:
            prompt = (f"Write one web search query that would find the facts needed to answer the question below. "
                      f"Reply with the query only.\n\n{self._context_text()}")
            text, usage, err = self._chat(name, prompt)
            if err is not None:
                self.attempts.append(f"turn {self.turn}: search({name}) failed: {err}")
                return ToolResult(f"Error: search model {name} failed: {err}", error=True, usage=usage)
            query = (text or "").strip().strip('"').splitlines()[0] if (text or "").strip() else self.task.prompt
        hits, u2, source = self._retrieve(query, allow_web=True)
        new = self._add_docs(hits)
        self.attempts.append(f"turn {self.turn}: search({name}) query {query!r} -> {len(new)} new document(s) ({source})")
        body = self._docs_text(new) if new else "No new documents."
        return ToolResult(f"Query: {query}\n{body}", usage=usage + u2, metadata={"query": query, "new_documents": [d["id"] for d in new]})

    def _run_code(self, code: str, simulated: bool) -> tuple[str, bool, Usage]:
        """Run code in `orchestra_gym.tools.sandbox.PythonSandbox`: (output, error, usage).

        Offline (`simulated`), usage is charged on a logical clock (`_SIM_SANDBOX_S` seconds) so
        that `info` is deterministic under a seed; otherwise CPU seconds x fee and wall-clock s.
        """
        from orchestra_gym.tools.sandbox import PythonSandbox

        box = PythonSandbox(self.python_timeout_s, pricing=self.pricing, isolation=self.sandbox_isolation, name="python")
        res = box(code)
        usage = res.usage
        if simulated:
            usage = Usage(cost_usd=pricing_mod.fee_usd("code_interpreter_per_s", _SIM_SANDBOX_S, self.pricing),
                          latency_s=_SIM_SANDBOX_S)
        return res.content, bool(res.error), usage

    def _sim_code(self, value: str) -> str:
        return f"candidate = {value!r}\nprint('candidate answer:', candidate)"

    def _reason_model(self, name: str) -> ToolResult:
        model = self.qa_models[name]
        gold = str(self.task.answer or "").strip()
        if isinstance(model, SimulatedModel):
            pool = [str(t.answer) for t in self.tasks[:200]]
            code, _, usage = self._simulated(name, self._sim_code(gold),
                                             lambda rng: self._sim_code(plausible_wrong_answer(gold, rng, pool)))
        else:
            prompt = ("Write a short Python program that helps answer the question below (computations, checks). "
                      "Print the useful results. Reply with one ```python code block.\n\n" + self._context_text())
            text, usage, err = self._chat(name, prompt)
            if err is not None:
                self.attempts.append(f"turn {self.turn}: enhance_reasoning({name}) failed: {err}")
                return ToolResult(f"Error: reasoning model {name} failed: {err}", error=True, usage=usage)
            m = _CODE_BLOCK.search(text or "")
            code = m.group(1) if m else (text or "")
        out, err, run_usage = self._run_code(code, simulated=isinstance(model, SimulatedModel))
        usage = usage + run_usage
        self.code_runs.append({"model": name, "code": code, "output": out})
        self.attempts.append(f"turn {self.turn}: enhance_reasoning({name}) -> code ran{' with an error' if err else ''}")
        return ToolResult(f"```python\n{code}\n```\nOutput:\n{out}", error=False, usage=usage,
                          metadata={"sandbox_error": err})

    def _context_has_answer(self) -> bool:
        """True when a document (the question's own text removed) or a code output contains the
        normalised gold answer as whole words (drives the simulated answer models)."""
        gold = normalize_answer(self.task.answer)
        if not gold:
            return False
        question = self.task.prompt.strip()
        ctx = normalize_answer(" ".join(d["text"].replace(question, " ") for d in self.documents)
                               + " " + " ".join(c["output"] for c in self.code_runs))
        return f" {gold} " in f" {ctx} "

    def _answer_difficulty(self) -> str:
        """Difficulty a simulated answer model faces now. HLE (reasoning-bound): the task's, one
        level easier once the context holds the answer. FRAMES (retrieval-bound): ``"hard"``
        until the context holds the answer, then the task's own."""
        has = self._context_has_answer()
        if self.benchmark == "frames":
            return self.task.difficulty if has else "hard"
        return _EASIER[self.task.difficulty] if has else self.task.difficulty

    def _answer_model(self, name: str) -> ToolResult:
        model = self.qa_models[name]
        gold = str(self.task.answer or "").strip()
        if isinstance(model, SimulatedModel):
            difficulty = self._answer_difficulty()
            pool = [str(t.answer) for t in self.tasks[:200]]
            value, _, usage = self._simulated(name, gold, lambda rng: plausible_wrong_answer(gold, rng, pool), difficulty)
            response = f"Explanation: from the context.\nAnswer: {value}\nConfidence: 80%"
        else:
            prompt = ("Answer the question using the context. Reply in the format\nExplanation: <reasons>\n"
                      "Answer: <final answer>\nConfidence: <0-100%>\n\n" + self._context_text())
            text, usage, err = self._chat(name, prompt)
            if err is not None:
                self.attempts.append(f"turn {self.turn}: answer({name}) failed: {err}")
                return ToolResult(f"Error: answer model {name} failed: {err}", error=True, usage=usage)
            response = text or ""
        self.final_response, self.answer_model = response, name
        self._end("answer")
        return ToolResult(response, usage=usage)

    def _web_tool(self, query: str) -> ToolResult:
        hits, usage, source = self._retrieve(query, allow_web=True, force_web=True)
        new = self._add_docs(hits)
        self.attempts.append(f"turn {self.turn}: web_search {query!r} -> {len(new)} new document(s) ({source})")
        return ToolResult(self._docs_text(hits) or "No results.", usage=usage, metadata={"source": source})

    def _local_tool(self, query: str) -> ToolResult:
        hits, usage, _ = self._retrieve(query, allow_web=False)
        new = self._add_docs(hits)
        self.attempts.append(f"turn {self.turn}: local_search {query!r} -> {len(new)} new document(s)")
        return ToolResult(self._docs_text(hits) or "No results.", usage=usage)

    def _python_tool(self, code: str) -> ToolResult:
        out, err, usage = self._run_code(code, simulated=self.all_simulated)
        self.code_runs.append({"model": "policy", "code": code, "output": out})
        self.attempts.append(f"turn {self.turn}: python -> {'error' if err else 'ok'}")
        return ToolResult(out, error=err, usage=usage)

    def _answer_tool(self, answer: str) -> ToolResult:
        self.final_response, self.answer_model = f"Answer: {answer}", "policy"
        self._end("answer")
        return ToolResult("Answer recorded.")

    def close(self) -> None:
        """Close the HTTP clients of real models and the judge, and the cache's connection."""
        for m in list(self.qa_models.values()) + [self.judge.model]:
            closer = None if m is None or isinstance(m, SimulatedModel) else getattr(m, "close", None)
            if callable(closer):
                closer()
        if self.cache is not None:
            self.cache.close()
        super().close()

    # ------------------------------------------------------------------ grading / oracle
    def _grade(self) -> tuple[float, dict[str, Any]]:
        res: JudgeResult = self.judge(self.task, self.final_response)
        return (1.0 if res.correct else 0.0), {
            "correct": bool(res.correct),
            "judge_method": res.method,
            "response": self.final_response,
            "answer_model": self.answer_model,
            "gold": self.task.answer,
            "judge_details": res.details,
            "judge_usage": res.usage.to_dict(),
        }

    def oracle_action(self) -> str:
        """A strong fixed strategy (for the ``oracle`` baseline): search with the strongest
        search model until the context holds the answer (at most twice), then answer with the
        strongest answer model; in basic mode, answer with the gold answer."""
        from orchestra_gym.parsing import render_tool_calls

        if self.mode == "basic":
            return render_tool_calls([ToolCall("answer", {"answer": str(self.task.answer or "")})])
        searches = sum(1 for a in self.attempts if ": search(" in a)
        if "search" in {s.name for s in self.tool_specs} and not self._context_has_answer() and searches < 2:
            return render_tool_calls([ToolCall("search", {"model": "search-1"})])
        return render_tool_calls([ToolCall("answer", {"model": "answer-1"})])


class HLEEnv(QAEnv):
    """``ToolOrchestra-HLE-v0``: `QAEnv` on Humanity's Last Exam (text-only). See `QAEnv`."""

    def __init__(self, data_path: str | os.PathLike[str] | None = None, **kwargs: Any):
        super().__init__(benchmark="hle", data_path=data_path, **kwargs)


class FRAMESEnv(QAEnv):
    """``ToolOrchestra-FRAMES-v0``: `QAEnv` on FRAMES (824 questions). See `QAEnv`."""

    def __init__(self, data_path: str | os.PathLike[str] | None = None, **kwargs: Any):
        super().__init__(benchmark="frames", data_path=data_path, **kwargs)


# ---------------------------------------------------------------------- eval metrics


def qa_metrics(records: Sequence[dict[str, Any]], z: float = 1.96) -> dict[str, Any]:
    """Paper Table 1 / Table 15 metrics from `orchestra_gym.cli.run_episodes` records.

    Args:
        records: dicts with ``solved`` (bool), ``cost_usd`` (USD), ``latency_s`` (s) and
            ``tool_calls`` (dict name -> count).
        z: normal quantile (1.96 for 95%).

    Returns:
        ``n``; ``accuracy`` in [0, 1] (nan when n == 0); ``accuracy_ci95`` = Wald interval
        ``p +- z sqrt(p (1 - p) / n)`` clipped to [0, 1] (any n: (nan, nan) for n = 0, a zero-width
        interval for p in {0, 1}, unlike HLE's script which needs >= 100 items); ``cost_cents``
        (mean US cents per task); ``latency_min`` (mean minutes per task); ``model_calls``
        (total calls per anonymised model, Table 15) and ``model_call_share`` (fraction of all
        model calls).
    """
    from orchestra_gym.cli import wald_interval

    n = len(records)
    acc = sum(bool(r["solved"]) for r in records) / n if n else math.nan
    lo, hi = wald_interval(acc, n, z) if n else (math.nan, math.nan)
    calls: dict[str, float] = {}
    for r in records:
        for k, v in r.get("tool_calls", {}).items():
            if k in QA_MODELS:
                calls[k] = calls.get(k, 0.0) + float(v)
    total = sum(calls.values())
    return {
        "n": n,
        "accuracy": acc,
        "accuracy_ci95": [lo, hi],
        "cost_cents": 100.0 * sum(float(r["cost_usd"]) for r in records) / n if n else math.nan,
        "latency_min": sum(float(r["latency_s"]) for r in records) / 60.0 / n if n else math.nan,
        "model_calls": dict(sorted(calls.items())),
        "model_call_share": {k: v / total for k, v in sorted(calls.items())} if total else {},
    }


def format_qa_table(metrics: dict[str, Any], env_id: str, agent: str) -> str:
    """The Table 1 columns as text: accuracy (%) with its 95% interval, cost (cents), latency (min)."""
    lo, hi = metrics["accuracy_ci95"]
    acc = metrics["accuracy"]
    head = f"{'env':<26} {'agent':<12} {'n':>5} {'accuracy %':>10} {'95% CI':>16} {'cost ¢':>9} {'latency min':>11}"
    row = (f"{env_id:<26} {agent:<12} {metrics['n']:>5d} {100 * acc:>10.1f} {f'[{100 * lo:.1f}, {100 * hi:.1f}]':>16} "
           f"{metrics['cost_cents']:>9.3f} {metrics['latency_min']:>11.3f}")
    calls = ", ".join(f"{k} {int(v)} ({100 * metrics['model_call_share'][k]:.0f}%)" for k, v in metrics["model_calls"].items())
    return f"{head}\n{row}\nmodel calls: {calls or 'none'}"
