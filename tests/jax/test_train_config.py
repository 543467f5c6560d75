"""Strict loading of TrainConfig: presets, TOML/JSON files, unknown and inconsistent keys."""

from __future__ import annotations

import json

import pytest

from orchestra_jax.grpo import LossConfig
from orchestra_jax.train_config import PRESETS, ConfigError, TrainConfig, config_keys


def test_defaults_are_the_papers():
    c = TrainConfig()
    r, g, loss = c.rollout, c.grpo, c.grpo.loss
    assert (r.tasks_per_step, r.rollouts_per_task, r.temperature, c.env.max_turns) == (16, 8, 1.0, 50)
    assert (c.optimizer.learning_rate, loss.kl_coef, loss.kl_estimator, loss.aggregation) == (1e-6, 1e-4, "k2", "token-mean")
    assert (loss.clip_eps_low, loss.clip_eps_high, loss.dual_clip_c) == (0.2, 0.28, 10.0)
    assert (g.adv_clip, g.min_group_std, g.adv_ddof) == (3.0, 0.1, 1)
    assert c.loss_config() == LossConfig()


def test_presets_load():
    for name in PRESETS:
        c = TrainConfig.preset(name)
        assert c.name == name
    tiny = TrainConfig.preset("tiny-toolscale", max_steps=3)
    assert tiny.max_steps == 3 and tiny.model.tokenizer == "toolscale-bpe"
    big = TrainConfig.preset("qwen3-8b")
    assert (big.rollout.tasks_per_step, big.rollout.rollouts_per_task, big.env.max_turns) == (16, 8, 50)


def test_toml_and_json_files(tmp_path):
    p = tmp_path / "run.toml"
    p.write_text('preset = "tiny-toolscale"\nmax_steps = 7\ngrpo.loss.kl_coef = 0.0\n[env.preference]\noutcome = 1.0\n'
                 'cost = 2.0\n[sft]\nsteps = 3\n')
    c = TrainConfig.from_file(p)
    assert (c.max_steps, c.grpo.loss.kl_coef, c.env.preference) == (7, 0.0, {"outcome": 1.0, "cost": 2.0})
    assert (c.sft.steps, c.sft.batch_size, c.env.max_turns) == (3, 4, 6)  # a table merges into the preset's section
    q = tmp_path / "run.json"
    q.write_text(json.dumps({"optimizer": {"learning_rate": 3e-6, "micro_batches": 4}}))
    d = TrainConfig.from_file(q)
    assert (d.optimizer.learning_rate, d.optimizer.micro_batches) == (3e-6, 4)


@pytest.mark.parametrize(
    "content,match",
    [
        ("lr = 1e-5\n", r"unknown config key 'lr' \(did you mean 'optimizer.learning_rate'\?\)"),
        ("[optimizer]\nlearning_rat = 1e-5\n", r"'optimizer.learning_rat' \(did you mean 'optimizer.learning_rate'\?\)"),
        ("learning_rat = 1e-5\n", r"'learning_rat' \(did you mean 'optimizer.learning_rate'\?\)"),
        ("sft.stepz = 3\n", r"'sft.stepz' \(did you mean 'sft.steps'\?\)"),
        ('max_steps = "ten"\n', r"max_steps='ten': expected int"),
        ("rollout.rollouts_per_task = 1\n", r"rollout.rollouts_per_task=1: GRPO needs >= 2"),
        ("optimizer.micro_batches = 3\n",
         r"optimizer.micro_batches=3: must divide rollout.tasks_per_step x rollout.rollouts_per_task = 128"),
        ('grpo.loss.aggregation = "mean"\n', r"grpo.loss.aggregation='mean'"),
        ('grpo.loss.kl_estimator = "k1"\n', r"grpo.loss.kl_estimator='k1'"),
        ("rollout.max_new_tokens = 99999\n", r"rollout.max_new_tokens=99999: must be <= rollout.max_seq_len"),
        ('preset = "tiny-toolscal"\n', r"unknown preset 'tiny-toolscal' \(did you mean 'tiny-toolscale'\?\)"),
        ("checkpoint.async_save = 1\n", r"checkpoint.async_save=1: expected bool"),
        ("evaluation.top_k = -1\n", r"evaluation.top_k=-1: must be >= 0 \(0 = off\)"),
        ("evaluation.top_p = 0.0\n", r"evaluation.top_p=0.0: must be in \(0, 1\] \(1 = off\)"),
        ("evaluation.top_p = 1.5\n", r"evaluation.top_p=1.5: must be in \(0, 1\]"),
        ("seed.x = 1\n", r"seed=\{'x': 1\}: expected int, got dict"),
        ("sft = 3\n", r"sft=3: expected a table of sft.\* keys"),
    ],
)
def test_bad_keys_fail_with_the_key_named(tmp_path, content, match):
    p = tmp_path / "bad.toml"
    p.write_text(content)
    with pytest.raises(ConfigError, match=match):
        TrainConfig.from_file(p)


