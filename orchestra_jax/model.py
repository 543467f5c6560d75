"""Qwen3 decoder in flax.nnx, numerically matching transformers' `Qwen3ForCausalLM`, and configured
by `ModelConfig` to match `Qwen2ForCausalLM` (Qwen2.5) and `LlamaForCausalLM` (SmolLM2) as well.

Architecture (source: transformers `models/qwen3/modeling_qwen3.py`, `models/qwen2/modeling_qwen2.py`,
`models/llama/modeling_llama.py`, Qwen3 technical report): token embedding -> L x [RMSNorm -> GQA
attention (q/k/v projections with bias when `attention_bias`, per-head RMS QK-norm when `qk_norm`,
half-split RoPE with optional linear / llama3 scaling) -> residual -> RMSNorm -> SwiGLU MLP ->
residual] -> RMSNorm -> LM head (tied or untied).

Parameters of the L layers are stacked along a leading `layers` axis and the stack runs under
`jax.lax.scan`, so compile time does not grow with depth (36 layers for Qwen3-8B). Every
parameter carries its logical axis names (`out_sharding` metadata), mapped to mesh axes by
`orchestra_jax.sharding`:

=============  ===========================  ===================================
parameter      shape                        logical axes
=============  ===========================  ===================================
embed          [V, D]                       (vocab, embed)
attn_norm      [L, D]                       (layers, norm)
wq             [L, D, N, H]                 (layers, embed, q_heads, head_dim)
wk, wv         [L, D, K, H]                 (layers, embed, kv_heads, head_dim)
wo             [L, N, H, D]                 (layers, q_heads, head_dim, embed)
q_norm, k_norm [L, H] (only when qk_norm)   (layers, head_dim)
bq             [L, N, H] (attention_bias)   (layers, q_heads, head_dim)
bk, bv         [L, K, H] (attention_bias)   (layers, kv_heads, head_dim)
mlp_norm       [L, D]                       (layers, norm)
w_gate, w_up   [L, D, F]                    (layers, embed, mlp)
w_down         [L, F, D]                    (layers, mlp, embed)
final_norm     [D]                          (norm,)
lm_head        [D, V] (absent when tied)    (embed, vocab)
=============  ===========================  ===================================

Dtype policy: weights are stored in `config.param_dtype`, cast per layer to
`config.compute_dtype` for matmuls; RMSNorm statistics, attention softmax, logits and
log-softmax are float32.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from orchestra_jax.config import ModelConfig

LAYER_PARAMS = ("attn_norm", "wq", "wk", "wv", "wo", "q_norm", "k_norm", "mlp_norm",
                "w_gate", "w_up", "w_down")
BIAS_PARAMS = ("bq", "bk", "bv")


def layer_param_names(config: ModelConfig) -> tuple[str, ...]:
    """Names of the stacked per-layer parameters a model of `config` has: `LAYER_PARAMS`, without q_norm /
    k_norm when `config.qk_norm` is False, plus `BIAS_PARAMS` when `config.attention_bias`."""
    names = tuple(n for n in LAYER_PARAMS if config.qk_norm or n not in ("q_norm", "k_norm"))
    return names + (BIAS_PARAMS if config.attention_bias else ())
_NEG = -1e30  # additive mask value (finite so fully-masked padding rows stay NaN-free)


def _dtype(name: str) -> jnp.dtype:
    return jnp.dtype(name)


# --------------------------------------------------------------------------- KV cache
@jax.tree_util.register_dataclass
@dataclasses.dataclass
class KVCache:
    """Key/value cache shared by all rows of a batch (rows are aligned by slot).

    Attributes:
        k, v: [L, B, S, K, H] compute dtype; slot s of row b holds the key/value of one token.
        valid: [B, S] bool, True where the slot holds a real token (padding slots are False and
            never attended to).
        length: [B] int32, number of real tokens of each row (the next RoPE position).
        slot: [] int32, next slot to write (the same for every row); or [B] int32, one write index per row
            (`orchestra_jax.slots.SlotSampler`'s continuous batching: rows at different points of their
            conversations share no slot layout).
    """

    k: jax.Array
    v: jax.Array
    valid: jax.Array
    length: jax.Array
    slot: jax.Array

    @staticmethod
    def init(config: ModelConfig, batch: int, max_len: int, dtype: Any = None) -> "KVCache":
        """Empty cache for `batch` rows and `max_len` slots (tokens)."""
        dtype = _dtype(config.compute_dtype) if dtype is None else dtype
        shape = (config.num_layers, batch, max_len, config.num_kv_heads, config.head_dim)
        return KVCache(k=jnp.zeros(shape, dtype), v=jnp.zeros(shape, dtype),
                       valid=jnp.zeros((batch, max_len), bool), length=jnp.zeros((batch,), jnp.int32),
                       slot=jnp.zeros((), jnp.int32))

    @property
    def max_len(self) -> int:
        return self.k.shape[2]


# ----------------------------------------------------------------------- primitives
def rms_norm(x: jax.Array, weight: jax.Array, eps: float) -> jax.Array:
    """RMSNorm over the last axis, statistics in float32, as HF `Qwen3RMSNorm`."""
    xf = x.astype(jnp.float32)
    xf = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return weight.astype(x.dtype) * xf.astype(x.dtype)


def rope_inv_freq(config: ModelConfig) -> jax.Array:
    """RoPE inverse frequencies float32 [head_dim / 2] of `config`: theta ** (-2i / H), then scaled by
    `config.rope_type` as transformers' `ROPE_INIT_FUNCTIONS` do: "linear" divides every frequency by
    `rope_factor`; "llama3" divides the low frequencies (wavelength > original_max / low_freq_factor) by
    `rope_factor`, keeps the high ones (wavelength < original_max / high_freq_factor) and interpolates
    smoothly in between (Llama 3.1)."""
    h = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (jnp.arange(0, h, 2, dtype=jnp.float32) / h))
    if config.rope_type == "linear":
        return inv_freq / config.rope_factor
    if config.rope_type == "llama3":
        factor, low, high = config.rope_factor, config.rope_low_freq_factor, config.rope_high_freq_factor
        old = config.rope_original_max_position
        wavelen = 2 * jnp.pi / inv_freq
        scaled = jnp.where(wavelen > old / low, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / high) & (wavelen <= old / low)
        return jnp.where(medium, smoothed, scaled)
    return inv_freq


def rope_tables(positions: jax.Array, head_dim: int, theta: float,
                inv_freq: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """cos, sin float32 [B, T, head_dim] for integer positions [B, T] (HF default RoPE, or the given
    inverse frequencies [head_dim / 2], e.g. `rope_inv_freq` of a scaled config)."""
    if inv_freq is None:
        inv_freq = 1.0 / (theta ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim))
    freqs = positions.astype(jnp.float32)[..., None] * inv_freq
    emb = jnp.concatenate([freqs, freqs], axis=-1)
    return jnp.cos(emb), jnp.sin(emb)


def apply_rope(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    """Half-split rotation (HF `rotate_half`) of x [B, T, heads, H] by cos/sin [B, T, H]."""
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    cos, sin = cos[:, :, None, :].astype(x.dtype), sin[:, :, None, :].astype(x.dtype)
    return x * cos + rotated * sin


def _attend(qg: jax.Array, kt: jax.Array, vt: jax.Array, mask: jax.Array) -> jax.Array:
    """Attention in the head-major layout: qg [B, K, G, T, H], kt / vt [B, K, S, H], mask [B, T, S]
    bool -> [B, K, G, T, H]. Batch and head axes lead, so both products are plain batched matmuls
    (on CPU about 2.5x faster in the backward pass than contracting the [B, T, N, H] layout)."""
    h = qg.shape[-1]
    scores = jnp.einsum("bkgth,bksh->bkgts", qg, kt, preferred_element_type=jnp.float32) * (h ** -0.5)
    scores = jnp.where(mask[:, None, None, :, :], scores, _NEG)
    probs = jax.nn.softmax(scores, axis=-1).astype(vt.dtype)
    return jnp.einsum("bkgts,bksh->bkgth", probs, vt)


def _head_major(q: jax.Array, k: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    b, t, n, h = q.shape
    kh = k.shape[2]
    qg = q.reshape(b, t, kh, n // kh, h).transpose(0, 2, 3, 1, 4)
    return qg, k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)


def _token_major(o: jax.Array) -> jax.Array:
    b, kh, g, t, h = o.shape
    return o.transpose(0, 3, 1, 2, 4).reshape(b, t, kh * g, h)


def attention(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array) -> jax.Array:
    """Grouped-query attention.

    Args:
        q: [B, T, N, H]; k, v: [B, S, K, H] with N % K == 0; mask: [B, T, S] bool (True = attend).
    Returns:
        [B, T, N, H] in q's dtype; scores and softmax in float32, scale H ** -0.5.
    """
    return _token_major(_attend(*_head_major(q, k, v), mask))


def causal_attention(q: jax.Array, k: jax.Array, v: jax.Array, key_valid: jax.Array,
                     block: int = 0) -> jax.Array:
    """Causal grouped-query attention of a full sequence, in query blocks.

    Queries [i*block, (i+1)*block) attend to keys [0, (i+1)*block) (the causal triangle, so about
    half the FLOPs of the dense product) and each block is rematerialised in the backward pass
    (`jax.checkpoint`), so at most [B, N, block, T] float32 scores live at once. block <= 0 or
    block >= T computes one dense block. Values equal `attention` with the dense causal mask.

    Args:
        q: [B, T, N, H]; k, v: [B, T, K, H]; key_valid: [B, T] bool (False = padding, never attended).
    Returns:
        [B, T, N, H] in q's dtype.
    """
    t = q.shape[1]
    if block <= 0 or t <= block:
        return attention(q, k, v, jnp.tril(jnp.ones((t, t), bool))[None] & key_valid[:, None, :])
    qg, kt, vt = _head_major(q, k, v)
    attend = jax.checkpoint(_attend)
    outs = []
    for start in range(0, t, block):
        end = min(start + block, t)
        causal = jnp.arange(end)[None, :] <= jnp.arange(start, end)[:, None]
        mask = causal[None] & key_valid[:, None, :end]
        outs.append(attend(qg[:, :, :, start:end], kt[:, :, :end], vt[:, :, :end], mask))
    return _token_major(jnp.concatenate(outs, axis=3))


def positions_from_mask(attention_mask: jax.Array) -> jax.Array:
    """RoPE positions [B, T] int32 = cumsum(mask) - 1 (clipped at 0), so left padding is inert."""
    return jnp.maximum(jnp.cumsum(attention_mask.astype(jnp.int32), axis=-1) - 1, 0)


# ---------------------------------------------------------------------------- module
def _param(value: jax.Array, names: tuple[str, ...]) -> nnx.Param:
    return nnx.Param(value, out_sharding=names, eager_sharding=False)


class Qwen3(nnx.Module):
    """Qwen3 causal LM, or a Qwen2.5 / Llama-family one as `config` sets it (see the module docstring for
    parameters and their logical axes).

    Args:
        config: architecture and dtype policy.
        rngs: `nnx.Rngs`; matrices are drawn from N(0, 0.02^2) (HF `initializer_range`), norm
            weights start at 1. Load real weights with `orchestra_jax.weights.load_hf_checkpoint`.
    """

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.config = config
        c = config
        pd = _dtype(c.param_dtype)
        normal = jax.nn.initializers.normal(0.02)
        L, D, N, K, H, F, V = (c.num_layers, c.hidden_size, c.num_heads, c.num_kv_heads, c.head_dim,
                               c.intermediate_size, c.vocab_size)

        def mat(shape, names):
            return _param(normal(rngs.params(), shape, pd), names)

        def ones(shape, names):
            return _param(jnp.ones(shape, pd), names)

        self.embed = mat((V, D), ("vocab", "embed"))
        self.attn_norm = ones((L, D), ("layers", "norm"))
        self.wq = mat((L, D, N, H), ("layers", "embed", "q_heads", "head_dim"))
        self.wk = mat((L, D, K, H), ("layers", "embed", "kv_heads", "head_dim"))
        self.wv = mat((L, D, K, H), ("layers", "embed", "kv_heads", "head_dim"))
        self.wo = mat((L, N, H, D), ("layers", "q_heads", "head_dim", "embed"))
        if c.qk_norm:
            self.q_norm = ones((L, H), ("layers", "head_dim"))
            self.k_norm = ones((L, H), ("layers", "head_dim"))
        if c.attention_bias:
            self.bq = _param(jnp.zeros((L, N, H), pd), ("layers", "q_heads", "head_dim"))
            self.bk = _param(jnp.zeros((L, K, H), pd), ("layers", "kv_heads", "head_dim"))
            self.bv = _param(jnp.zeros((L, K, H), pd), ("layers", "kv_heads", "head_dim"))
        self.mlp_norm = ones((L, D), ("layers", "norm"))
        self.w_gate = mat((L, D, F), ("layers", "embed", "mlp"))
        self.w_up = mat((L, D, F), ("layers", "embed", "mlp"))
        self.w_down = mat((L, F, D), ("layers", "mlp", "embed"))
        self.final_norm = ones((D,), ("norm",))
        if not c.tie_word_embeddings:
            self.lm_head = mat((D, V), ("embed", "vocab"))

    # ------------------------------------------------------------------ internals
    def _layer_params(self) -> dict[str, jax.Array]:
        return {name: getattr(self, name)[...] for name in layer_param_names(self.config)}

    def _run_layers(self, x: jax.Array, positions: jax.Array, mask: jax.Array,
                    cache: KVCache | None, frozen_layers: int = 0,
                    adapters: dict[str, dict[str, jax.Array]] | None = None) -> tuple[jax.Array, KVCache | None]:
        """x [B, T, D] compute dtype -> [B, T, D]; cache updated at its slot and attended over its
        first S = mask.shape[-1] slots with mask [B, T, S] bool. Without a cache, mask is the
        key-validity mask [B, T] bool and attention is causal (`causal_attention`).

        frozen_layers k > 0 (no cache): layers [0, k) run on stop-gradient weights and their output
        enters layer k through `jax.lax.stop_gradient`, so nothing below layer k is differentiated (no
        backward pass through them). adapters (no cache): low-rank terms of the layers [L - n, L),
        ``{target: {"a": [n, *in, r], "b": [n, r, *out]}}`` (`orchestra_jax.trainable`), added to the
        target projection's output as (x . a) . b (the scale folded into b by the caller)."""
        c = self.config
        cd = _dtype(c.compute_dtype)
        eps = c.rms_norm_eps
        cos, sin = rope_tables(positions, c.head_dim, c.rope_theta,
                               None if c.rope_type == "default" else rope_inv_freq(c))
        params = self._layer_params()
        if cache is not None and cache.slot.ndim:
            b, t = x.shape[:2]
            rows = jnp.arange(b, dtype=jnp.int32)[:, None]
            cols = cache.slot[:, None] + jnp.arange(t, dtype=jnp.int32)[None, :]

        def layer(carry, xs):
            h_in, ck, cv = carry
            p, idx, ad = xs if len(xs) == 3 else (*xs, None)
            p = {k: w.astype(cd) for k, w in p.items()}

            def lora(name, inp, out, axes):
                if ad is None or name not in ad:
                    return out
                low = jnp.tensordot(inp, ad[name]["a"].astype(cd), axes=axes)
                return out + jnp.tensordot(low, ad[name]["b"].astype(cd), axes=1)

            h = rms_norm(h_in, p["attn_norm"], eps)
            q = lora("wq", h, jnp.einsum("btd,dnh->btnh", h, p["wq"]), 1)
            k = lora("wk", h, jnp.einsum("btd,dkh->btkh", h, p["wk"]), 1)
            v = lora("wv", h, jnp.einsum("btd,dkh->btkh", h, p["wv"]), 1)
            if c.attention_bias:
                q, k, v = q + p["bq"], k + p["bk"], v + p["bv"]
            if c.qk_norm:
                q, k = rms_norm(q, p["q_norm"], eps), rms_norm(k, p["k_norm"], eps)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            if ck is not None and cache.slot.ndim:  # per-row write index: row b's tokens at slot[b] + t
                ck = ck.at[idx, rows, cols].set(k.astype(ck.dtype))
                cv = cv.at[idx, rows, cols].set(v.astype(cv.dtype))
            elif ck is not None:
                start = (idx, 0, cache.slot, 0, 0)
                ck = jax.lax.dynamic_update_slice(ck, k[None].astype(ck.dtype), start)
                cv = jax.lax.dynamic_update_slice(cv, v[None].astype(cv.dtype), start)
            if ck is not None:
                window = (1,) + ck.shape[1:2] + (mask.shape[-1],) + ck.shape[3:]
                k_all = jax.lax.dynamic_slice(ck, (idx, 0, 0, 0, 0), window)[0].astype(cd)
                v_all = jax.lax.dynamic_slice(cv, (idx, 0, 0, 0, 0), window)[0].astype(cd)
                o = attention(q, k_all, v_all, mask)
            else:
                o = causal_attention(q, k, v, mask, c.attn_block)
            h_mid = h_in + lora("wo", o, jnp.einsum("btnh,nhd->btd", o, p["wo"]), 2)
            h = rms_norm(h_mid, p["mlp_norm"], eps)
            gate = lora("w_gate", h, jnp.einsum("btd,df->btf", h, p["w_gate"]), 1)
            up = lora("w_up", h, jnp.einsum("btd,df->btf", h, p["w_up"]), 1)
            act = jax.nn.silu(gate) * up
            h_out = h_mid + lora("w_down", act, jnp.einsum("btf,fd->btd", act, p["w_down"]), 1)
            return (h_out, ck, cv), None

        if c.remat:
            layer = jax.checkpoint(layer)

        def run(carry, xs, n):
            if c.scan_layers:
                return jax.lax.scan(layer, carry, xs)[0]
            for i in range(n):
                carry, _ = layer(carry, jax.tree.map(lambda w: w[i], xs))
            return carry

        carry = (x, None if cache is None else cache.k, None if cache is None else cache.v)
        idxs = jnp.arange(c.num_layers, dtype=jnp.int32)
        if frozen_layers == 0 and adapters is None:
            carry = run(carry, (params, idxs), c.num_layers)
        else:
            if cache is not None:
                raise ValueError("frozen_layers / adapters apply to the full forward only (no KV cache)")
            k = int(frozen_layers)
            if k:
                low = jax.tree.map(lambda w: jax.lax.stop_gradient(w[:k]), params)
                carry = jax.lax.stop_gradient(run(carry, (low, idxs[:k]), k))
            top = jax.tree.map(lambda w: w[k:], params)
            carry = run(carry, (top, idxs[k:]) if adapters is None else (top, idxs[k:], adapters),
                        c.num_layers - k)
        h, ck, cv = carry
        h = rms_norm(h, self.final_norm[...].astype(cd), eps)
        if cache is None:
            return h, None
        return h, dataclasses.replace(cache, k=ck, v=cv)

    # -------------------------------------------------------------------- public
    def embed_tokens(self, input_ids: jax.Array) -> jax.Array:
        """[B, T] int32 -> [B, T, D] compute dtype."""
        return jnp.take(self.embed[...], input_ids, axis=0).astype(_dtype(self.config.compute_dtype))

    def hidden_states(self, input_ids: jax.Array, attention_mask: jax.Array | None = None,
                      positions: jax.Array | None = None, *, frozen_layers: int = 0,
                      adapters: dict[str, dict[str, jax.Array]] | None = None) -> jax.Array:
        """Final-normed hidden states [B, T, D] (compute dtype) for a full causal forward.

        Args:
            input_ids: int32 [B, T]. attention_mask: [B, T] (1/True = real token; default all
            real); padded keys are never attended. positions: int32 [B, T]; default
            cumsum(mask) - 1, so left padding leaves the real tokens' outputs unchanged.
            frozen_layers, adapters: partial training (`orchestra_jax.trainable`): the lowest
            `frozen_layers` layers are not differentiated; LoRA adapters of the layers above them.
            The defaults (0, None) run the plain stack.
        """
        b, t = input_ids.shape
        if attention_mask is None:
            attention_mask = jnp.ones((b, t), bool)
        attention_mask = attention_mask.astype(bool)
        if positions is None:
            positions = positions_from_mask(attention_mask)
        x = self.embed_tokens(input_ids)
        if frozen_layers or adapters is not None:
            h, _ = self._run_layers(x, positions, attention_mask, None, frozen_layers, adapters)
        else:
            h, _ = self._run_layers(x, positions, attention_mask, None)
        return h

    def head_matrix(self) -> jax.Array:
        """LM head [D, V] in compute dtype (the transposed embedding when tied)."""
        cd = _dtype(self.config.compute_dtype)
        if self.config.tie_word_embeddings:
            return self.embed[...].astype(cd).T
        return self.lm_head[...].astype(cd)

    def logits_from_hidden(self, h: jax.Array) -> jax.Array:
        """[..., D] -> float32 logits [..., V]."""
        return jnp.einsum("...d,dv->...v", h, self.head_matrix(), preferred_element_type=jnp.float32)

    def __call__(self, input_ids: jax.Array, attention_mask: jax.Array | None = None,
                 positions: jax.Array | None = None) -> jax.Array:
        """Float32 logits [B, T, V] for int32 input_ids [B, T] (see `hidden_states`)."""
        return self.logits_from_hidden(self.hidden_states(input_ids, attention_mask, positions))

    def forward_cached(self, input_ids: jax.Array, token_mask: jax.Array, cache: KVCache,
                       kv_len: int | None = None) -> tuple[jax.Array, KVCache]:
        """Feed a block of tokens into the KV cache (prefill, decode step, or multi-turn extend).

        Args:
            input_ids: int32 [B, T]; written to cache slots [cache.slot, cache.slot + T).
            token_mask: bool [B, T]; False marks padding (not attended, no position used).
            cache: the cache; the caller guarantees cache.slot + T <= kv_len <= cache.max_len (every row's,
                for a cache with one write index per row).
            kv_len: static number of leading cache slots to attend over (default: all); a
                sampler passes a bucket just above the filled part, so early turns do not read
                the whole cache.
        Returns:
            (hidden [B, T, D] compute dtype, updated cache). Positions continue each row's
            count of real tokens, so a row's padding anywhere in the cache is inert.
        """
        b, t = input_ids.shape
        token_mask = token_mask.astype(bool)
        positions = cache.length[:, None] + positions_from_mask(token_mask)
        if cache.slot.ndim:  # one write index per row: q_slots [B, T]
            q_slots = cache.slot[:, None] + jnp.arange(t, dtype=jnp.int32)[None, :]
            valid = cache.valid.at[jnp.arange(b, dtype=jnp.int32)[:, None], q_slots].set(token_mask)
        else:  # q_slots [1, T]
            valid = jax.lax.dynamic_update_slice(cache.valid, token_mask, (0, cache.slot))
            q_slots = (cache.slot + jnp.arange(t, dtype=jnp.int32))[None, :]
        kv_len = cache.max_len if kv_len is None else kv_len
        k_slots = jnp.arange(kv_len, dtype=jnp.int32)
        mask = valid[:, None, :kv_len] & (k_slots[None, None, :] <= q_slots[:, :, None])
        h, cache = self._run_layers(self.embed_tokens(input_ids), positions, mask, cache)
        cache = dataclasses.replace(cache, valid=valid,
                                    length=cache.length + token_mask.sum(-1, dtype=jnp.int32),
                                    slot=cache.slot + t)
        return h, cache


