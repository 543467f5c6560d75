"""The one episode runner, run folders, and the one metrics module of orchestra_gym.

Runner: `run_episodes` plays an agent on an env over a list of tasks and trials and returns one
`EpisodeResult` per episode (task id, trial, seed, the final ``info``, optionally the transcript).
An episode depends only on its own seed, task and reset options, so the plan
(`EpisodeResult.trial`, ``seed + index``) stays the same when episodes run concurrently
(``max_concurrency``: threads, an env per worker, results in plan order) or are resumed.
Infrastructure failures (`infra_error_of`, `INFRA_EXCEPTIONS`) are retried, then recorded apart.

Run folders (``orchestra eval --output-dir``): ``run.json`` (`RunConfig`: env id and kwargs, agent,
seed, episodes, trials...), ``trajectories.jsonl`` (one line per episode, appended and flushed as it
ends: `EpisodeResult.record` plus the messages) and ``summary.json`` (`run_summary`). `evaluate`
makes one, `resume` plays only what it lacks, `regrade` recomputes grades and summary from the
stored trajectories, `load_run` reads one, `report` renders the paper's tables over several.

Metrics, all computed from episodes' final ``info`` dicts (or `EpisodeResult`s, which hold them),
infra failures left out:

* `summarize`: success rate with its Wald 95% interval (`wald_interval`), mean outcome, cost (USD),
  latency (s), turns, tool mix (calls per episode by tool), parse errors, end reasons, infra
  failures, and tau2's components that could not be judged offline.
* `pass_hat_k` / `pass_hat_ks`: tau2-bench's pass^k (unbiased, per task, averaged over tasks).
* `qa_metrics`, `table1_row`, `tau2_task_weighted`: the columns of ToolOrchestra's Table 1
  (accuracy % with its interval, cost in cents, latency in minutes per task) and Table 15 (calls
  per model).
* `cost_accuracy_hull`, `hull_accuracy`, `hull_gap`, `aiq`: the accuracy-cost plane of RouterBench
  (the non-decreasing convex hull and the area under it).
* `rollout_summary`: the trainer's per-step summary (success, cost per solved task, valid-format
  rate, tool mix...).
* `preference_score`: the App. L preference metric of a run against a baseline run
  (`orchestra_gym.rewards.preference_metric`); `group_preference_score`: the same comparison in the
  group form of the training reward, with reference runs as the group
  (`orchestra_gym.rewards.reference_group_scores`).

`format_table`, `format_qa_table`, `format_mix` and `report` render them as text.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import math
import os
import queue
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import gymnasium as gym
import httpx
import numpy as np
from tqdm import tqdm

from orchestra_gym.agents import Agent, ExpertAgent, RouterAgent, agent_factory, check_agent_name
from orchestra_gym.envs.qa import QA_MODELS, QAEnv
from orchestra_gym.errors import InfraError
from orchestra_gym.rewards import RewardLayout, is_solved, preference_metric, reference_group_scores
from orchestra_gym.tasks.tau2 import tau2_score
from orchestra_gym.types import Preference

__all__ = [
    "EpisodeResult",
    "run_episodes",
    "evaluate",
    "resume",
    "regrade",
    "load_run",
    "RunConfig",
    "run_summary",
    "infra_error_of",
    "is_infra",
    "INFRA_EXCEPTIONS",
    "pass_hat_k",
    "pass_hat_ks",
    "table1_row",
    "tau2_task_weighted",
    "report",
    "cost_accuracy_hull",
    "hull_accuracy",
    "hull_gap",
    "aiq",
    "summarize",
    "qa_metrics",
    "rollout_summary",
    "preference_score",
    "group_preference_score",
    "wald_interval",
    "mean_tool_calls",
    "by_label",
    "format_table",
    "format_qa_table",
    "format_mix",
    "jsonable",
    "MODEL_TOOLS",
    "ORCHESTRATOR_USAGE",
    "fit_router",
    "ROUTER_COST_WEIGHTS",
]

# Tools whose calls are also counted under the model they used (see OrchestraEnv's info).
MODEL_TOOLS = frozenset({"call_expert", "search", "enhance_reasoning", "answer"})
_MODEL_ID = re.compile(r"[a-z\-]+-\d+")  # an anonymised model id: expert-2, answer-math-1
#: The orchestrator's own usage keys (``info["episode_orchestrator_<key>"]``, `OrchestraEnv.add_orchestrator_usage`).
ORCHESTRATOR_USAGE = ("cost_usd", "latency_s", "prompt_tokens", "completion_tokens")


# ------------------------------------------------------------------------------------ episodes
@dataclass
class EpisodeResult:
    """One played episode.

    Attributes:
        task_id: the task's id (``env.unwrapped.task.id``).
        trial: which trial of the task (0-based; see `run_episodes`).
        seed: the seed ``reset`` got.
        info: the final ``info`` (the env's end-of-episode keys: ``outcome``, ``solved``,
            ``reward_vector``, ``reward_vector_names``, ``reward_breakdown``, ``end_reason``, and
            the episode totals ``episode_cost_usd`` (USD), ``episode_latency_s`` (s), ``turn``,
            ``tool_calls``, ``parse_errors``).
        steps: calls of ``env.step``.
        messages: the transcript as message dicts (role, content, ...), when kept.
        infra_error: None for a played episode; else why its last attempt failed for a reason
            outside the agent (`infra_error_of`): an infra failure, left out of every metric and
            counted apart (``infra_failures``).
        attempts: plays of this episode (1 + infra retries).
    """

    task_id: Any
    trial: int
    seed: int
    info: dict[str, Any]
    steps: int = 0
    messages: list[dict[str, Any]] | None = None
    infra_error: str | None = None
    attempts: int = 1

    @property
    def end_reason(self) -> str:
        """Why the episode ended (``answer``, ``user_stop``, ``turn_limit``, ``cost_budget``...)."""
        return str(self.info.get("end_reason"))

    @property
    def solved(self) -> bool:
        """Whether the outcome counts as solved (``info["solved"]``)."""
        return bool(self.info.get("solved", False))

    def record(self) -> dict[str, Any]:
        """A JSON-able record of the episode (one trajectories line without its ``messages``):
        the flat columns ``task_id``, ``seed``, ``outcome``, ``solved``, ``cost_usd`` (USD),
        ``latency_s`` (s), ``turns``, ``tool_calls``, ``parse_errors``, ``end_reason``,
        ``reward_vector``, ``reward_vector_names``, ``reward_breakdown``, ``trial``, the
        orchestrator's own part of the usage (``orchestrator_cost_usd``, ``orchestrator_latency_s``,
        ``orchestrator_prompt_tokens``, ``orchestrator_completion_tokens``: 0 for agents without a
        priced model; included in ``cost_usd`` and ``latency_s``); then ``steps``, ``infra_error``, ``attempts`` and ``info`` (the whole final ``info``, what
        `from_record` restores and `regrade` re-reads). An infra failure without a final
        ``info`` has outcome 0, cost 0 and end reason ``infra_error``."""
        info = self.info
        return {
            "task_id": self.task_id,
            "seed": self.seed,
            "outcome": float(info.get("outcome", 0.0)),
            "solved": bool(info.get("solved", False)),
            "cost_usd": float(info.get("episode_cost_usd", 0.0)),
            "latency_s": float(info.get("episode_latency_s", 0.0)),
            "turns": float(info.get("turn", 0.0)),
            "tool_calls": dict(info.get("tool_calls", {})),
            "parse_errors": float(info.get("parse_errors", 0.0)),
            "end_reason": info.get("end_reason", "infra_error"),
            "reward_vector": jsonable(info.get("reward_vector", [])),
            "reward_vector_names": list(info.get("reward_vector_names", [])),
            "reward_breakdown": jsonable(info.get("reward_breakdown", {})),
            "trial": self.trial,
            **{f"orchestrator_{k}": float(info.get(f"episode_orchestrator_{k}", 0.0)) for k in ORCHESTRATOR_USAGE},
            "steps": self.steps,
            "infra_error": self.infra_error,
            "attempts": self.attempts,
            "info": jsonable(info),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "EpisodeResult":
        """The episode of a trajectories line (`record` plus ``messages``); ``reward_vector`` comes
        back as a list of floats.

        Raises:
            KeyError: a line without ``info`` (written before run folders existed): the key named.
        """
        return cls(record["task_id"], int(record["trial"]), int(record["seed"]), dict(record["info"]),
                   int(record.get("steps", 0)), record.get("messages"), record.get("infra_error"),
                   int(record.get("attempts", 1)))


#: What the metrics read: an `EpisodeResult` or an episode's final ``info``.
Outcome = Union[EpisodeResult, Mapping[str, Any]]


def jsonable(x: Any) -> Any:
    """`x` with NumPy arrays and scalars made plain Python (lists, floats, ints, bools), dict keys str."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    return x


def _env_name(env: gym.Env) -> str:
    return env.spec.id if env.spec is not None else type(env.unwrapped).__name__


