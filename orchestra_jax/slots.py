"""Continuous batching for the sampler: a fixed number of decode slots, each with its own write position in
the KV cache, refilled with another conversation's turn as soon as its own turn ends (issue 36 item 1).

`orchestra_jax.sampler.Sampler` moves its B rows in lockstep: they share one cache write index
(`KVCache.slot`, a scalar), every block is left-padded to the longest row, and a row that has finished its
turn keeps its place until the slowest row is done. `SlotSampler` keeps S slots instead:

- per-slot positions: the cache (a `KVCache`, k / v [L, S, C, K, H]) has ``slot`` int32 [S] (one write index
  per slot) and ``length`` [S] (the slot's real tokens: its next RoPE position). A block is written right-padded at the slot's own index and the
  index advances by the block's real tokens only, so a slot's cache holds its conversation without padding
  (the padding's keys land past the end and are overwritten by the next block; their ``valid`` stays False).
  The forward is the model's own `Qwen3.forward_cached`, which writes a cache with a per-row ``slot`` by a
  per-row scatter (in place, as the lockstep cache's dynamic_update_slice): the attention and cache arithmetic
  keep one owner. (A `jax.vmap` of the one-row forward over the slots gives the same values but decoded 2x
  slower on the tiny preset: its batching rules copied the cache every step.) Shapes are static: the decode
  step is [S, 1] and compiles once per attention window (`Sampler.kv_min` buckets).
- chunked prefill between decode steps: `step` feeds at most one block of at most `prefill_chunk` tokens to
  the slots that still have tokens queued (a new prompt, a whole conversation, or an env reply), then runs up
  to `chunk` decode steps for the slots whose queue is empty. The feed gathers only the slots that have
  tokens queued (their count padded to a power of two with idle slots), so a refill of one slot does not
  compute all S rows.
- sampling is `orchestra_jax.sampler._sample` (same temperature, top-k/top-p and float32 log-prob
  semantics as `Sampler.generate`) with one key per slot: a turn started with ``row_key=(r, t)`` draws its
  n-th token with fold_in(fold_in(fold_in(key(rng), r), t), n), as `Sampler.generate(row_rng=[(r, t)])`, so a
  row's draws depend neither on the slot it gets nor on the other slots.

A turn ends at a token in the sampler's ``eos_ids`` (kept, "eos") or after ``max_new_tokens`` ("length");
the sampled tokens (EOS included) are part of the slot's conversation, so a following `start` without
``reset`` appends to it (e.g. the env's reply). Stop strings and stop-token sequences are not supported
(the rollouts do not use them).

Usage (one engine per (Sampler, S, capacity); `slot_engine` builds and caches it)::

    eng = slot_engine(sampler, slots=16, capacity=4096)
    eng.start(slot=0, tokens=prompt_ids, reset=True, row_key=(row, turn))
    finished = eng.step(max_new_tokens=512, temperature=1.0, rng=seed)   # [FinishedTurn, ...]

Errors: ValueError for a slot out of range, a slot already in a turn, or a conversation that would not fit
`capacity` (the caller checks room before it starts a turn: `room`).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from orchestra_jax.model import KVCache
from orchestra_jax.sampler import _sample, bucket  # the one owner of the sampling rule and the padding buckets

__all__ = ["SlotSampler", "FinishedTurn"]


@dataclasses.dataclass
class FinishedTurn:
    """A turn that ended in `SlotSampler.step`: its slot, the sampled ids (EOS included), their float32
    log-probs (log_softmax(logits / T)[id] over the full vocabulary) and why it ended ("eos" or "length")."""

    slot: int
    tokens: list[int]
    logprobs: list[float]
    finish_reason: str


def _rows_forward(model, cache: KVCache, ids: jax.Array, counts: jax.Array, kv_len: int):
    """Feed right-padded blocks ids int32 [P, W] (row p's first counts[p] ids are real) to the P rows of a
    cache with one write index per row (`KVCache` slot int32 [P]; `Qwen3.forward_cached` writes row p at
    slot[p] .. slot[p] + W - 1 with a per-row scatter). Returns (hidden [P, W, D] compute dtype, the cache
    with slot += counts: the padding's slots are overwritten by the next block)."""
    mask = jnp.arange(ids.shape[1], dtype=jnp.int32)[None, :] < counts[:, None]
    h, new = model.forward_cached(ids, mask, cache, kv_len)
    return h, dataclasses.replace(new, slot=cache.slot + counts)


class SlotSampler:
    """S decode slots over one per-slot KV cache (see the module docstring).

    Args:
        sampler: the `orchestra_jax.sampler.Sampler` whose parameters (read at every call, so
            `Sampler.update_params` applies), eos ids, pad id and attention-window buckets are used.
        slots: S, the number of rows decoded together (>= 1).
        capacity: tokens one slot's conversation may hold (the cache has `prefill_chunk` more slots of
            headroom for the right-padding of the last block).
        chunk: decode steps per compiled call (the host refills slots between calls).
        prefill_chunk: widest block fed in one call (blocks are bucketed: 16, 32, 64, ... up to it).

    Attributes (counters since construction, for benchmarks): decode_steps (decode steps run), slot_steps
    (S x decode_steps), busy_slot_steps (of those, a slot decoding its own turn), feed_calls, fed_tokens.
    """

    def __init__(self, sampler, slots: int, capacity: int, *, chunk: int = 16, prefill_chunk: int = 64):
        if slots < 1 or capacity < 1 or chunk < 1 or prefill_chunk < 1:
            raise ValueError(f"slots, capacity, chunk and prefill_chunk must be >= 1; got {slots}, {capacity}, "
                             f"{chunk}, {prefill_chunk}")
        self.sampler = sampler
        self.slots, self.capacity = int(slots), int(capacity)
        self.chunk, self.prefill_chunk = int(chunk), int(prefill_chunk)
        cfg = sampler.config
        c = KVCache.init(cfg, self.slots, self.capacity + self.prefill_chunk)
        # one write index per slot; on the sampler's mesh the slots are sharded as its rows (`Sampler.place`)
        self.cache, self.logits = sampler.place(dataclasses.replace(c, slot=jnp.zeros((self.slots,), jnp.int32)),
                                                jnp.zeros((self.slots, cfg.vocab_size), jnp.float32))
        # host mirror, per slot: write index, tokens queued for the next feed, whether the next feed resets
        # the slot, whether it is in a turn, (row, turn) of that turn, the turn's ids and log-probs
        self.fill = [0] * self.slots
        self.queued: list[list[int]] = [[] for _ in range(self.slots)]
        self.reset = [False] * self.slots
        self.in_turn = [False] * self.slots
        self.row_key = np.zeros((self.slots, 2), np.uint32)
        self.turn_ids: list[list[int]] = [[] for _ in range(self.slots)]
        self.turn_lps: list[list[float]] = [[] for _ in range(self.slots)]
        self.decode_steps = self.slot_steps = self.busy_slot_steps = self.feed_calls = self.fed_tokens = 0
        self._feed = jax.jit(self._feed_impl, donate_argnums=(1,), static_argnames=("kv_len",))
        self._decode = jax.jit(self._decode_impl, donate_argnums=(1,),
                               static_argnames=("greedy", "top_k", "use_top_p", "kv_len"))

    # ------------------------------------------------------------------ jitted cores
    def _feed_impl(self, params, cache, logits, rows, ids, counts, reset, *, kv_len):
        """Reset the `reset` rows, then feed ids [P, W] (counts [P] real, right-padded) to the slots `rows`
        int32 [P] (distinct); their next-token logits become those after their last real token."""
        model = nnx.merge(self.sampler.graphdef, params)
        keep = ~reset
        sub = KVCache(cache.k[:, rows], cache.v[:, rows], cache.valid[rows] & keep[:, None],
                      jnp.where(keep, cache.length[rows], 0), jnp.where(keep, cache.slot[rows], 0))
        h, sub = _rows_forward(model, sub, ids, counts, kv_len)
        last = model.logits_from_hidden(h[jnp.arange(ids.shape[0]), jnp.maximum(counts - 1, 0)])
        row_logits = jnp.where((counts > 0)[:, None], last, logits[rows])
        cache = KVCache(cache.k.at[:, rows].set(sub.k), cache.v.at[:, rows].set(sub.v),
                        cache.valid.at[rows].set(sub.valid), cache.length.at[rows].set(sub.length),
                        cache.slot.at[rows].set(sub.slot))
        return cache, logits.at[rows].set(row_logits)

    def _decode_impl(self, params, cache, logits, live, count, row_key, base_key, n_steps, max_new,
                     temperature, top_p, eos, refill_at, *, greedy, top_k, use_top_p, kv_len):
        """Up to n_steps decode steps of the `live` slots (bool [S]), stopping after the step at which
        `refill_at` (int32 []; 0 = never) of their turns have ended; count int32 [S]: tokens of the slot's turn so
        far; row_key uint32 [S, 2]: (row, turn) of each slot's turn. Returns (cache, logits, done,
        ids [S, chunk], log-probs [S, chunk], emitted [S, chunk], reason [S] (1 eos, 3 length), steps)."""

        model = nnx.merge(self.sampler.graphdef, params)
        s, steps = logits.shape[0], self.chunk
        keys = jax.vmap(lambda rk: jax.random.fold_in(jax.random.fold_in(base_key, rk[0]), rk[1]))(row_key)
        carry = (jnp.zeros((), jnp.int32), cache, logits, ~live, count, jnp.zeros((s, steps), jnp.int32),
                 jnp.zeros((s, steps), jnp.float32), jnp.zeros((s, steps), bool), jnp.zeros((s,), jnp.int32))

        def cond(c):
            ended = jnp.sum(c[3] & live)
            return (c[0] < n_steps) & ~jnp.all(c[3]) & ~((refill_at > 0) & (ended >= refill_at))

        def body(c):
            i, cache, logits, done, count, toks, lps, emit, reason = c
            tok, lp = _sample(logits, jax.vmap(jax.random.fold_in)(keys, count), temperature, top_p,
                              greedy=greedy, top_k=top_k, use_top_p=use_top_p)
            run = ~done
            tok = jnp.where(run, tok, self.sampler.pad_id)
            count = count + run
            new_reason = jnp.where(jnp.isin(tok, eos), 1, jnp.where(count >= max_new, 3, 0))
            reason = jnp.where(run, new_reason, reason)
            h, cache = _rows_forward(model, cache, tok[:, None], run.astype(jnp.int32), kv_len)
            logits = jnp.where(run[:, None], model.logits_from_hidden(h[:, 0]), logits)
            toks, lps, emit = toks.at[:, i].set(tok), lps.at[:, i].set(lp), emit.at[:, i].set(run)
            return i + 1, cache, logits, done | (run & (new_reason > 0)), count, toks, lps, emit, reason

        i, cache, logits, done, _, toks, lps, emit, reason = jax.lax.while_loop(cond, body, carry)
        return cache, logits, done, toks, lps, emit, reason, i

    # ------------------------------------------------------------------ host API
    def busy(self, slot: int) -> bool:
        """Whether `slot` is in a turn (queued tokens or decoding)."""
        return self.in_turn[slot]

    def any_busy(self) -> bool:
        return any(self.in_turn)

    def room(self, slot: int, tokens: int, reset: bool, max_new_tokens: int) -> bool:
        """Whether `tokens` more tokens (after a reset when `reset`) and a full turn fit the slot's capacity."""
        return (0 if reset else self.fill[slot] + len(self.queued[slot])) + tokens + max_new_tokens <= self.capacity

    def start(self, slot: int, tokens: Sequence[int], *, reset: bool, row_key: tuple[int, int]) -> None:
        """Begin a turn in `slot`: queue `tokens` (fed in chunks by `step` before the slot decodes; after
        forgetting the slot's conversation when `reset`), then decode with the keys of ``row_key`` =
        (row, turn). A slot not reset continues the conversation it holds (the tokens follow its last turn).

        Raises: ValueError for a slot out of range or already in a turn, nothing to feed into an empty slot,
        or a conversation longer than `capacity`.
        """
        if not 0 <= slot < self.slots or self.in_turn[slot]:
            raise ValueError(f"slot {slot} is out of range [0, {self.slots}) or already in a turn")
        if reset:
            self.fill[slot], self.queued[slot] = 0, []
        if not tokens and self.fill[slot] == 0 and not self.queued[slot]:
            raise ValueError(f"slot {slot}: a turn needs a conversation; got no tokens for an empty slot")
        if not self.room(slot, len(tokens), False, 0):
            raise ValueError(f"slot {slot}: {self.fill[slot]} + {len(tokens)} tokens exceed capacity={self.capacity}")
        self.reset[slot] = self.reset[slot] or reset
        self.queued[slot] = self.queued[slot] + [int(t) for t in tokens]
        self.in_turn[slot] = True
        self.row_key[slot] = row_key
        self.turn_ids[slot], self.turn_lps[slot] = [], []

    def _kv_len(self, filled: int) -> int:
        """Attention window (static) covering `filled` slots: a power of two >= the sampler's kv_min, at most
        the cache's length (one compile per window, as `Sampler`)."""
        return min(self.capacity + self.prefill_chunk, max(self.sampler.kv_min, 1 << max(0, filled - 1).bit_length()))

    def _feed_step(self) -> None:
        """Feed one block (<= prefill_chunk tokens) to every slot that has tokens queued (or a pending reset)."""

        feeding = [s for s in range(self.slots) if self.queued[s] or self.reset[s]]
        if not feeding:
            return
        p = min(self.slots, 1 << (len(feeding) - 1).bit_length())
        rows = feeding + [s for s in range(self.slots) if s not in feeding][:p - len(feeding)]
        width = min(self.prefill_chunk, bucket(max(len(self.queued[s]) for s in feeding)))
        ids = np.full((p, width), self.sampler.pad_id, np.int32)
        counts = np.zeros(p, np.int32)
        for j, s in enumerate(feeding):
            blk, self.queued[s] = self.queued[s][:width], self.queued[s][width:]
            ids[j, :len(blk)], counts[j] = blk, len(blk)
        reset = np.asarray([self.reset[s] for s in rows], bool)
        start = [0 if self.reset[s] else self.fill[s] for s in rows]
        self.cache, self.logits = self._run_feed(rows, ids, counts, reset, max(start) + width)
        for j, s in enumerate(rows):
            self.fill[s] = start[j] + int(counts[j])
            self.reset[s] = False
        self.feed_calls += 1
        self.fed_tokens += int(counts.sum())

    def _run_feed(self, rows, ids, counts, reset, filled):
        """The jitted feed with the sampler's current parameters; returns (cache, logits)."""
        return self._feed(self.sampler.params, self.cache, self.logits, jnp.asarray(np.asarray(rows, np.int32)),
                          jnp.asarray(ids), jnp.asarray(counts), jnp.asarray(reset), kv_len=self._kv_len(filled))

    def step(self, max_new_tokens: int, temperature: float = 1.0, *, top_k: int = 0, top_p: float = 1.0,
             rng: int = 0, refill_at: int = 0) -> list[FinishedTurn]:
        """One feed block for the slots with tokens queued, then up to `chunk` decode steps for the slots in a
        turn with nothing queued (fewer: the decoding stops once `refill_at` turns have ended, so that the
        caller can refill those slots at once; 0 = never). Returns the turns that ended, in slot
        order (their slots are free again, holding their conversation).

        Args: max_new_tokens: per turn (>= 1); temperature: > 0 samples, 0 is greedy (log-probs at T = 1);
        top_k / top_p: as `Sampler.generate`; rng: int seed of the base key (the same for every turn);
        refill_at: stop once this many turns have ended (the caller has turns waiting for a slot; 0 = never).
        """
        if temperature < 0 or not 0 < top_p <= 1 or max_new_tokens < 1:
            raise ValueError(f"need temperature >= 0, top_p in (0, 1], max_new_tokens >= 1; got {temperature}, "
                             f"{top_p}, {max_new_tokens}")
        self._feed_step()
        live = np.asarray([self.in_turn[s] and not self.queued[s] and not self.reset[s] for s in range(self.slots)])
        if not live.any():
            return []
        n = min(self.chunk, min(self.capacity - self.fill[s] for s in np.flatnonzero(live)))
        count = np.asarray([len(x) for x in self.turn_ids], np.int32)
        res = self._decode(self.sampler.params, self.cache, self.logits, jnp.asarray(live), jnp.asarray(count),
                           jnp.asarray(self.row_key), jax.random.key(int(rng)), jnp.int32(max(1, n)),
                           jnp.int32(max_new_tokens), jnp.float32(temperature or 1.0), jnp.float32(top_p),
                           jnp.asarray(self.sampler.eos_ids), jnp.int32(refill_at),
                           greedy=temperature == 0, top_k=int(top_k),
                           use_top_p=top_p < 1.0, kv_len=self._kv_len(max(self.fill[s] for s in np.flatnonzero(live)) + n))
        self.cache, self.logits, done, toks, lps, emit, reason, steps = res
        done, toks, lps, emit, reason = map(np.asarray, (done, toks, lps, emit, reason))
        steps = int(steps)
        self.decode_steps += steps
        self.slot_steps += self.slots * steps
        self.busy_slot_steps += int(emit.sum())
        finished = []
        for s in np.flatnonzero(live):
            k = int(emit[s].sum())
            self.turn_ids[s] += [int(x) for x in toks[s, :k]]
            self.turn_lps[s] += [float(x) for x in lps[s, :k]]
            self.fill[s] += k
            full = self.fill[s] >= self.capacity
            if done[s] or full:
                why = {1: "eos", 3: "length"}.get(int(reason[s]), "cache_full") if done[s] else "cache_full"
                finished.append(FinishedTurn(int(s), self.turn_ids[s], self.turn_lps[s], why))
                self.in_turn[s] = False
        return finished


def slot_engine(sampler, slots: int, capacity: int) -> "SlotSampler":
    """The continuous-batching engine of `slots` slots holding up to `capacity` tokens each over `sampler`'s
    parameters (an `orchestra_jax.sampler.Sampler`); built once per (slots, capacity) and kept on the sampler
    (``sampler._slot_engines``), so its compiled steps serve every later rollout (its cache is reused; each
    rollout resets the slots)."""
    key = (int(slots), int(capacity))
    engines = sampler.__dict__.setdefault("_slot_engines", {})
    if key not in engines:
        engines[key] = SlotSampler(sampler, *key)
    return engines[key]
