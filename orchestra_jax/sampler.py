"""Batched generation with a KV cache for multi-turn rollouts of the Qwen3 policy.

API (one `Sampler` per model and batch layout; all ids are Python ints)::

    sampler = Sampler(model, eos_ids={151645, 151643}, max_cache_len=4096)
    state = sampler.prefill(prompt_ids_list)            # list of B prompts (lists of ids)
    state, out = sampler.generate(state, max_new_tokens=512, temperature=1.0, rng=0,
                                  stop_token_seqs=[[151658]],          # e.g. </tool_call>
                                  stop_strings=["</tool_call>"], decode=tokenizer.decode,
                                  active=[True] * B)
    out.tokens[b], out.logprobs[b], out.finish_reasons[b]   # per row, this call only
    state = sampler.extend(state, env_ids_list)         # append tool/user tokens per row
    state, out = sampler.generate(state, ...)           # next turn, earlier turns not re-fed
    sampler.update_params(model)                        # after a training step (no recompile)

Semantics:
- Rows share cache slots; prompts and appended blocks are left-padded to a bucketed length
  (`bucket`: 16, 32, 64, then multiples of 64) and padding slots are masked out, with RoPE positions counting
  each row's real tokens only, so the computation equals an unpadded forward of each row.
- `generate` samples from log_softmax(logits / temperature) restricted by top-k / top-p, and
  reports for each sampled token logprob = log_softmax(logits / temperature)[token] over the
  full vocabulary (no top-k/top-p renormalisation), float32. temperature=0 is greedy (its
  logprob uses temperature 1).
- A row stops at the first of: a token in `eos_ids` (kept, finish "eos"); the end of a token
  sequence in `stop_token_seqs` (kept, "stop"); a string in `stop_strings` appearing in
  `decode(tokens of this call)` (the token completing it is kept, "stop");
  `max_new_tokens` ("length"); a full cache ("cache_full"). Rows with `active[b]` False
  generate nothing ("inactive").
- Every kept token is part of the conversation held in `state`: after `generate`, each row's
  sequence is its previous sequence + `out.tokens[b]`; `state.tokens[b]` is that full
  sequence, ready for the loss (build log-prob masks from the per-call lengths).
- The decode loop is one jit-compiled `lax.while_loop` over `chunk` steps with the cache
  donated; shapes are static per (batch, max_cache_len, chunk), so a rollout compiles the
  decode step once, and prefill/extend once per length bucket.

Errors: ValueError for empty prompts, a block that does not fit in the cache (message gives
the sizes and `max_cache_len` to raise), wrong batch size, or stop strings without `decode`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from orchestra_jax.model import KVCache, Qwen3
from orchestra_jax.sharding import logical_to_spec
from orchestra_jax.tokenizer import QWEN3_EOS_IDS  # {<|im_end|>, <|endoftext|>}


def bucket(n: int, minimum: int = 16, step: int = 64) -> int:
    """Padded width for a block of n tokens: the smallest power of two >= max(n, minimum) up to
    `step`, then the next multiple of `step` (bounds both recompiles and padding waste)."""
    if n <= step:
        return max(minimum, 1 << max(0, int(n) - 1).bit_length())
    return -(-int(n) // step) * step


@dataclasses.dataclass
class SamplerState:
    """Conversation state of B rows.

    Attributes:
        cache: the KVCache (device arrays).
        next_logits: float32 [B, V] logits for each row's next token.
        tokens: per row, every token of the conversation so far (fed or pending).
        pending: per row, tokens already in `tokens` but not yet fed to the cache (a token
            that completed a host-side stop string); fed at the next extend / generate.
    """

    cache: KVCache
    next_logits: jax.Array
    tokens: list[list[int]]
    pending: list[list[int]]

    @property
    def batch_size(self) -> int:
        return len(self.tokens)


@dataclasses.dataclass
class GenerationOutput:
    """Result of one `Sampler.generate` call.

    Attributes:
        tokens: per row, the generated ids (this call only).
        logprobs: per row, float32 log_softmax(logits / T)[token] for each generated id.
        finish_reasons: per row, one of "eos", "stop", "length", "cache_full", "inactive".
    """

    tokens: list[list[int]]
    logprobs: list[list[float]]
    finish_reasons: list[str]


def _sample(logits: jax.Array, key: jax.Array, temperature: jax.Array, top_p: jax.Array, *,
            greedy: bool, top_k: int, use_top_p: bool) -> tuple[jax.Array, jax.Array]:
    """Sample one id per row from float32 logits [B, V]; returns (ids int32 [B], logprob [B])."""
    if greedy:
        logp = jax.nn.log_softmax(logits, axis=-1)
        tok = jnp.argmax(logits, axis=-1).astype(jnp.int32)
        return tok, jnp.take_along_axis(logp, tok[:, None], axis=-1)[:, 0]
    scaled = logits / temperature
    logp = jax.nn.log_softmax(scaled, axis=-1)
    filtered = scaled
    if top_k > 0:
        kth = jax.lax.top_k(scaled, top_k)[0][:, -1:]
        filtered = jnp.where(scaled < kth, -jnp.inf, filtered)
    if use_top_p:
        order = jnp.argsort(-filtered, axis=-1)
        sorted_logits = jnp.take_along_axis(filtered, order, axis=-1)
        probs = jax.nn.softmax(sorted_logits, axis=-1)
        keep_sorted = (jnp.cumsum(probs, axis=-1) - probs) < top_p  # always keeps the top token
        keep = jnp.zeros_like(keep_sorted).at[jnp.arange(order.shape[0])[:, None], order].set(keep_sorted)
        filtered = jnp.where(keep, filtered, -jnp.inf)
    if key.shape:  # one key per row (`Sampler.generate`'s row_rng): each row's draw uses its own key only
        tok = jax.vmap(lambda k, x: jax.random.categorical(k, x))(key, filtered).astype(jnp.int32)
    else:
        tok = jax.random.categorical(key, filtered, axis=-1).astype(jnp.int32)
    return tok, jnp.take_along_axis(logp, tok[:, None], axis=-1)[:, 0]


class Sampler:
    """KV-cache sampler for a `Qwen3` model (see the module docstring for the API).

    Args:
        model: the policy; its parameters are read at construction (call `update_params`
            after a training step).
        eos_ids: ids that end a row's turn (Qwen3: {151645, 151643}).
        max_cache_len: cache capacity in tokens (slots) per row, including padding slots.
        chunk: decode steps per compiled call (the host checks stop strings between calls).
        pad_id: id written into padding slots (never attended).
        kv_min: smallest attention window over the cache: calls attend over the first
            min(max_cache_len, power of two >= max(kv_min, filled slots)) slots, one compile
            per window size; set it to max_cache_len for a single compile.
        mesh: when the model is sharded on a `orchestra_jax.sharding` mesh, pass it so the KV
            cache is sharded too (rows over data/fsdp, KV heads over tp).
        prefill_chunk: a block wider than this many tokens is fed in consecutive slices of at most
            this width (chunked prefill, as vLLM's): the attention scores of one feed are float32
            [B, heads, width, window], so a long prompt would otherwise hold B x heads x width x
            window x 4 bytes at once (80 rows, 2 heads, 704 x 1024: 0.46 GB, 1.7 GB peak with the
            softmax's temporaries). Padding slots stay where they are, so the cache and the logits
            equal an unchunked feed's up to float rounding. 0 = never chunk.
    """

    def __init__(self, model: Qwen3, eos_ids: Iterable[int] = QWEN3_EOS_IDS, max_cache_len: int = 4096,
                 chunk: int = 32, pad_id: int = 0, kv_min: int = 1024,
                 mesh: jax.sharding.Mesh | None = None, prefill_chunk: int = 256):
        self.config = model.config
        self.mesh = mesh
        self.graphdef, self.params = nnx.split(model)
        self.eos_ids = np.asarray(sorted(set(int(i) for i in eos_ids)) or [-1], np.int32)
        self.max_cache_len = int(max_cache_len)
        self.chunk = int(chunk)
        self.pad_id = int(pad_id)
        self.kv_min = int(kv_min)
        if prefill_chunk < 0:
            raise ValueError(f"prefill_chunk must be >= 0 (0 = never chunk), got {prefill_chunk}")
        self.prefill_chunk = int(prefill_chunk)
        self._slot_engines: dict = {}  # (slots, capacity) -> SlotSampler (`orchestra_jax.slots.slot_engine`)
        self._feed = jax.jit(self._feed_impl, donate_argnums=(1,), static_argnames=("kv_len",))
        self._decode = jax.jit(self._decode_impl, donate_argnums=(1,),
                               static_argnames=("greedy", "top_k", "use_top_p", "kv_len"))

    def _kv_len(self, filled: int) -> int:
        """Attention window (static) covering `filled` slots."""
        return min(self.max_cache_len, max(self.kv_min, 1 << max(0, filled - 1).bit_length()))

    def update_params(self, model: Qwen3) -> None:
        """Use `model`'s current parameters (same architecture) for later calls."""
        self.graphdef, self.params = nnx.split(model)

    # ------------------------------------------------------------------ jitted cores
    def _feed_impl(self, params, cache, next_logits, ids, mask, *, kv_len):
        model = nnx.merge(self.graphdef, params)
        h, cache = model.forward_cached(ids, mask, cache, kv_len)
        last = model.logits_from_hidden(h[:, -1])
        has = mask.any(axis=-1)
        return cache, jnp.where(has[:, None], last, next_logits)

    def _decode_impl(self, params, cache, next_logits, done, n_steps, max_new, count, hist, stop_seqs,
                     key, temperature, top_p, eos, *, greedy, top_k, use_top_p, kv_len):
        model = nnx.merge(self.graphdef, params)
        b = next_logits.shape[0]
        steps = self.chunk
        toks = jnp.zeros((b, steps), jnp.int32)
        lps = jnp.zeros((b, steps), jnp.float32)
        emit = jnp.zeros((b, steps), bool)
        reason = jnp.zeros((b,), jnp.int32)  # 0 running, 1 eos, 2 stop seq, 3 length

        def cond(c):
            i, _, _, done, *_ = c
            return (i < n_steps) & ~jnp.all(done)

        def body(c):
            i, cache, logits, done, count, hist, toks, lps, emit, reason = c
            # per-row keys: the draw of a row's n-th token of the call is fold_in(its key, n), whatever the
            # chunk or the other rows; one key: fold_in(the chunk's key, step)
            step_key = jax.vmap(jax.random.fold_in)(key, count) if key.shape else jax.random.fold_in(key, i)
            tok, lp = _sample(logits, step_key, temperature, top_p,
                              greedy=greedy, top_k=top_k, use_top_p=use_top_p)
            live = ~done
            tok = jnp.where(live, tok, self.pad_id)
            hist = jnp.where(live[:, None], jnp.concatenate([hist[:, 1:], tok[:, None]], axis=1), hist)
            count = count + live
            is_eos = jnp.isin(tok, eos)
            seq_hit = jnp.any(jnp.all((stop_seqs[None] == hist[:, None, :]) | (stop_seqs[None] < 0), -1)
                              & jnp.any(stop_seqs >= 0, -1)[None], -1)
            at_len = count >= max_new
            new_reason = jnp.where(is_eos, 1, jnp.where(seq_hit, 2, jnp.where(at_len, 3, 0)))
            reason = jnp.where(live, new_reason, reason)
            h, cache = model.forward_cached(tok[:, None], live[:, None], cache, kv_len)
            new_logits = model.logits_from_hidden(h[:, 0])
            logits = jnp.where(live[:, None], new_logits, logits)
            toks = toks.at[:, i].set(tok)
            lps = lps.at[:, i].set(lp)
            emit = emit.at[:, i].set(live)
            done = done | (live & (new_reason > 0))
            return i + 1, cache, logits, done, count, hist, toks, lps, emit, reason

        carry = (jnp.zeros((), jnp.int32), cache, next_logits, done, count, hist, toks, lps, emit, reason)
        i, cache, next_logits, done, count, hist, toks, lps, emit, reason = jax.lax.while_loop(cond, body, carry)
        return cache, next_logits, done, count, hist, toks, lps, emit, reason, i

    # ------------------------------------------------------------------ host API
    def init_state(self, batch_size: int) -> SamplerState:
        """Empty conversations for `batch_size` rows."""
        cache, logits = self.place(KVCache.init(self.config, batch_size, self.max_cache_len),
                                   jnp.zeros((batch_size, self.config.vocab_size), jnp.float32))
        return SamplerState(cache, logits, [[] for _ in range(batch_size)], [[] for _ in range(batch_size)])

    def place(self, cache: KVCache, logits: jax.Array) -> tuple[KVCache, jax.Array]:
        """Put a cache (k / v [L, B, C, K, H], valid [B, C], length [B], slot: a scalar or int32 [B] with one
        write index per row) and next-token logits float32 [B, V] on the sampler's mesh: rows over data/fsdp,
        KV heads over tp (`orchestra_jax.sharding.logical_to_spec`; an axis the size does not divide stays
        replicated). Without a mesh, returns them as they are. Also used by `orchestra_jax.slots.SlotSampler`."""
        if self.mesh is None:
            return cache, logits

        def put(x, names):
            return jax.device_put(x, jax.sharding.NamedSharding(self.mesh, logical_to_spec(names, x.shape, self.mesh)))

        kv = ("layers", "batch", "seq", "kv_heads", "head_dim")
        return (KVCache(put(cache.k, kv), put(cache.v, kv), put(cache.valid, ("batch", "seq")),
                        put(cache.length, ("batch",)), put(cache.slot, ("batch",)[:jnp.ndim(cache.slot)])),
                put(logits, ("batch", "vocab")))

    def prefill(self, prompts: Sequence[Sequence[int]]) -> SamplerState:
        """Start B conversations from their prompt ids (each non-empty).

        Raises:
            ValueError: an empty prompt, or prompts longer than the cache.
        """
        empty = [b for b, p in enumerate(prompts) if len(p) == 0]
        if empty:
            raise ValueError(f"prompts {empty} are empty; every row needs at least one token")
        return self.extend(self.init_state(len(prompts)), prompts)

    def extend(self, state: SamplerState, appended: Sequence[Sequence[int]]) -> SamplerState:
        """Append tokens (e.g. a tool response and the next assistant header) to each row.

        Rows may append different numbers of tokens (zero included); earlier turns are not
        recomputed. Returns the updated state (the input state's cache is donated).

        Raises:
            ValueError: wrong number of rows, or the block does not fit in the cache.
        """
        if len(appended) != state.batch_size:
            raise ValueError(f"extend got {len(appended)} rows, the state has {state.batch_size}")
        blocks = [list(p) + [int(t) for t in a] for p, a in zip(state.pending, appended)]
        longest = max((len(x) for x in blocks), default=0)
        tokens = [t + [int(x) for x in a] for t, a in zip(state.tokens, appended)]
        if longest == 0:
            return dataclasses.replace(state, tokens=tokens)
        width = bucket(longest)
        slot = int(state.cache.slot)
        if slot + width > self.max_cache_len:
            width = longest  # exact width avoids padding waste when near the end
            if slot + width > self.max_cache_len:
                raise ValueError(f"cannot append {longest} tokens at cache slot {slot}: max_cache_len="
                                 f"{self.max_cache_len}; build the Sampler with a larger max_cache_len")
        ids = np.full((state.batch_size, width), self.pad_id, np.int32)
        mask = np.zeros((state.batch_size, width), bool)
        for b, blk in enumerate(blocks):
            if blk:
                ids[b, width - len(blk):] = blk
                mask[b, width - len(blk):] = True
        cache, logits = state.cache, state.next_logits
        step = self.prefill_chunk if 0 < self.prefill_chunk < width else width
        for start in range(0, width, step):
            end = min(width, start + step)
            cache, logits = self._feed(self.params, cache, logits, jnp.asarray(ids[:, start:end]),
                                       jnp.asarray(mask[:, start:end]), kv_len=self._kv_len(slot + end))
        return SamplerState(cache, logits, tokens, [[] for _ in blocks])

    def has_room(self, state: SamplerState, appended: Sequence[Sequence[int]], max_new_tokens: int) -> bool:
        """Whether `extend(state, appended)` and then a full turn of `max_new_tokens` fit the cache.

        The rows share cache slots and every block is padded, so the cache fills faster than the
        longest row grows. The block width is estimated from the longest appended block plus the
        longest pending row, rounded up to a power of two (>= 16; the exact width near the end of the
        cache), which is at least `bucket`'s width (conservative).
        """
        longest = max((len(a) for a in appended), default=0) + max((len(p) for p in state.pending), default=0)
        width = max(16, 1 << max(0, longest - 1).bit_length()) if longest else 0
        slot = int(state.cache.slot)
        if slot + width > self.max_cache_len:
            width = min(width, longest)
        return slot + width + max_new_tokens <= self.max_cache_len

    def generate(self, state: SamplerState, max_new_tokens: int, temperature: float = 1.0, *,
                 top_k: int = 0, top_p: float = 1.0, rng: int | jax.Array = 0,
                 stop_token_seqs: Sequence[Sequence[int]] = (), stop_strings: Sequence[str] = (),
                 decode: Callable[[list[int]], str] | None = None,
                 active: Sequence[bool] | None = None,
                 row_rng: Sequence[Sequence[int]] | None = None) -> tuple[SamplerState, GenerationOutput]:
        """Generate up to `max_new_tokens` per active row (see the module docstring).

        Args:
            rng: int seed or a jax PRNG key. temperature: > 0 samples, 0 is greedy.
            top_k: keep the k most likely ids (0 = off; static, compiles once per value).
            top_p: nucleus mass in (0, 1] (1 = off).
            row_rng: None (one key per call: a row's draws depend on the batch it is in), or per row a
                tuple of ints (e.g. (episode row, turn)): row b samples its n-th token of this call with
                fold_in(fold_in(key(rng), row_rng[b]...), n), so its draws do not depend on which rows
                share the batch, on the chunking, or on when the call runs (the overlapped rollouts of
                `orchestra_jax.rollout.collect_rollouts`).
        Returns:
            (new state, GenerationOutput).
        Raises:
            ValueError: stop_strings without decode, bad temperature/top_p, wrong `active` size.
        """
        b = state.batch_size
        if stop_strings and decode is None:
            raise ValueError("stop_strings need decode= (e.g. tokenizer.decode) to read the text")
        if temperature < 0 or not 0 < top_p <= 1:
            raise ValueError(f"temperature must be >= 0 and top_p in (0, 1]; got {temperature}, {top_p}")
        if active is not None and len(active) != b:
            raise ValueError(f"active has {len(active)} entries, the state has {b} rows")
        if any(state.pending):
            state = self.extend(state, [[] for _ in range(b)])
        if max_new_tokens <= 0:
            return state, GenerationOutput([[] for _ in range(b)], [[] for _ in range(b)],
                                           ["inactive" if active is not None and not a else "length"
                                            for a in (active or [True] * b)])
        key = jax.random.key(rng) if isinstance(rng, int) else rng
        if row_rng is not None:
            if len(row_rng) != b:
                raise ValueError(f"row_rng has {len(row_rng)} entries, the state has {b} rows")
            ints = np.asarray(row_rng, np.uint32).reshape(b, -1)  # [B, m]: every row names m ints
            key = jnp.broadcast_to(key, (b,))
            for j in range(ints.shape[1]):
                key = jax.vmap(jax.random.fold_in)(key, jnp.asarray(ints[:, j]))
        seqs = [list(map(int, s)) for s in stop_token_seqs if len(s)]
        width = max([len(s) for s in seqs] + [1])
        stop_arr = np.full((max(1, len(seqs)), width), -1, np.int32)
        for i, s in enumerate(seqs):
            stop_arr[i, width - len(s):] = s
        done = np.zeros(b, bool) if active is None else ~np.asarray(active, bool)
        reasons = ["inactive" if d else "" for d in done]
        count = jnp.zeros((b,), jnp.int32)
        hist = jnp.full((b, width), -1, jnp.int32)
        out_t: list[list[int]] = [[] for _ in range(b)]
        out_l: list[list[float]] = [[] for _ in range(b)]
        start_slot = int(state.cache.slot)
        cache, logits = state.cache, state.next_logits
        greedy = temperature == 0
        names = {1: "eos", 2: "stop", 3: "length"}
        step = 0
        pending: list[list[int]] = [[] for _ in range(b)]
        while not done.all():
            room = self.max_cache_len - int(cache.slot)
            if room <= 0:
                for r in np.flatnonzero(~done):
                    reasons[r] = "cache_full"
                break
            n = min(self.chunk, room)
            res = self._decode(self.params, cache, logits, jnp.asarray(done), jnp.int32(n),
                               jnp.int32(max_new_tokens), count, hist, jnp.asarray(stop_arr),
                               key if row_rng is not None else jax.random.fold_in(key, step),
                               jnp.float32(temperature or 1.0),
                               jnp.float32(top_p), jnp.asarray(self.eos_ids), greedy=greedy,
                               top_k=int(top_k), use_top_p=top_p < 1.0,
                               kv_len=self._kv_len(int(cache.slot) + n))
            cache, logits, done_d, count, hist, toks, lps, emit, reason, n_done = res
            step += 1
            toks, lps, emit, reason = map(np.asarray, (toks, lps, emit, reason))
            new_done = np.asarray(done_d)
            for r in range(b):
                k = emit[r].sum()
                if k:
                    out_t[r].extend(int(x) for x in toks[r, :k])
                    out_l[r].extend(float(x) for x in lps[r, :k])
                if new_done[r] and not done[r]:
                    reasons[r] = names[int(reason[r])]
            done = new_done.copy()
            if stop_strings:
                cache = self._host_stop_strings(cache, out_t, out_l, reasons, done, pending,
                                                stop_strings, decode, start_slot)
        cache = dataclasses.replace(cache, length=cache.valid.sum(-1, dtype=jnp.int32))
        tokens = [t + o for t, o in zip(state.tokens, out_t)]
        new_state = SamplerState(cache, logits, tokens, pending)
        return new_state, GenerationOutput(out_t, out_l, reasons)

    @staticmethod
    def _host_stop_strings(cache, out_t, out_l, reasons, done, pending, stop_strings, decode, start_slot):
        """Cut rows whose decoded text of this call contains a stop string (updates the lists
        and `done` in place); the cut-off slots are masked out of the cache and the completing
        token becomes pending (fed at the next extend/generate). Returns the cache."""
        valid = None
        for r, toks in enumerate(out_t):
            if reasons[r] in ("inactive",) or pending[r] or not toks:
                continue
            if not any(s in decode(toks) for s in stop_strings):
                continue
            cut = next(j for j in range(len(toks)) if any(s in decode(toks[:j + 1]) for s in stop_strings))
            if valid is None:
                valid = np.asarray(cache.valid).copy()
            valid[r, start_slot + cut:] = False
            pending[r] = [toks[cut]]
            del toks[cut + 1:]
            del out_l[r][cut + 1:]
            reasons[r] = "stop"
            done[r] = True
        if valid is not None:
            cache = dataclasses.replace(cache, valid=jnp.asarray(valid))
        return cache
