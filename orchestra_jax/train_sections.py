"""The sections of `orchestra_jax.train_config.TrainConfig`, one frozen dataclass per concern, each
validated once in its ``__post_init__`` (types, then ranges; a `ConfigError` names the key as
``section.key``); checks that span sections are `TrainConfig.validate`'s.

Sections (the config key of a field is ``<section>.<field>``, e.g. ``sft.steps``, ``grpo.loss.kl_coef``):
  model       `ModelSection`: the policy (ModelConfig preset and overrides, HF checkpoint, tokenizer)
  env         `EnvSection`: the environment, its preference vectors and tools exposed, max_turns
  rollout     `RolloutSection`: tasks x rollouts per step, sampling, token limits, guided rollouts
  grpo        `GrpoSection`: reward, advantages and filters, the loss (`LossConfig`), PPO passes
  guard       `GuardConfig`: the training guard (`orchestra_jax.guard.TrainingGuard`): ``enabled`` and thresholds
  optimizer   `OptimizerSection`: AdamW and its schedule, micro-batching, log-prob chunk, padding
  sft         `SftSection`: the supervised warm start and its demonstrator
  evaluation  `EvaluationSection`: held-out tasks and decoding of the evaluations and the exported policy
  mesh        `MeshSection`: the (data, fsdp, tp) device mesh
  checkpoint  `CheckpointSection`: checkpoint interval, how many are kept, async writes

Every field is declared with its default and one line of help (the comment on its line, CleanRL style);
`field_help(cls)` reads those lines for ``orchestra train --help``. A longer comment above a field says more.
Sources of the defaults: ToolOrchestra (arXiv 2511.21689) Sec. 3.2-4 and App. D; the released script
`training/train_orchestrator.sh` (verl) for the values the paper leaves out ([REL]). This module imports
no JAX.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import io
import math
import textwrap
import tokenize
import types
import typing
from typing import Any, ClassVar

from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_gym.types import Preference
from orchestra_jax import config as model_config

__all__ = ["LossConfig", "ModelSection", "EnvSection", "RolloutSection", "GrpoSection", "GuardConfig",
           "OptimizerSection", "SftSection", "EvaluationSection", "MeshSection", "CheckpointSection", "SECTIONS",
           "AGGREGATIONS", "KL_ESTIMATORS", "ROLLOUT_ENGINES", "check_fields", "field_help"]

AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "dr-grpo")
ROLLOUT_ENGINES = ("lockstep", "continuous")  # rollout.engine (`orchestra_jax.rollout.collect_rollouts` engine)
KL_ESTIMATORS = ("k2", "k3")


class _Section:
    """Validation shared by the sections: `check_fields` on the types, then the section's `_checks`."""

    PREFIX: ClassVar[str] = ""

    def __post_init__(self) -> None:
        check_fields(self, self.PREFIX)
        self._checks()

    def _checks(self) -> None:
        """The section's ranges and choices (ConfigError naming ``section.key``)."""

    def _need(self, cond: bool, key: str, msg: str) -> None:
        if not cond:
            raise ConfigError(f"{self.PREFIX}{key}={getattr(self, key)!r}: {msg}")

    def _positive(self, keys: tuple[str, ...], least: int = 1) -> None:
        for key in keys:
            self._need(getattr(self, key) >= least, key, f"must be >= {least}")


