"""Price tables: paper numbers, exact cost arithmetic, seeded random schedules."""

import math

import pytest

from orchestra_gym import pricing


def test_paper_prices_match_design_table():
    table = {
        "gpt-5": (1.25, 10.0),
        "gpt-5-mini": (0.25, 2.0),
        "Qwen/Qwen3-32B": (0.8, 0.8),
        "Qwen/Qwen2.5-Coder-32B-Instruct": (0.8, 0.8),
        "Qwen/Qwen2.5-Math-72B-Instruct": (0.9, 0.9),
        "Qwen/Qwen2.5-Math-7B-Instruct": (0.2, 0.2),
        "meta-llama/Llama-3.3-70B-Instruct": (0.9, 0.9),
        "Qwen/Qwen3-8B": (0.2, 0.2),
        "claude-opus-4-1": (15.0, 75.0),
    }
    for model, (i, o) in table.items():
        p = pricing.PAPER.price(model)
        assert (p.input_per_m, p.output_per_m) == (i, o), model
    assert pricing.PAPER.fees["code_interpreter_per_s"] == 8.3e-6
    assert pricing.PAPER.fees["web_search_per_call"] == 0.01


def test_cost_is_tokens_times_price():
    # 1000 prompt tokens at 1.25 USD/M + 500 completion tokens at 10 USD/M
    assert pricing.cost_usd("gpt-5", 1000, 500) == pytest.approx(0.00125 + 0.005, rel=0, abs=1e-15)
    assert pricing.cost_usd("Qwen3-32B", 1_000_000, 0) == pytest.approx(0.8)
    assert pricing.fee_usd("code_interpreter_per_s", 2.0) == pytest.approx(1.66e-5)


def test_unknown_model_suggests_close_match():
    with pytest.raises(KeyError, match="did you mean 'gpt-5'"):
        pricing.cost_usd("gpt5", 1, 1)
    with pytest.raises(ValueError, match="token counts"):
        pricing.cost_usd("gpt-5", -1, 1)
    with pytest.raises(KeyError, match="unknown pricing schedule"):
        pricing.get_schedule("nope")


def test_unseen_schedule_reverses_an_ordering():
    paper, unseen = pricing.PAPER, pricing.UNSEEN
    assert paper.price("Qwen/Qwen3-32B").output_per_m < paper.price("gpt-5-mini").output_per_m
    assert unseen.price("Qwen/Qwen3-32B").input_per_m < unseen.price("gpt-5-mini").input_per_m
    assert unseen.price("gpt-5").output_per_m == pytest.approx(16.0)


def test_random_schedule_is_seeded_and_bounded():
    a, b, c = pricing.random_schedule(3), pricing.random_schedule(3), pricing.random_schedule(4)
    assert a == b
    assert a != c
    for name, p in a.models.items():
        base = pricing.PAPER.price(name)
        assert 0.25 - 1e-12 <= p.input_per_m / base.input_per_m <= 4.0 + 1e-12
        assert 0.25 - 1e-12 <= p.output_per_m / base.output_per_m <= 4.0 + 1e-12
    assert a.price("Qwen3-32B") == a.price("Qwen/Qwen3-32B")  # aliases share one price
    assert not math.isclose(a.price("gpt-5").input_per_m, 1.25)
    with pytest.raises(ValueError):
        pricing.random_schedule(0, low=2.0, high=1.0)
