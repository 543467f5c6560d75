"""Strict loading of TrainConfig: presets, TOML/JSON files, unknown and inconsistent keys."""

from __future__ import annotations

import json

import pytest

from orchestra_jax.grpo import LossConfig
from orchestra_jax.train_config import PRESETS, ConfigError, TrainConfig


def test_defaults_are_the_papers():
    c = TrainConfig()
    assert (c.tasks_per_step, c.rollouts_per_task, c.temperature, c.max_turns) == (16, 8, 1.0, 50)
    assert (c.learning_rate, c.kl_coef, c.kl_estimator, c.aggregation) == (1e-6, 1e-4, "k2", "token-mean")
    assert (c.clip_eps_low, c.clip_eps_high, c.dual_clip_c) == (0.2, 0.28, 10.0)
    assert (c.adv_clip, c.min_group_std, c.adv_ddof) == (3.0, 0.1, 1)
    assert c.loss_config() == LossConfig()


def test_presets_load():
    for name in PRESETS:
        c = TrainConfig.preset(name)
        assert c.name == name
    tiny = TrainConfig.preset("tiny-toolscale", max_steps=3)
    assert tiny.max_steps == 3 and tiny.tokenizer == "toolscale-bpe"
    big = TrainConfig.preset("qwen3-8b")
    assert (big.tasks_per_step, big.rollouts_per_task, big.max_turns) == (16, 8, 50)


def test_toml_and_json_files(tmp_path):
    p = tmp_path / "run.toml"
    p.write_text('preset = "tiny-toolscale"\nmax_steps = 7\nkl_coef = 0.0\n[preference]\noutcome = 1.0\ncost = 2.0\n')
    c = TrainConfig.from_file(p)
    assert (c.max_steps, c.kl_coef, c.preference) == (7, 0.0, {"outcome": 1.0, "cost": 2.0})
    q = tmp_path / "run.json"
    q.write_text(json.dumps({"learning_rate": 3e-6, "micro_batches": 4}))
    d = TrainConfig.from_file(q)
    assert (d.learning_rate, d.micro_batches) == (3e-6, 4)


@pytest.mark.parametrize(
    "content,match",
    [
        ("lr = 1e-5\n", r"unknown config key 'lr' \(did you mean 'learning_rate'\?\)"),
        ("learning_rat = 1e-5\n", r"'learning_rat' \(did you mean 'learning_rate'\?\)"),
        ('max_steps = "ten"\n', r"max_steps='ten': expected int"),
        ("rollouts_per_task = 1\n", r"rollouts_per_task=1: GRPO needs >= 2"),
        ("micro_batches = 3\n", r"micro_batches=3: must divide tasks_per_step x rollouts_per_task = 128"),
        ('aggregation = "mean"\n', r"aggregation='mean'"),
        ('kl_estimator = "k1"\n', r"kl_estimator='k1'"),
        ("max_new_tokens = 99999\n", r"max_new_tokens=99999: must be <= max_seq_len"),
        ('preset = "tiny-toolscal"\n', r"unknown preset 'tiny-toolscal' \(did you mean 'tiny-toolscale'\?\)"),
        ("async_checkpoint = 1\n", r"async_checkpoint=1: expected bool"),
        ("eval_top_k = -1\n", r"eval_top_k=-1: must be >= 0 \(0 = off\)"),
        ("eval_top_p = 0.0\n", r"eval_top_p=0.0: must be in \(0, 1\] \(1 = off\)"),
        ("eval_top_p = 1.5\n", r"eval_top_p=1.5: must be in \(0, 1\]"),
    ],
)
def test_bad_keys_fail_with_the_key_named(tmp_path, content, match):
    p = tmp_path / "bad.toml"
    p.write_text(content)
    with pytest.raises(ConfigError, match=match):
        TrainConfig.from_file(p)


def test_model_overrides_checked_against_model_config():
    pytest.importorskip("orchestra_jax.config", reason="the Qwen3 policy (issue 6) is not merged yet")
    with pytest.raises(ConfigError, match=r"model_overrides.hiden_size: unknown ModelConfig field"):
        TrainConfig(model_overrides={"hiden_size": 3})
    with pytest.raises(ConfigError, match=r"model_preset='qwen3-9b'"):
        TrainConfig(model_preset="qwen3-9b")


