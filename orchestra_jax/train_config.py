"""`TrainConfig`: every hyper-parameter of `orchestra train` / `orchestra sft`, with the paper's defaults;
`LossConfig`: the clipped surrogate loss's, held by `TrainConfig` as ``loss``.

Sources: ToolOrchestra (arXiv 2511.21689) Sec. 3.2-4 and App. D; the released script
`training/train_orchestrator.sh` (verl) for the values the paper leaves out ([REL] below).

Loading is strict: `TrainConfig.from_file(path)` (TOML or JSON) and `TrainConfig.from_dict(d)` reject
unknown keys (with a "did you mean" hint), values of the wrong type and inconsistent combinations,
before any compute, with a message naming the key (`orchestra_gym.errors.ConfigError`, re-exported
here). The loss's fields are written either flat (``kl_coef = 0.0``, as before) or as a ``[loss]``
table; each is validated once, by `LossConfig`. This module imports no JAX.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

import numpy as np

from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_gym.types import Preference
from orchestra_jax import config as model_config
from orchestra_jax.guard import GuardConfig

__all__ = ["TrainConfig", "LossConfig", "PRESETS", "ConfigError", "AGGREGATIONS", "KL_ESTIMATORS"]

AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "dr-grpo")
KL_ESTIMATORS = ("k2", "k3")


def _need(obj: Any, cond: bool, key: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{key}={getattr(obj, key)!r}: {msg}")


@dataclasses.dataclass(frozen=True)
class LossConfig:
    """Hyper-parameters of the clipped surrogate loss (`orchestra_jax.grpo`); defaults are the released
    ones ([REL]). Sources: [GRPO] DeepSeekMath Eq. 3, [DAPO] Eq. 10, [DC] dual-clip PPO Eq. 6,
    [DR] Dr. GRPO Sec. 3.1, [KL] Schulman's estimators (see `orchestra_jax.grpo`).

    Raises: ConfigError (a ValueError) naming the field, for a wrong type or value.
    """

    clip_eps_low: float = 0.2  # ratio lower clip 1 - eps_low  [REL clip_ratio_low]
    clip_eps_high: float = 0.28  # ratio upper clip 1 + eps_high [REL clip_ratio_high, DAPO Eq. 10]
    dual_clip_c: float = 10.0  # dual-clip bound c for A < 0; 0 disables [REL clip_ratio_c, DC Eq. 6]
    kl_coef: float = 1e-4  # KL-to-reference loss coefficient; 0 disables the term (no reference copy) [REL kl_loss_coef]
    kl_estimator: str = "k2"  # "k2" = 0.5 (logp - ref)^2 [REL kl_loss_type=mse], or "k3" [KL]
    aggregation: str = "token-mean"  # token-mean [REL] | seq-mean-token-mean [GRPO] | dr-grpo [DR]
    max_len: int | None = None  # Dr. GRPO's constant length (tokens); None = the batch's T (a run: max_seq_len)
    log_ratio_clamp: float = 20.0  # |logp - old_logp| clamp before exp, as verl (numerical safety)

    def __post_init__(self) -> None:
        _check_fields(self)
        _need(self, self.aggregation in AGGREGATIONS, "aggregation", f"use one of {AGGREGATIONS}")
        _need(self, self.kl_estimator in KL_ESTIMATORS, "kl_estimator",
              f"use one of {KL_ESTIMATORS} (k1 is logged as a metric only)")
        _need(self, 0 <= self.clip_eps_low < 1, "clip_eps_low", "must be in [0, 1)")
        _need(self, self.clip_eps_high >= 0, "clip_eps_high", "must be >= 0")
        _need(self, self.dual_clip_c == 0 or self.dual_clip_c > 1, "dual_clip_c", "must be > 1 (or 0 to disable)")
        _need(self, self.kl_coef >= 0, "kl_coef", "must be >= 0")
        _need(self, self.max_len is None or self.max_len >= 1, "max_len", "must be >= 1 (or None: the batch's T)")
        _need(self, self.log_ratio_clamp > 0, "log_ratio_clamp", "must be > 0")


# the loss fields a TrainConfig also accepts flat (top-level keys in files, dicts and `replace`)
LOSS_KEYS = tuple(f.name for f in dataclasses.fields(LossConfig))


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of GRPO training (defaults: the paper / released code, for Qwen3-8B)."""

    # ------------------------------------------------------------------ run
    name: str = "custom"  # run name, for logs
    seed: int = 0  # master seed; task order, rollouts and init derive from (seed, step)
    output_dir: str = "runs/orchestra"  # logs (JSONL, TensorBoard), checkpoints, summary.json, plots
    max_steps: int = 100  # GRPO steps (each: tasks_per_step x rollouts_per_task rollouts)
    # ------------------------------------------------------------------ policy
    model_preset: str = "qwen3-8b"  # orchestra_jax.config.ModelConfig preset (Qwen3-8B as the paper)
    model_overrides: dict = dataclasses.field(default_factory=dict)  # ModelConfig fields to replace
    hf_checkpoint: str = ""  # Hugging Face safetensors dir to load ("" = random init)
    tokenizer: str = "qwen3"  # "qwen3" (offline Qwen3 tokenizer), "toolscale-bpe" (small BPE) or a path
    # ------------------------------------------------------------------ environment
    env_id: str = "ToolOrchestra-ToolScale-v0"  # registered orchestra_gym id
    env_kwargs: dict = dataclasses.field(default_factory=dict)  # extra gym.make kwargs
    preference: dict = dataclasses.field(default_factory=dict)  # preference vector; {} = env default
    # preference vectors drawn uniformly per task in training (paper Sec. 3.3: preferences sampled per
    # instance); [] = always `preference`. State them in the prompt with env_kwargs preference_in_prompt.
    train_preferences: list = dataclasses.field(default_factory=list)
    # named preference vectors evaluated at the end, held out from training (paper Table 3); {} = none
    eval_preferences: dict = dataclasses.field(default_factory=dict)
    tools: list = dataclasses.field(default_factory=list)  # tools exposed (reset option "tools"); [] = all
    tasks_per_step: int = 16  # tasks per step (paper App. D: batch 16)
    rollouts_per_task: int = 8  # G rollouts per task (paper App. D: 8)
    temperature: float = 1.0  # sampling temperature (paper App. D: 1.0)
    max_turns: int = 50  # turns per episode (paper: 50; released code: 30)
    max_new_tokens: int = 8192  # generated tokens per turn (paper: 8k)
    max_seq_len: int = 32768  # tokens per trajectory (prompt + all turns); longer ones are cut (mask 0)
    tool_workers: int = 16  # threads running tool calls of different episodes concurrently
    # ------------------------------------------------------------------ reward and advantages
    reward: str = "preference"  # "preference" (paper Sec. 3.2) or "outcome"
    adv_eps: float = 1e-6  # epsilon added to the group std (verl)
    adv_clip: float = 3.0  # advantages clipped to [-adv_clip, adv_clip] (paper Sec. 3.2)
    adv_ddof: int = 1  # std ddof; 1 = unbiased, torch.std in the released code
    min_group_std: float = 0.1  # groups with reward std below this are dropped (paper Sec. 3.2)
    # ------------------------------------------------------------------ loss (orchestra_jax.grpo)
    loss: LossConfig = dataclasses.field(default_factory=LossConfig)  # clip, dual clip, KL, aggregation
    old_logp_source: str = "trainer"  # pi_old: "trainer" (recomputed, verl) or "sampler" (rollout log-probs)
    # guided rollouts (off-policy guidance in the group, as LUFFY, Yan et al. 2025, arXiv 2504.14945): each
    # group of rollouts_per_task holds one episode of the warm start's demonstrator pinned to each expert
    # named here and rollouts_per_task - len(guide_experts) sampled ones. The guided episodes are rewarded
    # and normalised with the group (they carry no knowledge of which expert is right) and enter the loss
    # only when their advantage is positive (`grpo.filter_and_advantages` off_policy), with the policy's own
    # log-probs as behaviour log-probs (the first pass's ratio is 1). They keep every expert in every group,
    # so a kind that only one expert solves keeps yielding a mixed group after the policy has stopped
    # sampling that expert. [] = the paper's purely on-policy groups.
    guide_experts: list = dataclasses.field(default_factory=list)
    # ------------------------------------------------------------------ GRPO update and training guard (issue 13)
    ppo_epochs: int = 1  # passes over each batch of rollouts, pi_old fixed for all [REL ppo_epochs=1]
    ppo_mini_batches: int = 1  # optimizer updates per pass; rows split by a seeded permutation [REL ppo_mini_batch_size]
    guard_enabled: bool = True  # watch each GRPO step; restore the last healthy checkpoint or stop (orchestra_jax.guard)
    guard_min_valid_format: float = 0.8  # unhealthy below this share of valid tool-call turns (0 disables)
    guard_max_cut_rate: float = 0.5  # unhealthy above this share of rollouts cut at max_seq_len (1 disables)
    guard_min_kept_rollouts: float = 0.0  # unhealthy below this share of rollouts kept by the filters (0 disables)
    guard_min_entropy: float = 0.0  # unhealthy below this mean token entropy, nats (0 disables)
    guard_max_entropy: float = 0.0  # unhealthy above this mean token entropy, nats (0 disables)
    guard_patience: int = 2  # unhealthy steps in a row before the guard acts
    guard_max_restores: int = 3  # restores before the guard stops the run (0: stop at the first trigger)
    guard_lr_factor: float = 0.5  # learning-rate multiplier at each restore, in (0, 1]
    # ------------------------------------------------------------------ optimiser
    learning_rate: float = 1e-6  # AdamW learning rate [REL LR=1e-6]
    weight_decay: float = 0.01  # AdamW decoupled weight decay (verl default)
    grad_clip: float = 1.0  # global-norm gradient clip (verl default); 0 disables
    adam_b1: float = 0.9  # AdamW beta1
    adam_b2: float = 0.999  # AdamW beta2
    adam_eps: float = 1e-8  # AdamW epsilon
    warmup_steps: int = 0  # linear learning-rate warm-up steps (0 = constant)
    # GRPO learning-rate schedule after the warm-up: "constant", or "cosine" (decay to 0 over the run's
    # optimizer updates, max_steps x ppo_epochs x ppo_mini_batches, so the last steps move the policy least)
    lr_schedule: str = "constant"
    micro_batches: int = 1  # gradient accumulation micro-batches per step (same gradient, less memory)
    logp_chunk: int = 256  # sequence chunk of the log-prob computation (memory [B, chunk, V])
    pad_multiple: int = 256  # trainer batches are padded to a multiple of this many tokens (0 = power of two)
    # drop the rows the paper's filters left without a kept token before the update (`batch.compact_rows`;
    # the loss and gradient are unchanged; never for the dr-grpo aggregation, whose denominator counts rows)
    compact_batch: bool = True
    # ------------------------------------------------------------------ mesh
    mesh_data: int = 1  # data-parallel mesh axis size
    mesh_fsdp: int = 0  # fsdp axis size; 0 = all devices left after data and tp
    mesh_tp: int = 1  # tensor-parallel axis size
    # ------------------------------------------------------------------ supervised warm start
    sft_steps: int = 0  # SFT steps on golden trajectories before GRPO (0 = none)
    sft_batch_size: int = 16  # trajectories per SFT step
    sft_learning_rate: float = 1e-5  # SFT AdamW learning rate
    sft_lr_schedule: str = "cosine"  # "cosine" (decay to 0 over sft_steps) or "constant"
    sft_tasks: int = 512  # golden trajectories generated for SFT
    # the demonstrator (`orchestra_gym.agents.DelegatingAgent`): a uniformly drawn expert "per_turn" or
    # "per_episode"; sft_state_kind: its first turn names the request's kind in a <think> block
    sft_expert_choice: str = "per_turn"
    sft_state_kind: bool = False
    # ------------------------------------------------------------------ evaluation, logging, checkpoints
    eval_tasks: int = 100  # held-out generated tasks for the before/after evaluation
    eval_temperature: float = 0.0  # 0 = greedy
    # decoding of the evaluations and of the trained policy as an agent (PolicyAgent, bench_*, the export's
    # generation_config.json): keep the k most likely ids (0 = off) / the nucleus of mass p (1 = off), the
    # sampler's convention (orchestra_jax.sampler). GRPO rollouts always sample the full distribution at
    # `temperature`, the distribution whose log-probs the trainer computes.
    eval_top_k: int = 0
    eval_top_p: float = 1.0
    log_every: int = 1  # steps between JSONL / TensorBoard records
    checkpoint_every: int = 10  # steps between checkpoints (and a final one)
    keep_checkpoints: int = 3  # checkpoints kept (orbax max_to_keep)
    async_checkpoint: bool = True  # write checkpoints in the background (orbax async)
    progress_bar: bool = True  # tqdm bar with reward / success / cost / latency

    # ---------------------------------------------------------------------------------------------
    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check types and consistency (the loss's fields are checked by `LossConfig`). Raises
        ConfigError naming the key."""
        _check_fields(self)

        def need(cond: bool, key: str, msg: str) -> None:
            _need(self, cond, key, msg)

        for key in ("max_steps", "tasks_per_step", "rollouts_per_task", "max_turns", "max_new_tokens",
                    "max_seq_len", "tool_workers", "micro_batches", "logp_chunk", "mesh_data", "mesh_tp",
                    "sft_batch_size", "log_every", "checkpoint_every", "keep_checkpoints"):
            need(getattr(self, key) >= 1, key, "must be >= 1")
        for key in ("pad_multiple", "mesh_fsdp", "sft_steps", "sft_tasks", "eval_tasks", "warmup_steps", "adv_ddof"):
            need(getattr(self, key) >= 0, key, "must be >= 0")
        need(self.rollouts_per_task >= 2, "rollouts_per_task", "GRPO needs >= 2 rollouts per task (a group)")
        need(self.rollouts_per_task > self.adv_ddof, "adv_ddof", "must be < rollouts_per_task")
        need(self.reward in ("preference", "outcome"), "reward", "use 'preference' or 'outcome'")
        need(self.sft_lr_schedule in ("cosine", "constant"), "sft_lr_schedule", "use 'cosine' or 'constant'")
        need(self.lr_schedule in ("cosine", "constant"), "lr_schedule", "use 'cosine' or 'constant'")
        need(self.old_logp_source in ("trainer", "sampler"), "old_logp_source", "use 'trainer' or 'sampler'")
        need(self.temperature > 0, "temperature", "must be > 0 for GRPO sampling")
        need(self.eval_temperature >= 0, "eval_temperature", "must be >= 0 (0 = greedy)")
        need(self.eval_top_k >= 0, "eval_top_k", "must be >= 0 (0 = off)")
        need(0 < self.eval_top_p <= 1, "eval_top_p", "must be in (0, 1] (1 = off)")
        need(self.learning_rate > 0, "learning_rate", "must be > 0")
        need(self.sft_learning_rate > 0, "sft_learning_rate", "must be > 0")
        need(self.weight_decay >= 0, "weight_decay", "must be >= 0")
        need(self.grad_clip >= 0, "grad_clip", "must be >= 0 (0 disables)")
        need(self.adv_clip > 0, "adv_clip", "must be > 0")
        need(self.max_new_tokens <= self.max_seq_len, "max_new_tokens", f"must be <= max_seq_len={self.max_seq_len}")
        rows = self.tasks_per_step * self.rollouts_per_task
        need(rows % self.micro_batches == 0, "micro_batches",
             f"must divide tasks_per_step x rollouts_per_task = {rows}")
        for key in ("ppo_epochs", "ppo_mini_batches"):
            need(getattr(self, key) >= 1, key, "must be >= 1")
        need(rows % (self.ppo_mini_batches * self.micro_batches) == 0, "ppo_mini_batches",
             f"ppo_mini_batches x micro_batches = {self.ppo_mini_batches} x {self.micro_batches} must divide "
             f"tasks_per_step x rollouts_per_task = {rows}")
        self.guard_config()  # validates the guard_* keys (ConfigError naming the key)
        need(all(isinstance(e, str) and e for e in self.guide_experts)
             and len(set(self.guide_experts)) == len(self.guide_experts), "guide_experts",
             "must be distinct expert names (e.g. ['expert-1', 'expert-2', 'expert-3'])")
        need(len(self.guide_experts) <= self.rollouts_per_task - 1, "guide_experts",
             f"leaves no sampled rollout in a group of rollouts_per_task={self.rollouts_per_task}; "
             "name fewer experts or raise rollouts_per_task")
        need(self.sft_steps == 0 or self.sft_batch_size % self.micro_batches == 0, "micro_batches",
             f"must divide sft_batch_size={self.sft_batch_size}")
        need(self.sft_steps == 0 or self.sft_tasks >= 1, "sft_tasks", "SFT needs >= 1 golden trajectory")
        need(self.sft_expert_choice in ("per_turn", "per_episode"), "sft_expert_choice",
             "use 'per_turn' or 'per_episode'")
        train_prefs = [_preference(p, f"train_preferences[{i}]") for i, p in enumerate(self.train_preferences)]
        for name, p in self.eval_preferences.items():
            held = _preference(p, f"eval_preferences.{name}")
            need(held not in train_prefs, "eval_preferences",
                 f"{name!r} = {p} is also a training preference; evaluation preferences must be held out")
        presets = model_config.PRESETS
        need(self.model_preset in presets, "model_preset",
             f"unknown{did_you_mean(self.model_preset, presets)}; known: {sorted(presets)}")
        fields = sorted(f.name for f in dataclasses.fields(model_config.ModelConfig))
        for k in self.model_overrides:
            if k not in fields:
                raise ConfigError(f"model_overrides.{k}: unknown ModelConfig field{did_you_mean(k, fields)}; "
                                  f"known: {fields}")

    # the loss's fields, read flat as before (cfg.kl_coef is cfg.loss.kl_coef)
    clip_eps_low = property(lambda self: self.loss.clip_eps_low, doc="`LossConfig.clip_eps_low`")
    clip_eps_high = property(lambda self: self.loss.clip_eps_high, doc="`LossConfig.clip_eps_high`")
    dual_clip_c = property(lambda self: self.loss.dual_clip_c, doc="`LossConfig.dual_clip_c` (0 disables)")
    kl_coef = property(lambda self: self.loss.kl_coef, doc="`LossConfig.kl_coef` (0 disables)")
    kl_estimator = property(lambda self: self.loss.kl_estimator, doc="`LossConfig.kl_estimator`")
    aggregation = property(lambda self: self.loss.aggregation, doc="`LossConfig.aggregation`")

    # ---------------------------------------------------------------------------------------------
    def loss_config(self) -> LossConfig:
        """The run's `LossConfig`: ``loss``, with Dr. GRPO's constant length set to max_seq_len when the
        aggregation is "dr-grpo" and ``loss.max_len`` is not given."""
        if self.loss.aggregation == "dr-grpo" and self.loss.max_len is None:
            return dataclasses.replace(self.loss, max_len=self.max_seq_len)
        return self.loss

    def guard_config(self) -> "GuardConfig":
        """The `orchestra_jax.guard.GuardConfig` of the run's ``guard_*`` fields (validated there)."""
        return GuardConfig(**{f.name: getattr(self, f"guard_{f.name}") for f in dataclasses.fields(GuardConfig)})

    def make_env_kwargs(self) -> dict[str, Any]:
        """The `gym.make(env_id, **kwargs)` keyword arguments of a run (env_kwargs, max_turns, preference)."""
        kwargs = dict(self.env_kwargs)
        kwargs.setdefault("max_turns", self.max_turns)
        if self.preference:
            kwargs.setdefault("preference", self.preference)
        return kwargs

    def reset_options(self, task_id: Any = None, preference: dict[str, Any] | None = None) -> dict[str, Any]:
        """The `env.reset(options=...)` of a run's episode: preference (`preference`, else the run's),
        tools exposed, and task_id when given (None: the env draws the task from its seed)."""
        o: dict[str, Any] = {}
        if preference is not None or self.preference:
            o["preference"] = dict(preference if preference is not None else self.preference)
        if self.tools:
            o["tools"] = list(self.tools)
        if task_id is not None:
            o["task_id"] = task_id
        return o

    def sample_preference(self, rng: np.random.Generator) -> dict[str, Any] | None:
        """A training task's preference vector: one of `train_preferences` drawn uniformly with `rng`,
        or None (the run's `preference`) when that list is empty."""
        if not self.train_preferences:
            return None
        return dict(self.train_preferences[int(rng.integers(len(self.train_preferences)))])

    def replace(self, **overrides: Any) -> "TrainConfig":
        """Copy with fields replaced (validated; the loss's fields may be given flat; unknown keys raise
        ConfigError)."""
        return dataclasses.replace(self, **_nest_loss(overrides, self.loss))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "TrainConfig":
        """A named preset (`PRESETS`), optionally with fields replaced.

        Raises: ConfigError for an unknown preset or key.
        """
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}{did_you_mean(name, PRESETS)}; known presets: {sorted(PRESETS)}")
        base = _nest_loss(PRESETS[name])
        base.update(_nest_loss(overrides, base.get("loss")))
        return cls(**base)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        """Strict construction: unknown keys and wrong types raise ConfigError naming the key.

        A key ``preset`` starts from that preset and overrides it with the other keys. The loss's fields
        may be flat keys or a ``loss`` table (a dict).
        """
        if not isinstance(d, dict):
            raise ConfigError(f"a training config must be a table/object, got {type(d).__name__}")
        d = dict(d)
        if "preset" in d:
            name = d.pop("preset")
            if not isinstance(name, str):
                raise ConfigError(f"preset must be a string, got {name!r}")
            return cls.preset(name, **d)
        return cls(**_nest_loss(d))

    @classmethod
    def from_file(cls, path: str | Path) -> "TrainConfig":
        """Load a `.toml` or `.json` file (strict, see `from_dict`).

        Raises: ConfigError (bad key/value/extension), FileNotFoundError.
        """
        p = Path(path)
        text = p.read_text()
        if p.suffix == ".toml":
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"{p}: invalid TOML: {e}") from None
        elif p.suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{p}: invalid JSON: {e}") from None
        else:
            raise ConfigError(f"{p}: config files must end in .toml or .json")
        try:
            return cls.from_dict(data)
        except ConfigError as e:
            raise ConfigError(f"{p}: {e}") from None


