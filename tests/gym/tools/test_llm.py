"""OpenAIChatModel against a real local OpenAI-compatible server (tests/servers.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time

import numpy as np
import pytest

from orchestra_gym import pricing
from orchestra_gym.tools.llm import ChatModel, ChatResponse, OpenAIChatModel, RetryPolicy
from orchestra_gym.types import Message, ToolSpec
from tests.servers import OpenAIServer

SECRET = "sk-test-0123456789-SECRET-abcdef"
KEY_ENV = "ORCHESTRA_TEST_LLM_KEY"

ORDER_TOOL = ToolSpec(
    name="get_order",
    description="Look up an order by id.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def fast_retry(max_retries: int = 3, timeout_s: float = 5.0) -> RetryPolicy:
    return RetryPolicy(max_retries=max_retries, base_backoff_s=0.01, max_backoff_s=0.05, timeout_s=timeout_s)


def test_tool_call_round_trip_cost_and_latency(server):
    server.queue_reply(content="Checking.", tool_calls=[{"name": "get_order", "arguments": {"order_id": "#W1"},
                                                         "id": "call_a"}], usage=(1234, 567))
    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry())
    assert isinstance(m, ChatModel)
    msgs = [Message("system", "You are helpful."), Message("user", "Where is order #W1?")]
    r = m.complete(msgs, tools=[ORDER_TOOL], temperature=0.0, seed=7, max_tokens=64, tool_choice="auto")
    assert r.error is None and r.ok
    assert r.message.role == "assistant" and r.message.content == "Checking."
    assert len(r.message.tool_calls) == 1
    call = r.message.tool_calls[0]
    assert (call.name, call.arguments, call.id) == ("get_order", {"order_id": "#W1"}, "call_a")
    assert r.usage.prompt_tokens == 1234.0 and r.usage.completion_tokens == 567.0
    assert r.usage.cost_usd == pricing.cost_usd("gpt-5", 1234, 567)
    assert r.usage.cost_usd == (1234 * 1.25 + 567 * 10.0) / 1e6
    assert r.usage.latency_s > 0
    assert r.raw["attempts"] == 1 and r.raw["finish_reason"] == "tool_calls"
    body = server.chat_requests[0]
    assert body["model"] == "gpt-5"
    assert body["messages"] == [{"role": "system", "content": "You are helpful."},
                                {"role": "user", "content": "Where is order #W1?"}]
    assert body["tools"] == [ORDER_TOOL.to_openai()]
    assert (body["temperature"], body["seed"], body["max_tokens"], body["tool_choice"]) == (0.0, 7, 64, "auto")
    # the reply feeds back as a conversation turn (tool result message) in the next call
    tr = r.to_tool_result()
    assert tr.metadata["tool_calls"] == [{"id": "call_a", "name": "get_order", "arguments": {"order_id": "#W1"}}]
    msgs2 = msgs + [r.message, Message("tool", '{"status": "shipped"}', tool_call_id="call_a", name="get_order")]
    r2 = m.complete(msgs2)
    assert r2.ok and r2.message.content == 'echo: Where is order #W1?'
    sent = server.chat_requests[1]["messages"]
    assert sent[2]["tool_calls"][0]["function"] == {"name": "get_order", "arguments": '{"order_id": "#W1"}'}
    assert sent[3] == {"role": "tool", "content": '{"status": "shipped"}', "tool_call_id": "call_a",
                       "name": "get_order"}
    assert ChatResponse.from_dict(r.to_dict()) == r


def test_explicit_price_overrides_schedule(server):
    server.queue_reply("ok", usage=(1000, 2000))
    m = OpenAIChatModel("my-local-model", server.base_url, price=pricing.ModelPrice(0.5, 3.0), retry=fast_retry())
    r = m.complete([Message("user", "hi")])
    assert r.usage.cost_usd == (1000 * 0.5 + 2000 * 3.0) / 1e6


def test_unknown_model_without_price_is_a_clear_error(server):
    with pytest.raises(KeyError, match="gpt-55.*did you mean 'gpt-5'.*price=ModelPrice"):
        OpenAIChatModel("gpt-55", server.base_url)
    with pytest.raises(ValueError, match="base_url must start with http"):
        OpenAIChatModel("gpt-5", "localhost:8000/v1")


def test_429_retry_after_is_honoured(server):
    server.queue_fault("429", retry_after=0.3)
    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry())
    r = m.complete([Message("user", "hi")])
    assert r.ok and r.message.content == "echo: hi"
    assert r.raw["attempts"] == 2 and server.count == 2
    gap = server.requests[1].time - server.requests[0].time
    assert gap >= 0.3  # waited the server's Retry-After, not the 0.05 s jitter cap
    assert r.usage.latency_s >= 0.3


def test_500_and_dropped_connection_are_retried(server):
    server.queue_fault("500")
    server.queue_fault("drop")
    server.queue_fault("503")
    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry(max_retries=3))
    r = m.complete([Message("user", "again")])
    assert r.ok and r.message.content == "echo: again" and r.raw["attempts"] == 4 and server.count == 4


def test_retries_exhausted_become_error_result(server):
    server.queue_fault("500", times=5)
    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry(max_retries=2))
    r = m.complete([Message("user", "hi")])
    assert not r.ok and server.count == 3
    assert "HTTP 500" in r.error and "3 attempts" in r.error and "gpt-5" in r.error
    assert r.usage.cost_usd == 0.0 and r.usage.latency_s > 0 and r.message.content == ""
    tr = r.to_tool_result()
    assert tr.error and "HTTP 500" in tr.content


def test_4xx_is_not_retried(server):
    server.queue_fault("401")
    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry(max_retries=3))
    r = m.complete([Message("user", "hi")])
    assert "HTTP 401" in r.error and "1 attempt" in r.error and server.count == 1


def test_timeout_becomes_error_result(server):
    server.queue_fault("delay", seconds=1.5, times=2)
    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry(max_retries=1, timeout_s=0.3))
    t0 = time.perf_counter()
    r = m.complete([Message("user", "slow")])
    assert not r.ok and "timeout" in r.error and "2 attempts" in r.error
    assert time.perf_counter() - t0 < 1.5  # did not wait for the server's delay
    assert server.count == 2


def test_malformed_json_and_bad_tool_arguments(server):
    server.queue_fault("malformed")
    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry())
    r = m.complete([Message("user", "hi")])
    assert not r.ok and "malformed response" in r.error and "HTTP 200" in r.error
    server.queue_reply(tool_calls=[{"name": "get_order", "arguments": "{not json"},
                                   {"name": "get_order", "arguments": "[1, 2]"}])
    r = m.complete([Message("user", "hi")])
    assert r.ok and [c.arguments for c in r.message.tool_calls] == [{}, {}]
    assert len(r.raw["tool_call_errors"]) == 2 and "not valid JSON" in r.raw["tool_call_errors"][0]
    assert r.raw["bad_arguments"] == {"call_0": "{not json", "call_1": "[1, 2]"}  # as sent, for the env's parser


def test_connection_refused_is_error_not_exception():
    with OpenAIServer() as srv:
        url = srv.base_url
    m = OpenAIChatModel("gpt-5", url, retry=fast_retry(max_retries=1))
    r = m.complete([Message("user", "hi")])
    assert not r.ok and "connection error" in r.error and "2 attempts" in r.error
    r = asyncio.run(m.acomplete([Message("user", "hi")]))
    assert not r.ok and "connection error" in r.error


def test_bad_sampling_argument_is_error(server):
    m = OpenAIChatModel("gpt-5", server.base_url)
    r = m.complete([Message("user", "hi")], temprature=0.5)
    assert not r.ok and "temprature" in r.error and server.count == 0


def test_api_key_from_env_and_never_leaked(server, monkeypatch, caplog):
    server.api_key = SECRET
    m = OpenAIChatModel("gpt-5", server.base_url, api_key_env=KEY_ENV, retry=fast_retry(max_retries=1))
    monkeypatch.delenv(KEY_ENV, raising=False)
    r = m.complete([Message("user", "hi")])
    assert not r.ok and KEY_ENV in r.error and server.count == 0
    monkeypatch.setenv(KEY_ENV, SECRET)  # read at call time
    outputs = []
    with caplog.at_level(logging.DEBUG):
        ok = m.complete([Message("user", "hi")])
        assert ok.ok and server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"
        outputs.append(ok)
        server.queue_fault("401")  # echoes the request headers (with the key) in the body
        outputs.append(m.complete([Message("user", "hi")]))
        server.queue_fault("500", times=2)
        outputs.append(m.complete([Message("user", "hi")]))
        server.queue_fault("malformed")
        outputs.append(m.complete([Message("user", "hi")]))
        outputs.append(asyncio.run(m.acomplete([Message("user", "hi")])))
    assert "HTTP 401" in outputs[1].error and "***" in outputs[1].error  # the echoed key was redacted
    texts = [repr(m), str(vars(m)), caplog.text] + [repr(o) + str(o.to_dict()) + repr(o.to_tool_result())
                                                  for o in outputs]
    assert "retry 1/1" in caplog.text
    for t in texts:
        assert SECRET not in t


def test_sync_concurrency_is_bounded(server):
    server.queue_fault("delay", seconds=0.2, times=6)
    m = OpenAIChatModel("gpt-5", server.base_url, max_concurrency=2, retry=fast_retry())
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(m.complete([Message("user", f"q{i}")])))
               for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and all(r.ok for r in results)
    assert server.max_in_flight == 2


def test_the_limit_holds_across_objects_of_one_model(server):
    """Each env of a concurrent evaluation builds its own model object from the models file: the
    model's max_concurrency holds across all of them (one semaphore per endpoint, model and limit)."""
    server.queue_fault("delay", seconds=0.2, times=6)
    models = [OpenAIChatModel("gpt-5", server.base_url, max_concurrency=2, retry=fast_retry()) for _ in range(3)]
    threads = [threading.Thread(target=lambda i=i: models[i % 3].complete([Message("user", f"q{i}")])) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert server.max_in_flight == 2 and server.count == 6
    assert models[0]._sem is models[2]._sem
    assert OpenAIChatModel("gpt-5", server.base_url, max_concurrency=3)._sem is not models[0]._sem
    assert OpenAIChatModel("gpt-5-mini", server.base_url, max_concurrency=2)._sem is not models[0]._sem


def test_async_concurrency_is_bounded(server):
    server.queue_fault("delay", seconds=0.2, times=6)
    m = OpenAIChatModel("gpt-5", server.base_url, max_concurrency=3, retry=fast_retry())

    async def main():
        return await asyncio.gather(*[m.acomplete([Message("user", f"q{i}")]) for i in range(6)])

    results = asyncio.run(main())
    assert [r.message.content for r in results] == [f"echo: q{i}" for i in range(6)]
    assert server.max_in_flight == 3 and server.count == 6


def test_model_pickles_and_works_after(server):
    import pickle

    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry())
    assert m.complete([Message("user", "a")]).ok
    m2 = pickle.loads(pickle.dumps(m))
    assert m2.complete([Message("user", "b")]).message.content == "echo: b"
    m.close(), m2.close()