def test_flat_keys_of_before_are_refused_naming_the_section_key(tmp_path):
    """The flat layout of 0.1 (``sft_steps``, ``kl_coef``, a ``[loss]`` table) is gone: each such key is an
    unknown key whose did-you-mean names its section key."""
    for flat, key in (("sft_steps", "sft.steps"), ("kl_coef", "grpo.loss.kl_coef"), ("eval_tasks", "evaluation.tasks"),
                      ("guard_patience", "guard.patience"), ("learning_rate", "optimizer.learning_rate")):
        with pytest.raises(ConfigError, match=rf"unknown config key '{flat}' \(did you mean '{key}'\?\)"):
            TrainConfig.preset("tiny-toolscale", **{flat: 1})
    p = tmp_path / "old.toml"
    p.write_text('preset = "tiny-toolscale"\n[loss]\nclip_eps_high = 0.3\n')
    with pytest.raises(ConfigError, match=r"old.toml: unknown config key 'loss'"):
        TrainConfig.from_file(p)
    with pytest.raises(AttributeError):
        TrainConfig().sft_steps  # noqa: B018  (no flat reads either)


def test_presets_are_named_constructors_with_overrides():
    assert TrainConfig.tiny_toolscale() == TrainConfig.preset("tiny-toolscale")
    assert TrainConfig.qwen3_8b().model.hf_checkpoint == "checkpoints/Qwen3-8B"
    pool = TrainConfig.tiny_toolscale_pool(env={"max_turns": 9}, **{"sft.steps": 3})
    assert (pool.name, pool.env.max_turns, pool.sft.steps) == ("tiny-toolscale-pool", 9, 3)
    assert pool.env.kwargs["expert_pool"] == "tradeoffs" and pool.env.kwargs["max_errors"] == 1  # a table merges
    assert pool.rollout.guide_experts == ["most-accurate", "cheapest", "fastest"]
    assert pool.rollout.max_seq_len == TrainConfig.tiny_toolscale().rollout.max_seq_len == 2048
    assert sorted(PRESETS) == ["qwen3-8b", "smollm2-toolscale-pool", "tiny-toolscale", "tiny-toolscale-pool"]


def test_every_key_is_listed_once_with_its_default_and_one_line_of_help():
    keys = config_keys()
    names = [k for k, _, _ in keys]
    assert len(names) == len(set(names)) and names[:2] == ["name", "seed"]
    assert names.index("grpo.loss.clip_eps_low") == names.index("grpo.max_staleness") + 1  # the loss after grpo
    missing = [k for k, _, text in keys if not text]
    assert not missing, f"declare these fields with a help comment on their line: {missing}"
    by = {k: (d, t) for k, d, t in keys}
    assert by["sft.steps"] == (0, "SFT steps on golden trajectories before GRPO (0 = none)")
    assert by["guard.patience"][0] == 2 and "unhealthy steps" in by["guard.patience"][1]
    assert by["grpo.loss.max_len"][0] is None
    default = TrainConfig()
    for key in names:  # every listed key is a key a config takes, at its listed default
        assert default.replace(**{key: by[key][0]}) == default


def test_unknown_keys_get_a_did_you_mean_naming_the_section():
    for key, hint in (("guard_patiance", "guard.patience"), ("guard.patiance", "guard.patience"),
                      ("stepz", "sft.steps"), ("kl", "grpo.loss.kl_coef"), ("evaluation.top_kk", "evaluation.top_k"),
                      ("grpo.loss.kl_cof", "grpo.loss.kl_coef"), ("sfft.steps", "sft.steps")):
        with pytest.raises(ConfigError, match=rf"unknown config key '{key}' \(did you mean '{hint}'\?\)"):
            TrainConfig.from_dict({key: 1})