@dataclasses.dataclass(frozen=True)
class LossConfig(_Section):
    """Hyper-parameters of the clipped surrogate loss (`orchestra_jax.grpo`), ``grpo.loss``; defaults are
    the released ones ([REL]). Sources: [GRPO] DeepSeekMath Eq. 3, [DAPO] Eq. 10, [DC] dual-clip PPO
    Eq. 6, [DR] Dr. GRPO Sec. 3.1, [KL] Schulman's estimators (see `orchestra_jax.grpo`).

    Raises: ConfigError (a ValueError) naming the field, for a wrong type or value.
    """

    PREFIX: ClassVar[str] = "grpo.loss."
    INFINITE_OK: ClassVar[tuple[str, ...]] = ("behaviour_is_cap",)  # inf: no truncation
    clip_eps_low: float = 0.2  # ratio lower clip 1 - eps_low  [REL clip_ratio_low]
    clip_eps_high: float = 0.28  # ratio upper clip 1 + eps_high [REL clip_ratio_high, DAPO Eq. 10]
    dual_clip_c: float = 10.0  # dual-clip bound c for A < 0; 0 disables [REL clip_ratio_c, DC Eq. 6]
    kl_coef: float = 1e-4  # KL-to-reference loss coefficient; 0 disables the term (no reference copy) [REL kl_loss_coef]
    kl_estimator: str = "k2"  # "k2" = 0.5 (logp - ref)^2 [REL kl_loss_type=mse], or "k3" [KL]
    aggregation: str = "token-mean"  # token-mean [REL] | seq-mean-token-mean [GRPO] | dr-grpo [DR]
    max_len: int | None = None  # Dr. GRPO's constant length (tokens); None = the batch's T (a run: max_seq_len)
    log_ratio_clamp: float = 20.0  # |logp - old_logp| clamp before exp, as verl (numerical safety)
    # truncation C of the behaviour importance weight min(pi_old / pi_behaviour, C) that corrects rollouts of a
    # stale policy (grpo.max_staleness > 0 only): the decoupled objective of AReaL (Fu et al. 2025, arXiv
    # 2505.24298, Eq. 5) with the truncation of TIS (Yao et al. 2025, "Your efficient RL framework secretly
    # brings you off-policy RL training"; C = 2 there) and of IMPALA's V-trace rho-bar (arXiv 1802.01561)
    behaviour_is_cap: float = 2.0  # C in min(pi_old / pi_behaviour, C) (grpo.max_staleness > 0)

    def _checks(self) -> None:
        need = self._need
        need(self.aggregation in AGGREGATIONS, "aggregation", f"use one of {AGGREGATIONS}")
        need(self.kl_estimator in KL_ESTIMATORS, "kl_estimator", f"use one of {KL_ESTIMATORS} (k1 is logged as a metric only)")
        need(0 <= self.clip_eps_low < 1, "clip_eps_low", "must be in [0, 1)")
        need(self.clip_eps_high >= 0, "clip_eps_high", "must be >= 0")
        need(self.dual_clip_c == 0 or self.dual_clip_c > 1, "dual_clip_c", "must be > 1 (or 0 to disable)")
        need(self.kl_coef >= 0, "kl_coef", "must be >= 0")
        need(self.max_len is None or self.max_len >= 1, "max_len", "must be >= 1 (or None: the batch's T)")
        need(self.log_ratio_clamp > 0, "log_ratio_clamp", "must be > 0")
        need(self.behaviour_is_cap >= 1, "behaviour_is_cap", "must be >= 1 (inf: no truncation)")


@dataclasses.dataclass(frozen=True)
class ModelSection(_Section):
    """``model``: the policy network and its tokenizer (Qwen3-8B as the paper by default)."""

    PREFIX: ClassVar[str] = "model."
    preset: str = "qwen3-8b"  # orchestra_jax.config.ModelConfig preset
    overrides: dict = dataclasses.field(default_factory=dict)  # ModelConfig fields to replace
    hf_checkpoint: str = ""  # Hugging Face safetensors dir to load ("" = random init)
    tokenizer: str = "qwen3"  # "qwen3" (offline Qwen3 tokenizer), "toolscale-bpe" (small BPE) or a path
    trainable: str = "all"  # what trains: "all" or "top:N" (the top N layers; orchestra_jax.trainable)
    lora_rank: int = 0  # LoRA rank on the trained layers' lora_targets (0 = train the weights themselves)
    lora_alpha: float = 16.0  # LoRA scale alpha / rank
    lora_targets: list = dataclasses.field(default_factory=lambda: ["wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"])  # LoRA projections

    def _checks(self) -> None:
        presets = model_config.PRESETS
        self._need(self.preset in presets, "preset", f"unknown{did_you_mean(self.preset, presets)}; known: {sorted(presets)}")
        fields = sorted(f.name for f in dataclasses.fields(model_config.ModelConfig))
        for k in self.overrides:
            if k not in fields:
                raise ConfigError(f"model.overrides.{k}: unknown ModelConfig field{did_you_mean(k, fields)}; "
                                  f"known: {fields}")
        if self.hf_checkpoint:  # the checkpoint's config.json gives the architecture; overrides are checked on load
            return
        try:  # the values: ModelConfig validates its own fields (num_layers >= 1, dtypes...)
            model_config.ModelConfig.from_preset(self.preset, **self.overrides)
        except (ConfigError, TypeError) as e:
            raise ConfigError(f"model.overrides: {e}; fix that entry of model.overrides (or model.preset)") from None


