"""Run folders of ``orchestra eval --output-dir``: make, resume, regrade and load them.

A run folder holds ``run.json`` (`RunConfig`: env id and kwargs, agent, seed, episodes, trials,
reset options, infra retries: everything that fixes the plan), ``trajectories.jsonl`` (one line per
episode, appended and flushed as it ends: `orchestra_gym.evaluation.records.trajectory_line`) and
``summary.json`` (`run_summary`, written atomically); ``run.lock`` is held by the process
writing the folder (`run_lock`), so two writers never play the same episodes. `evaluate` makes one and plays it through the
runner (`orchestra_gym.evaluation.runner.run_episodes`), `resume` plays only what it lacks (the same
summary as an uninterrupted run), `regrade` recomputes grades and the summary from the stored
trajectories, `load_run` reads one back. A run stopped by a stop request
(`orchestra_gym.evaluation.runner.StopRequest`, e.g. Ctrl-C under ``orchestra eval``) keeps the
episodes that ended and gets the partial ``summary.json`` over them before `EvaluationStopped`
propagates; `resume` plays the rest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock
import gymnasium as gym

from orchestra_gym.agents import Agent, agent_factory, check_agent_name
from orchestra_gym.envs.qa import QAEnv
from orchestra_gym.evaluation.metrics import pass_hat_ks, qa_metrics, summarize
from orchestra_gym.evaluation.records import EpisodeResult, jsonable, strict_json, trajectory_line
from orchestra_gym.evaluation.runner import EvaluationStopped, run_episodes
from orchestra_gym.rewards import RewardLayout, is_solved

__all__ = ["RunConfig", "evaluate", "resume", "extend_plan", "regrade", "load_run", "run_summary", "RUN_FILE", "TRAJECTORIES_FILE",
           "SUMMARY_FILE"]

RUN_FILE, TRAJECTORIES_FILE, SUMMARY_FILE = "run.json", "trajectories.jsonl", "summary.json"
MODELS_COPY = "models.recorded"  # + the file's suffix: run.json's models file, written out for the agent and env
LOCK_FILE, HOLDER_FILE = "run.lock", "run.lock.holder"  # the writer's lock and who holds it (pid, host)


@contextlib.contextmanager
def run_lock(run_dir: Path):
    """Hold the run folder's lock (``run.lock``, an OS file lock by `filelock`: released when the
    process ends, also by ``kill -9``) while the block writes the folder; ``run.lock.holder`` says who
    holds it (pid and host) for the message of a second writer.

    Raises:
        ValueError: another process holds the lock (the message names its pid and host).
    """
    lock = filelock.FileLock(str(run_dir / LOCK_FILE), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        try:
            holder = (run_dir / HOLDER_FILE).read_text(encoding="utf-8").strip() or "unknown"
        except OSError:
            holder = "unknown"
        raise ValueError(f"{run_dir} is being written by another orchestra eval ({holder}; lock {run_dir / LOCK_FILE}); "
                         "wait for it to end (or stop it), then resume") from None
    try:
        (run_dir / HOLDER_FILE).write_text(f"pid {os.getpid()} on host {socket.gethostname()}\n", encoding="utf-8")
        yield
    finally:
        with contextlib.suppress(OSError):
            (run_dir / HOLDER_FILE).unlink()
        lock.release()


@dataclass
class RunConfig:
    """What a run folder's ``run.json`` holds: everything that fixes the run's plan.

    Attributes:
        env: the registered env id; env_kwargs: its ``gym.make`` keyword arguments (JSON-able).
        agent: the agent spec (``oracle``, ``expert-1``, ``llm:gpt-5``...).
        seed, episodes, all_tasks, trials, options: as `run_episodes`.
        max_retries: infra retries per episode (`run_episodes`).
        data: what the env plays, as its ``unwrapped.data_info`` reports it (tau2: benchmark,
            domain, data version, split, number of tasks); empty for envs that report nothing.
        models: the models file the run plays with (``orchestra_gym.tools.models.models_file_record``:
            path, sha256, text), empty for none: a resume uses this text, whatever the file holds now,
            so the endpoints and prices never switch.
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
    data: dict[str, Any] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)

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
        ValueError: a whole line (one ending in a newline) that is not an episode record: not
            UTF-8, not JSON, not a JSON object, or a key of the wrong type (names the file, the
            line number and what is wrong; the file is left as it is).
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
        for n, raw in enumerate(data[:end].split(b"\n")[:-1], start=1):
            if not raw.strip():
                continue
            r = _episode_of_line(raw)
            if isinstance(r, str):
                raise ValueError(f"{path}, line {n}: {r}; fix or remove the line (or start a new run folder)")
            by_seed[r.seed] = r
        if repair and end < len(data):  # only once every whole line was read: a damaged file is never rewritten
            with open(path, "r+b") as f:
                f.truncate(end)
    return cfg, [by_seed[k] for k in sorted(by_seed)]


