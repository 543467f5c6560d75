"""A run's policy, tokenizer and environments, built from its `TrainConfig`.

Used by the training loop (`orchestra_jax.train`) and by `orchestra_jax.agents.load_policy_agent`, so a
trained run is rebuilt exactly as it was trained:

- `run_setting(cfg)`: the run's setting (env id, ``gym.make`` kwargs, reset options) as an
  `orchestra_gym.setting.Setting`, the one source of the setting a trained policy plays in (its agent, its
  ``orchestra_setting.json``, written into the run folder and the exported folder).
- `make_envs(cfg, n)`: n copies of the run's environment (`cfg.env.id` with `cfg.make_env_kwargs()`).
- `build_tokenizer(cfg, out_dir)`: a small byte-level BPE trained on the env's own texts by playing
  oracle and delegating episodes ("toolscale-bpe", saved to DIR/tokenizer.json and reused), the offline
  Qwen3 tokenizer ("qwen3"), the checkpoint's own tokenizer and chat template ("checkpoint", with
  ``model.hf_checkpoint``), or a tokenizer.json path.
- `build_policy(cfg, tokenizer)`: the policy (random init from the preset, overrides and seed, or a
  pretrained Qwen3 / Qwen2.5 / Llama-family checkpoint: a Hugging Face folder, a ``.gguf`` file or an alias
  such as ``"smollm2-135m-instruct"``), sharded on a mesh when there are several devices.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh

import orchestra_gym  # noqa: F401  (registers the env ids)
from orchestra_gym.agents import DelegatingAgent, OracleAgent
from orchestra_gym.agents.rules import RULE_NAMES, StatedRuleAgent
from orchestra_gym.errors import ConfigError
from orchestra_gym.setting import Setting
from orchestra_jax import sharding
from orchestra_jax.config import ModelConfig
from orchestra_jax.model import Qwen3
from orchestra_jax.rollout import scripted_trajectory
from orchestra_jax.tokenizer import (ChatTokenizer, build_bpe_tokenizer, build_qwen3_tokenizer, load_checkpoint_tokenizer,
                                     load_tokenizer, save_tokenizer)
from orchestra_jax.train_config import TrainConfig
from orchestra_jax.weights import load_hf_checkpoint

__all__ = ["run_setting", "make_envs", "build_tokenizer", "build_policy", "demonstrator", "guide", "RuleGuide"]


def run_setting(cfg: TrainConfig) -> Setting:
    """The run's setting: ``cfg.env.id``, ``cfg.make_env_kwargs()`` (env_kwargs, max_turns, preference)
    and ``cfg.reset_options()`` (preference, tools exposed)."""
    return Setting(cfg.env.id, cfg.make_env_kwargs(), cfg.reset_options())


def make_envs(cfg: TrainConfig, n: int) -> list[gym.Env]:
    """`n` environments of the run: ``gym.make(cfg.env.id, **cfg.make_env_kwargs())``."""
    return [gym.make(cfg.env.id, **cfg.make_env_kwargs()) for _ in range(n)]


def build_tokenizer(cfg: TrainConfig, out_dir: Path) -> ChatTokenizer:
    """The run's tokenizer: a small byte-level BPE trained on the env's own texts ("toolscale-bpe",
    saved to DIR/tokenizer.json and reused on resume), the offline Qwen3 tokenizer ("qwen3", built
    into DIR/qwen3-tokenizer), the tokenizer and chat template of ``model.hf_checkpoint`` ("checkpoint":
    `orchestra_jax.tokenizer.load_checkpoint_tokenizer`, written to DIR/checkpoint-tokenizer as
    tokenizer.json + chat_template.jinja + tokenizer_config.json and reused, so a GGUF's tokenizer is
    converted once per run), or a tokenizer.json path (file or folder).

    The BPE's texts: 24 episodes (seeds 10000..10023) of the oracle and delegating agents, rendered
    exactly as the rollouts render them (prompts, tool results, tool-call texts); its vocabulary is
    ``cfg.model.overrides["vocab_size"]`` (default 1024).

    Raises: FileNotFoundError (no tokenizer.json at the path); ConfigError ("checkpoint" without
    ``model.hf_checkpoint``, or an alias whose package is missing).
    """
    if cfg.model.tokenizer == "checkpoint":
        if not cfg.model.hf_checkpoint:
            raise ConfigError('model.tokenizer="checkpoint" reads the tokenizer of model.hf_checkpoint, which is empty; '
                              'set model.hf_checkpoint (e.g. "smollm2-135m-instruct") or another model.tokenizer')
        path = out_dir / "checkpoint-tokenizer"
        if not (path / "tokenizer.json").exists():
            save_tokenizer(load_checkpoint_tokenizer(cfg.model.hf_checkpoint), path)
        return load_checkpoint_tokenizer(path)
    if cfg.model.tokenizer == "toolscale-bpe":
        path = out_dir / "tokenizer.json"
        if path.exists():
            return ChatTokenizer.from_file(path)
        byte_tok = build_bpe_tokenizer(["a"], vocab_size=300)
        env = make_envs(cfg, 1)[0]
        texts = []
        pref_rng = np.random.default_rng([cfg.seed, 29])
        for i in range(24):  # oracle and demonstrator episodes: prompts, tool results, tool-call texts
            agent = OracleAgent() if i % 2 else demonstrator(cfg, i)
            options = cfg.reset_options(preference=cfg.sample_preference(pref_rng))
            t = scripted_trajectory(env, byte_tok, agent, seed=10_000 + i, options=options, max_turns=cfg.env.max_turns)
            texts.append(byte_tok.decode(t.tokens))
        tok = build_bpe_tokenizer(texts, vocab_size=int(cfg.model.overrides.get("vocab_size", 1024)))
        out_dir.mkdir(parents=True, exist_ok=True)
        tok.save(path)
        return tok
    path = Path(cfg.model.tokenizer)
    if cfg.model.tokenizer == "qwen3":
        path = out_dir / "qwen3-tokenizer"
        if not (path / "tokenizer.json").exists():
            build_qwen3_tokenizer(path)
    return load_tokenizer(path)


def build_policy(cfg: TrainConfig, tok: ChatTokenizer) -> tuple[Qwen3, Mesh | None]:
    """(Qwen3 model, mesh or None). Random init from (preset, overrides, seed) or a HF checkpoint
    (float32 master weights); a (data, fsdp, tp) mesh when there are several devices or the config
    asks for data / tp axes.

    Raises: ConfigError (a ValueError): unknown preset, or a model vocabulary smaller than the tokenizer's.
    """
    mesh = None
    if jax.device_count() > 1 or cfg.mesh.tp > 1 or cfg.mesh.data > 1:
        mesh = sharding.make_mesh(data=cfg.mesh.data, fsdp=cfg.mesh.fsdp or None, tp=cfg.mesh.tp)
    if cfg.model.hf_checkpoint:
        model, _ = load_hf_checkpoint(cfg.model.hf_checkpoint, mesh=mesh, dtype="float32", **cfg.model.overrides)
        return model, mesh
    mcfg = ModelConfig.from_preset(cfg.model.preset, **cfg.model.overrides)
    if mcfg.vocab_size < tok.vocab_size:
        raise ConfigError(f"model.overrides.vocab_size={mcfg.vocab_size} < the tokenizer's vocabulary "
                          f"{tok.vocab_size}; set model.overrides.vocab_size >= {tok.vocab_size}")
    model = Qwen3(mcfg, rngs=nnx.Rngs(cfg.seed))
    if mesh is not None:
        sharding.shard_model(model, mesh)
    return model, mesh


def demonstrator(cfg: Any, seed: int) -> DelegatingAgent:
    """The warm start's demonstrator of one episode, as the config asks (`TrainConfig.sft` expert_choice,
    state_kind); `seed` seeds its expert draws."""
    return DelegatingAgent(seed, per_episode=cfg.sft.expert_choice == "per_episode", state_kind=cfg.sft.state_kind)


class RuleGuide:
    """A guided rollout's demonstrator over an expert pool: the warm start's demonstrator pinned, per episode,
    to the offered expert that a fixed rule on stated properties picks (`orchestra_gym.agents.rules.
    StatedRuleAgent`: ``most-accurate``, ``cheapest``, ``fastest``, ``random-offered``), since a pool's offer
    changes per episode and a name may not be offered.

    Args:
        rule: one of `orchestra_gym.agents.rules.RULE_NAMES` (ValueError otherwise).
        state_kind: the demonstrator's opening thought (`sft.state_kind`).
    """

    def __init__(self, rule: str, state_kind: bool):
        self.rule, self.state_kind = StatedRuleAgent(rule), bool(state_kind)
        self.name = f"guide:{rule}"

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.rule.reset(env, observation, info)
        self.inner = DelegatingAgent(0, per_episode=True, state_kind=self.state_kind,
                                     expert_weights={self.rule.expert: 1.0})
        self.inner.reset(env, observation, info)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self.inner.act(observation, info)


def guide(cfg: Any, expert: str) -> "DelegatingAgent | RuleGuide":
    """The demonstrator of a guided rollout (`TrainConfig.rollout.guide_experts`): the warm start's demonstrator
    (its thought: `sft.state_kind`) pinned to `expert` for the whole episode, so its text is what the
    warm-started policy writes when it picks `expert`; a stated rule's name (``most-accurate``, ``cheapest``,
    ``fastest``, ``random-offered``) pins it to that rule's pick of the episode's offer (`RuleGuide`).

    Raises (in `reset`): ValueError when the environment has no expert named `expert`."""
    if expert in RULE_NAMES:
        return RuleGuide(expert, cfg.sft.state_kind)
    return DelegatingAgent(0, per_episode=True, state_kind=cfg.sft.state_kind, expert_weights={expert: 1.0})