# -- models file -------------------------------------------------------------------------------------
from orchestra_gym.tools.models import DEFAULT_MODELS_FILE, ModelsFileError, load_models  # noqa: E402

PAPER_IDS = ([f"expert-{i}" for i in range(1, 4)] + [f"search-{i}" for i in range(1, 4)]
             + [f"reasoner-{i}" for i in range(1, 4)] + [f"answer-{i}" for i in range(1, 5)]
             + ["answer-math-1", "answer-math-2"])


def test_default_models_file_maps_paper_ids_with_paper_prices(monkeypatch):
    monkeypatch.delenv("ORCHESTRA_MODELS", raising=False)
    cfg = load_models()
    assert cfg.source == str(DEFAULT_MODELS_FILE)
    assert {a: cfg.resolve(a).id for a in PAPER_IDS} == {
        "expert-1": "gpt-5", "expert-2": "gpt-5-mini", "expert-3": "Qwen/Qwen3-32B",
        "search-1": "gpt-5", "search-2": "gpt-5-mini", "search-3": "Qwen/Qwen3-32B",
        "reasoner-1": "gpt-5", "reasoner-2": "gpt-5-mini", "reasoner-3": "Qwen/Qwen2.5-Coder-32B-Instruct",
        "answer-1": "gpt-5", "answer-2": "gpt-5-mini", "answer-3": "meta-llama/Llama-3.3-70B-Instruct",
        "answer-4": "Qwen/Qwen3-32B", "answer-math-1": "Qwen/Qwen2.5-Math-72B-Instruct",
        "answer-math-2": "Qwen/Qwen2.5-Math-7B-Instruct"}
    for mid, entry in cfg.models.items():  # the shipped prices are the paper's
        assert entry.price == pricing.PAPER.price(mid), mid
    sched = cfg.pricing_schedule()
    assert sched.price("answer-math-2") == pricing.ModelPrice(0.2, 0.2)
    assert cfg.resolve("gpt-5").api_key_env == "OPENAI_API_KEY" and cfg.resolve("Qwen3-32B").api_key_env is None
    with pytest.raises(KeyError, match="unknown model 'expret-1' \\(did you mean 'expert-1'.*models_default.toml"):
        cfg.resolve("expret-1")


