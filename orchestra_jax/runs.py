"""A trained run folder read back: its `TrainConfig`, tokenizer and policy with a checkpoint's weights.

The one loader of an `orchestra train` ``--output-dir`` for the code that uses a run after training:
`orchestra_jax.agents` (the run as an `orchestra_gym` agent, ``--agent policy:RUN_DIR``) and
`orchestra_jax.export` (the run as a Hugging Face model directory). The policy is rebuilt exactly as it was
trained (`orchestra_jax.policy.build_tokenizer` / `build_policy` from the run's config), then its parameters
are restored from the checkpoint (`orchestra_jax.checkpoint.restore_params`).
"""

from __future__ import annotations

import json
from pathlib import Path

from flax import nnx

from orchestra_jax import checkpoint
from orchestra_jax.model import Qwen3
from orchestra_jax.policy import build_policy, build_tokenizer
from orchestra_jax.tokenizer import ChatTokenizer
from orchestra_jax.train_config import TrainConfig

__all__ = ["load_run", "CONFIG_FILE"]

#: The run's config, written by `orchestra train` into its output folder.
CONFIG_FILE = "train_config.json"


def load_run(run_dir: str | Path, phase: str | None = None,
             step: int | None = None) -> tuple[TrainConfig, ChatTokenizer, Qwen3]:
    """(config, tokenizer, policy with the checkpoint's weights) of a run folder.

    Args:
      run_dir: the run's ``--output-dir`` (train_config.json, the tokenizer, checkpoints/).
      phase: "grpo" or "sft"; default: grpo when it has a finalized checkpoint, else sft.
      step: checkpoint step (default: the newest finalized one of the phase).

    Raises:
      FileNotFoundError: no train_config.json or no finalized checkpoint (the message names the folder).
      CheckpointError: a checkpoint that cannot be restored (`orchestra_jax.checkpoint`).
    """
    run = Path(run_dir)
    cfg_path = run / CONFIG_FILE
    if not cfg_path.exists():
        raise FileNotFoundError(f"{cfg_path} not found: pass the --output-dir of an `orchestra train` run")
    cfg = TrainConfig.from_dict(json.loads(cfg_path.read_text()))
    phases = [phase] if phase else list(checkpoint.PHASES)
    # find the checkpoint first: a folder without one fails fast, before a tokenizer is built (and
    # written into the folder) or a model initialized
    found = checkpoint.latest(run, phases)
    if found is None:
        raise FileNotFoundError(f"no finalized checkpoint under {run / 'checkpoints'} (phases tried: {phases})")
    tok = build_tokenizer(cfg, run)
    model, _ = build_policy(cfg, tok)
    params, _ = checkpoint.restore_params(run, found[0], step, nnx.state(model, nnx.Param))
    nnx.update(model, params)
    return cfg, tok, model
