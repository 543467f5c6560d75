"""ToolOrchestra-Tau2-{Mock,Airline,Retail,Telecom}-v0: check_env, the oracle on every retail and airline task, splits,
the LLM user over HTTP."""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import orchestra_gym  # noqa: F401
from orchestra_gym.domains.tau2.data import data_dir
from orchestra_gym.evaluation import evaluate
from orchestra_gym.tools.models import parse_models
from tests.servers import OpenAIServer



def _tau2_data() -> Path:
    """The tau2 data folder the library finds ($TAU2_DATA_DIR, $ORCHESTRA_DATA_DIR/tau2 or an installed tau2)."""
    try:
        return data_dir()
    except FileNotFoundError:
        return Path("tau2-data-not-configured")  # the tests below skip


DATA = _tau2_data()
pytestmark = pytest.mark.skipif(
    not (DATA / "domains" / "retail" / "db.json").is_file(),
    reason=f"tau2-bench v0.2.0 data not found at {DATA} (set ORCHESTRA_DATA_DIR, README: Data)",
)


@pytest.mark.parametrize("env_id", ["ToolOrchestra-Tau2-Mock-v0", "ToolOrchestra-Tau2-Retail-v0",
                                    "ToolOrchestra-Tau2-Airline-v0", "ToolOrchestra-Tau2-Telecom-v0"])
def test_check_env(env_id):
    check_env(gym.make(env_id, data_dir=DATA).unwrapped)


def test_tool_schemas_offered_to_the_policy_equal_tau2s(shared_data):
    import json

    ref = json.loads((shared_data / "tau2_reference" / "retail" / "tools.json").read_text())
    ref_tools = ref["tools"] if isinstance(ref, dict) else ref
    env = gym.make("ToolOrchestra-Tau2-Retail-v0", data_dir=DATA)
    _, info = env.reset(seed=0)
    ours = {t["function"]["name"]: t["function"] for t in info["tools"] if t["function"]["name"] != "call_expert"}
    names = [t.get("name") or t.get("openai_schema", t).get("function", {}).get("name") for t in ref_tools]
    assert sorted(ours) == sorted(n for n in names if n)


def test_oracle_scores_one_on_every_retail_task():
    _, s = evaluate("ToolOrchestra-Tau2-Retail-v0", "oracle", 0, env_kwargs={"data_dir": DATA}, all_tasks=True)
    assert s["episodes"] == 114 and s["success_rate"] == 1.0
    assert s["not_fully_judged"]["episodes"] == 0


def test_oracle_scores_one_on_every_airline_task():
    """Every airline task (train and test) has gold actions that satisfy tau2's evaluator; the oracle plays them."""
    records, s = evaluate("ToolOrchestra-Tau2-Airline-v0", "oracle", 0, env_kwargs={"data_dir": DATA}, all_tasks=True)
    assert s["episodes"] == 50 and s["success_rate"] == 1.0
    assert s["not_fully_judged"]["episodes"] == 0
    assert sorted(int(r.task_id) for r in records) == list(range(50))


def test_experts_serve_airline_as_in_retail():
    _, s = evaluate("ToolOrchestra-Tau2-Airline-v0", "expert-1", 10, env_kwargs={"data_dir": DATA}, all_tasks=True)
    assert s["episodes"] == 10 and s["success_rate"] == 1.0
    assert s["tool_calls"]["call_expert"] > 1.0 and s["mean_cost_usd"] > 0.0


