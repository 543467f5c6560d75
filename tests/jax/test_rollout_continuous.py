"""Continuous batching (`rollout.engine = "continuous"`, issue 36 item 1; `orchestra_jax.slots.SlotSampler`):
deterministic for a seed, valid groups, sampler log-probs equal to the trainer's at T = 0.6 for two slot counts,
and a row's tokens do not depend on the slot count (per-row keys)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from orchestra_jax import rollout
from tests.jax.test_rollout import ONLY_EXPERT, make_env, tok  # noqa: F401  (fixture)
from tests.jax.test_rollout_overlap import policy, rollout_digest  # noqa: F401  (fixture)

sampler_mod = pytest.importorskip("orchestra_jax.sampler")
T = 0.6


@pytest.fixture(scope="module")
def collect(policy, tok):  # noqa: F811
    """collect(**kw) -> (trajectories, stats, sampler) of the 6-row rollout, memoised per keyword set."""
    sampler = sampler_mod.Sampler(policy, eos_ids=tok.eos_ids, max_cache_len=4096, pad_id=tok.pad_id)

    @functools.lru_cache(maxsize=None)
    def run(**kw):
        envs = [make_env(max_turns=3) for _ in range(6)]
        trajs, stats = rollout.collect_rollouts(sampler, tok, envs, [dict(ONLY_EXPERT)] * 3, rollouts_per_task=2,
                                                seed=5, max_new_tokens=40, max_seq_len=2048, temperature=T,
                                                max_turns=3, **kw)
        return trajs, stats

    return run


def test_continuous_rollouts_are_deterministic_and_valid(collect):
    a, sa = collect(engine="continuous", slots=2)
    again, _ = collect.__wrapped__(engine="continuous", slots=2)  # a second run, not memoised
    assert rollout_digest(again) == rollout_digest(a)
    lock, _ = collect()
    assert len(a) == 6 and sa.episodes == 6
    assert [t.group for t in a] == [0, 0, 1, 1, 2, 2]
    assert [t.task_id for t in a] == [t.task_id for t in lock]  # the same tasks, group by group
    assert sum(t.turns for t in a) > len(a)  # several turns: slots were refilled while tools ran
    assert sa.reprefills > 0  # some later turns lost their slot and were fed again from their conversation
    assert 0 < sa.busy_slot_steps < sa.slot_steps and sa.busy_slot_steps == sa.generated_tokens
    for t in a:
        assert len(t.tokens) == len(t.loss_mask) == len(t.sampler_logp)
        assert t.cut_reason in (None, *rollout.CUT_REASONS) and (t.cut_reason is None) == (t.terminated or t.truncated)


@pytest.mark.parametrize("slots", [2, 6])
def test_continuous_logprobs_equal_the_trainers_at_temperature_0_6(collect, policy, slots):  # noqa: F811
    import jax.numpy as jnp
    from flax import nnx

    from orchestra_jax import batch as batch_mod
    from orchestra_jax import train_step

    trajs, stats = collect(engine="continuous", slots=slots)
    data = batch_mod.to_batch(trajs, multiple=64)
    graphdef, params = nnx.split(policy, nnx.Param)
    fn = train_step.make_logp_fn(graphdef, chunk=64, temperature=T)
    lp = np.asarray(fn(params, jnp.asarray(data["tokens"][:, :-1]), jnp.asarray(data["tokens"][:, 1:]),
                       jnp.asarray(data["attention_mask"][:, :-1])))
    sampled = data["sampler_logp"][:, 1:] != 0  # at T = 0.6 a near-certain token's float32 log-prob can be 0.0
    assert stats.generated_tokens >= sampled.sum() >= 0.8 * stats.generated_tokens > 0
    # float32 log-probs of two code paths (the slot engine's decode and the trainer's forward): a few ulps of a
    # log-softmax over 512 logits; 1.4e-5 seen on an AVX2-only CPU, below 1e-5 on AVX-512
    assert np.abs(lp[sampled] - data["sampler_logp"][:, 1:][sampled]).max() <= 3e-5


def test_a_rows_tokens_do_not_depend_on_the_slot_count(collect):
    two, _ = collect(engine="continuous", slots=2)
    six, _ = collect(engine="continuous", slots=6)
    over, _ = collect(overlap_tools=True)  # the cohorts draw with the same per-row keys (r, turn)
    assert [t.tokens for t in two] == [t.tokens for t in six] == [t.tokens for t in over]
    for x, y in zip(two, six):
        np.testing.assert_allclose(x.sampler_logp, y.sampler_logp, atol=1e-5)


def test_engine_and_slots_are_validated():
    from orchestra_gym.errors import ConfigError
    from orchestra_jax.train_config import TrainConfig

    cfg = TrainConfig.preset("tiny-toolscale")
    assert (cfg.rollout.engine, cfg.rollout.slots) == ("lockstep", 0)  # off by default
    on = TrainConfig.preset("tiny-toolscale", **{"rollout.engine": "continuous", "rollout.slots": 16})
    assert (on.rollout.engine, on.rollout.slots) == ("continuous", 16)
    for bad in ({"rollout.engine": "vllm"}, {"rollout.slots": -1},
                {"rollout.engine": "continuous", "rollout.overlap_tools": True}):
        with pytest.raises(ConfigError, match="rollout.engine|rollout.slots"):
            TrainConfig.preset("tiny-toolscale", **bad)


def test_grpo_with_the_continuous_engine_trains_as_with_per_row_keys(tmp_path):
    """`Run.grpo` with `rollout.engine = "continuous"`: the records carry the idle-slot fraction and the
    re-prefills; the run does not depend on the slot count (a row samples with its own key),
    and is the overlap engine's run bit for bit (the same per-row keys, trainer-side old log-probs)."""
    from orchestra_jax import train
    from tests.jax.test_async_grpo import SMALL, _grpo_records
    from tests.jax.test_train import _cfg

    def go(name, **over):
        cfg = _cfg(tmp_path / name, **SMALL).replace(**over)
        return train.run_training(cfg)["params_sha256"], _grpo_records(tmp_path / name)

    two, recs = go("two", **{"rollout.engine": "continuous", "rollout.slots": 2})
    assert [r["updates"] for r in recs] == [0, 2]
    assert all(0.0 <= r["slot_idle"] < 1.0 and r["reprefills"] >= 0 for r in recs)
    every, recs_every = go("every", **{"rollout.engine": "continuous"})  # 0 = one slot per row
    assert every == two
    assert [r["generated_tokens"] for r in recs_every] == [r["generated_tokens"] for r in recs]
    overlap, _ = go("overlap", **{"rollout.overlap_tools": True})
    assert overlap == two
    assert "slot_idle" not in _grpo_records(tmp_path / "overlap")[0]  # lockstep (cohorts): no slots
