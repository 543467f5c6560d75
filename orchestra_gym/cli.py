"""The `orchestra` console script: `eval`, `regrade`, `report`, `serve` and `envs` (argument parsing and printing
only; no JAX import), and the commands other distributions add through entry points (below).

``orchestra eval --env ID --agent NAME --episodes N --seed S [--trials K] [--max-concurrency N]
[--max-retries R] [--output-dir RUN_DIR] [--output-json PATH] [--trajectories PATH]
[--env-kwargs JSON]`` runs `orchestra_gym.evaluation.evaluate` and prints its table (success
rate, mean cost in USD, mean latency in seconds, tool-call mix, pass^k for K > 1, infra failures;
for HLE and FRAMES also the paper's Table 1 columns) with a progress bar. ``--output-dir`` makes a
run folder (``run.json``, ``trajectories.jsonl`` appended as each episode ends, ``summary.json``);
``orchestra eval --resume RUN_DIR`` plays only what it lacks. Episode i is reset with seed
``S + i``, so a run is reproducible, serial or concurrent.

The setting: a ``policy:RUN`` agent brings its trained run's (env id, env kwargs, reset options);
``--setting-of RUN`` plays any agent in it (`orchestra_gym.setting.Setting`, the run's
``orchestra_setting.json``), so that a baseline is compared with the policy like for like;
``--env-kwargs`` and ``--reset-options`` apply over it. Every new run prints the setting it plays
in as one line on stderr.

SIGINT (Ctrl-C) or SIGTERM stops a run cleanly (`orchestra_gym.evaluation.stop_on_signals`: no new
episode, the ones in flight abandoned at their next step; a second signal stops at once): one line
on stderr names what is kept and the ``--resume`` command, the run folder gets the partial
``summary.json``, the exit code is 130. Infrastructure failures (an endpoint down, a missing API key)
are not task failures: the first one's cause is printed on stderr, and a run where no episode could be
graded exits with code 1. Every JSON file a run writes is strict (null for an undefined mean, never
``NaN``).

``orchestra regrade RUN_DIR`` recomputes grades and the summary from the stored trajectories
(`orchestra_gym.evaluation.regrade`); ``orchestra report RUN_DIR... [--baseline RUN_DIR]
[--out DIR]`` writes the paper's tables as Markdown and the accuracy-cost plane as a PNG
(`orchestra_gym.evaluation.report`).

This module is the `orchestra` console script. Other distributions add to it through two entry-point
groups (`importlib.metadata`, declared in their ``pyproject.toml``), so that this package never imports
them: ``orchestra.commands`` (``name = "module:main [extra]"``, a function ``main(argv) -> int``; the
trainer's ``train``, ``sft`` and ``export``) and ``orchestra.agent_kinds`` (``name = "module:builder
[extra]"``, ``builder(argument, seed, models) -> AgentFactory`` for ``--agent NAME:ARGUMENT``; the
trainer's ``policy:RUN_DIR``). An entry point is loaded only when its command or agent kind is used; when
its extra is not installed, the command is one line naming the extra and exit code 2 (the environments,
``eval``, ``report`` and ``serve`` need no JAX). Any `OrchestraError` is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from orchestra_gym.agents import agent_factory, register_agent_kind
from orchestra_gym.errors import ConfigError, DependencyNotInstalled, OrchestraError
from orchestra_gym.evaluation import (EpisodeResult, EvaluationStopped, StopRequest, evaluate, format_qa_table,
                                      format_table, regrade, report, resume, stop_on_signals, strict_json)
from orchestra_gym.registration import ENV_SPECS
from orchestra_gym.setting import Setting

__all__ = ["main", "os_error_line", "add_subcommands", "run_command", "plugins", "load_plugin", "missing_requirements",
           "COMMANDS_GROUP", "AGENT_KINDS_GROUP"]

#: Entry-point group of extra `orchestra` subcommands: ``name = "module:main [extra]"``, ``main(argv) -> int``.
COMMANDS_GROUP = "orchestra.commands"
#: Entry-point group of extra agent kinds: ``name = "module:builder [extra]"`` for ``--agent name:ARGUMENT``.
AGENT_KINDS_GROUP = "orchestra.agent_kinds"


def _eval(args: argparse.Namespace) -> int:
    """`orchestra eval`; a stop by SIGINT / SIGTERM is one line on stderr and exit code 130."""
    with stop_on_signals() as stop:
        try:
            return _play_eval(args, stop)
        except (KeyError, ValueError) as e:  # a models file's error: also the way to keep the env's tools simulated
            msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            if not args.models or "models file" not in str(msg):
                raise
            raise ConfigError(f"{msg} (the env's model tools stay simulated with --env-kwargs '{{\"models\": null}}'; "
                             f"format: orchestra_gym/tools/models_default.toml)") from None
        except EvaluationStopped as e:
            print(_stopped_line(args, e), file=sys.stderr)
        except KeyboardInterrupt:  # a second signal: stopped at once, the summary not rewritten
            print(_stopped_line(args, None), file=sys.stderr)
    return 130


def _stopped_line(args: argparse.Namespace, e: EvaluationStopped | None) -> str:
    """The one line of a stopped `orchestra eval`: why, what is kept, how to continue."""
    run = args.resume or args.output_dir
    if e is None:
        why, kept = "stopped at once by a second signal", "the episodes that ended"
    else:
        why = f"stopped by {e.reason or 'a stop request'}"
        kept = f"{len(e.results)} of {e.planned} episodes" + (f" ({e.abandoned} in flight abandoned)" if e.abandoned else "")
    if run:
        where = f"{Path(run) / 'trajectories.jsonl'}" + (f", their summary in {Path(run) / 'summary.json'}" if e else "")
        return f"orchestra eval: {why}; kept {kept} in {where}; continue with: orchestra eval --resume {run}"
    if args.trajectories:
        return f"orchestra eval: {why}; kept {kept} in {args.trajectories}; nothing to resume (use --output-dir to resume)"
    return f"orchestra eval: {why}; played {kept}, nothing kept (use --output-dir RUN_DIR to keep episodes and resume)"


def _play_eval(args: argparse.Namespace, stop: StopRequest) -> int:
    progress = not args.no_progress
    if args.resume:
        results, summary = resume(args.resume, env_id=args.env, agent=args.agent, max_concurrency=args.max_concurrency,
                                  max_retries=args.max_retries, episodes=args.episodes, trials=args.trials,
                                  seed=args.seed, models=args.models, replace_models=args.replace_models,
                                  progress=progress, stop=stop)
    else:
        if not args.agent:
            raise ConfigError("--agent is required (or --resume RUN_DIR to continue a run)")
        args.seed = 0 if args.seed is None else args.seed
        args.trials = 1 if args.trials is None else args.trials
        kwargs = _json_object("--env-kwargs", args.env_kwargs)
        setting = Setting.read(args.setting_of) if args.setting_of else None  # fails before an agent is loaded
        if setting is not None and args.env and args.env != setting.env_id:
            raise ConfigError(f"--setting-of {args.setting_of} is a setting of {setting.env_id}, not of --env {args.env}; "
                             "drop --env (or --setting-of)")
        factory = agent_factory(args.agent, args.seed, models=args.models, cache=args.cache, cache_mode=args.cache_mode)
        try:
            own, source = setting, f"--setting-of {args.setting_of}"
            if own is None and factory.env_id is not None:  # the agent's own setting (a trained run's tools, prompt, preference)
                own, source = Setting(factory.env_id, factory.env_kwargs, factory.reset_options), f"{args.agent}'s own"
            env_id, options = args.env or (own.env_id if own else None), {}
            if env_id is None:
                raise ConfigError(f"--env is required for agent {args.agent!r} (e.g. --env ToolOrchestra-ToolScale-v0)")
            if args.data_path:
                kwargs[_data_keyword(env_id)] = args.data_path
            own_models = bool(args.models) and "models" not in kwargs  # --env-kwargs names none
            if own is not None and own.env_id == env_id:
                kwargs, options = {**own.env_kwargs, **kwargs}, dict(own.reset_options)
            else:
                source = "the env's defaults"
            if own_models and kwargs.get("expert_pool") is None:
                # the env's model tools too, unless --env-kwargs names its own (null: simulated); an expert
                # pool's experts are simulated profiles: the file then serves the llm: agent only
                kwargs["models"] = args.models
            if setting is None and factory.env_id is not None and factory.env_id != env_id:
                print(f"note: agent {args.agent} was trained on {factory.env_id}; playing {env_id} with its defaults",
                      file=sys.stderr)
            if args.reset_options:  # e.g. a trained run's setting for an LLM agent (tools exposed, preference)
                options = {**options, **_json_object("--reset-options", args.reset_options)}
            given = [f for f, v in (("--env-kwargs", args.env_kwargs), ("--reset-options", args.reset_options),
                                    ("--data-path", args.data_path), ("--models", args.models)) if v]
            extra = f" and {', '.join(given)}" if given else ""
            print(f"orchestra eval: setting: {Setting(env_id, kwargs, options).describe()} ({source}{extra})",
                  file=sys.stderr)
            if kwargs.get("models") is not None or (args.models and kwargs.get("expert_pool") is not None):
                print(f"orchestra eval: {_model_tools_line(env_id, kwargs)}", file=sys.stderr)
            results, summary = evaluate(
                env_id, args.agent, 20 if args.episodes is None else args.episodes, seed=args.seed, env_kwargs=kwargs,
                all_tasks=args.all_tasks, trials=args.trials, trajectories_path=args.trajectories, progress=progress,
                max_concurrency=args.max_concurrency, max_retries=args.max_retries or 0, output_dir=args.output_dir,
                options=options, agents=lambda s: factory(s - args.seed), stop=stop, models=args.models,
            )
        finally:
            factory.close()
    _print_summary(summary)
    if args.output_json:
        Path(args.output_json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output_json).write_text(strict_json(summary, indent=2))
    return _infra_exit(results)


def _infra_exit(results: "list[EpisodeResult]") -> int:
    """The exit code of a played run: 0, or 1 when no episode could be graded (every one an infra
    failure); the first infrastructure cause is printed on stderr whenever there is one."""
    failed = [r for r in results if r.infra_error is not None]
    if not failed:
        return 0
    print(f"orchestra eval: first infrastructure failure (seed {failed[0].seed}): {failed[0].infra_error}",
          file=sys.stderr)
    if len(failed) < len(results):
        return 0
    print(f"orchestra eval: no episode could be graded ({len(failed)} of {len(results)} infra failures): fix the "
          "endpoint or key named above, then play them again with --resume (an --output-dir run) or a new run",
          file=sys.stderr)
    return 1


def _json_object(flag: str, text: str | None) -> dict:
    """A flag's JSON object ({} when not given).

    Raises:
        ConfigError: not JSON, or JSON that is not an object (names the flag, the error and the fix).
    """
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{flag}: not JSON ({e}): {text!r}; fix: a JSON object in single quotes, e.g. "
                          f"{flag} '{{\"max_turns\": 6}}'") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{flag} must be a JSON object, got {text!r}; fix: e.g. {flag} '{{\"max_turns\": 6}}'")
    return value


def _model_tools_line(env_id: str, kwargs: dict) -> str:
    """One line naming the env's model tools (with `kwargs`, its ``gym.make`` keywords) that are real
    (named by the models file ``kwargs["models"]``) and simulated. An expert pool (``expert_pool``)
    offers its own experts (the training ones, or all with ``held_out_experts`` include / only), all
    simulated.

    Raises:
        ModelsFileError: a models file that cannot be read (with the hint to keep the tools simulated).
        KeyError: an unknown expert pool.
    """
    from orchestra_gym.registration import EnvFactory
    from orchestra_gym.tools.models import ModelsConfig, load_models

    if kwargs.get("expert_pool") is not None:
        from orchestra_gym.tools.pools import get_pool

        pool = get_pool(kwargs["expert_pool"])
        offered = list(pool.train_names)
        if kwargs.get("held_out_experts", "exclude") != "exclude":
            offered += list(pool.held_out_names)
        return (f"model tools: real none; simulated {', '.join(offered)} (expert pool {pool.name!r}: the experts "
                "offered are drawn from these each episode; the models file serves the llm: agent only)")
    models = kwargs.get("models")
    entry = gym.spec(env_id).entry_point
    ids = tuple(getattr(entry.env_class(), "MODEL_TOOL_IDS", ())) if isinstance(entry, EnvFactory) else ()
    if not ids:
        return "model tools: none in this env"
    real: list[str] = []
    if isinstance(models, ModelsConfig):
        real = models.split(ids)[0]
    elif isinstance(models, (str, Path)):
        real = load_models(models).split(ids)[0]
    elif isinstance(models, dict):  # QA: id -> chat model given in code
        real = [m for m in ids if m in models]
    simulated = [m for m in ids if m not in real]
    return f"model tools: real {', '.join(real) or 'none'}; simulated {', '.join(simulated) or 'none'}"


def _print_summary(summary: dict) -> None:
    print(format_table(summary, summary["env"], summary["agent"]))
    if summary.get("trials", 1) > 1:
        print("pass^k: " + ", ".join(f"pass^{k} {v:.3f}" for k, v in summary["pass_hat_k"].items()))
    if summary.get("infra_failures"):
        print(f"infra failures (not counted as task failures): {summary['infra_failures']}")
    if "qa" in summary:  # QA envs: the paper's Table 1 units (accuracy with a Wald 95% interval, cents, minutes, calls per model)
        print(format_qa_table(summary["qa"], summary["env"], summary["agent"]))


def _regrade(args: argparse.Namespace) -> int:
    summary = regrade(args.run_dir, env_kwargs=_json_object("--env-kwargs", args.env_kwargs))
    _print_summary(summary)
    return 0


def _report(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    if args.pool:
        return _pool_report(args, out)
    if not args.run_dirs:
        raise SystemExit("orchestra report: give RUN_DIR... (run folders of orchestra eval) or --pool NAME")
    text = report(args.run_dirs, baseline=args.baseline, png_path=out / "frontier.png" if out else None)
    if out is not None:
        (out / "report.md").write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


def _pool_report(args: argparse.Namespace, out: "Path | None") -> int:
    """``orchestra report --pool NAME``: the accuracy-cost rows per pool setting, the adherence check and its
    kind-oracle headroom (`orchestra_gym.evaluation.pools.orchestration`); with ``--agent`` the agent's rows
    (e.g. ``policy:<run dir>`` of a run trained over the pool)."""
    import json

    from orchestra_gym.evaluation import pools

    factory = agent_factory(args.agent) if args.agent else None
    try:
        m = pools.orchestration(args.pool, args.episodes, args.router_tasks, factory(0) if factory else None,
                                checkpoint=args.agent)
    finally:
        if factory is not None:
            factory.close()
    text = pools.markdown(m)
    if out is not None:
        (out / "report.md").write_text(text, encoding="utf-8")
        (out / "pool.json").write_text(json.dumps(m, indent=1, default=float), encoding="utf-8")
        pools.plot(m, out)
    print(text, end="")
    return 0


def _serve(args: argparse.Namespace) -> int:
    """`orchestra serve` (`orchestra_gym.serving.server.serve`); needs the serve extra (openenv)."""
    try:
        from orchestra_gym.serving.server import serve
    except ImportError as e:
        raise DependencyNotInstalled(f"orchestra serve needs openenv ({e}); install the serve extra from the clone: "
                                     f"pip install -e \".[serve]\"") from None
    kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    if not isinstance(kwargs, dict):
        raise ConfigError(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}")
    serve(args.env, kwargs, host=args.host, port=args.port, max_sessions=args.max_sessions,
          idle_timeout_s=args.idle_timeout, token=args.token, workers=args.workers, step_in=args.step_in,
          max_body_bytes=args.max_body_bytes, request_timeout_s=args.request_timeout)
    return 0


def _data_keyword(env_id: str) -> str:
    """The keyword `--data-path` fills for `env_id`: ``data_path`` (HLE, FRAMES: a dataset file) or
    ``data_dir`` (tau2: the ``data/tau2`` folder).

    Raises:
        ConfigError: the env takes no data location (ToolScale generates its tasks).
    """
    from orchestra_gym.registration import EnvFactory, accepted_kwargs

    if env_id not in ENV_SPECS:
        return "data_path"  # gym.make reports the unknown id
    accepted = accepted_kwargs(EnvFactory(env_id, ENV_SPECS[env_id][0]).env_class()) or []
    for key in ("data_path", "data_dir"):
        if key in accepted:
            return key
    raise ConfigError(f"--data-path: {env_id} takes no data file or folder (its tasks are generated); "
                      f"drop --data-path")


def _envs(args: argparse.Namespace) -> int:
    for env_id, (entry, _) in ENV_SPECS.items():
        print(f"{env_id:<32} {entry}")
    return 0


def add_subcommands(sub: "argparse._SubParsersAction") -> None:
    """Add ``eval``, ``regrade``, ``report`` and ``envs`` to an argparse subparsers object (used by the `orchestra` script)."""
    p = sub.add_parser("eval", help="run an agent on an environment and print a table")
    p.add_argument("--env", help="environment id, e.g. ToolOrchestra-ToolScale-v0 (required unless --resume; default for "
                   "policy:RUN_DIR: the run's env)")
    p.add_argument("--agent", help="random | oracle | cascade | expert-<k> | llm:<model id> (an OpenAI-compatible endpoint "
                   "of --models) | policy:RUN_DIR (a trained run, in its own setting); required unless --resume")
    p.add_argument("--episodes", type=int, help="episodes (default 20); with --all-tasks the cap on tasks (0 = all); "
                   "with --resume, --episodes/--trials may extend the run's plan")
    p.add_argument("--seed", type=int, help="the first episode's seed (default 0); episode i is reset with seed + i")
    p.add_argument("--trials", type=int, help="plays of each task (default 1); pass^k is reported for k = 1..trials")
    p.add_argument("--max-concurrency", type=int, default=1, help="episodes played at once (threads; each model's "
                   "max_concurrency of the models file still holds)")
    p.add_argument("--max-retries", type=int, help="extra plays of an episode hit by an infrastructure failure "
                   "(endpoint down after its retries, timeout) before it is recorded as an infra failure (default 0)")
    p.add_argument("--output-dir", help="a new run folder: run.json, trajectories.jsonl (one line per episode, as it "
                   "ends), summary.json")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a run folder: play only the episodes it lacks")
    p.add_argument("--output-json", help="write the summary JSON here")
    p.add_argument("--trajectories", help="write one JSON line per episode here (transcript + info)")
    p.add_argument("--env-kwargs", help="JSON object of keyword arguments for gym.make")
    p.add_argument("--setting-of", metavar="RUN_DIR", help="play in the setting of a trained run (its "
                   "orchestra_setting.json: env id, env kwargs, reset options; an `orchestra train` --output-dir or an "
                   "`orchestra export` folder), e.g. a baseline next to --agent policy:RUN_DIR; --env-kwargs and "
                   "--reset-options apply over it")
    p.add_argument("--reset-options", help="JSON object of env.reset options of every episode (e.g. "
                   "'{\"tools\": [\"call_expert\"]}'), over the agent's own setting")
    p.add_argument("--data-path", help="dataset file (HLE, FRAMES) or tau2 data folder (data/tau2 of tau2-bench); "
                   "refused for ToolScale, whose tasks are generated")
    p.add_argument("--models", help="models file (TOML) for real endpoints: the llm: agent's model and the env's "
                   "model tools (--env-kwargs '{\"models\": null}' keeps the tools simulated)")
    p.add_argument("--replace-models", action="store_true", help="with --resume and --models: play the rest of the "
                   "run with this models file although it differs from the one recorded in run.json (by default a "
                   "resume plays with the recorded file, and refuses a different --models)")
    p.add_argument("--cache", help="SQLite record/replay cache of the llm: agent's requests (the env's model tools take "
                   "their own: --env-kwargs '{\"cache\": FILE}')")
    p.add_argument("--cache-mode", default="record-missing", choices=("off", "record", "replay", "record-missing"),
                   help="record: store every reply; replay: answer from the cache only, send no request")
    p.add_argument("--all-tasks", action="store_true", help="play every task of a fixed task list once (tau2, HLE, FRAMES); --episodes 0 = all")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=_eval)
    g = sub.add_parser("regrade", help="recompute a run folder's grades and summary from its stored trajectories")
    g.add_argument("run_dir", metavar="RUN_DIR")
    g.add_argument("--env-kwargs", help="JSON object over the run's gym.make kwargs (e.g. a new judge_model for HLE/FRAMES)")
    g.set_defaults(func=_regrade)
    r = sub.add_parser("report", help="the paper's tables (Table 1, Table 15, preference score, accuracy-cost plane) over run folders")
    r.add_argument("run_dirs", nargs="*", metavar="RUN_DIR")
    r.add_argument("--baseline", metavar="RUN_DIR", help="run folder for the App. L preference score")
    r.add_argument("--out", metavar="DIR", help="write report.md and frontier.png (the accuracy-cost plane) here; "
                   "with --pool report.md, pool.json and the plots of each setting")
    r.add_argument("--pool", metavar="NAME", help="instead of run folders: measure an expert pool (e.g. tradeoffs): the "
                   "accuracy-cost rows of the fixed rules and routers per setting, the adherence check and its headroom")
    r.add_argument("--episodes", type=int, default=500, help="with --pool: held-out tasks per setting (default 500)")
    r.add_argument("--router-tasks", type=int, default=300, help="with --pool: training tasks of the text router")
    r.add_argument("--agent", metavar="SPEC", help="with --pool: the agent measured against the rules (policy:<run dir>)")
    r.set_defaults(func=_report)
    v = sub.add_parser("serve", help="serve an env over OpenEnv's protocol (WS /ws, POST /reset /step, GET /state "
                       "/schema /health) for TRL, SkyRL, Unsloth or any OpenEnv client")
    v.add_argument("--env", required=True, help="environment id (orchestra envs)")
    v.add_argument("--env-kwargs", help="JSON dict of keywords for every session's gym.make")
    v.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    v.add_argument("--port", type=int, default=8000)
    v.add_argument("--max-sessions", type=int, default=64, help="concurrent sessions at most (one env each)")
    v.add_argument("--idle-timeout", type=float, default=600.0,
                   help="seconds without a message after which a session is closed with its env")
    v.add_argument("--max-body-bytes", type=int, default=1 << 20,
                   help="an HTTP body or WebSocket message at most (default 1 MiB; 413 / close 1009 beyond)")
    v.add_argument("--request-timeout", type=float, default=30.0,
                   help="seconds a client has to send a whole HTTP request before it is dropped")
    v.add_argument("--token", default=os.environ.get("ORCHESTRA_SERVE_TOKEN"),
                   help="bearer token every request must carry (default $ORCHESTRA_SERVE_TOKEN; none: open; "
                        "an empty one is refused)")
    v.add_argument("--workers", type=int, default=1, help="server processes (sessions spread over them)")
    v.add_argument("--step-in", choices=["thread", "loop"], default="thread",
                   help="run each step in its session's thread (default: a slow tool holds only its session) or "
                        "in the event loop (less overhead per step, for simulated tools)")
    v.set_defaults(func=_serve)
    q = sub.add_parser("envs", help="list the registered environment ids")
    q.set_defaults(func=_envs)


def plugins(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The installed entry points of `group` (`COMMANDS_GROUP`, `AGENT_KINDS_GROUP`), by name; none are loaded."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}


def missing_requirements(ep: importlib.metadata.EntryPoint) -> list[str]:
    """The distributions of `ep`'s extras (``[jax]`` in ``"module:attr [jax]"``) that are not installed, from
    its distribution's requirements (``Requires-Dist: jax>=0.7; extra == "jax"``); [] when all are."""
    if not ep.extras or ep.dist is None:
        return []
    missing = []
    for req in ep.dist.requires or []:
        name, _, marker = req.partition(";")
        extras = re.findall(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if not any(x in ep.extras for x in extras):
            continue
        dist = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", name).group(1)
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist)
    return missing