def _episode_of_line(raw: bytes) -> "EpisodeResult | str":
    """The episode of one trajectories line, or what is wrong with the line."""
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        return f"not UTF-8 ({e})"
    except json.JSONDecodeError as e:
        return f"not JSON ({e})"
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__ if record is not None else 'null'}, not an episode record (an object)"
    for key, kind in (("seed", int), ("trial", int), ("info", dict)):
        if key not in record:
            return f"no {key!r} key (not an episode record of orchestra eval)"
        if not isinstance(record[key], kind) or isinstance(record[key], bool):
            return f"{key!r} is {record[key]!r}, not {'an integer' if kind is int else 'an object'}"
    for key in ("steps", "attempts"):
        if not isinstance(record.get(key, 0), int) or isinstance(record.get(key), bool):
            return f"{key!r} is {record[key]!r}, not an integer"
    if not isinstance(record.get("infra_error"), (str, type(None))):
        return f"'infra_error' is {record['infra_error']!r}, not a string or null"
    if not isinstance(record.get("messages"), (list, type(None))):
        return f"'messages' is {type(record['messages']).__name__}, not a list or null"
    return EpisodeResult.from_record(record)


def _make_env(env_id: str, env_kwargs: Mapping[str, Any]) -> Callable[[], gym.Env]:
    return lambda: gym.make(env_id, **dict(env_kwargs))


def _execute(cfg: RunConfig, run_dir: Path | None, done: Sequence[EpisodeResult], *, agents: Callable[[int], Agent] | None,
             max_concurrency: int, progress: bool, trajectories_path: Any = None,
             keep_messages: bool = False, stop: threading.Event | None = None) -> tuple[list[EpisodeResult], dict[str, Any]]:
    """Run `cfg` (skipping `done`), write the run folder's files, and summarize (also when stopped:
    the partial summary, then `EvaluationStopped` with it)."""
    env_kwargs, models = dict(cfg.env_kwargs), cfg.env_kwargs.get("models")
    if run_dir is not None and cfg.models:  # the recorded models file, for the agent and the env's tools
        models = _recorded_models(cfg, run_dir)
        if env_kwargs.get("models") == cfg.models["path"]:
            env_kwargs["models"] = str(models)
    make = _make_env(cfg.env, env_kwargs)
    first = make()
    handed = [first]
    data_info = getattr(first.unwrapped, "data_info", None)
    if run_dir is not None and isinstance(data_info, dict) and data_info != cfg.data:
        cfg.data = dict(data_info)
        _write_json(run_dir / RUN_FILE, cfg.to_dict())
    is_qa = isinstance(first.unwrapped, QAEnv)
    if run_dir is not None:
        trajectories_path = run_dir / TRAJECTORIES_FILE
    factory = None
    if agents is None:  # the spec's agents (baselines, llm:<id> with the run's models file, registered kinds)
        factory = agent_factory(cfg.agent, cfg.seed, models)
        agents = lambda s: factory(s - cfg.seed)  # noqa: E731  (episode index from its seed)
    try:
        results = run_episodes(
            lambda: handed.pop() if handed else make(), agents, cfg.episodes,
            seed=cfg.seed, all_tasks=cfg.all_tasks, trials=cfg.trials, options=cfg.options or None,
            trajectories_path=trajectories_path, progress=progress, desc=f"{cfg.agent} on {cfg.env}",
            max_concurrency=max_concurrency, max_retries=cfg.max_retries, done=done,
            append=bool(done) or run_dir is not None, keep_messages=keep_messages, stop=stop,
        )
    except EvaluationStopped as e:
        e.summary = run_summary(e.results, cfg, qa=is_qa)
        if run_dir is not None:
            _write_json(run_dir / SUMMARY_FILE, e.summary)
        raise
    finally:
        if factory is not None:
            factory.close()
    summary = run_summary(results, cfg, qa=is_qa)
    if run_dir is not None:
        _write_json(run_dir / SUMMARY_FILE, summary)
    return results, summary


def _recorded_models(cfg: RunConfig, run_dir: Path) -> Path:
    """run.json's models file written out in the run folder (checked against its sha256)."""
    from orchestra_gym.tools.models import load_models_record

    load_models_record(cfg.models)
    path = run_dir / (MODELS_COPY + (Path(cfg.models["path"]).suffix or ".toml"))
    if not path.is_file() or path.read_text(encoding="utf-8") != cfg.models["text"]:
        path.write_text(cfg.models["text"], encoding="utf-8")
    return path


