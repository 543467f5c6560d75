"""ToolOrchestra-Tau2-{Mock,Airline,Retail,Telecom}-v0: check_env, the oracle on every retail and airline task, splits,
the LLM user over HTTP."""

from __future__ import annotations

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