def test_split_option_draws_from_the_split():
    from orchestra_gym.tasks.tau2 import split_task_ids

    env = gym.make("ToolOrchestra-Tau2-Airline-v0", data_dir=DATA)
    test_ids = set(split_task_ids("airline", "test", DATA))
    drawn = {env.reset(seed=i, options={"split": "test"})[1]["task_id"] for i in range(40)}
    assert drawn <= test_ids and len(drawn) > 5
    assert env.reset(seed=0, options={"task_id": "2"})[1]["task_id"] == "2"  # no split: any task
    with pytest.raises(ValueError, match="not in the 'train' split"):
        env.reset(options={"split": "train", "task_id": "2"})
    with pytest.raises(ValueError, match=r"did you mean 'train'"):
        env.reset(options={"split": "trian"})
    train_env = gym.make("ToolOrchestra-Tau2-Airline-v0", data_dir=DATA, split="train").unwrapped
    assert len(train_env.task_ids) == 30 and not set(train_env.task_ids) & test_ids
    env.close()
    train_env.close()


def test_paper_prompt_variant_rewrites_transfer_instruction():
    env = gym.make("ToolOrchestra-Tau2-Retail-v0", data_dir=DATA, prompt_variant="paper")
    obs, info = env.reset(seed=0)
    assert "call an expert with call_expert" in obs
    assert "transfer_to_human_agents" in [t["function"]["name"] for t in info["tools"]]
    with pytest.raises(ValueError, match="prompt_variant"):
        gym.make("ToolOrchestra-Tau2-Retail-v0", data_dir=DATA, prompt_variant="x")


def test_llm_user_episode_over_http():
    replies = iter(["Hi, I need to create a task called 'Write report' for user_1.", "Yes, please. ###STOP###"])

    def responder(body):
        return {"content": next(replies, "###STOP###")}

    with OpenAIServer(responder=responder) as srv:
        cfg = parse_models({"models": {"user-model": {"base_url": srv.base_url, "input_per_m": 0.1, "output_per_m": 0.1}}})
        env = gym.make("ToolOrchestra-Tau2-Mock-v0", data_dir=DATA, user_models=cfg)
        obs, info = env.reset(seed=0, options={"task_id": "create_task_1", "user": "user-model"})
        assert "create a task called 'Write report'" in obs and info["user"] == "llm:user-model"
        obs, r, term, trunc, info = env.step("<message>Done. Anything else?</message>")
        assert term and info["end_reason"] == "user_stop"
        system = srv.chat_requests[0]["messages"][0]["content"]
        assert "<scenario>" in system and "###STOP###" in system  # tau2's guidelines + the scenario
        assert srv.count == 2
        env.close()


def test_unknown_task_id_is_a_clear_error():
    env = gym.make("ToolOrchestra-Tau2-Mock-v0", data_dir=DATA)
    with pytest.raises(ValueError, match="did you mean"):
        env.reset(options={"task_id": "create_task_2"})
    with pytest.raises(ValueError, match="has no models file"):
        env.reset(options={"user": "gpt-5"})


# ---------------------------------------------------------------------------------- tau2-bench v1.0.1
V1 = Path(os.environ.get("ORCHESTRA_DATA_DIR", "")) / "tau2_v1"
needs_v1 = pytest.mark.skipif(not (V1 / "domains" / "mock" / "user_db.json").is_file(),
                              reason=f"tau2-bench v1.0.1 data not found at {V1} (set ORCHESTRA_DATA_DIR)")
V1_SPLITS = {
    "ToolOrchestra-Tau2-Mock-v0": {"base": 10},
    "ToolOrchestra-Tau2-Retail-v0": {"train": 74, "test": 40, "base": 114},
    "ToolOrchestra-Tau2-Airline-v0": {"train": 30, "test": 20, "base": 50},
    "ToolOrchestra-Tau2-Telecom-v0": {"train": 74, "test": 40, "base": 114, "small": 20, "full": 2285},
}