_ALIASES = {"lr": "learning_rate", "steps": "max_steps", "kl": "kl_coef", "group_size": "rollouts_per_task",
            "batch_size": "tasks_per_step", "preset_name": "name", "model": "model_preset"}


def _nest_loss(d: dict[str, Any], base: LossConfig | None = None) -> dict[str, Any]:
    """A copy of config dict `d` with its loss fields (flat keys and/or a ``loss`` table) made into one
    `LossConfig` under ``loss`` (starting from `base`, flat keys last); unknown keys raise ConfigError."""
    known = [f.name for f in dataclasses.fields(TrainConfig)]
    for k in d:
        if k not in known and k not in LOSS_KEYS:
            hint = f" (did you mean {_ALIASES[k]!r}?)" if k in _ALIASES else did_you_mean(k, known + list(LOSS_KEYS))
            raise ConfigError(f"unknown config key {k!r}{hint}; known keys: {', '.join(known + list(LOSS_KEYS))}")
    out = {k: v for k, v in d.items() if k not in LOSS_KEYS}
    table = out.pop("loss", None)
    flat = {k: d[k] for k in LOSS_KEYS if k in d}
    if table is None and not flat:
        if base is not None:
            out["loss"] = base
        return out
    if isinstance(table, LossConfig):
        table = dataclasses.asdict(table)
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"loss={table!r}: expected a table (dict) of LossConfig fields, got {type(table).__name__}")
    fields = {**(dataclasses.asdict(base) if base is not None else {}), **(table or {}), **flat}
    for k in table or {}:
        if k not in LOSS_KEYS:
            raise ConfigError(f"loss.{k}: unknown LossConfig field{did_you_mean(k, LOSS_KEYS)}; known: {list(LOSS_KEYS)}")
    out["loss"] = LossConfig(**fields)
    return out