#: What an agent may raise for a failure outside the policy (an endpoint down after its retries, a
#: timeout): the episode is retried, then recorded as an infra failure.
INFRA_EXCEPTIONS: tuple[type[BaseException], ...] = (InfraError, TimeoutError, ConnectionError, httpx.TransportError)

# The text `orchestra_gym.tools.llm` puts in a call's error once its retries ran out on a retryable
# failure (timeouts, connection errors, HTTP 429 and 5xx); tools pass it on in their tool message.
_RETRIES_EXHAUSTED = re.compile(r"failed after \d+ attempts?: (?:timeout|connection error|HTTP (?:429|5\d\d))")


def infra_error_of(info: Mapping[str, Any]) -> str | None:
    """The infrastructure failure a step's ``info`` reports, or None.

    Two reports count: the episode ended with ``end_reason == "orchestrator_error"`` (the agent's
    own model could not be reached, reported through the env; the text is its ``step_errors``),
    and a tool message of the step (``info["new_messages"]``) carrying
    `orchestra_gym.tools.llm`'s text for a call whose retries ran out on a retryable failure
    (``... failed after N attempts: timeout | connection error | HTTP 429 | HTTP 5xx``): an expert,
    search or answer model that is down. A tool's other errors (HTTP 400, a bad argument) are the
    agent's, not infrastructure.
    """
    if info.get("end_reason") == "orchestrator_error":
        errors = info.get("step_errors") or ["the orchestrator's model failed"]
        return f"orchestrator: {errors[0]}"
    for m in info.get("new_messages", ()):
        content = m.get("content") or ""
        if m.get("role") == "tool" and "failed after" in content and _RETRIES_EXHAUSTED.search(content):
            return f"tool {m.get('name') or ''}: {content[:500]}"
    return None


def is_infra(x: Outcome) -> bool:
    """Whether an episode is an infra failure: an `EpisodeResult` with ``infra_error``, or a final
    ``info`` with ``end_reason == "orchestrator_error"``."""
    if isinstance(x, EpisodeResult):
        return x.infra_error is not None
    return x.get("end_reason") == "orchestrator_error"


class _TrajectoryWriter:
    """Appends one JSON line per finished episode, flushed at once; one lock, so safe under threads."""

    def __init__(self, path: str | os.PathLike[str], append: bool):
        self.file = open(path, "a" if append else "w", encoding="utf-8")
        self.lock = threading.Lock()

    def write(self, result: EpisodeResult) -> None:
        line = json.dumps({**result.record(), "messages": result.messages}, ensure_ascii=False) + "\n"
        with self.lock:
            self.file.write(line)
            self.file.flush()

    def close(self) -> None:
        self.file.close()