def test_model_overrides_checked_against_model_config():
    pytest.importorskip("orchestra_jax.config", reason="the Qwen3 policy (issue 6) is not merged yet")
    with pytest.raises(ConfigError, match=r"model.overrides.hiden_size: unknown ModelConfig field"):
        TrainConfig(model={"overrides": {"hiden_size": 3}})
    with pytest.raises(ConfigError, match=r"model.preset='qwen3-9b'"):
        TrainConfig(model={"preset": "qwen3-9b"})


def test_bad_extension(tmp_path):
    p = tmp_path / "run.yaml"
    p.write_text("a: 1")
    with pytest.raises(ConfigError, match=r"\.toml or \.json"):
        TrainConfig.from_file(p)


def test_loss_config_is_held_inside_and_accepts_flat_keys_or_a_table(tmp_path):
    c = TrainConfig.preset("tiny-toolscale", grpo={"loss": {"clip_eps_high": 0.3, "kl_coef": 0.0}})
    assert isinstance(c.grpo.loss, LossConfig) and c.grpo.loss == LossConfig(clip_eps_high=0.3, kl_coef=0.0)
    assert c.replace(grpo={"loss": {"kl_coef": 0.5}}).grpo.loss == LossConfig(clip_eps_high=0.3, kl_coef=0.5)
    p = tmp_path / "run.toml"
    p.write_text('preset = "tiny-toolscale"\n[grpo.loss]\ndual_clip_c = 0.0\nkl_coef = 0.0\naggregation = "dr-grpo"\n')
    t = TrainConfig.from_file(p)
    loss = t.grpo.loss
    assert (loss.dual_clip_c, loss.kl_coef, loss.aggregation) == (0.0, 0.0, "dr-grpo")  # 0 disables the dual clip
    assert t.loss_config().max_len == t.rollout.max_seq_len  # Dr. GRPO's constant: the run's max_seq_len
    assert TrainConfig.from_dict(t.to_dict()) == t  # train_config.json round trip (nested sections)
    assert TrainConfig.from_dict({"grpo": {"loss": {"kl_coef": 0.2}}, "grpo.loss.kl_coef": 0.3}).grpo.loss.kl_coef == 0.3
    with pytest.raises(ConfigError, match=r"grpo.loss.kl_cof' \(did you mean 'grpo.loss.kl_coef'\?\)"):
        TrainConfig.from_dict({"grpo": {"loss": {"kl_cof": 0.1}}})
    with pytest.raises(ConfigError, match=r"dual_clip_c=0.5: must be > 1 \(or 0 to disable\)"):
        TrainConfig.from_dict({"grpo": {"loss": {"dual_clip_c": 0.5}}})
    with pytest.raises(ConfigError, match=r"dual_clip_c=None: expected float"):
        LossConfig(dual_clip_c=None)  # one convention: 0 disables


def test_model_config_errors_are_config_errors_and_dtypes_accept_objects():
    np = pytest.importorskip("numpy")
    jnp = pytest.importorskip("jax.numpy")
    from orchestra_jax.config import ModelConfig, dtype_name

    with pytest.raises(ConfigError, match=r"unknown model preset 'tinny' \(did you mean 'tiny'\?\)"):
        ModelConfig.from_preset("tinny")
    with pytest.raises(ConfigError, match=r"model.preset='tinny': unknown \(did you mean 'tiny'\?\)"):
        TrainConfig(model={"preset": "tinny"})
    c = ModelConfig.from_preset("tiny", param_dtype=jnp.bfloat16, compute_dtype=np.float32)
    assert (c.param_dtype, c.compute_dtype) == ("bfloat16", "float32")  # stored as the canonical names
    assert [dtype_name(d) for d in ("float16", np.dtype("float16"), jnp.float16)] == ["float16"] * 3
    with pytest.raises(ConfigError, match=r"ModelConfig.param_dtype='float64': unsupported dtype"):
        ModelConfig.from_preset("tiny", param_dtype="float64")


