"""Simulated experts: deterministic under a seed, accuracy as configured, usage from the models."""

import math
import subprocess
import sys

import numpy as np
import pytest

from orchestra_gym import pricing
from orchestra_gym.tools.simulated import DEFAULT_EXPERTS, QA_PROFILES, SimulatedModel, qa_model


def _model():
    return SimulatedModel(
        "m", "gpt-5", accuracy={"default": {"easy": 1.0, "medium": 0.7, "hard": 0.0}},
        ttft_s=1.0, prefill_tok_s=1000.0, decode_tok_s=100.0, completion_tokens=(100, 100),
    )


def test_usage_follows_the_latency_and_price_models():
    r = _model().respond("x" * 400, "right", lambda rng: "wrong", difficulty="easy")
    assert r.value == "right" and r.correct
    assert r.usage.prompt_tokens == 100.0 and r.usage.completion_tokens == 100.0
    assert r.usage.latency_s == pytest.approx(1.0 + 100 / 1000 + 100 / 100)
    assert r.usage.cost_usd == pytest.approx(pricing.cost_usd("gpt-5", 100, 100))


def test_accuracy_table_is_respected():
    m = _model()
    hard = [m.respond(f"q{i}", 1, lambda rng: 0, difficulty="hard").value for i in range(200)]
    assert sum(hard) == 0
    med = [m.respond(f"q{i}", 1, lambda rng: 0, difficulty="medium").value for i in range(2000)]
    assert abs(np.mean(med) - 0.7) < 0.04


def test_same_seed_same_reply_across_processes():
    code = (
        "from orchestra_gym.tools.simulated import DEFAULT_EXPERTS as E;"
        "r=E[1].respond('hello world', 'R', lambda g: 'W', seed=(7,'t')); print(r.value, r.usage)"
    )
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout for _ in range(2)}
    here = DEFAULT_EXPERTS[1].respond("hello world", "R", lambda g: "W", seed=(7, "t"))
    assert outs == {f"{here.value} {here.usage}\n"}


def test_default_pool_trades_cost_for_accuracy():
    cost = [pricing.PAPER.price(e.model_id).output_per_m for e in DEFAULT_EXPERTS]
    acc = [e.p_correct("any", "medium") for e in DEFAULT_EXPERTS]
    assert cost == sorted(cost, reverse=True)
    assert acc == sorted(acc, reverse=True)
    assert "expert-1: $1.25/1M input tokens" in DEFAULT_EXPERTS[0].describe()
    assert math.isfinite(DEFAULT_EXPERTS[2].usage("abc", np.random.default_rng(0)).latency_s)


def test_qa_profiles_keep_the_paper_ordering():
    m = qa_model("answer-math-1", "Qwen/Qwen2.5-Math-72B-Instruct")
    assert (m.name, m.model_id, m.ttft_s, m.decode_tok_s, m.completion_tokens) == (
        "answer-math-1", "Qwen/Qwen2.5-Math-72B-Instruct", 0.7, 60.0, (300, 900))
    assert m.p_correct("quantitative", "hard") == 0.98 and m.p_correct("lookup", "hard") == 0.3  # QA_SKILLS by group
    assert qa_model("x", "Qwen/Qwen2.5-Math-72B-Instruct").p_correct("math", "hard") == 0.4  # unlisted name: QA_PROFILES
    medium = {mid: qa_model("x", mid).p_correct("history", "medium") for mid in QA_PROFILES}
    assert medium["gpt-5"] > medium["gpt-5-mini"] > medium["Qwen/Qwen3-32B"] > medium["Qwen/Qwen2.5-Math-7B-Instruct"]
    assert all(pricing.PAPER.price(mid).output_per_m > 0 for mid in QA_PROFILES)  # every profile is priced
    with pytest.raises(KeyError, match=r"no QA simulator profile for model 'gpt-9'; known: \['Qwen"):
        qa_model("search-1", "gpt-9")


def test_with_profiles_changes_only_the_named_cells_and_refuses_bad_ones():
    """`with_profiles`: latency fields replace, accuracy cells merge into the expert's tables (a new category
    starts from its default table); the priced model and the other experts stay; bad input names the field."""
    from orchestra_gym.tools.simulated import with_profiles

    base = {e.name: e for e in DEFAULT_EXPERTS}
    pool = {e.name: e for e in with_profiles(DEFAULT_EXPERTS, {
        "expert-3": {"decode_tok_s": 20, "ttft_s": 1.0, "accuracy": {"compute": {"hard": 0.95}}}})}
    e3 = pool["expert-3"]
    assert (e3.decode_tok_s, e3.ttft_s, e3.model_id) == (20.0, 1.0, base["expert-3"].model_id)
    assert e3.p_correct("compute", "hard") == 0.95 and base["expert-3"].p_correct("compute", "hard") == 0.3
    assert e3.p_correct("compute", "medium") == 0.55 and e3.p_correct("lookup", "hard") == 0.3
    assert e3.typical_latency_s() == pytest.approx(1.0 + 250 / 20)  # completion (100 + 400) / 2 at 20 tokens/s
    assert pool["expert-1"] is base["expert-1"] and list(pool) == list(base)
    for bad, match in [({"expert-9": {"ttft_s": 1}}, "no expert 'expert-9'"),
                       ({"expert-3": {"model_id": "x"}}, r"\['expert-3'\]\['model_id'\]: not a profile field"),
                       ({"expert-3": {"decode_tok_s": 0}}, "must be a number > 0"),
                       ({"expert-3": {"accuracy": {"compute": {"extreme": 0.5}}}}, "difficulty 'extreme'"),
                       ({"expert-3": {"accuracy": {"compute": {"hard": 1.5}}}}, r"probability in \[0, 1\]")]:
        with pytest.raises(ValueError, match=match):
            with_profiles(DEFAULT_EXPERTS, bad)