def test_models_file_to_working_chat_model(tmp_path, server, monkeypatch):
    server.api_key = SECRET
    monkeypatch.setenv(KEY_ENV, SECRET)
    f = tmp_path / "models.toml"
    f.write_text(f"""
[defaults]
timeout_s = 5.0
max_retries = 1

[models."my/model"]
base_url = "{server.base_url}"
api_key_env = "{KEY_ENV}"
input_per_m = 2.0
output_per_m = 4.0
served_name = "served-model"
sampling = {{ temperature = 0.25 }}

[aliases]
"expert-1" = "my/model"
""")
    monkeypatch.setenv("ORCHESTRA_MODELS", str(f))
    cfg = load_models()
    m = cfg.chat_model("expert-1")
    assert (m.model, m.retry.timeout_s, m.retry.max_retries) == ("served-model", 5.0, 1)
    server.queue_reply("fine", usage=(100, 50))
    r = m.complete([Message("user", "hi")])
    assert r.ok and r.usage.cost_usd == (100 * 2.0 + 50 * 4.0) / 1e6
    assert server.chat_requests[0]["temperature"] == 0.25 and server.chat_requests[0]["model"] == "served-model"
    assert cfg.pricing_schedule().price("expert-1") == pricing.ModelPrice(2.0, 4.0)


