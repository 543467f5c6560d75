"""KV-cache sampler: log-probs equal the model's, greedy equals HF generate, multi-turn, stops."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jax.numpy as jnp  # noqa: E402

from orchestra_jax.model import token_logprobs  # noqa: E402
from orchestra_jax.sampler import Sampler, bucket  # noqa: E402
from orchestra_jax.weights import load_hf_checkpoint  # noqa: E402
from tests.jax.test_model import make_hf  # noqa: E402

EOS = (7, 9)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf_sampler")
    hf = make_hf(path, seed=21, heads=4, kv=2, head_dim=16)
    model, config = load_hf_checkpoint(path)
    sampler = Sampler(model, eos_ids=EOS, max_cache_len=128, chunk=8, kv_min=32)  # windows 32, 64, 128
    return hf, model, sampler


def model_logprobs(model, seq, temperature):
    ids = jnp.asarray([seq[:-1]], jnp.int32)
    tg = jnp.asarray([seq[1:]], jnp.int32)
    return np.asarray(token_logprobs(model, ids, tg, temperature=temperature, chunk=16))[0]


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_multiturn_sampler_logprobs_equal_model_logprobs(setup, temperature):
    _, model, sampler = setup
    rs = np.random.RandomState(0)
    prompts = [list(rs.randint(10, 300, n)) for n in (5, 11, 3)]
    state = sampler.prefill(prompts)
    state, out1 = sampler.generate(state, 10, temperature, rng=1)
    env = [list(rs.randint(10, 300, n)) for n in (4, 0, 6)]
    state = sampler.extend(state, env)
    state, out2 = sampler.generate(state, 6, temperature, rng=2, top_k=50, top_p=0.9)
    for b in range(3):
        assert out1.finish_reasons[b] in ("eos", "length")
        seq = prompts[b] + out1.tokens[b] + env[b] + out2.tokens[b]
        assert state.tokens[b] == seq
        ref = model_logprobs(model, seq, temperature)
        p0 = len(prompts[b])
        got1 = np.asarray(out1.logprobs[b])
        assert np.abs(got1 - ref[p0 - 1:p0 - 1 + len(got1)]).max() <= 1e-5
        p1 = p0 + len(out1.tokens[b]) + len(env[b])
        got2 = np.asarray(out2.logprobs[b])
        assert len(got2) > 0
        assert np.abs(got2 - ref[p1 - 1:p1 - 1 + len(got2)]).max() <= 1e-5
        if out1.finish_reasons[b] == "eos":
            assert out1.tokens[b][-1] in EOS
        else:
            assert len(out1.tokens[b]) == 10


def test_chunked_prefill_equals_one_feed(setup):
    """A block wider than prefill_chunk is fed in slices: same cache slots, same next-token logits and
    the same sampled tokens and log-probs (to float rounding) as one feed, and both agree with the
    model's own log-probs."""
    _, model, _ = setup
    rs = np.random.RandomState(5)
    prompts = [list(rs.randint(10, 300, n)) for n in (70, 9, 41)]  # block width bucket(70) = 128
    env = [list(rs.randint(10, 300, n)) for n in (3, 40, 0)]  # width 64 > 16: chunked too
    runs = []
    for prefill_chunk in (0, 16):
        sampler = Sampler(model, eos_ids=EOS, max_cache_len=256, chunk=8, kv_min=32, prefill_chunk=prefill_chunk)
        state = sampler.prefill(prompts)
        assert int(state.cache.slot) == 128
        logits0 = np.asarray(state.next_logits)
        state, out1 = sampler.generate(state, 5, 0.0)
        state = sampler.extend(state, env)
        state, out2 = sampler.generate(state, 5, 1.0, rng=4)
        runs.append((logits0, out1, out2, state))
    (l_a, a1, a2, sa), (l_b, b1, b2, sb) = runs
    assert np.abs(l_a - l_b).max() <= 1e-4
    assert a1.tokens == b1.tokens and a2.tokens == b2.tokens and sa.tokens == sb.tokens
    assert int(sa.cache.slot) == int(sb.cache.slot)
    np.testing.assert_array_equal(np.asarray(sa.cache.valid), np.asarray(sb.cache.valid))
    for b in range(3):
        np.testing.assert_allclose(b2.logprobs[b], a2.logprobs[b], atol=1e-5)
        seq = sb.tokens[b]
        ref = model_logprobs(model, seq, 1.0)
        start = len(seq) - len(b2.tokens[b])
        assert np.abs(np.asarray(b2.logprobs[b]) - ref[start - 1:start - 1 + len(b2.tokens[b])]).max() <= 1e-5
    with pytest.raises(ValueError, match="prefill_chunk"):
        Sampler(model, eos_ids=EOS, prefill_chunk=-1)


def test_greedy_equals_hf_generate(setup):
    hf, _, sampler = setup
    rs = np.random.RandomState(3)
    prompts = [list(rs.randint(10, 300, n)) for n in (6, 9, 4)]
    state, out = sampler.generate(sampler.prefill(prompts), 12, temperature=0.0)
    for b, p in enumerate(prompts):
        with torch.no_grad():
            ref = hf.generate(torch.tensor([p]), max_new_tokens=12, do_sample=False, eos_token_id=list(EOS),
                              pad_token_id=0)[0, len(p):].tolist()
        assert out.tokens[b] == ref