def test_training_preferences_are_sampled_and_evaluation_preferences_held_out():
    import numpy as np

    cfg = TrainConfig.preset("tiny-toolscale", env={"train_preferences": [{"outcome": 1, "cost": 0.5}, {"outcome": 1, "cost": 0}], "eval_preferences": {"latency first": {"outcome": 1, "latency": 1}}})
    rng = np.random.default_rng(0)
    drawn = [cfg.sample_preference(rng) for _ in range(200)]
    assert {tuple(sorted(d.items())) for d in drawn} == {(("cost", 0.5), ("outcome", 1)), (("cost", 0), ("outcome", 1))}
    assert 60 < sum(d["cost"] == 0 for d in drawn) < 140
    assert cfg.reset_options(7, {"outcome": 1, "cost": 0})["preference"] == {"outcome": 1, "cost": 0}
    assert cfg.reset_options(7)["preference"] == cfg.env.preference
    assert TrainConfig().sample_preference(rng) is None  # no list: the run's preference
    with pytest.raises(ConfigError, match="eval_preferences.*held out"):
        TrainConfig.preset("tiny-toolscale", env={"train_preferences": [{"outcome": 1, "cost": 0.5}], "eval_preferences": {"same": {"outcome": 1.0, "cost": 0.5, "latency": 0.0}}})
    with pytest.raises(ConfigError, match=r"train_preferences\[0\].*unknown preference key"):
        TrainConfig.preset("tiny-toolscale", env={"train_preferences": [{"outcme": 1}]})
    with pytest.raises(ConfigError, match="sft.expert_choice"):
        TrainConfig.preset("tiny-toolscale", sft={"expert_choice": "per_task"})


def test_ppo_update_and_guard_fields():
    cfg = TrainConfig()
    assert (cfg.grpo.ppo_epochs, cfg.grpo.ppo_mini_batches) == (1, 1)
    assert cfg.grpo.loss.kl_coef == 1e-4 and cfg.grpo.loss.kl_estimator == "k2"  # KL to the frozen reference as released
    g = cfg.guard
    assert (cfg.guard.enabled, g.min_valid_format, g.max_cut_rate, g.min_kept_rollouts, g.min_entropy,
            g.max_entropy, g.patience, g.max_restores, g.lr_factor) == (True, 0.8, 0.5, 0.0, 0.0, 0.0, 2, 3, 0.5)
    cfg = TrainConfig.preset("tiny-toolscale", grpo={"ppo_epochs": 2, "ppo_mini_batches": 2}, optimizer={"micro_batches": 4}, rollout={"tasks_per_step": 4})  # 32 rows
    assert cfg.grpo.ppo_mini_batches == 2
    with pytest.raises(ConfigError, match=r"grpo.ppo_mini_batches=4: grpo.ppo_mini_batches x optimizer.micro_batches = 4 x 4 "
                                          r"must divide"):
        TrainConfig.preset("tiny-toolscale", grpo={"ppo_mini_batches": 4}, optimizer={"micro_batches": 4},
                           rollout={"rollouts_per_task": 2, "tasks_per_step": 4, "guide_experts": []})
    with pytest.raises(ConfigError, match="grpo.ppo_epochs=0: must be >= 1"):
        TrainConfig(grpo={"ppo_epochs": 0})
    with pytest.raises(ConfigError, match=r"guard.lr_factor=2.0: must be in \(0, 1\]"):
        TrainConfig(guard={"lr_factor": 2.0})
    with pytest.raises(ConfigError, match="did you mean 'guard.patience'"):
        TrainConfig.from_dict({"guard_patiance": 3})


def test_the_demonstrator_follows_the_config():
    from orchestra_jax.policy import demonstrator

    agent = demonstrator(TrainConfig.preset("tiny-toolscale"), 3)
    assert (agent.per_episode, agent.state_kind, agent.expert_weights) == (True, True, {})
    plain = demonstrator(TrainConfig.preset("tiny-toolscale", sft={"state_kind": False, "expert_choice": "per_turn"}), 3)
    assert (plain.per_episode, plain.state_kind) == (False, False)


def test_guide_experts_are_validated_and_build_pinned_demonstrators():
    from orchestra_jax.policy import guide

    cfg = TrainConfig.preset("tiny-toolscale", rollout={"guide_experts": ["expert-1", "expert-3"]})
    agent = guide(cfg, "expert-3")
    assert (agent.per_episode, agent.state_kind) == (True, cfg.sft.state_kind)
    assert agent.expert_weights == {"expert-3": 1.0}
    assert TrainConfig().rollout.guide_experts == []  # the paper's purely on-policy groups by default
    with pytest.raises(ConfigError, match="guide_experts=.*must be distinct expert names"):
        TrainConfig.preset("tiny-toolscale", rollout={"guide_experts": ["expert-1", "expert-1"]})
    with pytest.raises(ConfigError, match="leaves no sampled rollout in a group of rollout.rollouts_per_task=2"):
        TrainConfig.preset("tiny-toolscale", rollout={"guide_experts": ["expert-1", "expert-2"], "rollouts_per_task": 2})