def load_plugin(ep: importlib.metadata.EntryPoint | Callable[..., Any], what: str) -> Callable[..., Any]:
    """The object an entry point names (a callable given directly is returned as is); `what` opens the error
    message (e.g. ``"agent kind 'policy'"``; empty: the message starts with "needs").

    Raises:
        DependencyNotInstalled: `ep`'s extra is not installed (names the extra and the install command from the
            clone), or loading it fails for a missing module.
    """
    if not isinstance(ep, importlib.metadata.EntryPoint):
        return ep
    extra, who = ",".join(ep.extras) or "all", f"{what} " if what else ""
    hint = (f"install the {extra} extra from the clone of {ep.dist.name if ep.dist else 'the project'}: "
            f"pip install -e \".[{extra}]\"")
    missing = missing_requirements(ep)
    if missing:
        raise DependencyNotInstalled(f"{who}needs the {extra} extra ({', '.join(missing)} not installed); {hint}")
    try:
        return ep.load()
    except ModuleNotFoundError as e:
        raise DependencyNotInstalled(f"{who}needs {e.name}, which is not installed; {hint}") from None


def _agent_kind(name: str, ep: importlib.metadata.EntryPoint | Callable[..., Any]) -> Callable[..., Any]:
    """A builder of ``--agent name:ARGUMENT`` that loads `ep` only when such an agent is asked for."""
    def build(argument: str, seed: int, models: Any) -> Any:
        return load_plugin(ep, f"agent kind {name!r}")(argument, seed, models)
    return build


