"""A training run's record: DIR/metrics.jsonl, TensorBoard (DIR/tb/<phase>) and the tqdm bars, and the
metrics a GRPO step's record is made of.

- `RunLog(run_dir)`: `log(record)` appends one JSON line (valid JSON, `json_safe`) and the record's finite
  numbers to TensorBoard, one writer per phase (guard events go with grpo); `truncate(phase, step)` drops a
  resumed phase's records after its checkpoint (each step appears once); `bar(...)` a tqdm bar.
- `json_safe(obj)`: valid JSON (RFC 8259 has no Infinity or NaN): a non-finite float becomes null with a
  ``<key>_note`` saying why.
- `update_metrics(result)` and `label_metrics(trajectories)`: the update's and the task kinds' entries of a
  GRPO record; `peak_rss_gib()`: the process's peak memory.
"""

from __future__ import annotations

import json
import resource
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from tensorboardX import SummaryWriter
from tqdm import tqdm

from orchestra_gym.evaluation import by_label

__all__ = ["RunLog", "json_safe", "peak_rss_gib", "update_metrics", "label_metrics", "last_logged_step",
           "LAST_UPDATE_KEYS"]

# metrics of the last optimizer update of a step, logged as last_<name> next to the first update's
LAST_UPDATE_KEYS = ("loss", "grad_norm", "ratio_mean", "ratio_min", "ratio_max", "approx_kl", "clipfrac_low",
                    "clipfrac_high", "clipfrac_dual")

# why a number is not finite, for the <key>_note written next to it in JSON (by key suffix)
_NON_FINITE_NOTES = {"cost_per_solved_usd": "no task was solved, so the cost per solved task is undefined"}


def peak_rss_gib() -> float:
    """Peak resident memory of this process so far, GiB (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def json_safe(obj: Any) -> Any:
    """A copy of `obj` (dicts, lists, numbers) that is valid JSON: numpy scalars become Python numbers, a
    non-finite float becomes null with a ``<key>_note`` entry next to it saying why (RFC 8259 has no
    Infinity or NaN)."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out[k] = json_safe(v)
            f = float(v) if isinstance(v, (float, np.floating)) else None
            if f is not None and not np.isfinite(f):
                note = next((n for suffix, n in _NON_FINITE_NOTES.items() if str(k).endswith(suffix)), None)
                out[f"{k}_note"] = note or f"the value was {f} (not a JSON number)"
        return out
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    return obj


def update_metrics(res: Any) -> dict[str, float]:
    """A GRPO step's update metrics (`orchestra_jax.train_step.UpdateResult`): the first update's under
    their names, the last update's as last_<name> (`LAST_UPDATE_KEYS`) when there were several, the
    number of updates, and skipped (1: no kept token, no update)."""
    out: dict[str, float] = {"skipped": int(res.skipped), "updates": len(res.updates)}
    if res.updates:
        out.update(res.updates[0])
    if len(res.updates) > 1:
        out.update({f"last_{k}": res.updates[-1][k] for k in LAST_UPDATE_KEYS if k in res.updates[-1]})
    return out


def label_metrics(trajs: Sequence[Any]) -> dict[str, float]:
    """Per task difficulty (the env's ``task_difficulty`` label, which the policy never sees): its share
    of the rollouts, success rate and expert calls per episode, as ``kind/<difficulty>/<name>``."""
    out: dict[str, float] = {}
    n = max(len(trajs), 1)
    for label, g in by_label([t.info for t in trajs]).items():
        out[f"kind/{label}/share"] = g["episodes"] / n
        out[f"kind/{label}/success"] = g["success_rate"]
        out.update({f"kind/{label}/{k}": v for k, v in g["tool_mix"].items() if k.startswith("expert-")})
    return out


def last_logged_step(run_dir: str | Path, phase: str) -> int:
    """The last step of `phase` recorded in DIR/metrics.jsonl (0 when none; a torn line is skipped)."""
    path = Path(run_dir) / "metrics.jsonl"
    last = 0
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(r, dict) and r.get("phase") == phase:
            last = max(last, int(r.get("step", 0)))
    return last


class RunLog:
    """DIR/metrics.jsonl (appended), TensorBoard writers under DIR/tb/<phase> and the run's tqdm bars.

    Args:
      run_dir: the run folder (exists).
      progress_bar: False disables the tqdm bars (`bar`).
    """

    def __init__(self, run_dir: Path, progress_bar: bool = True):
        self.dir = Path(run_dir)
        self.progress_bar = progress_bar
        self.file = open(self.dir / "metrics.jsonl", "a")
        self._tb: dict[str, SummaryWriter] = {}
        self._purge: dict[str, int] = {}

    def log(self, record: dict[str, Any]) -> None:
        """Append a record to DIR/metrics.jsonl (valid JSON, `json_safe`) and its finite numbers to
        TensorBoard, one writer per phase (DIR/tb/<phase>; guard events go with grpo)."""
        self.file.write(json.dumps(json_safe(record)) + "\n")
        self.file.flush()
        phase = record.get("phase", "train")
        run = "grpo" if phase == "guard" else phase
        if run not in self._tb:
            self._tb[run] = SummaryWriter(str(self.dir / "tb" / run), purge_step=self._purge.get(run))
        step = int(record.get("step", 0))
        for k, v in record.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v):
                self._tb[run].add_scalar(f"{phase}/{k}", v, step)

    def truncate(self, phase: str, step: int) -> None:
        """Resuming `phase` from its checkpoint of `step`: drop the records of that phase (and, for grpo,
        of the guard) after `step` from DIR/metrics.jsonl, and purge TensorBoard events of steps > `step`
        of that phase (tensorboardX ``purge_step``), so each step appears once (issue 16, item 15)."""
        phases = {phase, "guard"} if phase == "grpo" else {phase}
        path = self.dir / "metrics.jsonl"
        self.file.close()
        kept = []
        for line in path.read_text().splitlines() if path.exists() else []:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a kill: drop it
                continue
            if not (r.get("phase") in phases and int(r.get("step", 0)) > step):
                kept.append(line)
        path.write_text("".join(x + "\n" for x in kept))
        self.file = open(path, "a")
        if step > 0:
            self._purge[phase] = step + 1

    def bar(self, total: int, desc: str, start: int) -> tqdm:
        """A tqdm bar of `total` steps from `start` (disabled without progress_bar)."""
        return tqdm(total=total, initial=start, desc=desc, disable=not self.progress_bar, dynamic_ncols=True)

    def close(self) -> None:
        self.file.close()
        for w in self._tb.values():
            w.close()