def test_bad_extension(tmp_path):
    p = tmp_path / "run.yaml"
    p.write_text("a: 1")
    with pytest.raises(ConfigError, match=r"\.toml or \.json"):
        TrainConfig.from_file(p)


def test_loss_config_is_held_inside_and_accepts_flat_keys_or_a_table(tmp_path):
    c = TrainConfig.preset("tiny-toolscale", clip_eps_high=0.3, kl_coef=0.0)
    assert isinstance(c.loss, LossConfig) and c.loss == LossConfig(clip_eps_high=0.3, kl_coef=0.0)
    assert (c.kl_coef, c.clip_eps_high) == (0.0, 0.3)  # flat reads, as before
    assert c.replace(kl_coef=0.5).loss == LossConfig(clip_eps_high=0.3, kl_coef=0.5)
    p = tmp_path / "run.toml"
    p.write_text('preset = "tiny-toolscale"\n[loss]\ndual_clip_c = 0.0\nkl_coef = 0.0\naggregation = "dr-grpo"\n')
    t = TrainConfig.from_file(p)
    assert (t.dual_clip_c, t.kl_coef, t.aggregation) == (0.0, 0.0, "dr-grpo")  # 0 disables the dual clip
    assert t.loss_config().max_len == t.max_seq_len  # Dr. GRPO's constant: the run's max_seq_len
    assert TrainConfig.from_dict(t.to_dict()) == t  # train_config.json round trip (nested "loss")
    assert TrainConfig.from_dict({"loss": {"kl_coef": 0.2}, "kl_coef": 0.3}).kl_coef == 0.3  # flat keys last
    with pytest.raises(ConfigError, match=r"loss.kl_cof: unknown LossConfig field \(did you mean 'kl_coef'\?\)"):
        TrainConfig.from_dict({"loss": {"kl_cof": 0.1}})
    with pytest.raises(ConfigError, match=r"dual_clip_c=0.5: must be > 1 \(or 0 to disable\)"):
        TrainConfig.from_dict({"dual_clip_c": 0.5})
    with pytest.raises(ConfigError, match=r"dual_clip_c=None: expected float"):
        LossConfig(dual_clip_c=None)  # one convention: 0 disables


def test_model_config_errors_are_config_errors_and_dtypes_accept_objects():
    np = pytest.importorskip("numpy")
    jnp = pytest.importorskip("jax.numpy")
    from orchestra_jax.config import ModelConfig, dtype_name

    with pytest.raises(ConfigError, match=r"unknown model preset 'tinny' \(did you mean 'tiny'\?\)"):
        ModelConfig.from_preset("tinny")
    with pytest.raises(ConfigError, match=r"model_preset='tinny': unknown \(did you mean 'tiny'\?\)"):
        TrainConfig(model_preset="tinny")
    c = ModelConfig.from_preset("tiny", param_dtype=jnp.bfloat16, compute_dtype=np.float32)
    assert (c.param_dtype, c.compute_dtype) == ("bfloat16", "float32")  # stored as the canonical names
    assert [dtype_name(d) for d in ("float16", np.dtype("float16"), jnp.float16)] == ["float16"] * 3
    with pytest.raises(ConfigError, match=r"ModelConfig.param_dtype='float64': unsupported dtype"):
        ModelConfig.from_preset("tiny", param_dtype="float64")