@dataclasses.dataclass(frozen=True)
class EnvSection(_Section):
    """``env``: the environment of training and evaluation, and the preference vectors."""

    PREFIX: ClassVar[str] = "env."
    id: str = "ToolOrchestra-ToolScale-v0"  # registered orchestra_gym id
    kwargs: dict = dataclasses.field(default_factory=dict)  # extra gym.make kwargs
    preference: dict = dataclasses.field(default_factory=dict)  # preference vector; {} = env default
    # preference vectors drawn uniformly per task in training (paper Sec. 3.3: preferences sampled per
    # instance); [] = always `preference`. State them in the prompt with env.kwargs preference_in_prompt.
    train_preferences: list = dataclasses.field(default_factory=list)  # drawn per training task; [] = preference
    # named preference vectors evaluated at the end, held out from training (paper Table 3); {} = none
    eval_preferences: dict = dataclasses.field(default_factory=dict)  # name -> held-out vector evaluated at the end
    tools: list = dataclasses.field(default_factory=list)  # tools exposed (reset option "tools"); [] = all
    max_turns: int = 50  # turns per episode (paper: 50; released code: 30)

    def _checks(self) -> None:
        self._positive(("max_turns",))
        if self.preference:
            _preference(self.preference, "env.preference")
        train = [_preference(p, f"env.train_preferences[{i}]") for i, p in enumerate(self.train_preferences)]
        for name, p in self.eval_preferences.items():
            held = _preference(p, f"env.eval_preferences.{name}")
            self._need(held not in train, "eval_preferences",
                       f"{name!r} = {p} is also a training preference; evaluation preferences must be held out")