def test_models_file_yaml(tmp_path):
    pytest.importorskip("yaml", reason="YAML models files need PyYAML")
    f = tmp_path / "m.yaml"
    f.write_text("models:\n  gpt-5:\n    base_url: http://x/v1\naliases:\n  answer-1: gpt-5\n")
    cfg = load_models(f)
    assert cfg.resolve("answer-1").base_url == "http://x/v1" and cfg.resolve("gpt-5").price is None
    assert cfg.pricing_schedule().price("answer-1") == pricing.PAPER.price("gpt-5")


@pytest.mark.parametrize("text, match", [
    ('[models."a"\nbase_url = 1', r"TOML syntax error.*fix:"),
    ('[models."a"]\nbase_url = "http://x/v1"\ninput_per_mm = 1.0', r"\[models.'a'\].*unknown key 'input_per_mm' "
                                                                    r"\(did you mean 'input_per_m'\?\)"),
    ('[models."a"]\napi_key_env = "K"', r"\[models.'a'\].base_url: must be an http\(s\) URL.*fix: write base_url"),
    ('[models."a"]\nbase_url = "http://x/v1"\ninput_per_m = "cheap"\noutput_per_m = 1.0',
     r"input_per_m: must be a number, got 'cheap'"),
    ('[models."a"]\nbase_url = "http://x/v1"\napi_key_env = "sk-abc def"', r"api_key_env.*variable NAME"),
    ('[models."a"]\nbase_url = "http://x/v1"\n[aliases]\n"answer-1" = "b"', r"\[aliases\].'answer-1'.*unknown model 'b'"),
    ('[aliases]\n"x" = "y"', r"\[models\]: missing or empty"),
    ('[models."a"]\nbase_url = "http://x/v1"\ntool_calling = "hermes"',
     r"\[models.'a'\].tool_calling: must be one of \['native', 'text'\], got 'hermes'"),
])
def test_bad_models_file_errors_name_file_key_and_fix(tmp_path, text, match):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ModelsFileError, match=match) as ei:
        load_models(f)
    assert str(f) in str(ei.value) and "fix:" in str(ei.value)