def main(argv: list[str] | None = None, *, commands: Mapping[str, Callable[[list[str]], int]] | None = None,
         agent_kinds: Mapping[str, Callable[..., Any]] | None = None) -> int:
    """The `orchestra` console script: ``eval``, ``regrade``, ``report``, ``serve``, ``envs``, and the commands and
    agent kinds of the entry-point groups (`COMMANDS_GROUP`, `AGENT_KINDS_GROUP`) or of `commands` / `agent_kinds`
    (given ones win; `orchestra_jax.cli.main` passes the trainer's, so it runs without installed metadata).

    Returns the exit code; a user error exits 2 with one line on stderr (a plugin command: returns 2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra_commands: dict[str, Any] = {**plugins(COMMANDS_GROUP), **(commands or {})}
    for name, ep in {**plugins(AGENT_KINDS_GROUP), **(agent_kinds or {})}.items():
        register_agent_kind(name, _agent_kind(name, ep), "arg")
    if argv and argv[0] in extra_commands:
        prog = f"orchestra {argv[0]}"
        try:
            return int(load_plugin(extra_commands[argv[0]], "")(argv[1:]))
        except OrchestraError as e:
            print(f"{prog}: {e}", file=sys.stderr)
            return 2
        except OSError as e:  # a read-only or full disk, a folder below a file: one line, not a traceback
            print(f"{prog}: {os_error_line(e)}", file=sys.stderr)
            return 1
    parser = argparse.ArgumentParser(prog="orchestra", description="ToolOrchestra environments and trainer")
    sub = parser.add_subparsers(dest="command", required=True)
    add_subcommands(sub)
    for name, ep in extra_commands.items():
        where = (f" (from {ep.module}" + (f", the {','.join(ep.extras)} extra)" if ep.extras else ")")
                 if isinstance(ep, importlib.metadata.EntryPoint) else "")
        sub.add_parser(name, help=f"see orchestra {name} --help{where}")
    args = parser.parse_args(argv)
    return run_command(args, parser)


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run a parsed subcommand; a user error (bad id, agent, option or data path) is one line on
    stderr and exit code 2, not a traceback."""
    try:
        return int(args.func(args))
    except (OrchestraError, ValueError, KeyError, FileNotFoundError, RuntimeError, gym.error.Error) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        parser.exit(2, f"{parser.prog} {args.command}: error: {msg}\n")
    except OSError as e:  # a read-only or full disk, a folder below a file: one line, not a traceback
        parser.exit(1, f"{parser.prog} {args.command}: error: {os_error_line(e)}\n")


def os_error_line(e: OSError) -> str:
    """One line for a file-system error of a command: the path and the cause (``cannot write runs/x/a.json:
    No space left on device``), and what to do. What was written before it (a run folder's finished
    episodes, a run's last checkpoint) is left as it was, so the same command resumes once the cause is fixed."""
    path = f" {e.filename}" if e.filename else ""
    other = f" -> {e.filename2}" if getattr(e, "filename2", None) else ""
    cause = e.strerror or str(e) or type(e).__name__
    return (f"cannot use{path}{other}: {cause}; free the disk or choose a writable --output-dir, then run the same "
            f"command again (what was written before stays)")


if __name__ == "__main__":
    raise SystemExit(main())