@dataclasses.dataclass(frozen=True)
class RolloutSection(_Section):
    """``rollout``: the episodes of a GRPO step."""

    PREFIX: ClassVar[str] = "rollout."
    tasks_per_step: int = 16  # tasks per step (paper App. D: batch 16)
    rollouts_per_task: int = 8  # G rollouts per task (paper App. D: 8)
    temperature: float = 1.0  # sampling temperature (paper App. D: 1.0)
    max_new_tokens: int = 8192  # generated tokens per turn (paper: 8k)
    max_seq_len: int = 32768  # tokens per trajectory (prompt + all turns); longer ones are cut (mask 0)
    tool_workers: int = 16  # threads running tool calls of different episodes concurrently
    # guided rollouts (off-policy guidance in the group, as LUFFY, Yan et al. 2025, arXiv 2504.14945): each
    # group of rollouts_per_task holds one episode of the warm start's demonstrator pinned to each expert
    # named here and rollouts_per_task - len(guide_experts) sampled ones. The guided episodes are rewarded
    # and normalised with the group (they carry no knowledge of which expert is right) and enter the loss
    # only when their advantage is positive (`grpo.filter_and_advantages` off_policy), with the policy's own
    # log-probs as behaviour log-probs (the first pass's ratio is 1). They keep every expert in every group,
    # so a kind that only one expert solves keeps yielding a mixed group after the policy has stopped
    # sampling that expert. [] = the paper's purely on-policy groups.
    guide_experts: list = dataclasses.field(default_factory=list)  # one demonstrator episode per expert per group
    # overlap the env steps (tool calls) of one half of the sampled rows with the decoding of the other half
    # (`orchestra_jax.rollout.collect_rollouts` overlap_tools: two cohorts taking turns, per-row sampler keys;
    # deterministic for a seed, but other draws than the lockstep batch's). False = the lockstep batch.
    overlap_tools: bool = False  # lockstep engine: tool calls of half the rows overlap decoding
    # the rollout engine (`orchestra_jax.rollout.collect_rollouts` engine): "lockstep" (the batch above, or its
    # cohorts with overlap_tools) or "continuous" (continuous batching, `orchestra_jax.slots.SlotSampler`: `slots`
    # decode slots, each with its own KV-cache positions, refilled with another episode's turn as soon as its
    # own ends; env steps run while the other slots decode; per-row sampler keys as overlap_tools).
    engine: str = "lockstep"  # "lockstep" or "continuous" (continuous batching)
    slots: int = 0  # with engine "continuous": decode slots (0 = one per sampled episode of the step)

    def _checks(self) -> None:
        need = self._need
        self._positive(("tasks_per_step", "rollouts_per_task", "max_new_tokens", "max_seq_len", "tool_workers"))
        self._positive(("slots",), least=0)
        need(self.engine in ROLLOUT_ENGINES, "engine", f"use one of {', '.join(map(repr, ROLLOUT_ENGINES))}")
        need(not (self.engine == "continuous" and self.overlap_tools), "engine",
             "'continuous' already overlaps the env steps with decoding; set rollout.overlap_tools=False")
        need(self.rollouts_per_task >= 2, "rollouts_per_task", "GRPO needs >= 2 rollouts per task (a group)")
        need(self.temperature > 0, "temperature", "must be > 0 for GRPO sampling")
        need(self.max_new_tokens <= self.max_seq_len, "max_new_tokens", f"must be <= rollout.max_seq_len={self.max_seq_len}")
        need(all(isinstance(e, str) and e for e in self.guide_experts)
             and len(set(self.guide_experts)) == len(self.guide_experts), "guide_experts",
             "must be distinct expert names (e.g. ['expert-1', 'expert-2', 'expert-3'])")
        need(len(self.guide_experts) <= self.rollouts_per_task - 1, "guide_experts",
             f"leaves no sampled rollout in a group of rollout.rollouts_per_task={self.rollouts_per_task}; "
             "name fewer experts or raise rollout.rollouts_per_task")


@dataclasses.dataclass(frozen=True)
class GrpoSection(_Section):
    """``grpo``: rewards, the paper's filters and advantages, the loss and the passes over a batch."""

    PREFIX: ClassVar[str] = "grpo."
    reward: str = "preference"  # "preference" (paper Sec. 3.2) or "outcome"
    adv_eps: float = 1e-6  # epsilon added to the group std (verl)
    adv_clip: float = 3.0  # advantages clipped to [-adv_clip, adv_clip] (paper Sec. 3.2)
    adv_ddof: int = 1  # std ddof; 1 = unbiased, torch.std in the released code
    min_group_std: float = 0.1  # groups with reward std below this are dropped (paper Sec. 3.2)
    loss: LossConfig = dataclasses.field(default_factory=LossConfig)  # clip, dual clip, KL, aggregation
    old_logp_source: str = "trainer"  # pi_old: "trainer" (recomputed, verl) or "sampler" (rollout log-probs)
    ppo_epochs: int = 1  # passes over each batch of rollouts, pi_old fixed for all [REL ppo_epochs=1]
    ppo_mini_batches: int = 1  # optimizer updates per pass; rows split by a seeded permutation [REL ppo_mini_batch_size]
    # drop the rows the paper's filters left without a kept token before the update (`batch.compact_rows`;
    # the loss and gradient are unchanged; never for the dr-grpo aggregation, whose denominator counts rows)
    compact_batch: bool = True  # drop rows without a kept token before the update
    # bounded-staleness asynchronous GRPO (prime-rl's max_async_level): the rollouts of step s are generated
    # by the policy of step max(start, s - max_staleness) in background threads while the trainer trains, and
    # the loss weighs each token by min(pi_old / pi_behaviour, grpo.loss.behaviour_is_cap) (see `LossConfig`).
    # 0 = synchronous (every step's rollouts come from the policy being trained, bit-identical to before).
    max_staleness: int = 0  # steps the rollouts' policy may lag the trained one (0 = synchronous)

    def _checks(self) -> None:
        need = self._need
        self._positive(("ppo_epochs", "ppo_mini_batches"))
        self._positive(("max_staleness",), least=0)
        self._positive(("adv_ddof",), least=0)
        need(self.reward in ("preference", "outcome"), "reward", "use 'preference' or 'outcome'")
        need(self.old_logp_source in ("trainer", "sampler"), "old_logp_source", "use 'trainer' or 'sampler'")
        need(self.max_staleness == 0 or self.old_logp_source == "trainer", "max_staleness",
             "needs grpo.old_logp_source='trainer' (pi_old must be the trained policy to correct the rollouts' lag)")
        need(self.adv_clip > 0, "adv_clip", "must be > 0")


