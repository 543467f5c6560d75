"""The pure, jit-compiled training steps: ``(state, batch) -> (state, metrics)`` for GRPO and SFT.

`TrainState` (params, optimizer state, step, frozen reference) is the whole trainable state (a pytree,
checkpointed as is); `make_grpo_step` / `make_sft_step` return the jitted updates (state donated);
`make_logp_fn` computes per-token log-probs of the policy; `make_optimizer` / `optimizer_from_config`
build the optax AdamW; `split_micro` shapes a batch into micro-batches; `params_digest` hashes the
parameters bit for bit. The loop that calls these is `orchestra_jax.train`.

Batch format (numpy or jax arrays, built by `orchestra_jax.batch.to_batch` / `grpo_batch` and split by
`split_micro`), with M micro-batches of b rows (B = M x b) and T tokens:
  tokens          int32   [M, b, T]  the full token sequence of each trajectory (right-padded)
  attention_mask  int32   [M, b, T]  1 for real tokens (from lengths, never from token values)
  loss_mask       float32 [M, b, T]  1 where tokens[t] was sampled by the policy (assistant tokens, EOS
                                     included); 0 for prompt, tool, user tokens and padding
  sampler_logp    float32 [M, b, T]  the sampler's log-prob of tokens[t] (0 where loss_mask is 0)
  advantages      float32 [M, b]     one advantage per trajectory (0 for filtered ones)
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

__all__ = [
    "TrainState",
    "make_optimizer",
    "optimizer_from_config",
    "init_state",
    "make_logp_fn",
    "make_grpo_step",
    "make_sft_step",
    "split_micro",
    "gather_params",
    "params_digest",
]


class TrainState(NamedTuple):
    """The whole trainable state (a pytree; checkpointed as is).

    params: float32 master weights (`nnx.State` of the policy's `nnx.Param`s).
    opt_state: optax state of `make_optimizer`.
    step: int32 scalar, optimizer steps taken.
    ref_params: frozen reference policy (same structure as params) when kl_coef > 0, else None.
    """

    params: Any
    opt_state: Any
    step: jax.Array
    ref_params: Any


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


def optimizer_from_config(cfg: TrainConfig, *, sft: bool = False) -> optax.GradientTransformation:
    """`make_optimizer` with a run's settings: the GRPO optimizer, or (sft=True) the warm start's
    (sft_learning_rate, no warm-up, cosine decay over sft_steps when sft_lr_schedule is "cosine")."""
    return make_optimizer(
        cfg.sft_learning_rate if sft else cfg.learning_rate,
        weight_decay=cfg.weight_decay,
        grad_clip=cfg.grad_clip,
        b1=cfg.adam_b1,
        b2=cfg.adam_b2,
        eps=cfg.adam_eps,
        warmup_steps=0 if sft else cfg.warmup_steps,
        decay_steps=cfg.sft_steps if sft and cfg.sft_lr_schedule == "cosine" else 0,
    )


def _fp32(tree: Any) -> Any:
    return jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def init_state(params: Any, tx: optax.GradientTransformation, *, with_reference: bool) -> TrainState:
    """Train state from policy params (cast to float32 master weights); the reference is a frozen copy."""
    params = _fp32(params)
    ref = jax.tree.map(jnp.copy, params) if with_reference else None
    return TrainState(params=params, opt_state=tx.init(params), step=jnp.zeros((), jnp.int32), ref_params=ref)


def make_logp_fn(graphdef: Any, rest: Any = None, *, chunk: int = 256,
                 with_entropy: bool = False) -> Callable[..., Any]:
    """logp_fn(params, input_ids [b, T], targets [b, T], attention_mask [b, T]) -> float32 [b, T].

    Uses `orchestra_jax.model.token_logprobs` (chunked over the sequence, no [b, T, V] logits) for the
    Qwen3 policy; any other nnx module with ``__call__(input_ids, attention_mask=...) -> logits`` works
    through a plain log-softmax. with_entropy=True returns (logp, entropy), both float32 [b, T]
    (entropy of the full next-token distribution in nats, from the same logits); `make_grpo_step`
    then reports the `entropy` metric.
    """

    def logp_fn(params, input_ids, targets, attention_mask):
        model = nnx.merge(graphdef, params, rest) if rest is not None else nnx.merge(graphdef, params)
        if isinstance(model, Qwen3):
            return token_logprobs(model, input_ids, targets, attention_mask, chunk=chunk, with_entropy=with_entropy)
        logits = model(input_ids, attention_mask=attention_mask).astype(jnp.float32)
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
) -> Callable[[TrainState, dict[str, jax.Array]], tuple[TrainState, dict[str, jax.Array]]]:
    """The jit-compiled GRPO update: ``(state, batch) -> (state, metrics)`` (state donated).

    The micro-batches (leading axis M of the batch) are scanned; each adds the gradient of
    ``loss_sum / D`` where D = `grpo.loss_denominator` of the *whole* batch, so the accumulated gradient
    equals the full-batch gradient for every aggregation. pi_old is the current policy with no
    gradient ("trainer": verl with one PPO epoch, ratio 1 at the start) or the sampler's log-probs
    ("sampler"). Under a mesh, shard params and the batch's row axis; XLA inserts the reductions.

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
            ref = jax.lax.stop_gradient(_split_logp(logp_fn(state.ref_params, inp, tgt, am))[0]) if use_ref else None

            def loss_fn(params):
                lp, ent = _split_logp(logp_fn(params, inp, tgt, am))
                ent = None if ent is None else jax.lax.stop_gradient(ent)
                old = jax.lax.stop_gradient(lp) if old_logp_source == "trainer" else slp
                loss_sum, sums = grpo.loss_sums(lp, old, mb["advantages"], mask, ref, cfg, entropy=ent,
                                                sampler_logp=slp)
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
        new = TrainState(params=params, opt_state=opt_state, step=state.step + 1, ref_params=state.ref_params)
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
        den = jnp.maximum(jnp.sum(full_mask > 0).astype(jnp.float32), 1.0)

        def micro(grads, mb):
            inp, tgt, am, mask = _shift(mb)

            def loss_fn(params):
                lp = _split_logp(logp_fn(params, inp, tgt, am))[0]
                return -jnp.sum(jnp.where(mask > 0, lp, 0.0)) / den

            loss, g = jax.value_and_grad(loss_fn)(state.params)
            return jax.tree.map(jnp.add, grads, g), loss

        grads, losses = _accumulate(micro, state.params, batch)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {"nll": losses.sum(), "tokens": den, "grad_norm": optax.tree.norm(grads)}
        return TrainState(params, opt_state, state.step + 1, state.ref_params), metrics

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