def _write_json(path: Path, obj: Any) -> None:
    """Write strict JSON (`strict_json`: null for NaN) atomically (a temporary file, then rename), so a
    kill never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(strict_json(obj, indent=2, ensure_ascii=False), encoding="utf-8")
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
    stop: threading.Event | None = None,
    models: str | os.PathLike[str] | None = None,
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
        max_retries, keep_messages, stop: as `run_episodes`.
        output_dir: a new run folder: ``run.json`` (`RunConfig`), ``trajectories.jsonl`` (one line
            per episode as it ends) and ``summary.json``; `resume` continues it.
        agents: ``seed -> agent``, instead of the spec's `agent_factory`.
        models: the models file of the run (the ``llm:`` agent's endpoint, and the env's model tools
            where ``env_kwargs["models"]`` names the same file): recorded in ``run.json`` (path, sha256,
            text), so that `resume` plays with the same endpoints and prices.

    Returns:
        ``(results, summary)``: `run_summary` (`summarize` plus ``env``, ``agent``, ``seed``,
        ``trials``, ``pass_hat_k`` and for QA envs (HLE, FRAMES) ``qa``).

    Raises:
        gymnasium.error.Error: unknown env id; ValueError: unknown agent, a bad argument, or an
        `output_dir` that already holds a run (resume it instead).
        EvaluationStopped: `stop` was set; the episodes that ended are kept, ``summary.json`` holds
            their summary (also in the exception's ``summary``), `resume` plays the rest.
    """
    cfg = RunConfig(env_id, agent, dict(env_kwargs or {}), seed, episodes, all_tasks, trials, dict(options or {}), max_retries)
    if models is None and isinstance(cfg.env_kwargs.get("models"), (str, os.PathLike)):
        models = cfg.env_kwargs["models"]
    if models is not None and output_dir is not None:
        from orchestra_gym.tools.models import models_file_record

        cfg.models = models_file_record(models)
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
        with run_lock(run_dir):
            if (run_dir / RUN_FILE).exists():  # made meanwhile by another process
                raise ValueError(f"{run_dir} already holds a run; continue it with --resume {run_dir}, or pick a new --output-dir")
            _write_json(run_dir / RUN_FILE, cfg.to_dict())
            return _execute(cfg, run_dir, (), agents=agents, max_concurrency=max_concurrency, progress=progress,
                            keep_messages=keep_messages, stop=stop)
    return _execute(cfg, run_dir, (), agents=agents, max_concurrency=max_concurrency, progress=progress,
                    trajectories_path=trajectories_path, keep_messages=keep_messages, stop=stop)


def resume(
    run_dir: str | os.PathLike[str],
    *,
    env_id: str | None = None,
    agent: str | None = None,
    max_concurrency: int = 1,
    max_retries: int | None = None,
    episodes: int | None = None,
    trials: int | None = None,
    seed: int | None = None,
    models: str | os.PathLike[str] | None = None,
    replace_models: bool = False,
    progress: bool = False,
    agents: Callable[[int], Agent] | None = None,
    stop: threading.Event | None = None,
) -> tuple[list[EpisodeResult], dict[str, Any]]:
    """Continue a run folder: play only the plan's episodes its trajectories lack (infra failures
    included), append them, and rewrite ``summary.json`` over all of them (the same summary as an
    uninterrupted run: the plan and every episode's seed come from ``run.json``).

    Args:
        run_dir: the folder `evaluate` made. env_id, agent: when given, they must be the run's.
        max_concurrency: as `run_episodes`; max_retries: overrides the run's.
        episodes, trials, seed: the plan, when given: the run's, or one that only extends it (more
            episodes of one trial, or more trials of the same episodes: every stored episode keeps
            its seed and trial), which ``run.json`` then records (`extend_plan`).
        models: a models file: it must be the one ``run.json`` recorded (same text), unless
            `replace_models` (then it is recorded and played from here on). Without it the recorded
            text is used, whatever the file holds now.
        progress, agents, stop: as `evaluate`.

    Raises:
        FileNotFoundError: not a run folder. ValueError: `env_id` or `agent` differ from the run's
        (the message names both), a plan that does not only extend the run's (the message names
        the key), a damaged trajectories file, or another process writing the folder (`run_lock`:
        the message names its pid and host). EvaluationStopped: as `evaluate`.
    """
    root = Path(run_dir)
    load_run(root)  # not a run folder, or a damaged one: said before the lock file is made
    with run_lock(root):
        return _resume(root, env_id, agent, max_concurrency, max_retries, episodes, trials, seed, models, replace_models,
                       progress, agents, stop)


