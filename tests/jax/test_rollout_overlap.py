"""Tool calls overlapped with decoding (`rollout.overlap_tools`, issue 36 item 2): with the option off the
rollouts are bit-identical to the lockstep engine of before (a digest pinned on main before the change); with it
on they are deterministic for a seed and valid (groups, tasks, log-probs equal the trainer's)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from orchestra_jax import rollout
from tests.jax.test_rollout import ONLY_EXPERT, _memorize, _tiny_qwen3, make_env, tok  # noqa: F401  (fixture)

sampler_mod = pytest.importorskip("orchestra_jax.sampler")


def rollout_digest(trajs) -> str:
    """sha256 over every trajectory's token ids, loss mask, sampler log-probs (float32 bytes) and reward vector."""
    h = hashlib.sha256()
    for t in trajs:
        h.update(np.asarray(t.tokens, np.int64).tobytes())
        h.update(np.asarray(t.loss_mask, np.float32).tobytes())
        h.update(np.asarray(t.sampler_logp, np.float32).tobytes())
        h.update(np.asarray(t.info.get("reward_vector", []), np.float64).tobytes())
        h.update(repr((t.group, t.task_id, t.turns, t.cut_reason, t.terminated, t.truncated)).encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def policy(tok):  # noqa: F811
    model = _tiny_qwen3(tok.vocab_size, seed=1)
    _memorize(model, tok, "", steps=80)  # writes call_expert calls most of the time at T = 1: several turns
    return model


def _collect(policy, tok, **kw):  # noqa: F811
    sampler = sampler_mod.Sampler(policy, eos_ids=tok.eos_ids, max_cache_len=4096, pad_id=tok.pad_id)
    envs = [make_env(max_turns=3) for _ in range(6)]
    return rollout.collect_rollouts(sampler, tok, envs, [dict(ONLY_EXPERT), dict(ONLY_EXPERT), dict(ONLY_EXPERT)],
                                    rollouts_per_task=2, seed=5, max_new_tokens=40, max_seq_len=2048,
                                    temperature=1.0, max_turns=3, **kw)


def test_lockstep_rollouts_are_bit_identical_to_before(policy, tok):  # noqa: F811
    trajs, stats = _collect(policy, tok)
    assert rollout_digest(trajs) == "b551a384d8625ade0381d9af2cdd6a495426db09fc0ef78a59fcf271b5d93cec"