@pytest.mark.parametrize("line, match", [
    ("output_per_m = nan", r"\[models.'m'\].output_per_m: must be a finite number, got nan"),
    ("input_per_m = -inf", r"\[models.'m'\].input_per_m: must be a finite number, got -inf"),
    ("timeout_s = inf", r"\[models.'m'\].timeout_s: must be a finite number, got inf"),
    ("max_concurrency = 2.5", r"\[models.'m'\].max_concurrency: must be an integer, got 2.5"),
    ('sampling = {temperature = "hot"}', r"\[models.'m'\].sampling: temperature must be a finite number, got 'hot'"),
    ("sampling = {top_p = nan}", r"\[models.'m'\].sampling: top_p must be a finite number, got nan"),
    ("sampling = {max_tokens = 1.5}", r"\[models.'m'\].sampling: max_tokens must be an integer, got 1.5"),
    ("sampling = {stop = 3}", r"\[models.'m'\].sampling: stop must be a string or a list of strings"),
])
def test_models_file_values_are_finite_and_typed_at_load(tmp_path, line, match):
    """Issue 48 item 14: every number of a models file is finite and of its type, checked at load
    (naming the model and the key); before, these loaded and failed mid-run (inf: OverflowError on
    every request; NaN price: "cost_usd must be finite" after a run folder was written)."""
    f = tmp_path / "m.toml"
    other_price = {"output_per_m": "input_per_m = 1.0", "input_per_m": "output_per_m = 1.0"}.get(line.split(" ")[0], "")
    f.write_text(f'[models."m"]\nbase_url = "http://127.0.0.1:9/v1"\n{line}\n{other_price}\n')
    with pytest.raises(ModelsFileError, match=match):
        load_models(f)
    f.write_text('[defaults]\ntimeout_s = nan\n[models."m"]\nbase_url = "http://127.0.0.1:9/v1"\n')
    with pytest.raises(ModelsFileError, match=r"\[defaults\].timeout_s: must be a finite number"):
        load_models(f)