class _AgentGuard:
    """One lock per agent object in use: an agent factory that hands the same object to several
    episodes (a trained policy) gets them played one at a time, whatever the concurrency."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_use: dict[int, list[Any]] = {}  # id(agent) -> [agent, lock, users]

    @contextlib.contextmanager
    def hold(self, agent: Any):
        with self.lock:
            entry = self.in_use.setdefault(id(agent), [agent, threading.Lock(), 0])
            entry[2] += 1
        try:
            with entry[1]:
                yield
        finally:
            with self.lock:
                entry[2] -= 1
                if entry[2] == 0:
                    del self.in_use[id(agent)]


def run_episodes(
    env_factory: Callable[[], gym.Env],
    agent_factory: Callable[[int], Agent],
    episodes: int = 0,
    *,
    seed: int = 0,
    task_ids: Sequence[Any] | None = None,
    all_tasks: bool = False,
    trials: int = 1,
    options: Mapping[str, Any] | None = None,
    keep_messages: bool = False,
    trajectories_path: str | os.PathLike[str] | None = None,
    progress: bool = False,
    desc: str | None = None,
    max_concurrency: int = 1,
    max_retries: int = 0,
    done: Sequence[EpisodeResult] = (),
    append: bool = False,
) -> list[EpisodeResult]:
    """Play agents on an env: the one episode runner.

    The tasks: `task_ids` when given; else, with `all_tasks`, the env's fixed task list
    (``env.unwrapped.task_ids``: tau2, HLE, FRAMES); `episodes` caps either (0 = all). Otherwise
    `episodes` episodes whose tasks the env draws from their seeds. Each task is played `trials`
    times, trial by trial (every task once, then every task again...); episode number i of that
    order (the plan) is reset with seed ``seed + i`` and ``options`` plus ``{"task_id": ...}``
    (with one trial and drawn tasks: episode i has seed ``seed + i``, as ``orchestra eval``
    always did). Trials of drawn tasks are further draws.

    Concurrency: with `max_concurrency` > 1, that many episodes run at once in threads, each
    on its own env and its own agent; an episode
    depends only on its seed, task and options, so each result equals a serial run's for a
    deterministic agent, and the results keep the plan's order. An agent object handed to several
    episodes (a factory returning one object) plays them one at a time. Each model's
    ``max_concurrency`` of the models file holds across the workers (the chat models share one
    semaphore per model and endpoint, `orchestra_gym.tools.llm.OpenAIChatModel`).

    Infrastructure failures: an episode whose agent raises one of `INFRA_EXCEPTIONS`, or whose
    ``info`` reports one (`infra_error_of`: the orchestrator's model down, a tool's model down
    after its retries), is stopped and played again, up to `max_retries` more times; after that
    it is returned with ``infra_error`` set (its ``info`` the last one seen, ``{}`` after an
    exception). The metrics leave such episodes out and count them apart.

    Args:
        env_factory: builds an env (called once for the plan, then once more per extra worker,
            from the calling thread).
        agent_factory: ``seed -> agent`` for each episode (an object with ``reset(env, obs, info)``
            and ``act(obs, info)``, see `orchestra_gym.agents.Agent`).
        episodes: the number of drawn-task episodes, or the cap on a task list (0 = all).
        seed: the first episode's seed.
        task_ids: the tasks to play (``options["task_id"]`` of each episode).
        all_tasks: play the env's fixed task list.
        trials: plays of each task (>= 1).
        options: reset options of every episode (``preference``, ``tools``, ...).
        keep_messages: keep each transcript in `EpisodeResult.messages`.
        trajectories_path: append one JSON line per episode the moment it ends (`EpisodeResult.record`
            plus ``messages``; flushed per line; in the order episodes end, which under
            concurrency is not the plan's: the lines carry ``seed`` and ``trial``).
        progress: show a progress bar on stderr; desc: its label.
        max_concurrency: episodes played at once (>= 1).
        max_retries: extra plays of an episode that hit an infrastructure failure (>= 0).
        done: episodes already played (a resumed run): the plan's episodes with the same seed and
            trial, not infra failures, are returned as they are and not played again.
        append: append to `trajectories_path` instead of starting it anew.

    Returns:
        One `EpisodeResult` per episode of the plan, in plan order. The envs are closed.

    Raises:
        ValueError: `trials` < 1, `episodes` < 0, `max_concurrency` < 1, `max_retries` < 0, or
            `all_tasks` on an env without a task list. An agent's or env's own exception (a bug)
            stops the run and propagates (episodes already ended are in the trajectories file).
    """
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if episodes < 0:
        raise ValueError(f"episodes must be >= 0 (0 = every task of a task list), got {episodes}")
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    pool: queue.SimpleQueue[gym.Env] = queue.SimpleQueue()
    envs = [env_factory()]
    pool.put(envs[0])
    writer = None
    try:
        if task_ids is None and all_tasks:
            task_ids = getattr(envs[0].unwrapped, "task_ids", None)
            if not task_ids:
                raise ValueError(f"{_env_name(envs[0])} has no fixed task list; --all-tasks works for tau2, HLE and FRAMES envs")
        tasks: list[Any] = list(task_ids)[: episodes or None] if task_ids is not None else [None] * episodes
        plan = [(trial, tid) for trial in range(trials) for tid in tasks]
        previous = {r.seed: r for r in done if r.infra_error is None}
        results: list[EpisodeResult | None] = []
        for i, (trial, tid) in enumerate(plan):
            r = previous.get(seed + i)
            ok = r is not None and r.trial == trial and (tid is None or r.task_id == tid)
            results.append(r if ok else None)
            if ok and not keep_messages:
                r.messages = None
        todo = [i for i, r in enumerate(results) if r is None]
        while len(envs) < min(max_concurrency, len(todo)):  # built here, not in the workers: env constructors need not be thread-safe
            envs.append(env_factory())
            pool.put(envs[-1])
        writer = _TrajectoryWriter(trajectories_path, append) if trajectories_path else None
        guard = _AgentGuard()

        def play(i: int) -> EpisodeResult:
            trial, tid = plan[i]
            opts = dict(options or {}, **({"task_id": tid} if tid is not None else {}))
            agent = agent_factory(seed + i)
            env = pool.get()  # one per worker: never empty for long
            try:
                with guard.hold(agent):
                    result = _play_with_retries(env, agent, seed + i, trial, tid, opts or None,
                                                keep_messages or writer is not None, max_retries)
            finally:
                pool.put(env)
            if writer is not None:
                writer.write(result)
                if not keep_messages:
                    result.messages = None
            return result

        bar = tqdm(total=len(todo), desc=desc or _env_name(envs[0]), disable=not progress, file=sys.stderr)
        with bar:
            if max_concurrency == 1:
                for i in todo:
                    results[i] = play(i)
                    bar.update()
            else:
                with concurrent.futures.ThreadPoolExecutor(max_concurrency, thread_name_prefix="episode") as ex:
                    futures = {ex.submit(play, i): i for i in todo}
                    try:
                        for f in concurrent.futures.as_completed(futures):
                            results[futures[f]] = f.result()
                            bar.update()
                    except BaseException:
                        ex.shutdown(wait=True, cancel_futures=True)
                        raise
    finally:
        if writer is not None:
            writer.close()
        for env in envs:
            env.close()
    return results  # type: ignore[return-value]  (every slot is filled)


def _play_with_retries(env: gym.Env, agent: Agent, seed: int, trial: int, task_id: Any,
                       options: dict[str, Any] | None, keep: bool, max_retries: int) -> EpisodeResult:
    """`_play`, again after an infrastructure failure, at most `max_retries` more times."""
    for attempt in range(1, max_retries + 2):
        try:
            result = _play(env, agent, seed, trial, options, keep)
        except INFRA_EXCEPTIONS as e:
            result = EpisodeResult(task_id, trial, seed, {}, infra_error=f"{type(e).__name__}: {e}")
        result.attempts = attempt
        if result.infra_error is None:
            break
    return result


def _play(env: gym.Env, agent: Agent, seed: int, trial: int, options: dict[str, Any] | None, keep: bool) -> EpisodeResult:
    """One episode: reset, then the agent's actions until terminated or truncated, or until a step
    reports an infrastructure failure (`infra_error_of`), which stops it."""
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(env, obs, info)
    steps, done, infra = 0, False, None
    while not done and infra is None:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        steps += 1
        done = terminated or truncated
        infra = infra_error_of(info)
    u = env.unwrapped
    messages = [m.to_dict() for m in u.messages] if keep else None
    return EpisodeResult(getattr(u.task, "id", None), trial, seed, info, steps, messages, infra)


# ------------------------------------------------------------------------------------ run folders
RUN_FILE, TRAJECTORIES_FILE, SUMMARY_FILE = "run.json", "trajectories.jsonl", "summary.json"


@dataclass
class RunConfig:
    """What a run folder's ``run.json`` holds: everything that fixes the run's plan.

    Attributes:
        env: the registered env id; env_kwargs: its ``gym.make`` keyword arguments (JSON-able).
        agent: the agent spec (``oracle``, ``expert-1``, ``llm:gpt-5``...).
        seed, episodes, all_tasks, trials, options: as `run_episodes`.
        max_retries: infra retries per episode (`run_episodes`).
    """

    env: str
    agent: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    episodes: int = 0
    all_tasks: bool = False
    trials: int = 1
    options: dict[str, Any] = field(default_factory=dict)
    max_retries: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The ``run.json`` object."""
        return jsonable(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RunConfig":
        """Inverse of `to_dict` (unknown keys ignored, for folders of later versions)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def load_run(run_dir: str | os.PathLike[str], repair: bool = False) -> tuple[RunConfig, list[EpisodeResult]]:
    """A run folder's config and episodes (one per seed, the last line of a seed winning, sorted by
    seed, i.e. in plan order).

    A last line cut short (the run was killed while writing it) is skipped; with `repair` it is
    also cut off the file, so that appended lines start on a line of their own.

    Raises:
        FileNotFoundError: no ``run.json`` in `run_dir` (names the folder).
        ValueError: a line other than the last that is not JSON (names the line).
    """
    root = Path(run_dir)
    if not (root / RUN_FILE).is_file():
        raise FileNotFoundError(f"{root} is not a run folder (no {RUN_FILE}); make one with orchestra eval --output-dir {root}")
    cfg = RunConfig.from_dict(json.loads((root / RUN_FILE).read_text(encoding="utf-8")))
    path = root / TRAJECTORIES_FILE
    by_seed: dict[int, EpisodeResult] = {}
    if path.is_file():
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1  # everything after the last newline is a torn line
        if repair and end < len(data):
            with open(path, "r+b") as f:
                f.truncate(end)
        for n, line in enumerate(data[:end].decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                r = EpisodeResult.from_record(json.loads(line))
            except (json.JSONDecodeError, KeyError) as e:
                raise ValueError(f"{path}, line {n}: not an episode record ({e}); remove the line or start a new run folder") from None
            by_seed[r.seed] = r
    return cfg, [by_seed[k] for k in sorted(by_seed)]


def _make_env(env_id: str, env_kwargs: Mapping[str, Any]) -> Callable[[], gym.Env]:
    return lambda: gym.make(env_id, **dict(env_kwargs))


def _execute(cfg: RunConfig, run_dir: Path | None, done: Sequence[EpisodeResult], *, agents: Callable[[int], Agent] | None,
             max_concurrency: int, progress: bool, trajectories_path: Any = None,
             keep_messages: bool = False) -> tuple[list[EpisodeResult], dict[str, Any]]:
    """Run `cfg` (skipping `done`), write the run folder's files, and summarize."""
    make = _make_env(cfg.env, cfg.env_kwargs)
    first = make()
    handed = [first]
    is_qa = isinstance(first.unwrapped, QAEnv)
    if run_dir is not None:
        trajectories_path = run_dir / TRAJECTORIES_FILE
    factory = None
    if agents is None:  # the spec's agents (baselines, llm:<id> with the run's models file, registered kinds)
        factory = agent_factory(cfg.agent, cfg.seed, cfg.env_kwargs.get("models"))
        agents = lambda s: factory(s - cfg.seed)  # noqa: E731  (episode index from its seed)
    try:
        results = run_episodes(
            lambda: handed.pop() if handed else make(), agents, cfg.episodes,
            seed=cfg.seed, all_tasks=cfg.all_tasks, trials=cfg.trials, options=cfg.options or None,
            trajectories_path=trajectories_path, progress=progress, desc=f"{cfg.agent} on {cfg.env}",
            max_concurrency=max_concurrency, max_retries=cfg.max_retries, done=done,
            append=bool(done) or run_dir is not None, keep_messages=keep_messages,
        )
    finally:
        if factory is not None:
            factory.close()
    summary = run_summary(results, cfg, qa=is_qa)
    if run_dir is not None:
        _write_json(run_dir / SUMMARY_FILE, summary)
    return results, summary


def _write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (a temporary file, then rename), so a kill never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(jsonable(obj), indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def run_summary(results: Sequence[EpisodeResult], cfg: RunConfig, qa: bool = False) -> dict[str, Any]:
    """A run's ``summary.json``: `summarize` plus ``env``, ``agent``, ``seed``, ``trials``,
    ``pass_hat_k`` (`pass_hat_ks`, keyed by ``str(k)`` as in the JSON file, k = 1..trials) and,
    for QA envs, ``qa`` (`qa_metrics`)."""
    summary = summarize(results)
    passk = {str(k): v for k, v in pass_hat_ks(results, cfg.trials).items()}
    summary.update(env=cfg.env, agent=cfg.agent, seed=cfg.seed, trials=cfg.trials, pass_hat_k=passk)
    if qa:
        summary["qa"] = qa_metrics(results)
    return summary


def evaluate(
    env_id: str,
    agent: str,
    episodes: int,
    *,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    all_tasks: bool = False,
    trials: int = 1,
    trajectories_path: str | os.PathLike[str] | None = None,
    progress: bool = False,
    options: Mapping[str, Any] | None = None,
    max_concurrency: int = 1,
    max_retries: int = 0,
    output_dir: str | os.PathLike[str] | None = None,
    agents: Callable[[int], Agent] | None = None,
    keep_messages: bool = False,
) -> tuple[list[EpisodeResult], dict[str, Any]]:
    """An agent on a registered env: `run_episodes` then the metrics (``orchestra eval``).

    Args:
        env_id: a registered id (``orchestra_gym.ENV_IDS``); env_kwargs: keyword arguments of
            ``gym.make`` (JSON-able when `output_dir` is given).
        agent: an agent spec (`orchestra_gym.agents.agent_factory`: a baseline such as random,
            oracle, cascade, expert-<k>, each episode's agent seeded with that episode's seed;
            ``llm:<model id>`` with the models file ``env_kwargs["models"]``; a registered kind such
            as ``policy:<run dir>``), or the name of the agents `agents` builds.
        episodes, seed, all_tasks, trials, trajectories_path, progress, options, max_concurrency,
        max_retries, keep_messages: as `run_episodes`.
        output_dir: a new run folder: ``run.json`` (`RunConfig`), ``trajectories.jsonl`` (one line
            per episode as it ends) and ``summary.json``; `resume` continues it.
        agents: ``seed -> agent``, instead of the spec's `agent_factory`.

    Returns:
        ``(results, summary)``: `run_summary` (`summarize` plus ``env``, ``agent``, ``seed``,
        ``trials``, ``pass_hat_k`` and for QA envs (HLE, FRAMES) ``qa``).

    Raises:
        gymnasium.error.Error: unknown env id; ValueError: unknown agent, a bad argument, or an
        `output_dir` that already holds a run (resume it instead).
    """
    cfg = RunConfig(env_id, agent, dict(env_kwargs or {}), seed, episodes, all_tasks, trials, dict(options or {}), max_retries)
    run_dir = None
    if output_dir is not None:
        if trajectories_path is not None:
            raise ValueError("give --trajectories or --output-dir (which holds trajectories.jsonl), not both")
        run_dir = Path(output_dir)
        if (run_dir / RUN_FILE).exists():
            raise ValueError(f"{run_dir} already holds a run; continue it with --resume {run_dir}, or pick a new --output-dir")
        if agents is None:
            kind = agent.partition(":")[0]
            if kind not in ("llm", "policy"):
                check_agent_name(agent)  # an unknown agent fails before the folder is made
        run_dir.mkdir(parents=True, exist_ok=True)
        _write_json(run_dir / RUN_FILE, cfg.to_dict())
    return _execute(cfg, run_dir, (), agents=agents, max_concurrency=max_concurrency, progress=progress,
                    trajectories_path=trajectories_path, keep_messages=keep_messages)


def resume(
    run_dir: str | os.PathLike[str],
    *,
    env_id: str | None = None,
    agent: str | None = None,
    max_concurrency: int = 1,
    max_retries: int | None = None,
    progress: bool = False,
    agents: Callable[[int], Agent] | None = None,
) -> tuple[list[EpisodeResult], dict[str, Any]]:
    """Continue a run folder: play only the plan's episodes its trajectories lack (infra failures
    included), append them, and rewrite ``summary.json`` over all of them (the same summary as an
    uninterrupted run: the plan and every episode's seed come from ``run.json``).

    Args:
        run_dir: the folder `evaluate` made. env_id, agent: when given, they must be the run's.
        max_concurrency: as `run_episodes`; max_retries: overrides the run's.
        progress, agents: as `evaluate`.

    Raises:
        FileNotFoundError: not a run folder. ValueError: `env_id` or `agent` differ from the run's
        (the message names both), or a damaged trajectories file.
    """
    root = Path(run_dir)
    cfg, done = load_run(root, repair=True)
    if (env_id is not None and env_id != cfg.env) or (agent is not None and agent != cfg.agent):
        raise ValueError(f"{root} is a run of env {cfg.env!r} with agent {cfg.agent!r}, not env {env_id or cfg.env!r} "
                         f"with agent {agent or cfg.agent!r}; resume it with its own --env/--agent or pick a new --output-dir")
    if max_retries is not None and max_retries != cfg.max_retries:
        cfg.max_retries = max_retries
        _write_json(root / RUN_FILE, cfg.to_dict())
    return _execute(cfg, root, done, agents=agents, max_concurrency=max_concurrency, progress=progress)


def regrade(
    run_dir: str | os.PathLike[str],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    grader: Callable[[EpisodeResult], "tuple[float, dict[str, Any]] | None"] | None = None,
) -> dict[str, Any]:
    """Recompute a run's grades and summary from its stored trajectories (a new judge or grader).

    What is recomputed, per episode that was not an infra failure:

    * the outcome, when a grader can judge the stored episode: `grader` (``result -> (outcome,
      breakdown)`` or None to keep the stored grade), else for QA envs (HLE, FRAMES) the env's
      judge (built from the run's ``env_kwargs`` updated by `env_kwargs`, e.g. a new
      ``judge_model``) on the stored final answer (``reward_breakdown["response"]``) against the
      task's gold answer. ToolScale and tau2 grade against the env's database state, which the
      trajectories do not hold: their stored outcome is kept (pass a `grader` to change it);
    * from the outcome, with the current rules: ``solved`` (`orchestra_gym.rewards.is_solved`)
      and ``reward_vector`` (`RewardLayout.vector_from_info`);
    * every metric: ``summary.json`` (`run_summary`: success, interval, pass^k, costs, Table 1).

    ``trajectories.jsonl`` is rewritten with the new grades (the old file kept once as
    ``trajectories.before-regrade.jsonl``); infra failures stay as they were.

    Returns:
        The new summary.

    Raises:
        FileNotFoundError: not a run folder.
    """
    root = Path(run_dir)
    cfg, results = load_run(root)
    qa_env = None
    if grader is None:
        env = gym.make(cfg.env, **{**cfg.env_kwargs, **dict(env_kwargs or {})})
        if isinstance(env.unwrapped, QAEnv):
            qa_env = env.unwrapped
            tasks = {t.id: t for t in qa_env.tasks}
            grader = lambda r: _qa_regrade(qa_env, tasks, r)  # noqa: E731
        else:
            env.close()
    for r in results:
        if r.infra_error is not None or "outcome" not in r.info:
            continue
        graded = grader(r) if grader is not None else None
        outcome = float(r.info["outcome"])
        if graded is not None:
            outcome, r.info["reward_breakdown"] = float(graded[0]), jsonable(graded[1])
        layout = RewardLayout.from_names(r.info["reward_vector_names"])
        r.info["outcome"], r.info["solved"] = outcome, is_solved(outcome)
        r.info["reward_vector"] = layout.vector_from_info(r.info, outcome).tolist()
    if qa_env is not None:
        qa_env.close()
    path = root / TRAJECTORIES_FILE
    backup = root / "trajectories.before-regrade.jsonl"
    if path.is_file() and not backup.exists():
        os.replace(path, backup)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps({**r.record(), "messages": r.messages}, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    summary = run_summary(results, cfg, qa=qa_env is not None or "qa" in _read_summary(root))
    _write_json(root / SUMMARY_FILE, summary)
    return summary


def _read_summary(root: Path) -> dict[str, Any]:
    path = root / SUMMARY_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _qa_regrade(env: QAEnv, tasks: Mapping[Any, Any], r: EpisodeResult) -> "tuple[float, dict[str, Any]] | None":
    """A QA episode judged again: the env's judge on the stored final answer (None: nothing to judge)."""
    breakdown = dict(r.info.get("reward_breakdown") or {})
    if "response" not in breakdown or r.task_id not in tasks:
        return None
    res = env.judge(tasks[r.task_id], breakdown["response"])
    breakdown.update(correct=bool(res.correct), judge_method=res.method, judge_details=res.details,
                     judge_usage=res.usage.to_dict())
    return (1.0 if res.correct else 0.0), breakdown


# ------------------------------------------------------------------------------------ metrics
def _info(x: Outcome) -> Mapping[str, Any]:
    return x.info if isinstance(x, EpisodeResult) else x


def wald_interval(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wald interval ``p +- z sqrt(p (1 - p) / n)`` for a proportion, clipped to [0, 1] (z = 1.96:
    95%); (nan, nan) for n == 0, zero width for p in {0, 1}."""
    if n <= 0:
        return (math.nan, math.nan)
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n)
    return (max(0.0, p - half), min(1.0, p + half))


def mean_tool_calls(episodes: Sequence[Outcome]) -> dict[str, float]:
    """The tool mix: calls per episode by tool (and by model: ``expert-2``, ``answer-1``...), from
    each final ``info["tool_calls"]``, keys sorted; {} for no episodes."""
    n = len(episodes)
    calls: dict[str, float] = {}
    for e in episodes:
        for k, v in _info(e).get("tool_calls", {}).items():
            calls[k] = calls.get(k, 0.0) + v
    return {k: v / n for k, v in sorted(calls.items())}


def by_label(episodes: Sequence[Outcome], key: str = "task_difficulty") -> dict[str, dict[str, Any]]:
    """Success and tool mix per task label: episodes grouped by their final ``info[key]`` (the env's
    ``task_difficulty`` or ``task_category``; episodes without it under ``"unknown"``), labels sorted.

    Returns: label -> {"episodes": int, "success_rate": float, "tool_mix": `mean_tool_calls` of the group}.
    """
    groups: dict[str, list[Outcome]] = {}
    for e in episodes:
        groups.setdefault(str(_info(e).get(key, "unknown")), []).append(e)
    return {label: {"episodes": len(g), "success_rate": sum(bool(_info(e).get("solved", False)) for e in g) / len(g),
                    "tool_mix": mean_tool_calls(g)} for label, g in sorted(groups.items())}


def summarize(episodes: Sequence[Outcome]) -> dict[str, Any]:
    """Aggregate episodes (`EpisodeResult`s or final ``info`` dicts).

    Infra failures (`is_infra`) are left out of every figure and counted in ``infra_failures``.

    Returns:
        ``episodes`` (count of graded episodes); ``infra_failures``; ``success_rate`` (solved fraction, nan for none) and
        ``success_rate_ci95`` (`wald_interval`); ``mean_outcome``; ``mean_cost_usd`` (USD);
        ``mean_latency_s`` (s); ``mean_orchestrator_cost_usd`` / ``mean_orchestrator_latency_s`` (the
        orchestrator's own part of both, `LLMAgent`); ``mean_turns``; ``tool_calls`` (`mean_tool_calls`);
        ``parse_errors`` (mean per episode); ``end_reasons`` (reason -> count);
        ``not_fully_judged`` (tau2: ``episodes`` whose reward basis had a component without an
        offline judge, ``components`` -> count, ``judgeability_reported``) and
        ``success_rate_judged`` (success on the fully judged episodes).
    """
    infos = [_info(e) for e in episodes if not is_infra(e)]
    n = len(infos)
    sr = sum(i["solved"] for i in infos) / n if n else math.nan
    reasons: dict[str, int] = {}
    for i in infos:
        reasons[i["end_reason"]] = reasons.get(i["end_reason"], 0) + 1
    lo, hi = wald_interval(sr, n) if n else (math.nan, math.nan)
    # tau2: components of the reward basis that could not be judged offline (no NL judge)
    not_judged: dict[str, int] = {}
    for i in infos:
        for comp in (i.get("reward_breakdown") or {}).get("not_evaluated", []) or []:
            not_judged[comp] = not_judged.get(comp, 0) + 1
    judged = [i for i in infos if not (i.get("reward_breakdown") or {}).get("not_evaluated")]
    return {
        "not_fully_judged": {
            "episodes": n - len(judged),
            "components": not_judged,
            "judgeability_reported": any("not_evaluated" in (i.get("reward_breakdown") or {}) for i in infos),
        },
        "success_rate_judged": sum(i["solved"] for i in judged) / len(judged) if judged else math.nan,
        "episodes": n,
        "infra_failures": len(episodes) - n,
        "success_rate": sr,
        "success_rate_ci95": [lo, hi],
        "mean_outcome": sum(float(i["outcome"]) for i in infos) / n if n else math.nan,
        "mean_cost_usd": sum(float(i["episode_cost_usd"]) for i in infos) / n if n else math.nan,
        "mean_latency_s": sum(float(i["episode_latency_s"]) for i in infos) / n if n else math.nan,
        "mean_orchestrator_cost_usd": sum(float(i.get("episode_orchestrator_cost_usd", 0.0)) for i in infos) / n if n else math.nan,
        "mean_orchestrator_latency_s": sum(float(i.get("episode_orchestrator_latency_s", 0.0)) for i in infos) / n if n else math.nan,
        "mean_turns": sum(float(i["turn"]) for i in infos) / n if n else math.nan,
        "tool_calls": mean_tool_calls(infos),
        "parse_errors": sum(float(i["parse_errors"]) for i in infos) / n if n else math.nan,
        "end_reasons": reasons,
    }


def qa_metrics(episodes: Sequence[Outcome], z: float = 1.96) -> dict[str, Any]:
    """ToolOrchestra Table 1 / Table 15 columns (QA envs) from `EpisodeResult`s or final ``info`` dicts.

    Args:
        episodes: each with ``solved`` (bool), ``episode_cost_usd`` (USD), ``episode_latency_s``
            (s) and ``tool_calls`` (dict name -> count); infra failures (`is_infra`) are left out.
        z: normal quantile (1.96 for 95%).

    Returns:
        ``n``; ``accuracy`` in [0, 1] (nan when n == 0); ``accuracy_ci95`` = `wald_interval`
        (any n: (nan, nan) for n = 0, a zero-width interval for p in {0, 1}, unlike HLE's script
        which needs >= 100 items); ``cost_cents`` (mean US cents per task); ``latency_min`` (mean
        minutes per task); ``model_calls`` (total calls per anonymised model of
        `orchestra_gym.envs.qa.QA_MODELS`, Table 15) and ``model_call_share`` (fraction of all
        model calls).
    """
    infos = [_info(e) for e in episodes if not is_infra(e)]
    n = len(infos)
    acc = sum(bool(i["solved"]) for i in infos) / n if n else math.nan
    lo, hi = wald_interval(acc, n, z) if n else (math.nan, math.nan)
    calls: dict[str, float] = {}
    for i in infos:
        for k, v in i.get("tool_calls", {}).items():
            if k in QA_MODELS:
                calls[k] = calls.get(k, 0.0) + float(v)
    total = sum(calls.values())
    return {
        "n": n,
        "accuracy": acc,
        "accuracy_ci95": [lo, hi],
        "cost_cents": 100.0 * sum(float(i["episode_cost_usd"]) for i in infos) / n if n else math.nan,
        "latency_min": sum(float(i["episode_latency_s"]) for i in infos) / 60.0 / n if n else math.nan,
        "model_calls": dict(sorted(calls.items())),
        "model_call_share": {k: v / total for k, v in sorted(calls.items())} if total else {},
    }


def pass_hat_k(episodes: Sequence[EpisodeResult], k: int) -> float:
    """pass^k as tau2-bench defines it: per task, the unbiased estimate of the chance that k trials
    drawn from its n all succeed, ``C(c, k) / C(n, k)`` with c solved among n, averaged over the tasks.

    Tasks are told apart by ``task_id``; infra failures (`is_infra`) are not trials; tasks with
    fewer than k trials are left out. Exact integer binomials (`math.comb`), one float division.

    Returns:
        The mean over tasks, a float in [0, 1]; nan when no task has k trials.

    Raises:
        ValueError: k < 1.
    """
    if k < 1:
        raise ValueError(f"pass^k needs k >= 1, got {k}")
    counts: dict[Any, list[int]] = {}
    for e in episodes:
        if not is_infra(e):
            c = counts.setdefault(_task_key(e.task_id), [0, 0])
            c[0] += 1
            c[1] += bool(e.solved)
    per_task = [math.comb(c, k) / math.comb(n, k) for n, c in counts.values() if n >= k]
    return sum(per_task) / len(per_task) if per_task else math.nan


def pass_hat_ks(episodes: Sequence[EpisodeResult], max_k: int) -> dict[int, float]:
    """`pass_hat_k` for k = 1..max_k (pass^1 is the mean per-task success rate)."""
    return {k: pass_hat_k(episodes, k) for k in range(1, max_k + 1)}


def _task_key(task_id: Any) -> Any:
    return json.dumps(task_id, sort_keys=True, default=str) if isinstance(task_id, (list, dict)) else task_id


def rollout_summary(
    infos: Sequence[Mapping[str, Any]],
    *,
    turns: Sequence[int] | None = None,
    invalid_turns: Sequence[int] | None = None,
    cut: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """The trainer's summary of a batch of rollouts, from their last ``info`` dicts.

    Args:
        infos: each rollout's last ``info`` (finished or cut: missing keys count as 0 / unsolved).
        turns: assistant turns per rollout (default ``info["turn"]``).
        invalid_turns: turns whose output was not a valid action (default ``info["parse_errors"]``).
        cut: whether the trainer cut the rollout (token limit; default none).

    Returns:
        ``episodes``; ``success_rate`` (0.0 for no rollouts); ``cost_per_solved_usd`` (total USD /
        solved, inf when none solved); ``mean_cost_usd``; ``mean_latency_s`` (s);
        ``valid_format_rate`` (1 - invalid turns / turns); ``turns_per_episode``; ``cut`` (count);
        ``tool_mix`` (`mean_tool_calls`).

    Raises:
        ValueError: `turns`, `invalid_turns` or `cut` not of the length of `infos`.
    """
    k = len(infos)
    turns = [int(i.get("turn", 0)) for i in infos] if turns is None else list(turns)
    invalid_turns = [int(i.get("parse_errors", 0)) for i in infos] if invalid_turns is None else list(invalid_turns)
    cut = [False] * k if cut is None else list(cut)
    for name, seq in (("turns", turns), ("invalid_turns", invalid_turns), ("cut", cut)):
        if len(seq) != k:
            raise ValueError(f"{name} has {len(seq)} entries for {k} rollouts; give one per rollout")
    n = max(k, 1)
    solved = sum(bool(i.get("solved", False)) for i in infos)
    cost = float(sum(float(i.get("episode_cost_usd", 0.0)) for i in infos))
    total_turns = sum(turns)
    return {
        "episodes": k,
        "success_rate": solved / n,
        "cost_per_solved_usd": cost / solved if solved else float("inf"),
        "mean_cost_usd": cost / n,
        "mean_latency_s": float(sum(float(i.get("episode_latency_s", 0.0)) for i in infos)) / n,
        "valid_format_rate": 1.0 - sum(invalid_turns) / max(total_turns, 1),
        "turns_per_episode": total_turns / n,
        "cut": int(sum(bool(c) for c in cut)),
        "tool_mix": mean_tool_calls(infos),
    }


def preference_score(
    results: Sequence[EpisodeResult],
    baseline: Sequence[EpisodeResult],
    preference: "Mapping[str, Any] | None" = None,
) -> float:
    """The App. L preference metric of a run against a baseline run (higher is better).

    Episodes are paired by (task id, trial); every episode of `results` needs its baseline
    episode. Each reward vector is normalised by its baseline's and weighted by the preference
    (`orchestra_gym.rewards.preference_metric`): `preference` (a dict, aligned by
    `RewardLayout.preference_weights`) for all, or each episode's own ``info["preference"]``
    when None.

    Raises:
        ValueError: no episodes, a missing or duplicate pair, or different reward layouts.
    """
    if not results:
        raise ValueError("preference_score needs at least one episode")
    base: dict[tuple[Any, int], EpisodeResult] = {}
    for b in baseline:
        key = (b.task_id, b.trial)
        if key in base:
            raise ValueError(f"baseline has two episodes of task {b.task_id!r}, trial {b.trial}; pair each episode once")
        base[key] = b
    layout = RewardLayout.from_names(results[0].info["reward_vector_names"])
    vectors, baselines, weights = [], [], []
    for r in results:
        b = base.get((r.task_id, r.trial))
        if b is None:
            raise ValueError(f"the baseline has no episode of task {r.task_id!r}, trial {r.trial}; run it on the same tasks")
        for e in (r, b):
            if list(e.info["reward_vector_names"]) != layout.names:
                raise ValueError(
                    f"task {e.task_id!r}: reward vector names {e.info['reward_vector_names']} differ from {layout.names}; "
                    "compare runs with the same tools"
                )
        vectors.append(np.asarray(r.info["reward_vector"], dtype=np.float64))
        baselines.append(np.asarray(b.info["reward_vector"], dtype=np.float64))
        weights.append(layout.preference_weights(r.info.get("preference") if preference is None else preference))
    return preference_metric(np.stack(vectors), np.stack(baselines), np.stack(weights))


def group_preference_score(
    results: Sequence[EpisodeResult],
    references: "Sequence[Sequence[EpisodeResult]]",
    preference: "Mapping[str, Any] | None" = None,
) -> float:
    """The summed preference reward of a run in the group form (`orchestra_gym.rewards.reference_group_scores`):
    each episode's reward (ToolOrchestra Sec. 3.2) in the group made of it and the reference runs'
    episodes of the same (task id, trial), e.g. always expert-1, expert-2 and expert-3. Higher is better;
    a reference run scored against the references gets its own reward in their group.

    `preference`: a dict for all episodes, or None for each episode's own ``info["preference"]``.

    Raises:
        ValueError: no episodes or no reference runs, a reference without the episode's pair, or
            different reward layouts.
    """
    if not results or not references:
        raise ValueError("group_preference_score needs at least one episode and one reference run")
    layout = RewardLayout.from_names(results[0].info["reward_vector_names"])
    index = []
    for j, ref in enumerate(references):
        table: dict[tuple[Any, int], EpisodeResult] = {}
        for b in ref:
            if list(b.info["reward_vector_names"]) != layout.names:
                raise ValueError(f"reference run {j}: reward vector names {b.info['reward_vector_names']} differ "
                                 f"from {layout.names}; compare runs with the same tools")
            table[(b.task_id, b.trial)] = b
        index.append(table)
    vectors, solved, rvec, rsolved, weights = [], [], [], [], []
    for r in results:
        pairs = [t.get((r.task_id, r.trial)) for t in index]
        if any(b is None for b in pairs):
            raise ValueError(f"a reference run has no episode of task {r.task_id!r}, trial {r.trial}; run it on "
                             "the same tasks")
        vectors.append(np.asarray(r.info["reward_vector"], np.float64))
        solved.append(bool(r.solved))
        rvec.append([np.asarray(b.info["reward_vector"], np.float64) for b in pairs])
        rsolved.append([bool(b.solved) for b in pairs])
        weights.append(layout.preference_weights(r.info.get("preference") if preference is None else preference))
    scores = reference_group_scores(np.stack(vectors), np.array(solved, bool), np.stack(rvec).transpose(1, 0, 2),
                                    np.array(rsolved, bool).T, np.stack(weights))
    return float(math.fsum(scores.tolist()))


def asked_moves(preference: "Mapping[str, Any] | Preference", default: "Mapping[str, Any] | Preference") -> dict[str, str]:
    """How a run under `preference` should differ from the same policy under `default`, as the user asks
    (the adherence check of ToolOrchestra Sec. 6.4 / Table 3, per metric): the weights are read relative
    to the outcome weight; a larger cost weight asks for a lower cost (``"cost_cents": "down"``), a larger
    latency weight for a lower latency (``"latency_s": "down"``), and smaller cost and latency weights
    with neither larger (accuracy bought with cost or time) for a higher success (``"success": "up"``).
    Tool weights are not read. Returns {} when the two weigh cost and latency alike.

    Raises:
        ValueError: a preference with outcome weight <= 0 (the relative weights are undefined), or as
            `Preference.from_dict`.
    """
    p, d = Preference.from_dict(preference), Preference.from_dict(default)
    for name, x in (("preference", p), ("default", d)):
        if x.outcome <= 0:
            raise ValueError(f"{name}: the outcome weight must be > 0 to read cost and latency against it, "
                             f"got {x.outcome:g}")
    pc, pl, dc, dl = p.cost / p.outcome, p.latency / p.outcome, d.cost / d.outcome, d.latency / d.outcome
    moves: dict[str, str] = {}
    if pc > dc:
        moves["cost_cents"] = "down"
    if pl > dl:
        moves["latency_s"] = "down"
    if not moves and (pc < dc or pl < dl):
        moves["success"] = "up"
    return moves


def moves_as_asked(row: Mapping[str, float], default_row: Mapping[str, float], moves: Mapping[str, str]) -> bool:
    """Whether `row` (keys as in `moves`, e.g. success, cost_cents, latency_s) moved from `default_row` the
    way `asked_moves` says: strictly down / up on every listed metric (True for no moves)."""
    return all((row[k] < default_row[k]) if way == "down" else (row[k] > default_row[k]) for k, way in moves.items())


# ------------------------------------------------------------------------------------ text
def format_table(summary: dict[str, Any], env_id: str, agent: str) -> str:
    """A plain-text table of a `summarize` result (one row; the tool-call mix and end reasons below it)."""
    head = f"{'env':<30} {'agent':<10} {'episodes':>8} {'success':>8} {'95% CI':>15} {'cost USD':>10} {'latency s':>10}"
    lo, hi = summary["success_rate_ci95"]
    row = (
        f"{env_id:<30} {agent:<10} {summary['episodes']:>8d} {summary['success_rate']:>8.3f} "
        f"{f'[{lo:.2f}, {hi:.2f}]':>15} {summary['mean_cost_usd']:>10.5f} {summary['mean_latency_s']:>10.2f}"
    )
    text = f"{head}\n{row}\ntool calls per episode: {format_mix(summary['tool_calls'])}\nend reasons: {summary['end_reasons']}"
    nj = summary.get("not_fully_judged", {})
    if nj.get("judgeability_reported") and not nj.get("episodes"):
        text += "\nnot judgeable offline: 0 episodes (every component of every reward basis was judged)"
    if nj.get("episodes"):
        text += (
            f"\nnot judgeable offline: {nj['episodes']} episodes (components without a judge: {nj['components']}; "
            f"NL assertions need an LLM judge); success on the fully judged ones: {summary['success_rate_judged']:.3f}"
        )
    return text


def format_mix(tool_calls: dict[str, float], top: int = 6) -> str:
    """The tool-call mix in one line: the `top` most called tools, the rest summed as ``other``.

    Every model id (``expert-1``, ``answer-2``, ...) is listed; the model tools themselves
    (``call_expert``, ``search``, ``enhance_reasoning``, ``answer``) are left out then, since each
    of their calls is already counted under its model."""
    if not tool_calls:
        return "none"
    model_ids = [k for k in tool_calls if _MODEL_ID.fullmatch(k)]
    if model_ids:  # a model tool's call is counted under the tool and its model: keep the models only
        tool_calls = {k: v for k, v in tool_calls.items() if k not in MODEL_TOOLS}
    total = sum(tool_calls.values()) or 1.0
    ranked = sorted(tool_calls.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [kv for kv in ranked if kv[0] in model_ids]
    for kv in ranked:
        if len(shown) >= top:
            break
        if kv not in shown:
            shown.append(kv)
    rest = sum(v for k, v in tool_calls.items() if k not in dict(shown))
    parts = [f"{k} {v:.2f} ({100 * v / total:.0f}%)" for k, v in shown]
    if rest:
        parts.append(f"other {rest:.2f} ({100 * rest / total:.0f}%)")
    return ", ".join(parts)


def format_qa_table(metrics: dict[str, Any], env_id: str, agent: str) -> str:
    """The Table 1 columns of a `qa_metrics` result as text: accuracy (%) with its 95% interval,
    cost (cents), latency (min), then the calls per model."""
    lo, hi = metrics["accuracy_ci95"]
    acc = metrics["accuracy"]
    head = f"{'env':<26} {'agent':<12} {'n':>5} {'accuracy %':>10} {'95% CI':>16} {'cost ¢':>9} {'latency min':>11}"
    row = (f"{env_id:<26} {agent:<12} {metrics['n']:>5d} {100 * acc:>10.1f} {f'[{100 * lo:.1f}, {100 * hi:.1f}]':>16} "
           f"{metrics['cost_cents']:>9.3f} {metrics['latency_min']:>11.3f}")
    calls = ", ".join(f"{k} {int(v)} ({100 * metrics['model_call_share'][k]:.0f}%)" for k, v in metrics["model_calls"].items())
    return f"{head}\n{row}\nmodel calls: {calls or 'none'}"


# ------------------------------------------------------------------------------------ accuracy-cost plane
def cost_accuracy_hull(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The non-decreasing concave hull of (cost, accuracy) points, as its vertices sorted by cost.

    RouterBench (Hu et al. 2024, Sec. 3.2) scores routers on the accuracy-cost plane by the upper
    convex hull of their operating points, made non-decreasing: paying more never buys less, since
    one can always mix two operating points (pick one per task at random). The vertices are input
    points; between them the hull is linear, right of the last vertex it is flat, left of the
    cheapest vertex there is no operating point (`hull_accuracy` and `aiq` say what they take there).

    Args:
        points: (cost, accuracy) pairs; cost in any one unit >= 0 (USD or cents per task),
            accuracy in [0, 1]. At least one point.

    Returns:
        The hull's vertices [(cost, accuracy), ...], costs and accuracies strictly increasing.

    Raises:
        ValueError: no points, or a non-finite value.
    """
    pts = sorted((float(c), float(a)) for c, a in points)
    if not pts:
        raise ValueError("points is empty: the hull needs at least one (cost, accuracy) point")
    if not all(math.isfinite(c) and math.isfinite(a) for c, a in pts):
        raise ValueError(f"points must be finite, got {pts}")
    front: list[tuple[float, float]] = []  # Pareto front: each point more accurate than every cheaper one
    for c, a in pts:
        if front and c == front[-1][0]:
            front[-1] = (c, max(a, front[-1][1]))
        elif not front or a > front[-1][1]:
            front.append((c, a))
    hull: list[tuple[float, float]] = []  # upper hull of the front (monotone chain)
    for c, a in front:
        while len(hull) >= 2:
            (c1, a1), (c2, a2) = hull[-2], hull[-1]
            if (a2 - a1) * (c - c1) <= (a - a1) * (c2 - c1):  # hull[-1] on or under the chord hull[-2] -> (c, a)
                hull.pop()
            else:
                break
        hull.append((c, a))
    return hull


def hull_accuracy(hull: Sequence[tuple[float, float]], cost: float) -> float:
    """Accuracy of the hull (vertices from `cost_accuracy_hull`) at `cost`: linear between
    vertices, flat right of the last one, and the cheapest vertex's accuracy left of the first
    (the conservative choice for a row compared with the hull: `hull_gap`)."""
    if cost <= hull[0][0]:
        return float(hull[0][1])
    for (c1, a1), (c2, a2) in zip(hull, hull[1:]):
        if cost <= c2:
            return float(a1 + (a2 - a1) * (cost - c1) / (c2 - c1))
    return float(hull[-1][1])


def hull_gap(accuracy: float, cost: float, baseline_points: Sequence[tuple[float, float]]) -> float:
    """Accuracy minus the baselines' hull accuracy at the same cost (> 0: above their hull)."""
    return float(accuracy) - hull_accuracy(cost_accuracy_hull(baseline_points), float(cost))


def aiq(points: Sequence[tuple[float, float]], cost_range: tuple[float, float]) -> float:
    """AIQ (RouterBench, Hu et al. 2024): the area under the non-decreasing convex hull of the
    (cost, accuracy) points over ``[c_min, c_max]``, divided by ``c_max - c_min``.

    The hull (`cost_accuracy_hull`) counts 0 left of its cheapest vertex (no operating point that
    cheap) and is flat right of its last; it is linear between vertices, so the trapezoid rule over
    the vertices is exact. One point gives its accuracy times the share of the range at or above
    its cost.

    Returns:
        A float in [0, max accuracy].

    Raises:
        ValueError: an empty or reversed range, or bad points.
    """
    lo, hi = float(cost_range[0]), float(cost_range[1])
    if not hi > lo:
        raise ValueError(f"cost_range must have c_max > c_min, got {cost_range}")
    hull = cost_accuracy_hull(points)
    start = hull[0][0]
    xs = sorted({lo, hi, *(c for c, _ in hull if lo < c < hi)})
    area = 0.0
    for x1, x2 in zip(xs, xs[1:]):
        if x1 >= start:  # a segment left of the first vertex ends at it (it is one of xs): 0 there
            area += (hull_accuracy(hull, x1) + hull_accuracy(hull, x2)) / 2.0 * (x2 - x1)
    return area / (hi - lo)


# ------------------------------------------------------------------------------------ report
TAU2_PREFIX = "ToolOrchestra-Tau2-"


#: Cost weights (success units per USD) that `fit_router` tries: from "cost is free" to "a cent costs 0.5".
ROUTER_COST_WEIGHTS = (0.0, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 50.0)


def fit_router(
    env_factory: Callable[[], gym.Env],
    experts: Sequence[str],
    tasks: int,
    *,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    cost_weights: Sequence[float] = ROUTER_COST_WEIGHTS,
    max_concurrency: int = 1,
) -> tuple[RouterAgent, dict[str, Any]]:
    """Fit the classical router (`orchestra_gym.agents.RouterAgent`) on training tasks.

    Every expert is played alone (``always expert-k``) on the same `tasks` training tasks (episode
    seeds ``seed``, ``seed + 1``, ...: pick a seed range the evaluation does not use), recording each
    task's features. For each cost weight in `cost_weights` the table of `RouterAgent.fit` is scored on
    those same records (the router's episode on a task is its expert's), and the weight whose operating
    point lies furthest above the fixed experts' accuracy-cost hull (`hull_gap`) is kept: RouterBench's
    willingness-to-pay sweep, with the operating point chosen on training data only.

    Returns:
        (router, fit): fit holds ``cost_weight``, ``table`` (``"category/difficulty" -> expert``),
        ``train_success``, ``train_cost_usd`` (mean per task), ``train_hull_gap``, ``experts``
        (per expert: success and mean cost on the training tasks) and ``tasks``.

    Raises:
        ValueError: no experts, tasks < 1, or no cost weights.
    """
    if not experts or tasks < 1 or not cost_weights:
        raise ValueError(f"fit_router needs experts, tasks >= 1 and cost weights; got {list(experts)}, {tasks}, "
                         f"{list(cost_weights)}")
    features: dict[int, tuple[str, str]] = {}

    class _Recording(ExpertAgent):
        def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
            super().reset(env, observation, info)
            features[self.seed] = RouterAgent.features(env.unwrapped.task)

    records: list[dict[str, Any]] = []
    for expert in experts:
        def make(s: int, expert: str = expert) -> Agent:
            agent = _Recording(expert)
            agent.seed = s  # the episode's seed (run_episodes builds episode i's agent with seed + i)
            return agent

        results = run_episodes(env_factory, make, tasks, seed=seed, options=options, max_concurrency=max_concurrency)
        for r in results:
            records.append({"expert": expert, "seed": r.seed, "solved": r.solved,
                            "cost_usd": float(r.info["episode_cost_usd"])})
    for rec in records:  # the features of each training task, read at its reset
        rec["features"] = features.get(rec["seed"], ("", ""))
    by_expert = {e: [r for r in records if r["expert"] == e] for e in experts}
    points = [(float(np.mean([r["cost_usd"] for r in rs])), float(np.mean([r["solved"] for r in rs])))
              for rs in by_expert.values()]
    outcome = {(r["expert"], r["seed"]): r for r in records}
    best: tuple[float, RouterAgent, float, float] | None = None
    for w in cost_weights:
        router = RouterAgent.fit(records, float(w))
        played = [outcome[(router.table.get(f, router.default), seed_)]
                  for seed_, f in sorted({(r["seed"], r["features"]) for r in records})]
        succ = float(np.mean([r["solved"] for r in played]))
        cost = float(np.mean([r["cost_usd"] for r in played]))
        gap = hull_gap(succ, cost, points)
        if best is None or gap > best[0] + 1e-12:
            best = (gap, router, succ, cost)
    gap, router, succ, cost = best
    fit = {
        "cost_weight": router.cost_weight,
        "table": {f"{c}/{d}": e for (c, d), e in sorted(router.table.items())},
        "train_success": succ, "train_cost_usd": cost, "train_hull_gap": gap, "tasks": tasks,
        "experts": {e: {"success": p[1], "mean_cost_usd": p[0]} for e, p in zip(experts, points)},
    }
    return router, fit


def table1_row(cfg: RunConfig, results: Sequence[EpisodeResult]) -> dict[str, Any]:
    """One run's row of ToolOrchestra's Table 1 (any env): ``env``, ``agent``, ``n`` (graded
    episodes), ``accuracy`` in [0, 1] with ``accuracy_ci95`` (`wald_interval`), ``cost_cents``
    (mean US cents per task), ``latency_min`` (mean minutes per task), ``infra_failures``,
    ``pass_hat_k`` (k = 1..trials) and ``tool_calls`` (Table 15: calls per tool per task)."""
    graded = [r for r in results if not is_infra(r)]
    m = qa_metrics(graded)
    return {
        "env": cfg.env, "agent": cfg.agent, "n": m["n"], "accuracy": m["accuracy"], "accuracy_ci95": m["accuracy_ci95"],
        "cost_cents": m["cost_cents"], "latency_min": m["latency_min"], "infra_failures": len(results) - len(graded),
        "pass_hat_k": pass_hat_ks(results, cfg.trials), "tool_calls": mean_tool_calls(graded),
    }


def tau2_task_weighted(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """tau2-bench's figure over several domains (ToolOrchestra Table 1 reports one tau2 number):
    accuracy, cost (cents) and latency (min) per task averaged with each domain's task count
    ``n`` as its weight (the accuracy by `orchestra_gym.tasks.tau2.tau2_score`, the one owner of the
    paper's task-weighted tau2 score); the interval is the Wald interval of the pooled accuracy over
    all tasks.

    Raises:
        ValueError: no rows, or no graded task.
    """
    total = sum(int(r["n"]) for r in rows)
    if not rows or total == 0:
        raise ValueError("tau2_task_weighted needs rows with graded tasks (n > 0)")

    def mean(key: str) -> float:
        return sum(float(r[key]) * int(r["n"]) for r in rows if int(r["n"])) / total

    graded = [r for r in rows if int(r["n"])]
    names = [str(r["env"]).removeprefix(TAU2_PREFIX) for r in graded]
    acc = tau2_score({n: (float(r["accuracy"]), int(r["n"])) for n, r in zip(names, graded)}, domains=names).score
    return {"env": "tau2 (" + ", ".join(str(r["env"]).removeprefix(TAU2_PREFIX) for r in rows) + ")",
            "agent": rows[0]["agent"], "n": total, "accuracy": acc, "accuracy_ci95": list(wald_interval(acc, total)),
            "cost_cents": mean("cost_cents"), "latency_min": mean("latency_min"),
            "infra_failures": sum(int(r["infra_failures"]) for r in rows)}


def report(run_dirs: Sequence[str | os.PathLike[str]], baseline: str | os.PathLike[str] | None = None,
           png_path: str | os.PathLike[str] | None = None) -> str:
    """``orchestra report``: the paper's tables over run folders, as Markdown.

    Sections: Table 1 (one row per run: accuracy % with its 95% interval, cost in cents per task,
    latency in minutes per task, pass^k, infra failures; plus, per agent with runs of several tau2
    domains, their task-weighted row, `tau2_task_weighted`); Table 15 (calls per task of each
    model, ``expert-1``, ``answer-2``..., and of all other tools summed, `mean_tool_calls`); with
    `baseline` the App. L preference score of each run of the baseline's env against it (`preference_score`); with several runs of one env the accuracy-cost plane:
    the hull's vertices (`cost_accuracy_hull`), AIQ over the runs' cost range in cents (`aiq`),
    each run's gap to the hull of the other runs (`hull_gap`), and a PNG of the plane at
    `png_path` (matplotlib, Agg).

    Raises:
        FileNotFoundError: a folder that is not a run folder. ValueError: no run folders.
    """
    if not run_dirs:
        raise ValueError("report needs at least one run folder")
    runs = [load_run(d) for d in run_dirs]
    rows = [table1_row(cfg, results) for cfg, results in runs]
    lines = ["## Table 1: accuracy, cost, latency", "",
             "| env | agent | n | accuracy % | 95% CI | cost ¢/task | latency min/task | pass^k | infra failures |",
             "|---|---|---|---|---|---|---|---|---|"]

    def row_line(r: Mapping[str, Any]) -> str:
        lo, hi = r["accuracy_ci95"]
        passk = ", ".join(f"{k}: {v:.3f}" for k, v in (r.get("pass_hat_k") or {}).items() if not math.isnan(v)) or "-"
        return (f"| {r['env']} | {r['agent']} | {r['n']} | {100 * r['accuracy']:.1f} | [{100 * lo:.1f}, {100 * hi:.1f}] | "
                f"{r['cost_cents']:.3f} | {r['latency_min']:.3f} | {passk} | {r['infra_failures']} |")

    lines += [row_line(r) for r in rows]
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if str(r["env"]).startswith(TAU2_PREFIX) and r["n"]:
            by_agent.setdefault(r["agent"], []).append(r)
    lines += [row_line(tau2_task_weighted(rs)) for rs in by_agent.values() if len({r["env"] for r in rs}) > 1]
    tools = sorted({t for r in rows for t in r["tool_calls"] if _MODEL_ID.fullmatch(t)})  # the models, as the paper's columns
    lines += ["", "## Table 15: calls per tool per task", "", "| env | agent | " + " | ".join(tools + ["other tools"]) + " |",
              "|---|---|" + "---|" * (len(tools) + 1)]
    for r in rows:
        other = sum(v for t, v in r["tool_calls"].items() if t not in tools and t not in MODEL_TOOLS)
        lines.append(f"| {r['env']} | {r['agent']} | " + " | ".join(f"{r['tool_calls'].get(t, 0.0):.2f}" for t in tools)
                     + f" | {other:.2f} |")
    if baseline is not None:
        bcfg, bres = load_run(baseline)
        bgraded = [b for b in bres if not is_infra(b)]
        lines += ["", f"## Preference score (App. L) against {bcfg.agent} on {bcfg.env}", "",
                  "| env | agent | preference score |", "|---|---|---|"]
        pairs = {(b.task_id, b.trial) for b in bgraded}
        for cfg, results in runs:
            if cfg.env == bcfg.env:  # the episodes both runs graded (an infra failure on either side drops the pair)
                graded = [e for e in results if not is_infra(e) and (e.task_id, e.trial) in pairs]
                try:
                    cell = f"{preference_score(graded, bgraded):.4f} ({len(graded)} episodes)"
                except ValueError as e:  # no common episode, or other tools
                    cell = f"n/a: {e}"
                lines.append(f"| {cfg.env} | {cfg.agent} | {cell} |")
    planes = {}
    for r in rows:
        if r["n"]:
            planes.setdefault(r["env"], []).append(r)
    planes = {env: rs for env, rs in planes.items() if len(rs) > 1}
    for env, rs in planes.items():
        pts = [(r["cost_cents"], r["accuracy"]) for r in rs]
        hull = cost_accuracy_hull(pts)
        span = (min(c for c, _ in pts), max(c for c, _ in pts))
        lines += ["", f"## Accuracy-cost plane: {env}", "",
                  "hull vertices (cost ¢, accuracy %): " + ", ".join(f"({c:.3f}, {100 * a:.1f})" for c, a in hull)]
        if span[1] > span[0]:
            lines.append(f"AIQ over [{span[0]:.3f}, {span[1]:.3f}] ¢: {aiq(pts, span):.4f}")
        lines += ["", "| agent | cost ¢ | accuracy % | gap to the others' hull (points) |", "|---|---|---|---|"]
        for i, r in enumerate(rs):
            others = [p for j, p in enumerate(pts) if j != i]
            lines.append(f"| {r['agent']} | {r['cost_cents']:.3f} | {100 * r['accuracy']:.1f} | "
                         f"{100 * hull_gap(r['accuracy'], r['cost_cents'], others):+.1f} |")
    if png_path is not None and planes:
        _plot_planes(planes, png_path)
        lines += ["", f"![accuracy-cost plane]({Path(png_path).name})"]
    return "\n".join(lines) + "\n"


def _plot_planes(planes: Mapping[str, Sequence[Mapping[str, Any]]], png_path: str | os.PathLike[str]) -> None:
    """One panel per env: the runs as points, their non-decreasing convex hull as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(planes), figsize=(5.5 * len(planes), 4.2), squeeze=False)
    for ax, (env, rs) in zip(axes[0], planes.items()):
        pts = [(r["cost_cents"], r["accuracy"]) for r in rs]
        hull = cost_accuracy_hull(pts)
        right = max(c for c, _ in pts) * 1.05 or 1.0
        hx, hy = zip(*(hull + [(right, hull[-1][1])]))
        ax.plot(hx, [100 * a for a in hy], "-", color="0.4", label="non-decreasing convex hull")
        for r in rs:
            ax.scatter(r["cost_cents"], 100 * r["accuracy"], zorder=3)
            ax.annotate(r["agent"], (r["cost_cents"], 100 * r["accuracy"]), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set(title=env, xlabel="cost (¢ per task)", ylabel="accuracy (%)")
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
