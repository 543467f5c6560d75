"""A sampling `orchestra_jax.agents.PolicyAgent` under ``orchestra_gym``'s eval runner: an episode's
text depends only on its own seed, so a resumed run equals the uninterrupted one episode for episode
(issue 48 item 22; before, the agent's PRNG key came from its count of episodes played in the process)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

pytest.importorskip("orchestra_jax.model", reason="the Qwen3 policy is not in this checkout")

from orchestra_gym.evaluation import run_episodes  # noqa: E402
from orchestra_jax.agents import PolicyAgent  # noqa: E402
from orchestra_jax.policy import build_policy, build_tokenizer  # noqa: E402
from orchestra_jax.train_config import TrainConfig  # noqa: E402

TINY = {"vocab_size": 512, "hidden_size": 32, "intermediate_size": 64, "num_layers": 1, "num_heads": 2,
        "num_kv_heads": 1, "head_dim": 16, "tie_word_embeddings": True}


def test_a_resumed_sampling_policy_eval_equals_the_uninterrupted_one(tmp_path):
    cfg = TrainConfig.preset("tiny-toolscale").replace(**{"model.overrides": TINY})
    tok = build_tokenizer(cfg, tmp_path)
    model, _ = build_policy(cfg, tok)
    agent = lambda: PolicyAgent(model, tok, max_new_tokens=8, max_seq_len=1536, temperature=1.0, seed=3)  # noqa: E731
    make = lambda: gym.make("ToolOrchestra-ToolScale-v0", max_turns=1, system_prompt="compact")  # noqa: E731

    def played(results):
        return [(r.seed, json.dumps(r.messages)) for r in results]

    one = agent()
    whole = run_episodes(make, lambda s: one, 3, seed=10, keep_messages=True)
    two = agent()  # a new process resuming: its first episode is the plan's second
    resumed = run_episodes(make, lambda s: two, 3, seed=10, keep_messages=True, done=whole[:1])
    assert played(resumed[1:]) == played(whole[1:])
    assert len({m for _, m in played(whole)}) == 3  # sampled: every episode's text differs
