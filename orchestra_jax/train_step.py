"""The pure, jit-compiled training steps: ``(state, batch) -> (state, metrics)`` for GRPO and SFT.

`TrainState` (params, optimizer state, step, frozen reference) is the whole trainable state (a pytree,
checkpointed as is); `make_grpo_step` / `make_sft_step` return the jitted updates (state donated);
`make_logp_fn` computes per-token log-probs of the policy; `make_optimizer` / `optimizer_from_config`
build the optax AdamW; `split_micro` shapes a batch into micro-batches; `make_old_logp_fn` computes pi_old's log-probs once per
batch; `grpo_updates` runs the PPO epochs and mini-batches of one GRPO step on the host (and skips a
step without learning signal); `params_digest` hashes the parameters bit for bit. The loop that calls
these is `orchestra_jax.train`.

Batch format (numpy or jax arrays, built by `orchestra_jax.batch.to_batch` / `grpo_batch` and split by
`split_micro`), with M micro-batches of b rows (B = M x b) and T tokens:
  tokens          int32   [M, b, T]  the full token sequence of each trajectory (right-padded)
  attention_mask  int32   [M, b, T]  1 for real tokens (from lengths, never from token values)
  loss_mask       float32 [M, b, T]  1 where tokens[t] was sampled by the policy (assistant tokens, EOS
                                     included); 0 for prompt, tool, user tokens and padding
  sampler_logp    float32 [M, b, T]  the sampler's log-prob of tokens[t] (0 where loss_mask is 0)
  advantages      float32 [M, b]     one advantage per trajectory (0 for filtered ones)
  old_logp        float32 [M, b, T]  optional: log pi_old of tokens[t] (`make_old_logp_fn`; 0 at t = 0),
                                     fixed for all updates of a batch (PPO epochs / mini-batches)
Position t's log-prob is log p(tokens[t] | tokens[<t]), so the step shifts by one internally.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.experimental import multihost_utils

from orchestra_jax import grpo
from orchestra_jax.model import Qwen3, token_logprobs
from orchestra_jax.train_config import TrainConfig
from orchestra_jax.trainable import Trainable

__all__ = [
    "TrainState",
    "make_optimizer",
    "optimizer_from_config",
    "init_state",
    "make_logp_fn",
    "make_grpo_step",
    "make_sft_step",
    "split_micro",
    "make_old_logp_fn",
    "grpo_updates",
    "UpdateResult",
    "gather_params",
    "params_digest",
]


class TrainState(NamedTuple):
    """The whole trainable state (a pytree; checkpointed as is).

    params: float32 master weights (`nnx.State` of the policy's `nnx.Param`s).
    opt_state: optax state of `make_optimizer`.
    step: int32 scalar, optimizer steps taken.
    ref_params: frozen reference policy (same structure as params) when kl_coef > 0, else None.
    frozen: None when every parameter is trained; else the frozen part of a `orchestra_jax.trainable`
        split (params is then the trained part): an argument of the step, never differentiated.
    """

    params: Any
    opt_state: Any
    step: jax.Array
    ref_params: Any
    frozen: Any = None

    def logp_params(self, params: Any = None) -> Any:
        """What a `make_logp_fn` function takes for `params` (default the state's): the params
        themselves, or (params, frozen) under a trainable split."""
        params = self.params if params is None else params
        return params if self.frozen is None else (params, self.frozen)


def make_optimizer(
    learning_rate: float,
    *,
    weight_decay: float = 0.01,
    grad_clip: float = 1.0,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    warmup_steps: int = 0,
    decay_steps: int = 0,
) -> optax.GradientTransformation:
    """AdamW with global-norm clipping (the released verl actor: AdamW, lr 1e-6, wd 0.01, clip 1.0).

    Learning rate: linear warm-up from 0 over `warmup_steps`, then constant, or (decay_steps > 0) a
    cosine decay to 0 over the next `decay_steps` (optax schedules; steps count optimizer updates)."""
    after: Any = (optax.cosine_decay_schedule(learning_rate, decay_steps) if decay_steps > 0
                  else optax.constant_schedule(learning_rate))
    lr: Any = learning_rate if decay_steps == 0 else after
    if warmup_steps > 0:
        lr = optax.join_schedules([optax.linear_schedule(0.0, learning_rate, warmup_steps), after], [warmup_steps])
    parts = []
    if grad_clip > 0:
        parts.append(optax.clip_by_global_norm(grad_clip))
    parts.append(optax.adamw(lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay))
    return optax.chain(*parts)


def optimizer_from_config(cfg: TrainConfig, *, sft: bool = False, lr_scale: float = 1.0) -> optax.GradientTransformation:
    """`make_optimizer` with a run's settings: the GRPO optimizer (optimizer.learning_rate,
    optimizer.warmup_steps, then constant or, when optimizer.lr_schedule is "cosine", a cosine decay over
    max_steps x grpo.ppo_epochs x grpo.ppo_mini_batches optimizer updates), or (sft=True) the warm start's
    (sft.learning_rate, no warm-up, cosine decay over sft.steps when sft.lr_schedule is "cosine"); the
    AdamW betas, epsilon, weight decay and gradient clip are the optimizer section's in both.
    lr_scale multiplies the learning rate (the training guard's restores); the optimizer state's
    structure does not depend on it, so a saved state restores into either."""
    return make_optimizer(
        (cfg.sft.learning_rate if sft else cfg.optimizer.learning_rate) * lr_scale,
        weight_decay=cfg.optimizer.weight_decay,
        grad_clip=cfg.optimizer.grad_clip,
        b1=cfg.optimizer.adam_b1,
        b2=cfg.optimizer.adam_b2,
        eps=cfg.optimizer.adam_eps,
        warmup_steps=0 if sft else cfg.optimizer.warmup_steps,
        decay_steps=(cfg.sft.steps if cfg.sft.lr_schedule == "cosine" else 0) if sft
        else (cfg.max_steps * cfg.grpo.ppo_epochs * cfg.grpo.ppo_mini_batches if cfg.optimizer.lr_schedule == "cosine" else 0),
    )


def _fp32(tree: Any) -> Any:
    return jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def init_state(params: Any, tx: optax.GradientTransformation, *, with_reference: bool,
               trainable: Trainable | None = None, key: jax.Array | None = None) -> TrainState:
    """Train state from policy params (cast to float32 master weights); the reference is a frozen copy.

    With a partial `trainable` (top-N layers / LoRA), params are split (`Trainable.split`, LoRA A drawn
    from `key`): the state's params, optimizer state and reference hold the trained part only, and
    ``frozen`` the rest (kept in its dtype)."""
    if trainable is None or trainable.is_full:
        params = _fp32(params)
        ref = jax.tree.map(jnp.copy, params) if with_reference else None
        return TrainState(params=params, opt_state=tx.init(params), step=jnp.zeros((), jnp.int32), ref_params=ref)
    trained, frozen = trainable.split(params, key)
    trained = _fp32(trained)
    frozen = jax.tree.map(jnp.copy, frozen)  # own buffers: the step donates the state, not the model's weights
    ref = jax.tree.map(jnp.copy, trained) if with_reference else None
    return TrainState(params=trained, opt_state=tx.init(trained), step=jnp.zeros((), jnp.int32), ref_params=ref,
                      frozen=frozen)


def make_logp_fn(graphdef: Any, rest: Any = None, *, chunk: int = 256,
                 with_entropy: bool = False, temperature: float = 1.0,
                 trainable: Trainable | None = None) -> Callable[..., Any]:
    """logp_fn(params, input_ids [b, T], targets [b, T], attention_mask [b, T]) -> float32 [b, T].

    Log-probs at the sampling `temperature`: log_softmax(logits / temperature)[target] over the full
    vocabulary, the convention of `orchestra_jax.sampler.Sampler` (no top-k / top-p renormalisation), so
    that the trainer's pi_old and the sampler's log-probs of the same tokens agree (a trainer at T = 1
    behind a sampler at T = 0.6 sees ratios far from 1 before any update: public report
    huggingface/trl PR 3029).

    Uses `orchestra_jax.model.token_logprobs` (chunked over the sequence, no [b, T, V] logits) for the
    Qwen3 policy; any other nnx module with ``__call__(input_ids, attention_mask=...) -> logits`` works
    through a plain log-softmax. with_entropy=True returns (logp, entropy), both float32 [b, T]
    (entropy of the full next-token distribution in nats, from the same logits); `make_grpo_step`
    then reports the `entropy` metric.

    With a partial `trainable` (`orchestra_jax.trainable.Trainable`, Qwen3 only), `params` is the pair
    (trained, frozen) of `TrainState.logp_params`: the frozen layers run without a backward pass and the
    LoRA adapters are applied unmerged, (x A) B.
    """
    if trainable is not None and not trainable.is_full:
        def split_logp_fn(params, input_ids, targets, attention_mask):
            pure, adapters = trainable.model_params(*params)
            model = nnx.merge(graphdef, nnx.State(pure))
            return token_logprobs(model, input_ids, targets, attention_mask, chunk=chunk, with_entropy=with_entropy,
                                  temperature=temperature, frozen_layers=trainable.frozen_layers, adapters=adapters)

        return split_logp_fn

    def logp_fn(params, input_ids, targets, attention_mask):
        model = nnx.merge(graphdef, params, rest) if rest is not None else nnx.merge(graphdef, params)
        if isinstance(model, Qwen3):
            return token_logprobs(model, input_ids, targets, attention_mask, chunk=chunk, with_entropy=with_entropy,
                                  temperature=temperature)
        logits = model(input_ids, attention_mask=attention_mask).astype(jnp.float32) / temperature
        lsm = jax.nn.log_softmax(logits, axis=-1)
        lp = jnp.take_along_axis(lsm, targets[..., None], axis=-1)[..., 0]
        if with_entropy:
            return lp, -jnp.sum(jnp.exp(lsm) * lsm, axis=-1)
        return lp

    return logp_fn


def _split_logp(out: Any) -> tuple[jax.Array, jax.Array | None]:
    return out if isinstance(out, tuple) else (out, None)


def _shift(mb: dict[str, jax.Array]) -> tuple[jax.Array, ...]:
    """Inputs/targets/masks for next-token log-probs: position t+1 predicted from tokens[:t+1]."""
    tokens = mb["tokens"]
    inp, tgt = tokens[:, :-1], tokens[:, 1:]
    am = mb["attention_mask"][:, :-1]
    mask = mb["loss_mask"][:, 1:] * (mb["attention_mask"][:, 1:] > 0)
    return inp, tgt, am, mask


def _reduce_sums(stacked: dict[str, jax.Array]) -> dict[str, jax.Array]:
    out = {}
    for k, v in stacked.items():
        out[k] = v.min(0) if k.endswith("_min") else (v.max(0) if k.endswith("_max") else v.sum(0))
    return out


def _accumulate(micro: Callable, params: Any, batch: dict[str, jax.Array]) -> tuple[Any, Any]:
    """Sum the gradients of the M micro-batches (leading batch axis) with `jax.lax.scan`; M = 1 runs
    the micro step once, without a loop. Returns (gradient sum, per-micro-batch outputs stacked [M, ...])."""
    zeros = jax.tree.map(jnp.zeros_like, params)
    if jax.tree.leaves(batch)[0].shape[0] == 1:
        grads, out = micro(zeros, jax.tree.map(lambda x: x[0], batch))
        return grads, jax.tree.map(lambda x: x[None], out)
    return jax.lax.scan(micro, zeros, batch)


def make_grpo_step(
    logp_fn: Callable[..., jax.Array],
    tx: optax.GradientTransformation,
    loss_cfg: grpo.LossConfig | None = None,
    *,
    old_logp_source: str = "trainer",
    donate: bool = True,
    behaviour_correction: bool = False,
) -> Callable[[TrainState, dict[str, jax.Array]], tuple[TrainState, dict[str, jax.Array]]]:
    """The jit-compiled GRPO update: ``(state, batch) -> (state, metrics)`` (state donated).

    The micro-batches (leading axis M of the batch) are scanned; each adds the gradient of
    ``loss_sum / D`` where D = `grpo.loss_denominator` of the *whole* batch, so the accumulated gradient
    equals the full-batch gradient for every aggregation (call it once per mini-batch: the denominator
    is then the mini-batch's, verl's token-mean per update). pi_old is batch["old_logp"] when the batch
    carries it (`make_old_logp_fn`, fixed over several updates), else the current policy with no
    gradient ("trainer": verl with one PPO epoch, ratio 1 at the start) or the sampler's log-probs
    ("sampler"). With `behaviour_correction` (asynchronous GRPO: the rollouts came from a stale policy),
    batch["sampler_logp"] is the behaviour policy's and each token is weighed by min(pi_old / pi_behaviour,
    loss_cfg.behaviour_is_cap) (`orchestra_jax.grpo.loss_sums` behaviour_logp). Under a mesh, shard params and the batch's row axis; XLA inserts the reductions.

    Metrics: loss, pg_loss, kl, kl_k1, clipfrac_low/high/dual, approx_kl, ratio_mean/min/max,
    logp_diff_sampler (mean |sampler - trainer| log-prob), tokens, sequences, grad_norm, and entropy
    (mean over loss tokens, nats) when logp_fn was made with ``with_entropy=True``.
    """
    cfg = loss_cfg or grpo.DEFAULT_LOSS_CONFIG
    use_ref = cfg.kl_coef > 0

    def step(state: TrainState, batch: dict[str, jax.Array]):
        full_mask = batch["loss_mask"][:, :, 1:] * (batch["attention_mask"][:, :, 1:] > 0)
        den = grpo.loss_denominator(full_mask.reshape(-1, full_mask.shape[-1]), cfg)

        def micro(grads, mb):
            inp, tgt, am, mask = _shift(mb)
            slp = mb["sampler_logp"][:, 1:]
            ref = (jax.lax.stop_gradient(_split_logp(logp_fn(state.logp_params(state.ref_params), inp, tgt, am))[0])
                   if use_ref else None)

            def loss_fn(params):
                lp, ent = _split_logp(logp_fn(state.logp_params(params), inp, tgt, am))
                ent = None if ent is None else jax.lax.stop_gradient(ent)
                if "old_logp" in mb:
                    old = mb["old_logp"][:, 1:]
                else:
                    old = jax.lax.stop_gradient(lp) if old_logp_source == "trainer" else slp
                loss_sum, sums = grpo.loss_sums(lp, old, mb["advantages"], mask, ref, cfg, entropy=ent,
                                                sampler_logp=slp, behaviour_logp=slp if behaviour_correction else None)
                return loss_sum / den, sums

            (loss, sums), g = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
            sums["loss_part"] = loss
            return jax.tree.map(jnp.add, grads, g), sums

        grads, stacked = _accumulate(micro, state.params, batch)
        sums = _reduce_sums(stacked)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        loss = sums.pop("loss_part")
        metrics = grpo.finalize_metrics(sums)
        metrics["loss"] = loss
        metrics["grad_norm"] = optax.tree.norm(grads)
        new = TrainState(params=params, opt_state=opt_state, step=state.step + 1, ref_params=state.ref_params,
                         frozen=state.frozen)
        return new, metrics

    return jax.jit(step, donate_argnums=(0,) if donate else ())


def make_sft_step(
    logp_fn: Callable[..., jax.Array], tx: optax.GradientTransformation, *, donate: bool = True
) -> Callable[[TrainState, dict[str, jax.Array]], tuple[TrainState, dict[str, jax.Array]]]:
    """Supervised warm start: token-mean negative log-likelihood of the loss-mask tokens (the same masks
    as GRPO: only assistant tokens are learned), micro-batched with the global token count.

    Batch: tokens, attention_mask, loss_mask as in the module docstring ([M, b, T]).
    Metrics: nll (nats per token), tokens, grad_norm.
    """

    def step(state: TrainState, batch: dict[str, jax.Array]):
        full_mask = batch["loss_mask"][:, :, 1:] * (batch["attention_mask"][:, :, 1:] > 0)
        count = jnp.sum(full_mask > 0)
        den = jnp.maximum(count.astype(jnp.float32), 1.0)

        def micro(grads, mb):
            inp, tgt, am, mask = _shift(mb)

            def loss_fn(params):
                lp = _split_logp(logp_fn(state.logp_params(params), inp, tgt, am))[0]
                return -jnp.sum(jnp.where(mask > 0, lp, 0.0)) / den

            loss, g = jax.value_and_grad(loss_fn)(state.params)
            return jax.tree.map(jnp.add, grads, g), loss

        grads, losses = _accumulate(micro, state.params, batch)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {"nll": losses.sum(), "tokens": den, "grad_norm": optax.tree.norm(grads)}
        return TrainState(params, opt_state, state.step + 1, state.ref_params, state.frozen), metrics

    return jax.jit(step, donate_argnums=(0,) if donate else ())


def split_micro(batch: dict[str, np.ndarray], micro_batches: int) -> dict[str, np.ndarray]:
    """[B, ...] arrays -> [M, B/M, ...]. Raises ValueError when M does not divide B."""
    out = {}
    for k, v in batch.items():
        v = np.asarray(v)
        if v.shape[0] % micro_batches:
            raise ValueError(f"batch[{k!r}] has {v.shape[0]} rows, not divisible by micro_batches={micro_batches}")
        out[k] = v.reshape((micro_batches, v.shape[0] // micro_batches) + v.shape[1:])
    return out


def make_old_logp_fn(logp_fn: Callable[..., Any]) -> Callable[[Any, dict[str, jax.Array]], jax.Array]:
    """old_logp_fn(params, batch [M, b, T]) -> float32 [M, b, T], jitted: log p(tokens[t] | tokens[<t])
    under `params` at every position (0 at t = 0), the layout of ``sampler_logp``; the micro-batches
    are mapped one after another (`jax.lax.map`), so memory is that of one micro-batch's forward.

    pi_old of a batch (ToolOrchestra Sec. 3.2 / verl's old log-probs): computed once before the first
    update and stored as batch["old_logp"], so every PPO epoch and mini-batch of the batch shares it."""

    def fn(params, batch):
        def one(mb):
            inp, tgt, am, _ = _shift(mb)
            lp = _split_logp(logp_fn(params, inp, tgt, am))[0]
            return jnp.pad(lp, ((0, 0), (1, 0)))

        return jax.lax.map(one, {k: batch[k] for k in ("tokens", "attention_mask", "loss_mask")})

    return jax.jit(fn)


class UpdateResult(NamedTuple):
    """What `grpo_updates` did: the new state, the metrics of each optimizer update in order (host
    floats; empty when skipped) and whether the whole step was skipped (no kept token)."""

    state: TrainState
    updates: list[dict[str, float]]
    skipped: bool


def _has_signal(batch: dict[str, np.ndarray]) -> bool:
    """Host-side: does any row hold a token in the loss (loss mask and attention at positions >= 1)?"""
    return bool(np.any((np.asarray(batch["loss_mask"])[:, 1:] > 0) & (np.asarray(batch["attention_mask"])[:, 1:] > 0)))


def grpo_updates(
    state: TrainState,
    batch: dict[str, np.ndarray],
    step_fn: Callable[[TrainState, dict[str, jax.Array]], tuple[TrainState, dict[str, jax.Array]]],
    *,
    place: Callable[[dict[str, np.ndarray]], dict[str, jax.Array]] | None = None,
    epochs: int = 1,
    mini_batches: int = 1,
    micro_batches: int = 1,
    seed: int = 0,
    old_logp_fn: Callable[[Any, dict[str, jax.Array]], jax.Array] | None = None,
) -> UpdateResult:
    """The optimizer updates of one GRPO step: `epochs` passes over the batch, each split into
    `mini_batches` updates (rows by a permutation seeded with (seed, epoch); no permutation when
    mini_batches = 1), each mini-batch split into `micro_batches` for memory (`step_fn` =
    `make_grpo_step`, whose loss denominator is then the mini-batch's: verl's token-mean per update).

    pi_old stays fixed over all updates of the batch: with `old_logp_fn` (`make_old_logp_fn`) and more
    than one update, the log-probs of the state before the first update are computed once and stored as
    batch["old_logp"]; with one update (or old_logp_source "sampler", old_logp_fn None) the step's own
    rule applies, so epochs = mini_batches = 1 is exactly one `step_fn` call on the whole batch.

    A step without learning signal is a no-op: when no row has a kept token (every group filtered) no
    update runs (no AdamW momentum, no weight decay), decided on the host from the numpy batch, so the
    same on every host; a mini-batch without a kept token is skipped likewise.

    Args:
      batch: numpy [B, ...] arrays of `orchestra_jax.batch.grpo_batch`.
      place: host [M, b, ...] batch -> device arrays (default `jnp.asarray`; the trainer shards).
    Returns: `UpdateResult`. Raises: ValueError when mini_batches x micro_batches does not divide B.
    """
    rows = int(np.asarray(batch["advantages"]).shape[0])
    if rows % (mini_batches * micro_batches):
        raise ValueError(f"{rows} rows are not divisible by ppo_mini_batches x micro_batches = "
                         f"{mini_batches} x {micro_batches}")
    if not _has_signal(batch):
        return UpdateResult(state, [], True)
    place = place or (lambda b: {k: jnp.asarray(v) for k, v in b.items()})
    data = {k: np.asarray(v) for k, v in batch.items()}
    if old_logp_fn is not None and epochs * mini_batches > 1:
        old = old_logp_fn(state.logp_params(), place(split_micro(data, micro_batches)))
        data["old_logp"] = gather_params(old)[0].reshape(data["tokens"].shape).astype(np.float32)
    size = rows // mini_batches
    updates: list[dict[str, float]] = []
    for epoch in range(epochs):
        order = (np.arange(rows) if mini_batches == 1
                 else np.random.default_rng([seed, epoch]).permutation(rows))
        for j in range(mini_batches):
            idx = order[j * size:(j + 1) * size]
            mini = {k: v[idx] for k, v in data.items()}
            if not _has_signal(mini):
                continue
            state, metrics = step_fn(state, place(split_micro(mini, micro_batches)))
            updates.append({k: float(v) for k, v in metrics.items()})
    return UpdateResult(state, updates, False)


def gather_params(params: Any) -> list[np.ndarray]:
    """Every leaf of `params` (in `jax.tree.leaves` order) as a full host numpy array.

    Multi-host: a replicated leaf is read from a local copy; a sharded leaf this process does not hold
    entirely is all-gathered (`jax.experimental.multihost_utils.process_allgather`), a collective, so
    every process must call this.
    """
    out = []
    for x in jax.tree.leaves(params):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            x = x.addressable_data(0) if x.is_fully_replicated else multihost_utils.process_allgather(x, tiled=True)
        out.append(np.asarray(x))
    return out


def params_digest(params: Any) -> str:
    """sha256 of all parameter bytes (to compare runs bit for bit; multi-host: see `gather_params`)."""
    h = hashlib.sha256()
    for x in gather_params(params):
        h.update(x.tobytes())
    return h.hexdigest()
