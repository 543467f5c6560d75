"""The one episode runner of orchestra_gym: agents x envs x tasks x trials.

`run_episodes` plays an agent on an env over a list of tasks and trials and returns one
`EpisodeResult` per episode (task id, trial, seed, the final ``info``, optionally the transcript).
An episode depends only on its own seed, task and reset options, so the plan
(`EpisodeResult.trial`, ``seed + index``) stays the same when episodes run concurrently
(``max_concurrency``: threads, an env per worker, results in plan order, an agent object shared by
several episodes played one at a time) or are resumed (``done``). Infrastructure failures
(`infra_error_of`, `INFRA_EXCEPTIONS`) are retried, then recorded apart. Episodes are appended to
a trajectories file as they end (`orchestra_gym.evaluation.records.TrajectoryWriter`).

Stopping: a `StopRequest` (``stop``; `stop_on_signals` sets one on SIGINT / SIGTERM) makes
`run_episodes` start no new episode and abandon the ones in flight at their next step (between two
``env.step`` calls, never inside one: a step, e.g. a JIT compilation, is not interrupted), then
raise `EvaluationStopped` with the episodes that ended; their trajectories lines are written, an
abandoned episode has none and is played again by a resume.

Run folders, resume and regrade are `orchestra_gym.evaluation.runs`; the metrics
`orchestra_gym.evaluation.metrics`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from orchestra_gym.agents import Agent
from orchestra_gym.errors import OrchestraError
from orchestra_gym.evaluation.episode import EpisodeAbandoned, play_episode
from orchestra_gym.evaluation.infra import INFRA_EXCEPTIONS, infra_error_of
from orchestra_gym.evaluation.records import EpisodeResult, TrajectoryWriter

__all__ = ["run_episodes", "infra_error_of", "INFRA_EXCEPTIONS", "StopRequest", "EvaluationStopped", "stop_on_signals"]

def _env_name(env: gym.Env) -> str:
    return env.spec.id if env.spec is not None else type(env.unwrapped).__name__


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


class StopRequest(threading.Event):
    """A request to stop a run (a `threading.Event`): once set, `run_episodes` starts no new episode
    and abandons the ones in flight at their next step. `reason` says why (``"SIGINT"``...)."""

    def __init__(self) -> None:
        super().__init__()
        self.reason: str | None = None

    def request(self, reason: str) -> None:
        """Set the request; the first reason is kept."""
        if self.reason is None:
            self.reason = reason
        self.set()


class EvaluationStopped(OrchestraError):
    """`run_episodes` stopped by a `StopRequest` before its plan was played.

    Attributes:
        results: the plan's episodes that ended (played now, or given as ``done``), in plan order.
        planned: episodes in the plan.
        abandoned: episodes that were in flight and were dropped (no trajectories line; a resume
            plays them again).
        reason: the request's reason (``"SIGINT"``, ``"SIGTERM"``...).
        summary: the partial summary over `results`, when the caller wrote one
            (`orchestra_gym.evaluation.runs.evaluate` / `resume`: the run folder's ``summary.json``).
    """

    def __init__(self, results: list[EpisodeResult], planned: int, abandoned: int, reason: str | None):
        super().__init__(f"stopped ({reason or 'stop requested'}) after {len(results)} of {planned} episodes")
        self.results, self.planned, self.abandoned, self.reason = results, planned, abandoned, reason
        self.summary: dict[str, Any] | None = None


@contextlib.contextmanager
def stop_on_signals(signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM)):
    """A `StopRequest` that the first of `signals` sets (reason: the signal's name, e.g. ``SIGINT``),
    for the block's duration; a second signal raises `KeyboardInterrupt` (stop at once). The previous
    handlers come back on exit. Off the main thread (where Python cannot install handlers) the
    request is only set by hand.

    Yields:
        The `StopRequest` to pass to `run_episodes` (or `orchestra_gym.evaluation.runs.evaluate`).
    """
    stop = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.request(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield stop
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


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
    stop: threading.Event | None = None,
) -> list[EpisodeResult]:
    """Play agents on an env: the one episode runner.

    The tasks: `task_ids` when given; else, with `all_tasks`, the env's fixed task list
    (``env.unwrapped.describe().task_ids``: tau2, HLE, FRAMES); `episodes` caps either (0 = all). Otherwise
    `episodes` episodes whose tasks the env draws from their seeds; on an env with a fixed task list
    (``describe().task_ids``), episode k plays task ``task_ids[order[(seed + k) % n]]``
    (``order``: a permutation of the n tasks fixed by n), so that the tasks are drawn without
    replacement (20 episodes over >= 20 tasks play 20 distinct tasks, as App. L's pairing of two runs
    by task needs). Each task is played `trials`
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
        stop: once set (a `StopRequest`, e.g. from `stop_on_signals`), no new episode starts and the
            episodes in flight are abandoned at their next step.

    Returns:
        One `EpisodeResult` per episode of the plan, in plan order. The envs are closed.

    Raises:
        ValueError: `trials` < 1, `episodes` < 0, `max_concurrency` < 1, `max_retries` < 0, or
            `all_tasks` on an env without a task list. An agent's or env's own exception (a bug)
            stops the run and propagates (episodes already ended are in the trajectories file).
        EvaluationStopped: `stop` was set before every episode of the plan ended (the envs are
            closed and the trajectories file is complete up to the episodes that ended).
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
    abandoned = 0
    try:
        if task_ids is None and all_tasks:
            task_ids = list(envs[0].unwrapped.describe().task_ids)
            if not task_ids:
                raise ValueError(f"{_env_name(envs[0])} has no fixed task list; --all-tasks works for tau2, HLE and FRAMES envs")
        listed = list(envs[0].unwrapped.describe().task_ids) if task_ids is None else None
        if listed and episodes:  # a fixed task list, drawn: without replacement over consecutive seeds
            order = np.random.default_rng(len(listed)).permutation(len(listed))
            task_ids = [listed[order[(seed + k) % len(listed)]] for k in range(episodes)]
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
        writer = TrajectoryWriter(trajectories_path, append) if trajectories_path else None
        guard, abandoned_lock = _AgentGuard(), threading.Lock()

        def play(i: int) -> EpisodeResult | None:
            nonlocal abandoned
            if stop is not None and stop.is_set():
                return None
            trial, tid = plan[i]
            opts = dict(options or {}, **({"task_id": tid} if tid is not None else {}))
            agent = agent_factory(seed + i)
            env = pool.get()  # one per worker: never empty for long
            try:
                with guard.hold(agent):
                    result = _play_with_retries(env, agent, seed + i, trial, tid, opts or None,
                                                keep_messages or writer is not None, max_retries, stop)
            except EpisodeAbandoned:
                with abandoned_lock:
                    abandoned += 1
                return None
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
                    bar.update(int(results[i] is not None))
            else:
                with concurrent.futures.ThreadPoolExecutor(max_concurrency, thread_name_prefix="episode") as ex:
                    futures = {ex.submit(play, i): i for i in todo}
                    try:
                        for f in concurrent.futures.as_completed(futures):
                            results[futures[f]] = f.result()
                            bar.update(int(results[futures[f]] is not None))
                    except BaseException:
                        ex.shutdown(wait=True, cancel_futures=True)
                        raise
    finally:
        if writer is not None:
            writer.close()
        for env in envs:
            env.close()
    if any(r is None for r in results):  # only a stop request leaves a slot empty
        raise EvaluationStopped([r for r in results if r is not None], len(results), abandoned,
                                getattr(stop, "reason", None))
    return results  # type: ignore[return-value]  (every slot is filled)


def _play_with_retries(env: gym.Env, agent: Agent, seed: int, trial: int, task_id: Any,
                       options: dict[str, Any] | None, keep: bool, max_retries: int,
                       stop: threading.Event | None = None) -> EpisodeResult:
    """`play_episode`, again after an infrastructure failure, at most `max_retries` more times."""
    for attempt in range(1, max_retries + 2):
        try:
            result = play_episode(env, agent, seed, options, trial=trial, keep_messages=keep, stop=stop)
        except INFRA_EXCEPTIONS as e:
            result = EpisodeResult(task_id, trial, seed, {}, infra_error=f"{type(e).__name__}: {e}")
        result.attempts = attempt
        if result.infra_error is None:
            break
    return result
