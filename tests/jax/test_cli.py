"""`orchestra train` command line: --seed and --set overrides (strict keys), parsed before any compute."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orchestra_jax import cli
from orchestra_jax.train_config import ConfigError


def test_parse_set_reads_toml_values():
    assert cli.parse_set("optimizer.learning_rate=3e-4") == ("optimizer.learning_rate", 3e-4)
    assert cli.parse_set("max_steps = 7") == ("max_steps", 7)
    assert cli.parse_set("progress_bar=false") == ("progress_bar", False)
    assert cli.parse_set("env.preference={outcome=1, cost=0.5}") == ("env.preference", {"outcome": 1, "cost": 0.5})
    assert cli.parse_set("env.tools=['call_expert']") == ("env.tools", ["call_expert"])
    assert cli.parse_set("env.id=ToolOrchestra-ToolScale-v0") == ("env.id", "ToolOrchestra-ToolScale-v0")
    with pytest.raises(ConfigError, match="expected SECTION.KEY=VALUE"):
        cli.parse_set("optimizer.learning_rate")


def test_seed_and_set_override_the_preset():
    cfg = cli._load_config("orchestra train", [
        "--preset", "tiny-toolscale", "--seed", "3", "--set", "optimizer.learning_rate=3e-4",
        "--set", "env.preference={outcome=1, cost=0.5}", "--set", "model.overrides.num_layers=1",
        "--set", "grpo.loss.kl_coef=0.001", "--set", "grpo.ppo_epochs=2"])
    assert cfg.seed == 3 and cfg.optimizer.learning_rate == 3e-4 and cfg.grpo.ppo_epochs == 2
    assert cfg.env.preference == {"outcome": 1, "cost": 0.5}
    assert cfg.model.overrides["num_layers"] == 1 and cfg.model.overrides["hidden_size"] == 64  # one entry replaced
    assert cfg.grpo.loss.kl_coef == 0.001


def test_a_file_and_set_take_section_keys(tmp_path):
    p = tmp_path / "run.toml"
    p.write_text('preset = "tiny-toolscale"\n[sft]\nsteps = 400\ntasks = 64\n[rollout]\ntasks_per_step = 4\n'
                 '[grpo.loss]\nkl_coef = 0.01\n')
    args = ["--config", str(p), "--set", "evaluation.tasks=4", "--set", "sft.steps=300", "--set", "guard.enabled=false",
            "--max-steps", "2"]
    cfg = cli._load_config("orchestra train", args)
    assert (cfg.sft.steps, cfg.sft.tasks, cfg.sft.batch_size, cfg.rollout.tasks_per_step) == (300, 64, 4, 4)
    assert (cfg.grpo.loss.kl_coef, cfg.evaluation.tasks, cfg.guard.enabled, cfg.max_steps) == (0.01, 4, False, 2)
    assert cli._load_config("orchestra train", [a.replace("sft.steps", "sft_steps") for a in args]) is None  # flat: gone


@pytest.mark.parametrize("item, text", [
    ("optimizer.learning_rat=1e-4",
     "unknown config key 'optimizer.learning_rat' (did you mean 'optimizer.learning_rate'?)"),
    ("learning_rat=1e-4", "unknown config key 'learning_rat' (did you mean 'optimizer.learning_rate'?)"),
    ("lerning_rate.x=1", "unknown config key 'lerning_rate.x'"),
    ("seed.x=1", "seed.x: seed is not a table"),
    ("max_steps=fast", "max_steps='fast': expected int"),
    ("model.overrides.num_layerz=2", "model.overrides.num_layerz: unknown ModelConfig field"),
    ("sft.steps.x=2", "sft.steps.x: sft.steps is not a table"),
])
def test_bad_set_fails_before_compute_naming_the_key(tmp_path, capsys, item, text):
    assert cli.train_main(["--set", item, "--output-dir", str(tmp_path / "out")]) == 2
    assert text in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_bad_set_from_the_command_line_is_one_line_and_exit_code_2(tmp_path):
    """The `orchestra` script as a user runs it: no traceback, one line naming the key and the hint."""
    done = subprocess.run([sys.executable, "-m", "orchestra_jax.cli", "train", "--set", "optimizer.learning_rat=1e-4",
                           "--output-dir", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "orchestra train: unknown config key 'optimizer.learning_rat' (did you mean 'optimizer.learning_rate'?)")
    assert not (tmp_path / "out").exists()


def test_any_orchestra_error_of_a_trainer_command_is_one_line_and_exit_code_2(capsys):
    from orchestra_jax.checkpoint import CheckpointError

    def broken(argv):
        raise CheckpointError(f"checkpoint step 3 in {argv[0]}: digest mismatch")

    assert cli.orchestra_main(["export", "runs/x"], commands={"export": broken}) == 2
    assert capsys.readouterr().err == "orchestra export: checkpoint step 3 in runs/x: digest mismatch\n"


def test_help_lists_every_key_with_its_default_and_help(capsys):
    with pytest.raises(SystemExit) as e:
        cli.train_main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    lines = {line.split(" = ", 1)[0].strip(): line for line in out.splitlines() if " = " in line}
    assert "sft.steps = 0" in lines["sft.steps"] and "SFT steps on golden trajectories" in lines["sft.steps"]
    assert 'rollout.engine = "lockstep"' in lines["rollout.engine"]
    assert "grpo.loss.kl_coef = 0.0001" in lines["grpo.loss.kl_coef"] and "KL-to-reference" in lines["grpo.loss.kl_coef"]
    assert "guard.enabled = true" in lines["guard.enabled"] and "progress_bar = true" in lines["progress_bar"]
    from orchestra_jax.train_config import config_keys

    assert all(k in lines for k, _, _ in config_keys())


@pytest.mark.parametrize("args, text", [
    (["--set", "optimizer.learning_rate=inf"], "optimizer.learning_rate=inf: must be a finite number"),
    (["--set", "env.preference={outcome=1, cost=nan}"], "env.preference.cost=nan: a preference weight must be a finite"),
    (["--set", "env.preference={outcom=1}"], "env.preference: unknown preference key 'outcom' (did you mean 'outcome'?)"),
    (["--set", "model.overrides.num_layers=-1"], "model.overrides: ModelConfig.num_layers must be a positive int, got -1"),
    (["--set", "env.kwargs.max_erors=1"], "env.kwargs.max_erors: ToolOrchestra-ToolScale-v0 takes no keyword 'max_erors' "
                                          "(did you mean 'max_errors'?)"),
    (["--config", "latin1.toml"], "latin1.toml: not UTF-8 text"),
])
def test_bad_values_exit_2_with_one_line_before_any_file_or_jax(tmp_path, args, text):
    """Issue 48 item 16: every key is checked (finite, typed, known) before a file is written or JAX is
    imported; one line on stderr names the key and the fix."""
    import subprocess
    import sys

    (tmp_path / "latin1.toml").write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    out = tmp_path / "out"
    code = ("import sys; from orchestra_jax.cli import main; rc = main(sys.argv[1:]); "
            "print('jax imported' if 'jax' in sys.modules else 'no jax'); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code, "train", *args, "--output-dir", str(out)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "PYTHONPATH": str(cli.__file__).rsplit("/orchestra_jax/", 1)[0]})
    assert r.returncode == 2, r.stderr
    assert r.stdout.strip() == "no jax"
    assert len(r.stderr.strip().splitlines()) == 1 and text in r.stderr, r.stderr
    assert not out.exists()


def test_a_run_folder_of_another_config_is_refused_and_resume_takes_its_config(tmp_path, capsys):
    """Issue 48 item 19: a rerun into a folder holding a run of another config exits 2 naming the differing
    keys and the two ways on (a new --output-dir, or --resume), and leaves the folder as it was; --resume
    continues with the folder's own config; a finished run says it is finished instead of training again."""
    import json

    from orchestra_jax.train_config import TrainConfig

    run = tmp_path / "run"
    run.mkdir()
    seed0 = TrainConfig.tiny_toolscale(output_dir=str(run))
    saved = json.dumps(seed0.to_dict(), indent=1)
    (run / "train_config.json").write_text(saved)
    assert cli.train_main(["--seed", "1", "--set", "sft.steps=3", "--output-dir", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{run} holds a run of another config (seed: 0 -> 1; sft.steps: 1200 -> 3)" in err
    assert "use a new --output-dir" in err and f"--resume --output-dir {run}" in err
    assert (run / "train_config.json").read_text() == saved and sorted(p.name for p in run.iterdir()) == ["train_config.json"]

    resumed = cli._load_config("orchestra train", ["--resume", "--output-dir", str(run), "--max-steps", "150"])
    assert resumed == seed0.replace(max_steps=150)
    assert cli._load_config("orchestra train", ["--resume", "--seed", "1", "--output-dir", str(run)]) is None
    assert "--resume continues the saved config of the run folder; drop --seed" in capsys.readouterr().err
    assert cli._load_config("orchestra train", ["--resume", "--output-dir", str(tmp_path / "none")]) is None
    assert "holds no run (no train_config.json)" in capsys.readouterr().err

    summary = {"steps": 100, "sft_steps": 1200, "wall_time_s": 12.5}
    (run / "summary.json").write_text(json.dumps(summary))
    assert cli.train_main(["--output-dir", str(run)]) == 0  # the same command again: finished, nothing to do
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"orchestra train: {run} holds this run, finished") and "--max-steps N (N > 100)" in err
    assert json.loads((run / "summary.json").read_text()) == summary  # not re-evaluated, wall_time_s kept


def test_a_finished_run_says_where_its_files_are_and_how_it_compares_with_the_fixed_rules():
    summary = {"final": {"episodes": 100, "success_rate": 0.78, "cost_per_solved_usd": 0.0254},
               "initial_success_rate": 0.62, "plots": ["plots/training.png"],
               "baselines": {"expert-1": {"success_rate": 0.79, "cost_per_solved_usd": 0.0496},
                             "expert-2": {"success_rate": 0.55, "cost_per_solved_usd": 0.0301},
                             "expert-3": {"success_rate": 0.80, "cost_per_solved_usd": 0.0100}}}
    lines = cli.run_report_lines(summary, "runs/tiny")
    assert lines[0].startswith("Run folder runs/tiny: summary.json") and "plots/training.png" in lines[0]
    assert lines[1] == "Trained policy on 100 held-out tasks: success 0.78, 2.54 cents per solved task (before GRPO: 0.62)."
    assert "fixed rule expert-2     success 0.55, 3.01 cents per solved task" in lines[3]
    assert lines[-1].startswith("It dominates expert-2 and is dominated by expert-3 (")