def test_a_bad_models_file_value_stops_eval_before_the_run_folder(tmp_path):
    """Issue 48 item 14: `orchestra eval --agent llm:m --models F` with ``output_per_m = nan`` exits 2
    naming the model and key, and writes no run folder."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    f = tmp_path / "m.toml"
    f.write_text('[models."m"]\nbase_url = "http://127.0.0.1:9/v1"\ninput_per_m = 1.0\noutput_per_m = nan\n')
    run = tmp_path / "run"
    out = subprocess.run([sys.executable, "-m", "orchestra_jax.cli", "eval", "--env", "ToolOrchestra-ToolScale-v0",
                          "--agent", "llm:m", "--models", str(f), "--episodes", "1", "--output-dir", str(run),
                          "--no-progress"], cwd=root, capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert out.returncode == 2 and "[models.'m'].output_per_m: must be a finite number" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not run.exists()


def test_missing_models_file(tmp_path):
    with pytest.raises(ModelsFileError, match="does not exist"):
        load_models(tmp_path / "nope.toml")


# ------------------------------------------------------------------ HTTP faults (issue 16, items 10-13)


def test_trickled_body_is_cut_at_the_attempts_overall_deadline(server):
    server.queue_fault("trickle", seconds=0.1, times=2)  # the ~250-byte reply would take ~25 s
    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry(max_retries=1, timeout_s=1.0))
    t0 = time.perf_counter()
    r = m.complete([Message("user", "slowly")])
    elapsed = time.perf_counter() - t0
    assert not r.ok and "deadline of 1 s" in r.error and "2 attempts" in r.error
    assert elapsed < 2 * (1.0 + 0.5) + 0.5
    server.queue_fault("trickle", seconds=0.1, times=2)
    t0 = time.perf_counter()
    r = asyncio.run(m.acomplete([Message("user", "slowly")]))
    assert not r.ok and "deadline of 1 s" in r.error and time.perf_counter() - t0 < 2 * 1.0 + 0.5


@pytest.mark.parametrize("declare_length", [True, False])
def test_response_size_is_capped_and_not_retried(server, declare_length):
    server.queue_fault("huge", size=5_000_000, declare_length=declare_length)
    policy = RetryPolicy(max_retries=2, base_backoff_s=0.01, timeout_s=10.0, max_response_bytes=1_000_000)
    m = OpenAIChatModel("gpt-5", server.base_url, retry=policy)
    r = m.complete([Message("user", "big")])
    assert not r.ok and "exceeds max_response_bytes=1000000" in r.error and "1 attempt" in r.error
    assert server.count == 1
    r = m.complete([Message("user", "small")])  # the next call is fine
    assert r.ok and r.message.content == "echo: small"
    server.queue_fault("huge", size=5_000_000, declare_length=declare_length)
    r = asyncio.run(m.acomplete([Message("user", "big")]))
    assert not r.ok and "exceeds max_response_bytes=1000000" in r.error


@pytest.mark.parametrize("usage", [(1e30, 5), (5, 1e308), (-3, 5), (2.5, 1), (10_000_001, 0)])
def test_implausible_usage_is_a_tool_error_with_the_raw_values(server, usage, caplog):
    server.queue_reply(content="fine", usage=usage)
    m = OpenAIChatModel("gpt-5", server.base_url, retry=fast_retry())
    with caplog.at_level(logging.WARNING, logger="orchestra_gym.tools.llm"):
        r = m.complete([Message("user", "hi")])
    assert not r.ok and "implausible usage" in r.error and "usage not billed" in r.error
    assert r.raw["bad_usage"] == {"prompt_tokens": repr(usage[0]), "completion_tokens": repr(usage[1])}
    assert r.usage.cost_usd == 0.0 and r.usage.prompt_tokens == 0.0
    tr = r.to_tool_result()
    assert tr.error and tr.metadata["raw"]["bad_usage"] == r.raw["bad_usage"]
    assert "implausible usage" in caplog.text


def test_bad_usage_never_reaches_a_reward(tmp_path):
    import gymnasium as gym

    from orchestra_gym.rewards import group_preference_rewards
    from orchestra_gym.tools.models import parse_models

    with OpenAIServer(responder=lambda body: {"content": "done", "usage": (1e30, 1e308)}) as srv:
        cfg = parse_models({"models": {"big": {"base_url": srv.base_url, "input_per_m": 1.25, "output_per_m": 10.0}},
                            "aliases": {"expert-1": "big", "expert-2": "big", "expert-3": "big"}})
        vectors = []
        for seed in (0, 1):
            env = gym.make("ToolOrchestra-ToolScale-v0", models=cfg, max_turns=2)
            env.reset(seed=seed)
            _, _, term, trunc, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-1"}})
            assert "implausible usage" in info["new_messages"][-1]["content"] or "implausible usage" in str(info)
            assert info["cost_usd"] == 0.0
            while not (term or trunc):
                _, _, term, trunc, info = env.step("<message>bye</message>")
            vectors.append(info["reward_vector"])
    assert np.isfinite(np.asarray(vectors)).all()  # before: -inf cost, and the rewards raised
    rewards = group_preference_rewards(np.asarray(vectors), np.array([True, True]), np.ones(len(vectors[0])))
    assert np.isfinite(rewards).all()


def test_lone_surrogate_in_one_call_costs_one_call_only():
    import gymnasium as gym

    from orchestra_gym.tools.models import parse_models

    with OpenAIServer() as srv:
        cfg = parse_models({"models": {"m": {"base_url": srv.base_url, "input_per_m": 1.0, "output_per_m": 1.0}},
                            "aliases": {"expert-1": "m", "expert-2": "m", "expert-3": "m"}})
        env = gym.make("ToolOrchestra-ToolScale-v0", models=cfg, max_turns=10)
        env.reset(seed=0)
        env.step({"name": "calculate", "arguments": {"expression": "1 + \ud800"}})
        env.step('<tool_call>{"name": "calculate", "arguments": {"expression": "2 \ud800"}}</tool_call> \udfff')
        for _ in range(2):
            obs, _, _, _, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-1"}})
            assert "UnicodeEncodeError" not in obs and info["cost_usd"] > 0
        assert srv.count == 2
        sent = json.dumps(srv.chat_requests[-1])
        assert "\\ufffd" in sent and "\\ud800" not in sent


@pytest.mark.parametrize("encoding,size", [("gzip", 64 << 20), ("deflate", 64 << 20), ("gzip, gzip", 128 << 20)])
def test_compressed_bombs_stop_at_the_cap_while_decoding(server, encoding, size):
    """Issue 48 item 12: a reply of a few KiB (gzip ~1000:1, or gzip inside gzip) that inflates to
    64-128 MiB fails the attempt at max_response_bytes (1 MiB), stacked codings are refused unread,
    and the client's peak allocation stays within a few MiB (it was the whole inflated chunk:
    +270 to +550 MiB); sync and async."""
    import random
    import tracemalloc

    import httpx

    from orchestra_gym.tools.llm import asend_with_retries, send_with_retries

    policy = RetryPolicy(max_retries=2, base_backoff_s=0.01, timeout_s=20.0, max_response_bytes=1 << 20)
    url, sent = server.base_url + "/chat/completions", {"messages": []}
    server.queue_fault("bomb", size=size, encoding=encoding, times=2)  # built here, before tracing starts
    peaks = []
    with httpx.Client() as client:
        tracemalloc.start()
        try:
            out = send_with_retries(client, url, sent, {}, policy, random.Random(0))
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.reset_peak()

            async def async_call():
                async with httpx.AsyncClient() as aclient:
                    return await asend_with_retries(aclient, url, sent, {}, policy, random.Random(0))

            aout = asyncio.run(async_call())
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    expect = "Content-Encoding 'gzip, gzip' is refused" if "," in encoding else "max_response_bytes=1048576"
    for o in (out, aout):
        assert o.response is None and o.attempts == 1, o
        assert expect in o.error, o.error
    assert max(peaks) < 8 << 20, peaks
    if "," in encoding:
        return
    server.queue_fault("bomb", size=1000, encoding=encoding)  # a small encoded reply still reads whole
    with httpx.Client() as client:
        ok = send_with_retries(client, url, sent, {}, policy, random.Random(0))
    assert ok.response.json() == {"pad": "x" * 1000}
