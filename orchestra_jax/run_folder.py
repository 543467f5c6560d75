"""What an `orchestra train` output folder already holds, read before anything is built (no JAX).

A run folder is one run: DIR/train_config.json (written when the run starts), its checkpoints, and
DIR/summary.json (written when it ends). Running again into a folder resumes that run when the config is the
same; `check_run_folder` refuses a config that differs (naming the differing keys and the two ways on: a new
``--output-dir``, or ``--resume`` to continue the folder's run with its own config) and recognises a finished
run, so that it is neither retrained on other settings nor re-evaluated (issue 48 item 19). The keys that may
differ on a resume: ``output_dir`` (the folder may move), ``progress_bar`` and ``max_steps`` (train further).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestra_gym.errors import ConfigError
from orchestra_jax.train_config import TrainConfig

__all__ = ["RESUMABLE_KEYS", "saved_config", "config_differences", "check_run_folder"]

#: keys that may differ between a run folder's config and the one that resumes it
RESUMABLE_KEYS = ("output_dir", "progress_bar", "max_steps")


def saved_config(run_dir: str | Path) -> TrainConfig | None:
    """The config saved in DIR/train_config.json, or None when the folder holds no run.

    Raises: ConfigError when the file is not a valid config (it names the file)."""
    path = Path(run_dir) / "train_config.json"
    if not path.exists():
        return None
    try:
        return TrainConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError and ConfigError are ValueErrors
        raise ConfigError(f"{path}: not a training config ({e}); use another --output-dir") from None


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A config dict as ``section.key`` -> value (the loss's keys as ``grpo.loss.key``; dict-valued fields whole)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and (not prefix or (prefix == "grpo." and k == "loss")):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def config_differences(saved: TrainConfig, cfg: TrainConfig) -> list[str]:
    """``key: saved -> new`` for each key (but `RESUMABLE_KEYS`) where `cfg` differs from `saved`."""
    old = _flat(json.loads(json.dumps(saved.to_dict())))
    new = _flat(json.loads(json.dumps(cfg.to_dict())))
    return [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in new
            if k not in RESUMABLE_KEYS and old.get(k) != new.get(k)]


def check_run_folder(cfg: TrainConfig, *, sft_only: bool = False) -> str | None:
    """Whether `cfg` may run in its output folder: None when the folder is new or holds this run unfinished
    (it resumes); a one-line message when the run there is finished (nothing to do).

    Raises: ConfigError naming the differing keys and the two ways on when the folder holds a run of
    another config."""
    run_dir = Path(cfg.output_dir)
    saved = saved_config(run_dir)
    if saved is None:
        return None
    diff = config_differences(saved, cfg)
    if diff:
        shown = "; ".join(diff[:6]) + (f"; and {len(diff) - 6} more" if len(diff) > 6 else "")
        raise ConfigError(f"{run_dir} holds a run of another config ({shown}); use a new --output-dir for this "
                          f"config, or --resume --output-dir {run_dir} to continue that run with its own config")
    summary = run_dir / "summary.json"
    if summary.exists():
        try:
            done = json.loads(summary.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None  # a torn summary: the run resumes from its checkpoints and writes it again
        if isinstance(done, dict) and done.get("steps") == (0 if sft_only else cfg.max_steps) \
                and done.get("sft_steps") == cfg.sft.steps:
            return (f"{run_dir} holds this run, finished ({summary}); nothing to do. Use a new --output-dir for "
                    f"another run, or --resume --max-steps N (N > {cfg.max_steps}) to train it further")
    return None