def _preference(value: Any, key: str) -> Preference:
    """A preference dict as a `Preference` (ConfigError naming `key` when it is not one)."""
    try:
        return Preference.from_dict(value)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None


def _check_fields(obj: Any) -> None:
    """Type of every field of dataclass `obj` against its annotation. Raises ConfigError naming it."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        _check_type(f.name, getattr(obj, f.name), hints[f.name])


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


# ---------------------------------------------------------------------------------------------------
# Presets (plain dicts, so that from_dict validates them like a user's file)
# ---------------------------------------------------------------------------------------------------

PRESETS: dict[str, dict[str, Any]] = {
    # The paper's run: Qwen3-8B from a Hugging Face checkpoint, 16 tasks x 8 rollouts, temperature 1.0,
    # up to 50 turns and 8k tokens per turn, lr 1e-6, KL 1e-4 (k2), clip 0.2/0.28, dual clip 10.
    "qwen3-8b": {
        "name": "qwen3-8b",
        "model_preset": "qwen3-8b",
        "model_overrides": {"param_dtype": "float32", "compute_dtype": "bfloat16", "remat": True},
        "hf_checkpoint": "checkpoints/Qwen3-8B",
        "tokenizer": "qwen3",
        "max_steps": 1000,
        "micro_batches": 16,
        "output_dir": "runs/qwen3-8b",
    },
    # The offline default: CPU (2 cores, <= 15 minutes), a small Qwen3 with a small byte-level BPE
    # tokenizer built from the env's own texts, ToolScale-synthetic with simulated experts of different
    # prices and accuracies (pricing.EXPERT_POOL), only call_expert exposed; SFT warm start, then GRPO.
    # Setting: expert_scope "turn" (a delegated expert plays the agent's whole turn, tau2-bench's sense,
    # so the routing decision is one per turn and a group of rollouts compares experts cleanly;
    # max_turns still counts every action) and max_errors 1 (a malformed turn ends the episode unsolved,
    # the paper's outcome 0: with the env's default 5 a malformed turn, though out of the loss, was
    # followed by more turns that could still solve the task, so malformed rollouts were not worse and
    # grew long; valid format held at T 1.0 only with 1).
    # max_turns 6: the hard requests need more actions than that, so no expert solves them here and
    # their groups never count (at 8 turns expert-1 solves half of them, but the runs then drifted to
    # expert-2 for every kind: seed 1 at 0.48 cents, see benchmarks/RESULTS.md).
    # Preference (paper Sec. 3.2): outcome 1, cost 0.5 by default; no tool is paid for by name. The
    # preference vector is stated in the prompt (preference_in_prompt) and drawn per task from
    # train_preferences (Sec. 3.3); the final evaluation also runs the held-out eval_preferences
    # (Table 3). The warm start imitates a demonstrator that names the request's kind in a <think>
    # and then calls ONE uniformly drawn expert for the whole episode: it teaches the tool-call format
    # and reading the request, never which expert to use (GRPO must find that). GRPO: 16 tasks x 8
    # rollouts, two passes over each batch (the clip works), KL (k2) 0.05 to the warm start, lr 7e-4,
    # the guard; rollouts sample the full distribution at T 1.0 (paper App. D). Evaluation and the
    # exported policy decode as Qwen3 recommends for thinking mode (T 0.6, top-k 20, top-p 0.95).
    # Guided rollouts (guide_experts): each group of 8 holds one demonstrator episode pinned to each
    # expert, entering the loss only above its group. Without them the policy stops sampling expert-1
    # within 20-30 steps on some seeds (easy requests pay the cheapest expert on every step), after
    # which a medium request's groups all fail and are dropped, and nothing brings expert-1 back (seed 2
    # collapsed to always expert-3 in every unguided variant; benchmarks/RESULTS.md). The guides keep
    # a mixed group on every medium request, and their positive-only entry lets the policy learn which
    # kind each expert is right for without being pushed towards any expert everywhere.
    "tiny-toolscale": {
        "name": "tiny-toolscale",
        "model_preset": "tiny",
        "model_overrides": {"vocab_size": 1024, "hidden_size": 64, "intermediate_size": 128,
                            "num_layers": 2, "num_heads": 2, "num_kv_heads": 1, "head_dim": 32,
                            "tie_word_embeddings": True},
        "hf_checkpoint": "",
        "tokenizer": "toolscale-bpe",
        "env_kwargs": {"system_prompt": "compact", "preference_in_prompt": True, "expert_scope": "turn",
                       "max_errors": 1},
        "tools": ["call_expert"],
        "preference": {"outcome": 1.0, "cost": 0.5, "latency": 0.0},
        "train_preferences": [
            {"outcome": 1.0, "cost": 0.5, "latency": 0.0},
            {"outcome": 1.0, "cost": 0.1, "latency": 0.0},
            {"outcome": 1.0, "cost": 2.0, "latency": 0.0},
            {"outcome": 1.0, "cost": 0.0, "latency": 1.0},
        ],
        "eval_preferences": {
            "accuracy first": {"outcome": 1.0, "cost": 0.02, "latency": 0.0},
            "cost first": {"outcome": 1.0, "cost": 1.0, "latency": 0.0},
            "latency first": {"outcome": 1.0, "cost": 0.0, "latency": 0.5},
        },
        # 16 tasks per step (the paper's batch) for 100 steps: the same rollouts as 8 x 200, with a
        # gradient from about twice as many medium requests per step (seed 1 at 8 x 150: +4.9 points)
        "tasks_per_step": 16,
        "rollouts_per_task": 8,
        "micro_batches": 4,
        "max_turns": 6,
        "max_new_tokens": 64,
        "max_seq_len": 2048,
        "tool_workers": 4,
        "max_steps": 100,
        "guide_experts": ["expert-1", "expert-2", "expert-3"],
        "learning_rate": 7e-4,
        "kl_coef": 0.05,
        "ppo_epochs": 2,
        # the warm start writes valid tool calls in about 85-95% of its sampled turns (temperature 1);
        # a collapse takes that towards 0, so the guard acts below 60% for two steps in a row
        "guard_min_valid_format": 0.6,
        "sft_steps": 1200,
        "sft_batch_size": 4,
        "sft_learning_rate": 1e-2,
        "sft_tasks": 512,
        "sft_expert_choice": "per_episode",
        "sft_state_kind": True,
        "eval_tasks": 100,
        "eval_temperature": 0.6,
        "eval_top_k": 20,
        "eval_top_p": 0.95,
        "checkpoint_every": 50,
        "output_dir": "runs/tiny-toolscale",
    },
}