def _resume(root: Path, env_id: str | None, agent: str | None, max_concurrency: int, max_retries: int | None,
            episodes: int | None, trials: int | None, seed: int | None, models: Any, replace_models: bool,
            progress: bool, agents: Callable[[int], Agent] | None,
            stop: threading.Event | None) -> tuple[list[EpisodeResult], dict[str, Any]]:
    """`resume` under the run folder's lock."""
    cfg, done = load_run(root, repair=True)
    plan = extend_plan(cfg, episodes=episodes, trials=trials, seed=seed)
    if models is not None:
        from orchestra_gym.tools.models import models_file_record

        record = models_file_record(models)
        if cfg.models and record["sha256"] != cfg.models.get("sha256") and not replace_models:
            raise ValueError(f"--models {models} differs from the file this run played with ({cfg.models['path']}, "
                             f"sha256 {cfg.models['sha256'][:12]}..., recorded in {root / RUN_FILE}; this one: "
                             f"{record['sha256'][:12]}...); drop --models to resume with the recorded one, or add "
                             "--replace-models to play the rest with this one")
        if replace_models or not cfg.models:
            if cfg.env_kwargs.get("models") == cfg.models.get("path", models):
                plan.env_kwargs = {**plan.env_kwargs, "models": str(models)}
            plan.models = record
    if (env_id is not None and env_id != cfg.env) or (agent is not None and agent != cfg.agent):
        raise ValueError(f"{root} is a run of env {cfg.env!r} with agent {cfg.agent!r}, not env {env_id or cfg.env!r} "
                         f"with agent {agent or cfg.agent!r}; resume it with its own --env/--agent or pick a new --output-dir")
    if (max_retries is not None and max_retries != cfg.max_retries) or plan != cfg:
        cfg = dataclasses.replace(plan, max_retries=cfg.max_retries if max_retries is None else max_retries)
        _write_json(root / RUN_FILE, cfg.to_dict())
    return _execute(cfg, root, done, agents=agents, max_concurrency=max_concurrency, progress=progress, stop=stop)


def extend_plan(cfg: RunConfig, *, episodes: int | None = None, trials: int | None = None,
                seed: int | None = None) -> RunConfig:
    """`cfg` with the plan a resume asks for, when it only extends the run's plan.

    The plan is trial by trial (`run_episodes`): episode i of the plan has seed ``seed + i``. A new
    plan extends the old one when the old plan is its beginning: the same seed, and either the same
    episodes with at least as many trials, or one trial with at least as many episodes (with
    ``all_tasks``, 0 episodes means every task, the most there are).

    Raises:
        ValueError: a plan that changes what a stored episode is (another seed, fewer episodes or
            trials, more episodes over several trials); the message names the key, both values and
            the way on (the run's value, or a new --output-dir).
    """
    new = dataclasses.replace(cfg, episodes=cfg.episodes if episodes is None else int(episodes),
                              trials=cfg.trials if trials is None else int(trials),
                              seed=cfg.seed if seed is None else int(seed))
    size = lambda e: float("inf") if (e == 0 and cfg.all_tasks) else e  # noqa: E731
    differing = [k for k in ("seed", "episodes", "trials") if getattr(new, k) != getattr(cfg, k)]
    extends = new.seed == cfg.seed and (
        (size(new.episodes) == size(cfg.episodes) and new.trials >= cfg.trials)
        or (new.trials == cfg.trials == 1 and size(new.episodes) >= size(cfg.episodes)))
    if not extends:
        key = differing[0] if new.seed != cfg.seed or len(differing) == 1 else "episodes"
        why = ("more episodes of a run with several trials move every later trial's seeds" if key == "episodes"
               and new.trials > 1 and size(new.episodes) > size(cfg.episodes) else "a resume only extends a run")
        raise ValueError(f"--{key} {getattr(new, key)} differs from the run's {key} {getattr(cfg, key)} (run.json) and "
                         f"{why}; resume with --{key} {getattr(cfg, key)} (or more, where that extends the run), or "
                         "pick a new --output-dir")
    return new


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
        FileNotFoundError: not a run folder. ValueError: another process is writing the folder
        (`run_lock`).
    """
    root = Path(run_dir)
    load_run(root)
    with run_lock(root):
        return _regrade(root, env_kwargs, grader)


def _regrade(root: Path, env_kwargs: Mapping[str, Any] | None,
             grader: "Callable[[EpisodeResult], tuple[float, dict[str, Any]] | None] | None") -> dict[str, Any]:
    """`regrade` under the run folder's lock."""
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
            f.write(trajectory_line(r))
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
