"""The trainer's evaluation files have no spaces in their names (issue 48 item 23): the preset's
held-out preferences are named ``accuracy first``... and each is written to ``eval_final_<name>.json``."""

from __future__ import annotations

import pytest

pytest.importorskip("orchestra_jax.model", reason="the Qwen3 policy is not in this checkout")

from orchestra_jax.evaluation import eval_file_name  # noqa: E402
from orchestra_jax.train_config import TrainConfig  # noqa: E402


def test_eval_file_names_have_no_spaces():
    names = list(TrainConfig.preset("tiny-toolscale").env.eval_preferences)
    assert any(" " in n for n in names), names  # the preset's names do have spaces
    files = [eval_file_name(f"final_{n}") for n in names]
    assert not any(" " in f for f in files) and len(set(files)) == len(names), files
    assert eval_file_name("final_accuracy first") == "eval_final_accuracy_first.json"
    assert eval_file_name("initial") == "eval_initial.json" and eval_file_name("final") == "eval_final.json"
