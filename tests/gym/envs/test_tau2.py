"""ToolOrchestra-Tau2-{Mock,Retail}-v0: check_env, the oracle on every retail task, the LLM user over HTTP."""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import orchestra_gym  # noqa: F401
from orchestra_gym.domains.tau2.data import data_dir
from orchestra_gym.cli import run_episodes, summarize
from orchestra_gym.tools.models import parse_models
from tests.servers import OpenAIServer

DATA = data_dir()
pytestmark = pytest.mark.skipif(
    not (DATA / "domains" / "retail" / "db.json").is_file(),
    reason=f"tau2-bench v0.2.0 data not found at {DATA} (set ORCHESTRA_DATA_DIR, README: Data)",
)


@pytest.mark.parametrize("env_id", ["ToolOrchestra-Tau2-Mock-v0", "ToolOrchestra-Tau2-Retail-v0"])
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
    s = summarize(run_episodes("ToolOrchestra-Tau2-Retail-v0", "oracle", 0, env_kwargs={"data_dir": DATA},
                               progress=False, all_tasks=True))
    assert s["episodes"] == 114 and s["success_rate"] == 1.0
    assert s["not_fully_judged"]["episodes"] == 0


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