@dataclasses.dataclass(frozen=True)
class GuardConfig(_Section):
    """``guard``: the training guard's switch and the thresholds of `orchestra_jax.guard.TrainingGuard` (its
    module docstring says when a step is unhealthy and what the guard then does)."""

    PREFIX: ClassVar[str] = "guard."
    enabled: bool = True  # watch each GRPO step (False: no guard; TrainingGuard itself does not read it)
    min_valid_format: float = 0.8  # least share of assistant turns that parse as a valid action (0 disables)
    max_cut_rate: float = 0.5  # largest share of rollouts cut at the token limit (1 disables)
    min_kept_rollouts: float = 0.0  # least share of rollouts kept by the group filters (0 disables)
    min_entropy: float = 0.0  # lower bound of the mean token entropy, nats (0 disables)
    max_entropy: float = 0.0  # upper bound of the mean token entropy, nats (0 disables)
    patience: int = 2  # unhealthy steps in a row before the guard acts (>= 1)
    max_restores: int = 3  # restores of the last healthy checkpoint before the run stops (0: stop at once)
    lr_factor: float = 0.5  # learning-rate multiplier applied at each restore, in (0, 1]

    def _checks(self) -> None:
        need = self._need
        for name in ("min_valid_format", "max_cut_rate", "min_kept_rollouts"):
            need(0.0 <= getattr(self, name) <= 1.0, name, "must be in [0, 1] (a share of turns or rollouts)")
        need(self.min_entropy >= 0, "min_entropy", "must be >= 0 nats (0 disables)")
        need(self.max_entropy >= 0, "max_entropy", "must be >= 0 nats (0 disables)")
        need(self.max_entropy == 0 or self.max_entropy >= self.min_entropy, "max_entropy",
             f"must be >= guard.min_entropy={self.min_entropy} (or 0 to disable)")
        need(self.patience >= 1, "patience", "must be >= 1 step")
        need(self.max_restores >= 0, "max_restores", "must be >= 0 (0: stop at the first trigger)")
        need(0.0 < self.lr_factor <= 1.0, "lr_factor", "must be in (0, 1]")


@dataclasses.dataclass(frozen=True)
class OptimizerSection(_Section):
    """``optimizer``: AdamW of GRPO and the shape of its updates (the warm start's rate: ``sft``)."""

    PREFIX: ClassVar[str] = "optimizer."
    learning_rate: float = 1e-6  # AdamW learning rate [REL LR=1e-6]
    weight_decay: float = 0.01  # AdamW decoupled weight decay (verl default)
    grad_clip: float = 1.0  # global-norm gradient clip (verl default); 0 disables
    adam_b1: float = 0.9  # AdamW beta1
    adam_b2: float = 0.999  # AdamW beta2
    adam_eps: float = 1e-8  # AdamW epsilon
    warmup_steps: int = 0  # linear learning-rate warm-up steps (0 = constant)
    # GRPO learning-rate schedule after the warm-up: "constant", or "cosine" (decay to 0 over the run's
    # optimizer updates, max_steps x ppo_epochs x ppo_mini_batches, so the last steps move the policy least)
    lr_schedule: str = "constant"  # after the warm-up: "constant" or "cosine" (to 0 over the updates)
    micro_batches: int = 1  # gradient accumulation micro-batches per step (same gradient, less memory; SFT too)
    logp_chunk: int = 256  # sequence chunk of the log-prob computation (memory [B, chunk, V])
    pad_multiple: int = 256  # trainer batches are padded to a multiple of this many tokens (0 = power of two)

    def _checks(self) -> None:
        need = self._need
        self._positive(("micro_batches", "logp_chunk"))
        self._positive(("pad_multiple", "warmup_steps"), least=0)
        need(self.lr_schedule in ("cosine", "constant"), "lr_schedule", "use 'cosine' or 'constant'")
        need(self.learning_rate > 0, "learning_rate", "must be > 0")
        need(self.weight_decay >= 0, "weight_decay", "must be >= 0")
        need(self.grad_clip >= 0, "grad_clip", "must be >= 0 (0 disables)")