# --------------------------------------------------------------------- log-probs
def token_logprobs(model: Qwen3, input_ids: jax.Array, targets: jax.Array,
                   attention_mask: jax.Array | None = None, *, chunk: int = 256,
                   temperature: float = 1.0, positions: jax.Array | None = None,
                   with_entropy: bool = False, frozen_layers: int = 0,
                   adapters: dict[str, dict[str, jax.Array]] | None = None) -> jax.Array | tuple[jax.Array, jax.Array]:
    """Log-probabilities of `targets` under the model, without materialising [B, T, V] logits.

    logp[b, t] = log_softmax(logits[b, t] / temperature)[targets[b, t]], float32, computed over
    the full vocabulary in sequence chunks of `chunk` positions (each chunk's logits are
    rematerialised in the backward pass, so peak memory is [B, chunk, V] fp32).

    Args:
        input_ids: int32 [B, T].
        targets: int32 [B, T] (usually input_ids shifted left by one).
        attention_mask: [B, T]; positions where it is 0 still get a (meaningless) value; mask
            them in the loss.
        with_entropy: also return each position's entropy of the full next-token distribution,
            H = logsumexp(z) - sum(softmax(z) * z) in nats (z = logits / temperature), from the
            same chunked logits (no second forward).
        frozen_layers, adapters: partial training, passed to `Qwen3.hidden_states`.
    Returns:
        float32 [B, T] log-probs, or (log-probs, entropies), the
        entropies float32 [B, T].
    """
    h = model.hidden_states(input_ids, attention_mask, positions, frozen_layers=frozen_layers, adapters=adapters)
    w = model.head_matrix()
    b, t, d = h.shape
    chunk = max(1, min(chunk, t))
    pad = (-t) % chunk
    if pad:
        h = jnp.pad(h, ((0, 0), (0, pad), (0, 0)))
        targets = jnp.pad(targets, ((0, 0), (0, pad)))
    n = (t + pad) // chunk
    hc = h.reshape(b, n, chunk, d).swapaxes(0, 1)
    tc = targets.reshape(b, n, chunk).swapaxes(0, 1)

    @jax.checkpoint
    def one(hx, tx):
        logits = jnp.einsum("bcd,dv->bcv", hx, w, preferred_element_type=jnp.float32) / temperature
        logz = jax.nn.logsumexp(logits, axis=-1)
        lp = jnp.take_along_axis(logits, tx[..., None], axis=-1)[..., 0] - logz
        if not with_entropy:
            return lp
        probs = jnp.exp(logits - logz[..., None])
        return lp, logz - jnp.sum(probs * logits, axis=-1)

    def body(_, xs):
        return None, one(*xs)

    if n == 1:  # one chunk: no loop
        out = jax.tree.map(lambda x: x[None], one(hc[0], tc[0]))
    else:
        _, out = jax.lax.scan(body, None, (hc, tc))
    unchunk = lambda x: x.swapaxes(0, 1).reshape((b, n * chunk) + x.shape[3:])[:, :t]  # noqa: E731
    return tuple(unchunk(x) for x in out) if with_entropy else unchunk(out)
