"""orchestra_gym's evaluation: the one episode runner, run folders, the one metrics module, reports.

One job per module, imported one way (records <- runner <- runs <- report; metrics reads records):

* `orchestra_gym.evaluation.records`: `EpisodeResult` (one played episode: task id, trial, seed,
  final ``info``, transcript) and its ``trajectories.jsonl`` line (`trajectory_line`,
  `TrajectoryWriter`), `jsonable`, `is_infra`.
* `orchestra_gym.evaluation.infra`: infrastructure failures told apart from the policy's
  (`infra_error_of`, `INFRA_EXCEPTIONS`).
* `orchestra_gym.evaluation.episode`: `play_episode`, the one whole-episode loop (an `EpisodeResult`),
  and `env_seed`, the one seed scheme of batched episodes (``base * 1000 + i``).
* `orchestra_gym.evaluation.runner`: `run_episodes`, playing agents x envs x tasks x trials
  (seeds ``seed + i`` of the plan, concurrency, infra retries; a clean stop: `StopRequest`,
  `stop_on_signals`, `EvaluationStopped`).
* `orchestra_gym.evaluation.runs`: run folders (``orchestra eval --output-dir``): `RunConfig`
  (``run.json``), `evaluate`, `resume`, `regrade`, `load_run`, `run_summary` (``summary.json``).
* `orchestra_gym.evaluation.metrics`: every aggregate and statistic as a pure function over
  episode records (`summarize`, `wald_interval`, pass^k, Table 1 columns, the accuracy-cost hull and
  AIQ, the App. L and group preference scores, `asked_moves`, `rollout_summary`).
* `orchestra_gym.evaluation.report`: tables and plots (`format_table`, `format_mix`,
  `format_qa_table`, `table1_row`, `report` for ``orchestra report``).

Above them (imported by name, not re-exported): `fit` (`fit_router`, a baseline agent fitted on played episodes),
`adherence` (the kind-oracle ceiling of the adherence check) and `pools` (expert-pool measurements, ``orchestra
report --pool``).
"""

from __future__ import annotations

from orchestra_gym.evaluation.episode import EpisodeAbandoned, env_seed, play_episode
from orchestra_gym.evaluation.infra import INFRA_EXCEPTIONS, infra_error_of
from orchestra_gym.evaluation.metrics import (TAU2_PREFIX, aiq, asked_moves, by_label, cost_accuracy_hull,
                                              group_preference_score, hull_accuracy, hull_gap, mean_tool_calls,
                                              moves_as_asked, pass_hat_k, pass_hat_ks, preference_score, qa_metrics,
                                              rollout_summary, summarize, tau2_task_weighted, wald_interval)
from orchestra_gym.evaluation.records import (ORCHESTRATOR_USAGE, EpisodeResult, Outcome, TrajectoryWriter, is_infra,
                                              jsonable, strict_json, trajectory_line)
from orchestra_gym.evaluation.report import MODEL_TOOLS, format_mix, format_qa_table, format_table, report, table1_row
from orchestra_gym.evaluation.runner import EvaluationStopped, StopRequest, run_episodes, stop_on_signals
from orchestra_gym.evaluation.runs import (RUN_FILE, SUMMARY_FILE, TRAJECTORIES_FILE, RunConfig, evaluate, load_run,
                                           regrade, resume, run_summary)

__all__ = [
    "EpisodeResult", "run_episodes", "evaluate", "resume", "regrade", "load_run", "RunConfig", "run_summary",
    "infra_error_of", "is_infra", "INFRA_EXCEPTIONS", "pass_hat_k", "pass_hat_ks", "table1_row",
    "tau2_task_weighted", "report", "cost_accuracy_hull", "hull_accuracy", "hull_gap", "aiq", "summarize",
    "qa_metrics", "rollout_summary", "preference_score", "group_preference_score", "wald_interval",
    "mean_tool_calls", "by_label", "format_table", "format_qa_table", "format_mix", "jsonable", "strict_json", "MODEL_TOOLS",
    "ORCHESTRATOR_USAGE", "asked_moves", "moves_as_asked", "Outcome", "TrajectoryWriter", "trajectory_line",
    "RUN_FILE", "TRAJECTORIES_FILE", "SUMMARY_FILE", "TAU2_PREFIX", "StopRequest", "EvaluationStopped",
    "stop_on_signals", "play_episode", "env_seed", "EpisodeAbandoned",
]
