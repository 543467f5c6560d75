"""Qwen3 in flax.nnx vs transformers' Qwen3ForCausalLM (torch CPU) on random tiny configs."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jax.numpy as jnp  # noqa: E402
from flax import nnx  # noqa: E402

from orchestra_jax.config import ConfigError, ModelConfig  # noqa: E402
from orchestra_jax.model import Qwen3, token_logprobs  # noqa: E402
from orchestra_jax.weights import load_hf_checkpoint  # noqa: E402


def make_hf(path, *, vocab=300, hidden=64, inter=96, layers=2, heads=4, kv=2, head_dim=24,
            theta=10000.0, tied=False, seed=0):
    """A random tiny HF Qwen3 saved with save_pretrained; weights scaled up so errors show."""
    torch.manual_seed(seed)
    cfg = transformers.Qwen3Config(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim, rope_theta=theta,
        tie_word_embeddings=tied, max_position_embeddings=1024)
    model = transformers.Qwen3ForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim > 1:
                p.normal_(0.0, 0.15)
            else:
                p.uniform_(0.5, 1.5)
    model.save_pretrained(path)
    return model


def hf_logits(model, ids, mask=None):
    with torch.no_grad():
        kw = {} if mask is None else {"attention_mask": torch.tensor(mask)}
        return model(torch.tensor(ids), **kw).logits.float().numpy()


CASES = {
    "untied-gqa2-hd24-theta1e4": dict(tied=False, heads=4, kv=2, head_dim=24, theta=1e4),
    "tied-gqa4-hd16-theta1e6": dict(tied=True, heads=8, kv=2, head_dim=16, theta=1e6),
    "untied-mha-hd8": dict(tied=False, heads=4, kv=4, head_dim=8, theta=1e6, hidden=48),
    "tied-mqa-hd32": dict(tied=True, heads=4, kv=1, head_dim=32, theta=5e5, layers=3),
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf_base")
    hf = make_hf(path, **CASES["untied-gqa2-hd24-theta1e4"])
    model, config = load_hf_checkpoint(path)
    return hf, model, config, path


@pytest.mark.parametrize("case", sorted(CASES))
def test_logits_match_transformers(case, tmp_path):
    hf = make_hf(tmp_path, **CASES[case])
    model, config = load_hf_checkpoint(tmp_path)
    assert config.tie_word_embeddings == CASES[case]["tied"]
    assert config.head_dim == CASES[case]["head_dim"]
    assert config.rope_theta == CASES[case]["theta"]
    ids = np.random.RandomState(1).randint(0, 300, (2, 19)).astype(np.int32)
    ref = hf_logits(hf, ids)
    out = np.asarray(model(jnp.asarray(ids)))
    assert out.dtype == np.float32 and out.shape == (2, 19, 300)
    assert np.abs(out - ref).max() <= 1e-4


def test_rope_theta_changes_logits(base):
    hf, model, config, _ = base
    ids = jnp.asarray(np.random.RandomState(2).randint(0, 300, (1, 16)), jnp.int32)
    other = nnx.merge(*nnx.split(model))
    other.config = config.replace(rope_theta=1e6)
    diff = np.abs(np.asarray(model(ids)) - np.asarray(other(ids))).max()
    assert diff > 1e-2


def test_padded_batch_matches_transformers_with_mask(base):
    hf, model, _, _ = base
    rs = np.random.RandomState(3)
    ids = rs.randint(0, 300, (2, 12)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, :5] = 0  # left padding of row 1
    ref = hf_logits(hf, ids, mask)
    out = np.asarray(model(jnp.asarray(ids), jnp.asarray(mask)))
    assert np.abs(out - ref)[mask.astype(bool)].max() <= 1e-4


def test_left_padding_0_vs_37_same_logprobs(base):
    _, model, _, _ = base
    rs = np.random.RandomState(4)
    seq = rs.randint(0, 300, (20,)).astype(np.int32)
    tgt = np.roll(seq, -1)
    pad = 37
    ids = np.zeros((2, 20 + pad), np.int32)
    tg = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    ids[0, :20], tg[0, :20], mask[0, :20] = seq, tgt, 1          # no padding (right-filled)
    ids[1, pad:], tg[1, pad:], mask[1, pad:] = seq, tgt, 1        # 37 left-pad tokens
    ids[1, :pad] = rs.randint(0, 300, pad)                         # junk under the mask
    lp = np.asarray(token_logprobs(model, jnp.asarray(ids), jnp.asarray(tg), jnp.asarray(mask), chunk=8))
    assert np.abs(lp[0, :20] - lp[1, pad:]).max() <= 1e-5


def test_token_logprobs_chunked_equals_full(base):
    _, model, _, _ = base
    rs = np.random.RandomState(5)
    ids = jnp.asarray(rs.randint(0, 300, (2, 13)), jnp.int32)
    tg = jnp.asarray(rs.randint(0, 300, (2, 13)), jnp.int32)
    full = jax.nn.log_softmax(model(ids) / 0.6, axis=-1)
    ref = np.take_along_axis(np.asarray(full), np.asarray(tg)[..., None], -1)[..., 0]
    for chunk in (1, 4, 13, 64):
        lp = token_logprobs(model, ids, tg, chunk=chunk, temperature=0.6)
        assert np.abs(np.asarray(lp) - ref).max() <= 1e-5


def test_loop_remat_and_scan_agree_including_gradient(base):
    _, model, config, path = base
    ids = jnp.asarray(np.random.RandomState(6).randint(0, 300, (2, 9)), jnp.int32)

    def loss(m):
        return -token_logprobs(m, ids, jnp.roll(ids, -1, axis=1), chunk=4).mean()

    results = []
    for over in ({}, {"scan_layers": False, "remat": True}):
        m, _ = load_hf_checkpoint(path, **over)
        val, grads = nnx.jit(nnx.value_and_grad(loss))(m)
        results.append((float(val), np.asarray(grads.wq[...]), np.asarray(grads.embed[...])))
    for val, gq, ge in results[1:]:
        assert abs(val - results[0][0]) <= 1e-5
        assert np.abs(gq - results[0][1]).max() <= 1e-5
        assert np.abs(ge - results[0][2]).max() <= 1e-5
    assert np.abs(results[0][1]).max() > 0


def test_bf16_policy_close_to_fp32(base):
    _, model, _, path = base
    ids = jnp.asarray(np.random.RandomState(7).randint(0, 300, (1, 10)), jnp.int32)
    m16, c16 = load_hf_checkpoint(path, dtype="bfloat16", compute_dtype="bfloat16")
    assert m16.wq[...].dtype == jnp.bfloat16
    out = m16(ids)
    assert out.dtype == jnp.float32
    ref = np.asarray(model(ids))
    rel = np.abs(np.asarray(out) - ref).max() / np.abs(ref).max()
    assert rel < 0.05


def test_qwen3_8b_param_count_matches_transformers_without_memory():
    config = ModelConfig.from_preset("qwen3-8b")
    abstract = nnx.eval_shape(lambda: Qwen3(config, rngs=nnx.Rngs(0)))
    leaves = jax.tree.leaves(nnx.state(abstract, nnx.Param))
    assert all(isinstance(x, jax.ShapeDtypeStruct) for x in leaves)
    ours = sum(int(np.prod(x.shape)) for x in leaves)
    hf_cfg = transformers.Qwen3Config(**{k: v for k, v in config.to_hf_dict().items()
                                         if k not in ("architectures", "torch_dtype", "dtype")})
    with torch.device("meta"):
        hf = transformers.Qwen3ForCausalLM(hf_cfg)
    theirs = sum(p.numel() for p in hf.parameters())
    assert ours == theirs == config.num_params()
    assert 8.1e9 < ours < 8.3e9


def test_presets_and_config_errors(tmp_path):
    c = ModelConfig.from_preset("qwen3-8b")
    assert (c.num_layers, c.hidden_size, c.num_heads, c.num_kv_heads, c.head_dim,
            c.intermediate_size, c.vocab_size, c.rope_theta, c.rms_norm_eps,
            c.tie_word_embeddings) == (36, 4096, 32, 8, 128, 12288, 151936, 1e6, 1e-6, False)
    assert ModelConfig.from_preset("qwen3-0.6b").tie_word_embeddings
    with pytest.raises(ConfigError, match=r"unknown model preset 'qwen3-9b' \(did you mean 'qwen3-8b'\?\); known presets"):
        ModelConfig.from_preset("qwen3-9b")
    with pytest.raises(ValueError, match="num_kv_heads"):
        c.replace(num_kv_heads=5)
    with pytest.raises(ValueError, match="model_type"):
        ModelConfig.from_hf({"model_type": "mistral"})  # llama and qwen2 load too (tests/jax/test_model_family.py)
    round_trip = ModelConfig.from_hf(c.to_hf_dict())
    assert round_trip.replace(name=c.name) == c


def test_qwen3_8b_forward_and_cached_step_trace_at_full_shapes():
    """The code path the tiny tests run also traces at the 8B shapes (bf16), without memory."""
    from orchestra_jax.model import KVCache

    config = ModelConfig.from_preset("qwen3-8b", param_dtype="bfloat16", compute_dtype="bfloat16", remat=True)
    graphdef, state = nnx.split(nnx.eval_shape(lambda: Qwen3(config, rngs=nnx.Rngs(0))))
    ids = jax.ShapeDtypeStruct((2, 8), jnp.int32)

    def loss(state, ids):
        return token_logprobs(nnx.merge(graphdef, state), ids, ids, chunk=4).sum()

    grads = jax.eval_shape(jax.grad(loss), state, ids)
    assert grads["wq"].shape == (36, 4096, 32, 128) and grads["wq"].dtype == jnp.bfloat16

    def step(state, cache, ids):
        m = nnx.merge(graphdef, state)
        h, cache = m.forward_cached(ids, jnp.ones(ids.shape, bool), cache)
        return m.logits_from_hidden(h[:, -1]), cache

    cache = jax.eval_shape(lambda: KVCache.init(config, 2, 64))
    logits, new_cache = jax.eval_shape(step, state, cache, ids)
    assert logits.shape == (2, 151936) and logits.dtype == jnp.float32
    assert new_cache.k.shape == (36, 2, 64, 8, 128) and new_cache.k.dtype == jnp.bfloat16


def test_blocked_causal_attention_matches_transformers_and_dense_gradient(base):
    """attn_block=8 on 19 tokens (blocks of 8, 8, 3; the causal triangle only) gives HF's logits
    with padding, and the same loss and gradient as one dense block."""
    hf, _, _, path = base
    rs = np.random.RandomState(11)
    ids = rs.randint(0, 300, (2, 19)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, :6] = 0
    blocked, cfg = load_hf_checkpoint(path, attn_block=8)
    assert cfg.attn_block == 8
    out = np.asarray(blocked(jnp.asarray(ids), jnp.asarray(mask)))
    assert np.abs(out - hf_logits(hf, ids, mask))[mask.astype(bool)].max() <= 1e-4

    def loss(m):
        lp = token_logprobs(m, jnp.asarray(ids), jnp.roll(jnp.asarray(ids), -1, axis=1), jnp.asarray(mask), chunk=8)
        return -(lp * mask).sum() / mask.sum()

    results = []
    for block in (8, 0):
        m, _ = load_hf_checkpoint(path, attn_block=block)
        val, grads = nnx.jit(nnx.value_and_grad(loss))(m)
        results.append((float(val), np.asarray(grads.wq[...]), np.asarray(grads.wk[...])))
    assert abs(results[0][0] - results[1][0]) <= 1e-5
    assert np.abs(results[0][1] - results[1][1]).max() <= 1e-5
    assert np.abs(results[0][2] - results[1][2]).max() <= 1e-5
    assert np.abs(results[1][1]).max() > 0
    with pytest.raises(ValueError, match="attn_block"):
        ModelConfig.from_preset("tiny", attn_block=-1)


def test_token_entropy_matches_float64_reference(base):
    _, model, _, _ = base
    rs = np.random.RandomState(12)
    ids = jnp.asarray(rs.randint(0, 300, (2, 11)), jnp.int32)
    tg = jnp.asarray(rs.randint(0, 300, (2, 11)), jnp.int32)
    lp, ent = token_logprobs(model, ids, tg, chunk=4, temperature=0.7, with_entropy=True)
    z = np.asarray(model(ids), np.float64) / 0.7
    logp = z - np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True)) - z.max(-1, keepdims=True)
    ref_ent = -(np.exp(logp) * logp).sum(-1)
    ref_lp = np.take_along_axis(logp, np.asarray(tg)[..., None], -1)[..., 0]
    assert ent.shape == lp.shape == (2, 11) and ent.dtype == jnp.float32
    assert np.abs(np.asarray(ent) - ref_ent).max() <= 1e-4
    assert np.abs(np.asarray(lp) - ref_lp).max() <= 1e-4
    assert 0 < ref_ent.min() and ref_ent.max() <= np.log(300)