def test_stop_token_seqs_stop_strings_and_inactive_rows(setup):
    _, model, sampler = setup
    prompt = [list(np.random.RandomState(4).randint(10, 300, 7))]
    _, free = sampler.generate(sampler.prefill(prompt * 3), 12, temperature=0.0)
    toks = free.tokens[0]
    assert len(toks) >= 6 and not set(toks[:6]) & set(EOS)
    # a two-token stop sequence ending at index 4
    seq = toks[3:5]
    first = next(i for i in range(1, len(toks)) if toks[i - 1:i + 1] == seq)
    state, out = sampler.generate(sampler.prefill(prompt * 3), 12, temperature=0.0,
                                  stop_token_seqs=[seq], active=[True, False, True])
    assert out.tokens[0] == toks[:first + 1] and out.finish_reasons[0] == "stop"
    assert out.tokens[1] == [] and out.finish_reasons[1] == "inactive"
    # a host-side stop string: the text of token toks[2] in a toy decoder
    decode = lambda ids: "".join(f"<{i}>" for i in ids)  # noqa: E731
    cut = toks.index(toks[2])
    state, out = sampler.generate(sampler.prefill(prompt * 3), 12, temperature=0.0,
                                  stop_strings=[f"<{toks[2]}>"], decode=decode)
    assert out.tokens[0] == toks[:cut + 1] and out.finish_reasons[0] == "stop"
    assert state.pending == [[toks[cut]]] * 3
    # continuing after the cut: the pending token is fed first, log-probs stay exact
    state = sampler.extend(state, [[11, 12]] * 3)
    state, more = sampler.generate(state, 4, temperature=1.0, rng=5)
    seq_all = prompt[0] + toks[:cut + 1] + [11, 12] + more.tokens[0]
    assert state.tokens[0] == seq_all
    ref = model_logprobs(model, seq_all, 1.0)
    start = len(seq_all) - len(more.tokens[0]) - 1
    assert np.abs(np.asarray(more.logprobs[0]) - ref[start:start + len(more.tokens[0])]).max() <= 1e-5


def test_cache_limits_and_errors(setup):
    _, _, sampler = setup
    assert [bucket(n) for n in (1, 17, 64, 65, 130)] == [16, 32, 64, 128, 192]
    with pytest.raises(ValueError, match="empty"):
        sampler.prefill([[1, 2], [], [3]])
    with pytest.raises(ValueError, match="max_cache_len"):
        sampler.prefill([list(range(10, 140))] * 3)
    state = sampler.prefill([list(range(10, 70))] * 3)  # 60 tokens -> 64 slots
    # room for a block and a full turn: the longest block of 20 tokens takes 32 slots (64 + 32 + 32 <= 128),
    # one of 40 tokens takes 64 (64 + 64 + 0 <= 128)
    assert sampler.has_room(state, [[1] * 20, [], [2]], 32)
    assert not sampler.has_room(state, [[1] * 20, [], [2]], 33)
    assert sampler.has_room(state, [[1] * 40, [], []], 0) and not sampler.has_room(state, [[1] * 40, [], []], 1)
    assert sampler.has_room(state, [[], [], []], 64) and not sampler.has_room(state, [[], [], []], 65)
    state, out = sampler.generate(state, 100, temperature=0.0)
    toks, reason = out.tokens[0], out.finish_reasons[0]
    if reason == "eos":
        assert toks[-1] in EOS and len(toks) <= 64
    else:
        assert reason == "cache_full" and len(toks) == 128 - 64
    with pytest.raises(ValueError, match="decode="):
        sampler.generate(state, 3, stop_strings=["x"])


def test_top_k_top_p_filters_and_full_vocab_logprob():
    from orchestra_jax.sampler import _sample

    logits = jnp.log(jnp.asarray([[0.4, 0.3, 0.2, 0.05, 0.05]], jnp.float32))
    keys = jax.random.split(jax.random.key(0), 400)

    def draw(top_k, top_p, temperature=1.0):
        fn = jax.vmap(lambda k: _sample(logits, k, jnp.float32(temperature), jnp.float32(top_p), greedy=False,
                                        top_k=top_k, use_top_p=top_p < 1.0))
        tok, lp = fn(keys)
        return np.asarray(tok)[:, 0], np.asarray(lp)[:, 0]

    tok, lp = draw(2, 1.0)
    assert set(tok) == {0, 1}
    np.testing.assert_allclose(lp, np.log([0.4, 0.3, 0.2, 0.05, 0.05])[tok], atol=1e-6)  # not renormalised
    tok, _ = draw(0, 0.65)  # nucleus {0.4, 0.3} reaches 0.7 >= 0.65
    assert set(tok) == {0, 1}
    tok, _ = draw(0, 1.0)
    assert set(tok) == {0, 1, 2, 3, 4}
    tok, lp = draw(0, 1.0, temperature=0.5)
    ref = jax.nn.log_softmax(logits[0] / 0.5)
    np.testing.assert_allclose(lp, np.asarray(ref)[tok], atol=1e-6)
    greedy_tok, greedy_lp = _sample(logits, keys[0], jnp.float32(1.0), jnp.float32(1.0), greedy=True, top_k=0,
                                    use_top_p=False)
    assert int(greedy_tok[0]) == 0 and abs(float(greedy_lp[0]) - np.log(0.4)) < 1e-6