@needs_v1
@pytest.mark.parametrize("env_id", sorted(V1_SPLITS))
def test_v101_splits_and_info(env_id):
    for split, n in V1_SPLITS[env_id].items():
        env = gym.make(env_id, data_dir=V1, version="v1.0.1", split=split).unwrapped
        assert len(env.task_ids) == n
        assert env.data_info == {"benchmark": "tau2-bench", "domain": env.domain, "version": "v1.0.1",
                                 "split": split, "tasks": n}
        _, info = env.reset(seed=0)
        assert info["task_id"] in env.task_ids and (info["tau2_version"], info["tau2_split"]) == ("v1.0.1", split)
    default = gym.make(env_id, data_dir=V1, version="v1.0.1").unwrapped
    assert default.task_ids == env.__class__(default.domain, data_dir=V1, version="v1.0.1", split="base").task_ids


@needs_v1
def test_v101_mock_is_dual_control_and_passes_check_env():
    env = gym.make("ToolOrchestra-Tau2-Mock-v0", data_dir=V1, version="v1.0.1").unwrapped
    check_env(env)
    env.reset(seed=0, options={"task_id": "update_task_with_user_tools"})
    assert [t.name for t in env.backend.user_tools] == ["check_notifications", "dismiss_notification"]
    retail = gym.make("ToolOrchestra-Tau2-Retail-v0", data_dir=V1, version="v1.0.1").unwrapped
    retail.reset(seed=0)
    assert "get_item_details" in [t.name for t in retail.backend.tools]


@needs_v1
def test_v101_data_of_the_other_version_is_refused_by_name():
    with pytest.raises(ValueError, match=r"tau2-bench v1\.0\.1's, not v0\.2\.0's; pass version='v1\.0\.1'"):
        gym.make("ToolOrchestra-Tau2-Retail-v0", data_dir=V1)
    with pytest.raises(ValueError, match=r"tau2-bench v0\.2\.0's, not v1\.0\.1's"):
        gym.make("ToolOrchestra-Tau2-Mock-v0", data_dir=DATA, version="v1.0.1")
    with pytest.raises(ValueError, match=r"unknown tau2 data version '1\.0\.1' \(did you mean 'v1\.0\.1'\?\)"):
        gym.make("ToolOrchestra-Tau2-Airline-v0", data_dir=V1, version="1.0.1")
    with pytest.raises(ValueError, match="has no split 'train'"):
        gym.make("ToolOrchestra-Tau2-Mock-v0", data_dir=V1, version="v1.0.1", split="train")


@needs_v1
def test_v101_eval_cli_records_version_and_split_and_reports_pass_hat_k(tmp_path, capsys):
    """`orchestra eval --env-kwargs '{"version": "v1.0.1", "split": "test"}' --trials 4`: the oracle solves every
    airline test task in each trial; run.json records what was played."""
    import json

    from orchestra_gym.cli import main

    kwargs = {"version": "v1.0.1", "split": "test", "data_dir": str(V1)}
    out = tmp_path / "run"
    rc = main(["eval", "--env", "ToolOrchestra-Tau2-Airline-v0", "--agent", "oracle", "--all-tasks", "--episodes", "0",
               "--trials", "4", "--env-kwargs", json.dumps(kwargs), "--output-dir", str(out), "--no-progress"])
    assert rc == 0
    run = json.loads((out / "run.json").read_text())
    assert run["env_kwargs"] == kwargs and run["trials"] == 4
    assert run["data"] == {"benchmark": "tau2-bench", "domain": "airline", "version": "v1.0.1", "split": "test",
                           "tasks": 20}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"] == 80 and summary["pass_hat_k"] == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0}


@needs_v1
def test_v101_oracle_matches_tau2s_evaluator_on_mock():
    """The oracle plays the gold actions: 8 of 10 mock tasks pass, the two tau2's own evaluator fails on its gold
    actions (tau2_v1_reference README) do not."""
    records, s = evaluate("ToolOrchestra-Tau2-Mock-v0", "oracle", 0, all_tasks=True,
                          env_kwargs={"data_dir": V1, "version": "v1.0.1"})
    assert s["episodes"] == 10
    assert sorted(r.task_id for r in records if not r.solved) == ["update_task_with_history_and_env_assertions",
                                                                  "update_task_with_user_tools"]
