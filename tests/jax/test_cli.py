"""`orchestra train` command line: --seed and --set overrides (strict keys), parsed before any compute."""

from __future__ import annotations

import pytest

from orchestra_jax import cli
from orchestra_jax.train_config import ConfigError


def test_parse_set_reads_toml_values():
    assert cli.parse_set("learning_rate=3e-4") == ("learning_rate", 3e-4)
    assert cli.parse_set("max_steps = 7") == ("max_steps", 7)
    assert cli.parse_set("progress_bar=false") == ("progress_bar", False)
    assert cli.parse_set("preference={outcome=1, cost=0.5}") == ("preference", {"outcome": 1, "cost": 0.5})
    assert cli.parse_set("tools=['call_expert']") == ("tools", ["call_expert"])
    assert cli.parse_set("env_id=ToolOrchestra-ToolScale-v0") == ("env_id", "ToolOrchestra-ToolScale-v0")
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        cli.parse_set("learning_rate")


def test_seed_and_set_override_the_preset():
    cfg = cli._load_config("orchestra train", [
        "--preset", "tiny-toolscale", "--seed", "3", "--set", "learning_rate=3e-4",
        "--set", "preference={outcome=1, cost=0.5}", "--set", "model_overrides.num_layers=1",
        "--set", "loss.kl_coef=0.001", "--set", "ppo_epochs=2"])
    assert cfg.seed == 3 and cfg.learning_rate == 3e-4 and cfg.ppo_epochs == 2
    assert cfg.preference == {"outcome": 1, "cost": 0.5}
    assert cfg.model_overrides["num_layers"] == 1 and cfg.model_overrides["hidden_size"] == 64  # one entry replaced
    assert cfg.kl_coef == 0.001


@pytest.mark.parametrize("item, text", [
    ("learning_rat=1e-4", "unknown config key 'learning_rat' (did you mean 'learning_rate'?)"),
    ("lerning_rate.x=1", "unknown config key 'lerning_rate'"),
    ("seed.x=1", "--set seed.x: seed is not a table"),
    ("max_steps=fast", "max_steps='fast': expected int"),
    ("model_overrides.num_layerz=2", "model_overrides.num_layerz: unknown ModelConfig field"),
])
def test_bad_set_fails_before_compute_naming_the_key(tmp_path, capsys, item, text):
    assert cli.train_main(["--set", item, "--output-dir", str(tmp_path / "out")]) == 2
    assert text in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
