"""call_expert with a real OpenAI-compatible endpoint, and record/replay of a whole episode."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np

import orchestra_gym  # noqa: F401
from orchestra_gym.agents import make_agent
from orchestra_gym.tools.models import parse_models
from tests.servers import OpenAIServer

ENV_ID = "ToolOrchestra-ToolScale-v0"


def _responder():
    state = {"n": 0}

    def respond(body):
        state["n"] += 1
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        assert "call_expert" not in tools  # the expert gets the domain tools only
        if state["n"] <= 2:
            return {"tool_calls": [{"name": "calculate", "arguments": {"expression": f"{state['n']} + 2"}}], "usage": (900, 40)}
        return {"content": "All done. Is there anything else I can help you with?", "usage": (950, 20)}

    return respond


def _models(url):
    return parse_models({
        "models": {"gpt-5": {"base_url": url, "api_key_env": "ORCHESTRA_TEST_KEY", "input_per_m": 1.25, "output_per_m": 10.0},
                   "small": {"base_url": url, "input_per_m": 0.2, "output_per_m": 0.2}},
        "aliases": {"expert-1": "gpt-5", "expert-2": "small", "expert-3": "small"},
    })


def _episode(cfg, cache, mode):
    env = gym.make(ENV_ID, models=cfg, cache=cache, cache_mode=mode)
    obs, info = env.reset(seed=3)
    agent = make_agent("expert-1")
    agent.reset(env, obs, info)
    infos, done = [], False
    while not done:
        obs, r, term, trunc, info = env.step(agent.act(obs, info))
        infos.append(info)
        done = term or trunc
    return obs, infos


def _jsonable(infos):
    return json.dumps([{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in i.items()} for i in infos], sort_keys=True)


def test_expert_tool_calls_become_the_action_and_are_priced(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHESTRA_TEST_KEY", "sk-secret-123")
    with OpenAIServer(responder=_responder(), api_key="sk-secret-123") as srv:
        obs, infos = _episode(_models(srv.base_url), None, "off")
        first = infos[0]
        assert "expert-1 called <tool_call>" in first["new_messages"][1]["content"] and "calculate" in obs
        assert first["cost_usd"] == (900 * 1.25 + 40 * 10.0) / 1e6
        assert first["latency_s"] > 0
        assert infos[-1]["end_reason"] == "user_stop"
        assert "sk-secret-123" not in obs and "sk-secret-123" not in _jsonable(infos)


def test_record_then_replay_gives_same_transcript_and_info_with_zero_requests(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHESTRA_TEST_KEY", "sk-secret-123")
    db = tmp_path / "calls.sqlite"
    with OpenAIServer(responder=_responder(), api_key="sk-secret-123") as srv:
        cfg = _models(srv.base_url)
        obs1, infos1 = _episode(cfg, str(db), "record")
        recorded = srv.count
        assert recorded == 3
        obs2, infos2 = _episode(cfg, str(db), "replay")
        assert srv.count == recorded  # the server saw no request during replay
    assert obs1 == obs2
    assert _jsonable(infos1) == _jsonable(infos2)
    assert "sk-secret-123" not in db.read_bytes().decode("latin-1")


def test_turn_scope_real_expert_acts_until_its_message(tmp_path, monkeypatch):
    """expert_scope="turn" with a real endpoint: one call_expert runs the expert's two tool calls and its
    message (three requests), each request seeing what the expert already did; the cost is their sum."""
    monkeypatch.setenv("ORCHESTRA_TEST_KEY", "sk-secret-123")
    seen = []
    inner = _responder()

    def respond(body):
        seen.append(body["messages"][-1]["content"])
        return inner(body)

    with OpenAIServer(responder=respond, api_key="sk-secret-123") as srv:
        env = gym.make(ENV_ID, models=_models(srv.base_url), expert_scope="turn")
        env.reset(seed=3)
        _, _, term, trunc, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-1"}})
        assert srv.count == 3 and info["tool_calls"]["expert-1"] == 1 and info["turn"] == 3
    text = info["new_messages"][1]["content"]
    assert text.count("expert-1 called <tool_call>") == 2 and "expert-1 sent the user this message" in text
    assert "already done this in your turn" in seen[1] and "1 + 2" in seen[1] and "2 + 2" in seen[2]
    assert info["cost_usd"] == (900 * 1.25 + 40 * 10.0) * 2 / 1e6 + (950 * 1.25 + 20 * 10.0) / 1e6
    env.close()
