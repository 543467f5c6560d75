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
    assert rollout_digest(trajs) == "7b30a6adaeea8489c090aa7c7e237a8b9e5a6966514f14d96d5884497d82045b"


def test_overlapped_rollouts_are_deterministic_and_valid(policy, tok):  # noqa: F811
    import jax.numpy as jnp
    from flax import nnx

    from orchestra_jax import batch as batch_mod
    from orchestra_jax import train_step

    runs = [_collect(policy, tok, overlap_tools=True) for _ in range(2)]
    (a, sa), (b, _) = runs
    assert rollout_digest(a) == rollout_digest(b)  # same seed, same rollouts, whatever the threads' timing
    lock, _ = _collect(policy, tok)
    assert len(a) == len(lock) == 6 and sa.episodes == 6
    assert [t.group for t in a] == [0, 0, 1, 1, 2, 2]
    assert [t.task_id for t in a] == [t.task_id for t in lock]  # the same tasks, group by group
    assert sum(t.turns for t in a) > len(a)  # several turns: the env steps really interleave with decoding
    # every sampled token's log-prob equals the trainer's recomputation (temperature 1), to 1e-5
    data = batch_mod.to_batch(a, multiple=64)
    graphdef, params = nnx.split(policy, nnx.Param)
    fn = train_step.make_logp_fn(graphdef, chunk=64, temperature=1.0)
    lp = np.asarray(fn(params, jnp.asarray(data["tokens"][:, :-1]), jnp.asarray(data["tokens"][:, 1:]),
                       jnp.asarray(data["attention_mask"][:, :-1])))
    sampled = data["sampler_logp"][:, 1:] != 0
    assert sampled.sum() == sa.generated_tokens
    assert np.abs(lp[sampled] - data["sampler_logp"][:, 1:][sampled]).max() <= 1e-5


def test_row_keys_do_not_depend_on_the_batch(policy, tok):  # noqa: F811
    """With row_rng, a row's draws are the same alone or batched with other rows."""
    sampler = sampler_mod.Sampler(policy, eos_ids=tok.eos_ids, max_cache_len=256, pad_id=tok.pad_id, kv_min=64)
    prompts = [tok.encode("<|im_start|>assistant\n"), tok.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")]
    _, both = sampler.generate(sampler.prefill(prompts), 12, 1.0, rng=3, row_rng=[(0, 0), (1, 0)])
    _, alone = sampler.generate(sampler.prefill(prompts[1:]), 12, 1.0, rng=3, row_rng=[(1, 0)])
    assert both.tokens[1] == alone.tokens[0]
    np.testing.assert_allclose(both.logprobs[1], alone.logprobs[0], atol=1e-5)


def test_overlap_tools_is_validated():
    from orchestra_gym.errors import ConfigError
    from orchestra_jax.train_config import TrainConfig

    assert TrainConfig.preset("tiny-toolscale").rollout.overlap_tools is False  # the preset keeps lockstep
    assert TrainConfig.preset("tiny-toolscale", **{"rollout.overlap_tools": True}).rollout.overlap_tools is True
    with pytest.raises(ConfigError, match="rollout.overlap_tools"):
        TrainConfig.preset("tiny-toolscale", **{"rollout.overlap_tools": "yes"})