@dataclasses.dataclass(frozen=True)
class SftSection(_Section):
    """``sft``: the supervised warm start on demonstrations of `orchestra_gym.agents.DelegatingAgent`."""

    PREFIX: ClassVar[str] = "sft."
    steps: int = 0  # SFT steps on golden trajectories before GRPO (0 = none)
    batch_size: int = 16  # trajectories per SFT step
    learning_rate: float = 1e-5  # SFT AdamW learning rate
    lr_schedule: str = "cosine"  # "cosine" (decay to 0 over sft.steps) or "constant"
    tasks: int = 512  # golden trajectories generated for SFT
    # the demonstrator: a uniformly drawn expert "per_turn" or "per_episode"; state_kind: its first turn
    # names the request's kind in a <think> block
    expert_choice: str = "per_turn"  # the demonstrator draws an expert "per_turn" or "per_episode"
    state_kind: bool = False  # the demonstrator's first turn names the request's kind in a <think>

    def _checks(self) -> None:
        need = self._need
        self._positive(("batch_size",))
        self._positive(("steps", "tasks"), least=0)
        need(self.lr_schedule in ("cosine", "constant"), "lr_schedule", "use 'cosine' or 'constant'")
        need(self.learning_rate > 0, "learning_rate", "must be > 0")
        need(self.steps == 0 or self.tasks >= 1, "tasks", "SFT needs >= 1 golden trajectory")
        need(self.expert_choice in ("per_turn", "per_episode"), "expert_choice", "use 'per_turn' or 'per_episode'")


@dataclasses.dataclass(frozen=True)
class EvaluationSection(_Section):
    """``evaluation``: the before/after evaluation on held-out tasks, and the decoding of the trained
    policy as an agent (PolicyAgent, bench_*, the export's generation_config.json): keep the k most likely
    ids (0 = off) / the nucleus of mass p (1 = off), the sampler's convention (orchestra_jax.sampler).
    GRPO rollouts always sample the full distribution at ``rollout.temperature``."""

    PREFIX: ClassVar[str] = "evaluation."
    tasks: int = 100  # held-out generated tasks for the before/after evaluation
    temperature: float = 0.0  # 0 = greedy
    top_k: int = 0  # keep the k most likely token ids (0 = off)
    top_p: float = 1.0  # keep the nucleus of probability mass p (1 = off)

    def _checks(self) -> None:
        need = self._need
        self._positive(("tasks",), least=0)
        need(self.temperature >= 0, "temperature", "must be >= 0 (0 = greedy)")
        need(self.top_k >= 0, "top_k", "must be >= 0 (0 = off)")
        need(0 < self.top_p <= 1, "top_p", "must be in (0, 1] (1 = off)")


@dataclasses.dataclass(frozen=True)
class MeshSection(_Section):
    """``mesh``: the device mesh's axis sizes (`orchestra_jax.sharding.make_mesh`)."""

    PREFIX: ClassVar[str] = "mesh."
    data: int = 1  # data-parallel axis size
    fsdp: int = 0  # fsdp axis size; 0 = all devices left after data and tp
    tp: int = 1  # tensor-parallel axis size

    def _checks(self) -> None:
        self._positive(("data", "tp"))
        self._positive(("fsdp",), least=0)