def test_training_preferences_are_sampled_and_evaluation_preferences_held_out():
    import numpy as np

    cfg = TrainConfig.preset("tiny-toolscale", train_preferences=[{"outcome": 1, "cost": 0.5}, {"outcome": 1, "cost": 0}],
                             eval_preferences={"latency first": {"outcome": 1, "latency": 1}})
    rng = np.random.default_rng(0)
    drawn = [cfg.sample_preference(rng) for _ in range(200)]
    assert {tuple(sorted(d.items())) for d in drawn} == {(("cost", 0.5), ("outcome", 1)), (("cost", 0), ("outcome", 1))}
    assert 60 < sum(d["cost"] == 0 for d in drawn) < 140
    assert cfg.reset_options(7, {"outcome": 1, "cost": 0})["preference"] == {"outcome": 1, "cost": 0}
    assert cfg.reset_options(7)["preference"] == cfg.preference
    assert TrainConfig().sample_preference(rng) is None  # no list: the run's preference
    with pytest.raises(ConfigError, match="eval_preferences.*held out"):
        TrainConfig.preset("tiny-toolscale", train_preferences=[{"outcome": 1, "cost": 0.5}],
                           eval_preferences={"same": {"outcome": 1.0, "cost": 0.5, "latency": 0.0}})
    with pytest.raises(ConfigError, match=r"train_preferences\[0\].*unknown preference key"):
        TrainConfig.preset("tiny-toolscale", train_preferences=[{"outcme": 1}])
    with pytest.raises(ConfigError, match="sft_expert_choice"):
        TrainConfig.preset("tiny-toolscale", sft_expert_choice="per_task")


def test_ppo_update_and_guard_fields():
    cfg = TrainConfig()
    assert (cfg.ppo_epochs, cfg.ppo_mini_batches) == (1, 1)
    assert cfg.kl_coef == 1e-4 and cfg.kl_estimator == "k2"  # KL to the frozen reference as released
    g = cfg.guard_config()
    assert (cfg.guard_enabled, g.min_valid_format, g.max_cut_rate, g.min_kept_rollouts, g.min_entropy,
            g.max_entropy, g.patience, g.max_restores, g.lr_factor) == (True, 0.8, 0.5, 0.0, 0.0, 0.0, 2, 3, 0.5)
    cfg = TrainConfig.preset("tiny-toolscale", ppo_epochs=2, ppo_mini_batches=2, micro_batches=4, tasks_per_step=4)  # 32 rows
    assert cfg.ppo_mini_batches == 2
    with pytest.raises(ConfigError, match=r"ppo_mini_batches=4: ppo_mini_batches x micro_batches = 4 x 4 must divide"):
        TrainConfig.preset("tiny-toolscale", ppo_mini_batches=4, micro_batches=4, rollouts_per_task=2, tasks_per_step=4)
    with pytest.raises(ConfigError, match="ppo_epochs=0: must be >= 1"):
        TrainConfig(ppo_epochs=0)
    with pytest.raises(ConfigError, match=r"guard_lr_factor=2.0: must be in \(0, 1\]"):
        TrainConfig(guard_lr_factor=2.0)
    with pytest.raises(ConfigError, match="did you mean 'guard_patience'"):
        TrainConfig.from_dict({"guard_patiance": 3})


def test_the_demonstrator_follows_the_config():
    from orchestra_jax.policy import demonstrator

    agent = demonstrator(TrainConfig.preset("tiny-toolscale"), 3)
    assert (agent.per_episode, agent.state_kind, agent.expert_weights) == (True, True, {})
    plain = demonstrator(TrainConfig.preset("tiny-toolscale", sft_state_kind=False, sft_expert_choice="per_turn"), 3)
    assert (plain.per_episode, plain.state_kind) == (False, False)


def test_guide_experts_are_validated_and_build_pinned_demonstrators():
    from orchestra_jax.policy import guide

    cfg = TrainConfig.preset("tiny-toolscale", guide_experts=["expert-1", "expert-3"])
    agent = guide(cfg, "expert-3")
    assert (agent.per_episode, agent.state_kind) == (True, cfg.sft_state_kind)
    assert agent.expert_weights == {"expert-3": 1.0}
    assert TrainConfig().guide_experts == []  # the paper's purely on-policy groups by default
    with pytest.raises(ConfigError, match="guide_experts=.*must be distinct expert names"):
        TrainConfig.preset("tiny-toolscale", guide_experts=["expert-1", "expert-1"])
    with pytest.raises(ConfigError, match="leaves no sampled rollout in a group of rollouts_per_task=2"):
        TrainConfig.preset("tiny-toolscale", guide_experts=["expert-1", "expert-2"], rollouts_per_task=2)
