"""QA environments: ``ToolOrchestra-HLE-v0`` and ``ToolOrchestra-FRAMES-v0``.

The paper's QA protocol (ToolOrchestra, arXiv 2511.21689, Sec. 2-4 and its released evaluation):
the orchestrator never answers by itself; it calls three tools, each with one argument ``model``
that picks an anonymised model whose price and typical latency the tool description lists:

* ``search(query, model)``: the model turns the orchestrator's query into a search (a real model
  writes it from the query and the context); the local index answers; a web search backend (when
  configured) is asked when too few local documents come back. New documents join the context.
  (The paper's ``search`` takes ``model`` only; the ``query`` argument makes what the orchestrator
  asks for matter offline, issue 37.)
* ``enhance_reasoning(model)``: the model writes Python; the sandbox runs it; code and output join
  the context.
* ``answer(model)``: the model writes the final answer; the episode ends and the judge grades it.

The observation is rebuilt every turn from the episode state, as in the paper: problem,
documents, code and outputs, earlier attempts, truncated to a token budget with the policy's
tokenizer. A chat mode (tool results appended as messages) and a "basic tools" mode
(``web_search``, ``local_search``, ``python``, ``answer(answer)``) are also offered.

This module holds the environment (tasks, episode state, observation, grading); the two tool
sets (models as tools, basic tools) and the one path by which a tool asks a simulated or real
model are in `orchestra_gym.envs.qa_tools`.

Offline default: simulated models (`orchestra_gym.tools.simulated.SimulatedModel`, accuracy by
the evidence in the context and the model's skill on the kind of question, `QA_SKILLS`; logical
latency) and BM25 over an evidence-chain corpus generated from the tasks
(`orchestra_gym.domains.qa_corpus`: no document states an answer). Grading: normalised exact match, then the benchmark's LLM
judge when a judge model is given (`orchestra_gym.judges`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any, Callable, Sequence

from orchestra_gym import pricing as pricing_mod
from orchestra_gym.description import EnvDescription
from orchestra_gym.domains.qa_corpus import build_corpus
from orchestra_gym.env import OrchestraEnv, render_transcript
from orchestra_gym.envs.qa_tools import (
    BASIC_TOOLS,
    QA_MODELS,
    SIMULATED_QA_MODELS,
    TOOL_MODELS,
    TOOL_SETS,
    docs_text,
)
from orchestra_gym.errors import did_you_mean
from orchestra_gym.judges import Judge, JudgeResult
from orchestra_gym.tools.simulated import SimulatedModel
from orchestra_gym.types import Message, Task, ToolCall, ToolResult, ToolSpec

__all__ = [
    "QAEnv",
    "HLEEnv",
    "FRAMESEnv",
    "QA_MODELS",
    "TOOL_MODELS",
    "SIMULATED_QA_MODELS",
    "estimate_tokens",
]

# QA has no user to talk to: every turn is a tool call (the last one is `answer`).
QA_FORMAT_HELP = (
    "Reply with optional <think>...</think>, then one or more "
    '<tool_call>{"name": "<tool name>", "arguments": {...}}</tool_call> blocks; the episode ends with a call of `answer`.'
)


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


class QAEnv(OrchestraEnv):
    """Question answering by orchestrating search, reasoning and answer models (HLE, FRAMES).

    ## Description
    The paper's QA protocol (ToolOrchestra Sec. 2-4 and its released evaluation). One task is one
    question. Each turn the orchestrator calls tools; with the default ``mode="orchestra"`` it
    never answers itself: ``search``, ``enhance_reasoning`` and ``answer`` each take one argument,
    ``model``, which picks an anonymised model (`QA_MODELS`) that writes a query, Python code or
    the final answer. ``mode="basic"`` gives the policy plain tools instead. The two tool sets are
    `orchestra_gym.envs.qa_tools.ModelTools` and `orchestra_gym.envs.qa_tools.BasicTools`.
    Offline, every model is a `SimulatedModel` (latency in `orchestra_gym.tools.simulated.QA_PROFILES`,
    skill per kind of question in ``QA_SKILLS``; its accuracy follows what the context holds,
    `orchestra_gym.envs.qa_tools.ModelTools.chain_p`) and the local index is BM25 over an
    evidence-chain corpus generated from the tasks (`orchestra_gym.domains.qa_corpus`).

    ## Action Space
    ``TextSpace``: model text with ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
    blocks (`orchestra_gym.parsing`), or a structured action ``{"name", "arguments"}``.

    ## Observation Space
    ``TextSpace``. ``observation="rebuilt"`` (default, the paper's): instructions and tools, then
    ``## Problem``, ``## Documents``, ``## Code and outputs``, ``## Earlier attempts`` (and the
    environment's feedback on a malformed last output), rebuilt each turn and truncated to
    ``max_observation_tokens`` (oldest documents, then oldest code, then oldest attempts are
    dropped first, then the problem is shortened). ``observation="chat"``: the transcript with
    tool results appended as messages (`OrchestraEnv`), oldest turns left out beyond the token
    budget. ``info["new_messages"]`` has this step's messages as dicts.

    ## Rewards
    The outcome at termination: 1.0 when the judge finds the answer correct, else 0.0; 0 before.
    The preference reward over a group of rollouts: `orchestra_gym.rewards`.

    ## Starting State
    A task drawn with the env's seeded RNG (or ``options["task_id"]``, a task id of the data).
    Options ``preference``, ``pricing`` and ``tools`` (a subset that keeps ``answer``) as in
    `OrchestraEnv.reset`; there is no ``user``.

    ## Episode End
    Terminated by ``answer`` (a failed answer model call does not end it); truncated at
    ``max_turns`` (paper: 50) or ``max_errors`` malformed actions.

    ## Arguments
    * ``benchmark``: ``"hle"`` or ``"frames"`` (task loader, judge kind).
    * ``data_path``: local data file (see `load_hle` / `load_frames`); None uses the default source.
    * ``tasks``: a list of `Task` to use instead of loading.
    * ``mode``: ``"orchestra"`` (the paper's three model tools) or ``"basic"``.
    * ``observation``: ``"rebuilt"`` or ``"chat"``.
    * ``models``: None (simulated models), a models-file path (`orchestra_gym.tools.models`), or a
      dict anonymised id -> chat model (``complete(messages, tools=None, **sampling)``) or
      `SimulatedModel`; ids not given stay simulated.
    * ``judge_model``: chat model (or id in the models file) for the LLM judge; None = exact match.
    * ``corpus_path``: JSONL corpus (``id``, ``title``, ``text``). None: a corpus generated from the
      tasks when every model is simulated (it states gold answers: simulation only), else no local
      corpus. Indexed by `orchestra_gym.tools.search.LocalSearch`.
    * ``search_method``: ``"bm25"`` (default), ``"dense"`` or ``"hybrid"`` (`LocalSearch`).
    * ``web_search``: a `orchestra_gym.tools.search.WebSearch` (Tavily), or a callable
      ``query -> list of {"id"?, "title", "text"}``; None = no web search (offline, ``web_search``
      in basic mode is then served by the local index at the web fee).
    * ``tokenizer``: the policy's tokenizer for the observation budget: an object with
      ``encode(text)`` (tiktoken, `tokenizers`, transformers) or a callable text -> token ids or
      count; default `estimate_tokens` (no tokenizer needed).
    * ``max_observation_tokens``: token budget of the rebuilt observation (our default 24,000).
    * ``search_k``: documents per search; ``min_local_docs``: fewer local hits than this asks the web.
    * ``python_timeout_s``: sandbox time limit per run (s); ``sandbox_isolation``: ``"full"`` or
      ``"none"`` (`orchestra_gym.tools.sandbox`; None reads ``ORCHESTRA_SANDBOX_ISOLATION``).
    * ``cache``: record/replay cache for every real model call and the judge: a SQLite path or an
      `orchestra_gym.tools.cache.CallCache`; ``cache_mode``: its mode when a path is given
      (``"record-missing"``, ``"record"``, ``"replay"``, ``"off"``).
    * ``max_turns``, ``max_errors``, ``max_observation_chars``, ``preference``, ``pricing``,
      ``render_mode``: see `OrchestraEnv`.

    ## Info
    `OrchestraEnv`'s keys (usage per step and per episode in tokens, USD, seconds; tool-call
    counts; parse errors); ``tool_calls`` also counts each anonymised model (``search-2``...); the
    reward vector's tool components are the models of the exposed tools (orchestra mode, e.g. 12
    components, ``calls/search-1`` first) or the tool names (basic mode). ``reward_breakdown``
    holds ``correct``, ``judge_method`` (``"exact"``, ``"llm"`` or ``"none"``), ``response``,
    ``answer_model``, ``gold``, ``judge_details`` and ``judge_usage`` (the judge's tokens, USD
    and seconds; not charged to the episode).

    ## Tools
    Orchestra mode (`ModelTools`): ``search(query, model)`` (the model searches for the query; the local index
    answers, the web when fewer than ``min_local_docs`` local documents come back),
    ``enhance_reasoning(model)`` (the model writes Python; the sandbox runs it),
    ``answer(model)`` (the model answers; the episode ends). Cost: the model's tokens x its price
    in the episode's pricing schedule (the models file's prices with ``models=``), plus
    ``local_search_per_call`` / ``web_search_per_call`` per search and ``code_interpreter_per_s``
    per sandbox second (1 logical second per run when the model is simulated). Latency: the
    simulator's logical clock, or measured for real models. Tool descriptions list each model's
    price and typical latency (the simulator profile's figure, also shown for real endpoints).
    Basic mode (`BasicTools`): ``web_search(query)`` (``web_search_per_call``), ``local_search(query)``
    (``local_search_per_call``), ``python(code)`` (``code_interpreter_per_s``), ``answer(answer)``.

    ## Version History
    * v0: initial release.
    """

    MODEL_TOOL_IDS: tuple[str, ...] = tuple(QA_MODELS)  # the model tools a models file may make real

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
        if mode not in TOOL_SETS:
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
            real, _ = self.models_config.split(tuple(QA_MODELS))  # the others stay simulated
            self.qa_models.update({name: self.models_config.chat_model(name) for name in real})
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
        self.toolset = TOOL_SETS[mode](self)

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
            raise ValueError(f"options['task_id']={task_id!r} is not a task of this env{did_you_mean(key, self._by_id)}; "
                             f"{len(self.tasks)} tasks loaded")
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
        specs = self.toolset.specs()
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

    def _problem_text(self) -> str:
        return self.task.prompt

    def _system_prompt(self) -> str:
        tools = json.dumps([s.to_openai() for s in self.tool_specs], ensure_ascii=False, indent=1)
        return f"{self.toolset.role}\n\n# Tools\n{tools}\n\n# Output format\n{QA_FORMAT_HELP}"

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
            parts.append("## Documents\n" + docs_text(docs))
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

    # ------------------------------------------------------------------ tools (`orchestra_gym.envs.qa_tools`)
    def _execute(self, call: ToolCall) -> tuple[ToolResult, list[Message]]:
        return self.toolset.execute(call), []

    def _context_text(self) -> str:
        """What a search/reasoning/answer model reads: problem, documents, code, attempts (no
        orchestrator instructions), within the same token budget."""
        return self._fitted(include_system=False)

    def _seed(self) -> Any:
        """The seed of a simulated model's draws: episode, turn and attempts so far."""
        return (self._seed_mix, self.turn, len(self.attempts))

    def describe(self) -> EnvDescription:
        """`OrchestraEnv.describe`, its ``pricing`` with the models file's prices when one was given."""
        d = super().describe()
        return dataclasses.replace(d, pricing=self._price_schedule()) if self._started else d

    def _price_schedule(self) -> pricing_mod.PricingSchedule:
        """The episode's pricing schedule, with the models file's prices when one was given."""
        if self.models_config is not None:
            return self.models_config.pricing_schedule(self.pricing)
        return self.pricing

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
        """The ``oracle`` baseline's next action: in orchestra mode the right sequence for the question
        (`orchestra_gym.envs.qa_tools.ModelTools.oracle_action`: each hop of the hidden evidence
        chain searched by name, code where needed, the best models for the kind); in basic mode,
        answer with the gold answer."""
        return self.toolset.oracle_action()


class HLEEnv(QAEnv):
    """``ToolOrchestra-HLE-v0``: `QAEnv` on Humanity's Last Exam, text-only questions.

    ## Description
    `QAEnv` with ``benchmark="hle"``: the tasks are HLE's text-only questions (Hugging Face
    ``cais/hle``, gated; see `orchestra_gym.tasks.hle.load_hle`), graded by normalised exact
    match, then HLE's judge prompt when ``judge_model`` is given. Offline, each question's
    evidence chain has 2 hops; a numeric answer needs code run on the last hop's figures.

    ## Action Space
    As `QAEnv`: model text with ``<tool_call>`` blocks, or a structured action.

    ## Observation Space
    As `QAEnv`: the rebuilt context (``## Problem`` ... ``## Earlier attempts``) or the transcript.

    ## Rewards
    1.0 at termination when the answer is judged correct, else 0.0; 0 before.

    ## Starting State
    A question drawn with the env's seeded RNG, or ``options["task_id"]`` = an HLE ``id``.

    ## Episode End
    Terminated by ``answer``; truncated at ``max_turns`` (50) or ``max_errors``.

    ## Arguments
    * ``data_path``: a local JSONL/JSON/parquet/CSV file in HLE's schema; None reads
      ``HLE_DATA_PATH``, else the gated dataset (needs ``HF_TOKEN`` or ``huggingface-cli login``).
    * every other keyword of `QAEnv` except ``benchmark``.

    ## Info
    As `QAEnv` (usage in tokens, USD, seconds; calls per tool and per model; the judge's verdict in
    ``reward_breakdown``).

    ## Tools
    As `QAEnv`: ``search``, ``enhance_reasoning``, ``answer`` (each with ``model``), or the basic
    tools with ``mode="basic"``.

    ## Version History
    * v0: initial release.
    """

    def __init__(self, data_path: str | os.PathLike[str] | None = None, **kwargs: Any):
        super().__init__(benchmark="hle", data_path=data_path, **kwargs)


class FRAMESEnv(QAEnv):
    """``ToolOrchestra-FRAMES-v0``: `QAEnv` on FRAMES (824 multi-hop Wikipedia questions).

    ## Description
    `QAEnv` with ``benchmark="frames"``: the tasks are FRAMES' questions (Hugging Face
    ``google/frames-benchmark``; see `orchestra_gym.tasks.frames.load_frames`), graded by
    normalised exact match, then the FRAMES autorater when ``judge_model`` is given. Offline, each
    question's evidence chain has 2 hops (easy, medium: up to 4 Wikipedia articles) or 3 (hard);
    a numeric answer needs code run on the last hop's figures. ``data_path="sample"`` loads the
    shipped generated sample (`orchestra_gym.data`).

    ## Action Space
    As `QAEnv`: model text with ``<tool_call>`` blocks, or a structured action.

    ## Observation Space
    As `QAEnv`: the rebuilt context (``## Problem`` ... ``## Earlier attempts``) or the transcript.

    ## Rewards
    1.0 at termination when the answer is judged correct, else 0.0; 0 before.

    ## Starting State
    A question drawn with the env's seeded RNG, or ``options["task_id"]`` = a FRAMES row id (``"0"`` ...).

    ## Episode End
    Terminated by ``answer``; truncated at ``max_turns`` (50) or ``max_errors``.

    ## Arguments
    * ``data_path``: a TSV/CSV/JSONL/JSON/parquet file in FRAMES' schema; None reads
      ``FRAMES_DATA_PATH`` (`default_frames_path`), else downloads ``test.tsv``.
    * every other keyword of `QAEnv` except ``benchmark``.

    ## Info
    As `QAEnv` (usage in tokens, USD, seconds; calls per tool and per model; the judge's verdict in
    ``reward_breakdown``).

    ## Tools
    As `QAEnv`: ``search``, ``enhance_reasoning``, ``answer`` (each with ``model``), or the basic
    tools with ``mode="basic"``.

    ## Version History
    * v0: initial release.
    """

    def __init__(self, data_path: str | os.PathLike[str] | None = None, **kwargs: Any):
        super().__init__(benchmark="frames", data_path=data_path, **kwargs)