@dataclasses.dataclass(frozen=True)
class CheckpointSection(_Section):
    """``checkpoint``: orbax checkpoints of both phases (`orchestra_jax.checkpoint`)."""

    PREFIX: ClassVar[str] = "checkpoint."
    every: int = 10  # steps between checkpoints (and a final one)
    keep: int = 3  # checkpoints kept (orbax max_to_keep)
    async_save: bool = True  # write checkpoints in the background (orbax async)

    def _checks(self) -> None:
        self._positive(("every", "keep"))


#: section name -> its class
SECTIONS: dict[str, type] = {"model": ModelSection, "env": EnvSection, "rollout": RolloutSection,
                             "grpo": GrpoSection, "guard": GuardConfig, "optimizer": OptimizerSection,
                             "sft": SftSection, "evaluation": EvaluationSection, "mesh": MeshSection,
                             "checkpoint": CheckpointSection}

def _preference(value: Any, key: str) -> Preference:
    """A preference dict as a `Preference`: known keys only (a did-you-mean for a typo), every weight a
    finite number. Raises ConfigError naming `key` (and the weight's key) when it is not one."""
    if isinstance(value, dict):
        allowed = ("outcome", "cost", "latency", "tools")
        for k in value:
            if k not in allowed:
                raise ConfigError(f"{key}: unknown preference key {k!r}{did_you_mean(str(k), allowed)}; "
                                  f"allowed keys: {', '.join(allowed)}")
        tools = value.get("tools") or {}
        weights = {**{k: v for k, v in value.items() if k != "tools"},
                   **({f"tools.{t}": w for t, w in tools.items()} if isinstance(tools, dict) else {})}
        for k, w in weights.items():
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
                raise ConfigError(f"{key}.{k}={w!r}: a preference weight must be a finite number (e.g. 0.5)")
    try:
        return Preference.from_dict(value)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None


def check_fields(obj: Any, prefix: str = "", only: tuple[str, ...] | None = None) -> None:
    """Type of every field of dataclass `obj` (or of those named in `only`) against its annotation, and
    every float finite (NaN never; +inf only for the fields the class names in ``INFINITE_OK``).
    Raises ConfigError naming ``<prefix><field>``."""
    hints = typing.get_type_hints(type(obj))
    infinite = getattr(type(obj), "INFINITE_OK", ())
    for f in dataclasses.fields(obj):
        if only is None or f.name in only:
            value = getattr(obj, f.name)
            _check_type(prefix + f.name, value, hints[f.name])
            if isinstance(value, float) and not (math.isfinite(value) or (f.name in infinite and value == math.inf)):
                allowed = " (or inf)" if f.name in infinite else ""
                raise ConfigError(f"{prefix}{f.name}={value!r}: must be a finite number{allowed}; "
                                  f"the default is {f.default!r}")


def _check_type(key: str, value: Any, hint: Any) -> None:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        allowed = typing.get_args(hint)
    else:
        allowed = (origin or hint,)
    ok = False
    for t in allowed:
        t = typing.get_origin(t) or t
        if t is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            ok = True
        elif t is int and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        elif t is bool and isinstance(value, bool):
            ok = True
        elif t not in (float, int, bool) and isinstance(value, t):
            ok = True
    if not ok:
        names = " | ".join(getattr(typing.get_origin(t) or t, "__name__", str(t)) for t in allowed)
        raise ConfigError(f"{key}={value!r}: expected {names}, got {type(value).__name__}")


@functools.cache
def field_help(cls: type) -> dict[str, str]:
    """Field name -> its one line of help: the comment on the line where dataclass `cls` declares the field
    (``steps: int = 0  # SFT steps ...``), read from the class's source with `tokenize`. A field declared
    without one maps to ""; a class without source (a frozen build) gives {}."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    line_field = {node.lineno: node.target.id for node in ast.parse(source).body[0].body
                  if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
    comments = {tok.start[0]: tok.string.lstrip("#").strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
    return {name: comments.get(line, "") for line, name in line_field.items() if name != "PREFIX"}
