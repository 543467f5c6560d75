"""GRPO training of the orchestrator policy: train state, the jit-compiled train step, the loop, the CLI.

Data flow (DESIGN.md Sec. 1): tasks -> `orchestra_jax.rollout` (sampler <-> envs) -> rewards
(`orchestra_gym.rewards.group_preference_rewards`) -> `grpo.filter_and_advantages` -> `train_step`
(`grpo.loss_sums` with the global denominator, micro-batched) -> optax AdamW -> orbax checkpoint.

Batch format (numpy or jax arrays, built by `orchestra_jax.rollout.to_batch`), with M micro-batches of
b rows (B = M x b) and T tokens:
  tokens          int32   [M, b, T]  the full token sequence of each trajectory (right-padded)
  attention_mask  int32   [M, b, T]  1 for real tokens (from lengths, never from token values)
  loss_mask       float32 [M, b, T]  1 where tokens[t] was sampled by the policy (assistant tokens, EOS
                                     included); 0 for prompt, tool, user tokens and padding
  sampler_logp    float32 [M, b, T]  the sampler's log-prob of tokens[t] (0 where loss_mask is 0)
  advantages      float32 [M, b]     one advantage per trajectory (0 for filtered ones)
Position t's log-prob is log p(tokens[t] | tokens[<t]), so the step shifts by one internally.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from orchestra_jax import grpo
from orchestra_jax.train_config import TrainConfig

__all__ = [
    "TrainState",
    "make_optimizer",
    "init_state",
    "make_logp_fn",
    "make_grpo_step",
    "make_sft_step",
    "train_main",
    "sft_main",
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
) -> optax.GradientTransformation:
    """AdamW with global-norm clipping (the released verl actor: AdamW, lr 1e-6, wd 0.01, clip 1.0)."""
    lr: Any = learning_rate
    if warmup_steps > 0:
        lr = optax.join_schedules(
            [optax.linear_schedule(0.0, learning_rate, warmup_steps), optax.constant_schedule(learning_rate)],
            [warmup_steps],
        )
    parts = []
    if grad_clip > 0:
        parts.append(optax.clip_by_global_norm(grad_clip))
    parts.append(optax.adamw(lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay))
    return optax.chain(*parts)


def optimizer_from_config(cfg: TrainConfig, *, sft: bool = False) -> optax.GradientTransformation:
    return make_optimizer(
        cfg.sft_learning_rate if sft else cfg.learning_rate,
        weight_decay=cfg.weight_decay,
        grad_clip=cfg.grad_clip,
        b1=cfg.adam_b1,
        b2=cfg.adam_b2,
        eps=cfg.adam_eps,
        warmup_steps=0 if sft else cfg.warmup_steps,
    )


def _fp32(tree: Any) -> Any:
    return jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def init_state(params: Any, tx: optax.GradientTransformation, *, with_reference: bool) -> TrainState:
    """Train state from policy params (cast to float32 master weights); the reference is a frozen copy."""
    params = _fp32(params)
    ref = jax.tree.map(jnp.copy, params) if with_reference else None
    return TrainState(params=params, opt_state=tx.init(params), step=jnp.zeros((), jnp.int32), ref_params=ref)


def make_logp_fn(graphdef: Any, rest: Any = None, *, chunk: int = 256) -> Callable[..., jax.Array]:
    """logp_fn(params, input_ids [b, T], targets [b, T], attention_mask [b, T]) -> float32 [b, T].

    Uses `orchestra_jax.model.token_logprobs` (chunked over the sequence, no [b, T, V] logits) for the
    Qwen3 policy; any other nnx module with ``__call__(input_ids, attention_mask=...) -> logits`` works
    through a plain log-softmax.
    """

    def logp_fn(params, input_ids, targets, attention_mask):
        model = nnx.merge(graphdef, params, rest) if rest is not None else nnx.merge(graphdef, params)
        try:
            from orchestra_jax.model import Qwen3, token_logprobs
        except ImportError:  # policy module not present: generic path
            Qwen3 = None
        if Qwen3 is not None and isinstance(model, Qwen3):
            return token_logprobs(model, input_ids, targets, attention_mask, chunk=chunk)
        logits = model(input_ids, attention_mask=attention_mask).astype(jnp.float32)
        lsm = jax.nn.log_softmax(logits, axis=-1)
        return jnp.take_along_axis(lsm, targets[..., None], axis=-1)[..., 0]

    return logp_fn


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
    logp_diff_sampler (mean |sampler - trainer| log-prob), tokens, sequences, grad_norm.
    """
    cfg = loss_cfg or grpo.DEFAULT_LOSS_CONFIG
    use_ref = cfg.kl_coef > 0

    def step(state: TrainState, batch: dict[str, jax.Array]):
        full_mask = batch["loss_mask"][:, :, 1:] * (batch["attention_mask"][:, :, 1:] > 0)
        den = grpo.loss_denominator(full_mask.reshape(-1, full_mask.shape[-1]), cfg)

        def micro(grads, mb):
            inp, tgt, am, mask = _shift(mb)
            slp = mb["sampler_logp"][:, 1:]
            ref = jax.lax.stop_gradient(logp_fn(state.ref_params, inp, tgt, am)) if use_ref else None

            def loss_fn(params):
                lp = logp_fn(params, inp, tgt, am)
                old = jax.lax.stop_gradient(lp) if old_logp_source == "trainer" else slp
                loss_sum, sums = grpo.loss_sums(lp, old, mb["advantages"], mask, ref, cfg, sampler_logp=slp)
                return loss_sum / den, sums

            (loss, sums), g = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
            sums["loss_part"] = loss
            return jax.tree.map(jnp.add, grads, g), sums

        zeros = jax.tree.map(jnp.zeros_like, state.params)
        grads, stacked = jax.lax.scan(micro, zeros, batch)
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
                lp = logp_fn(params, inp, tgt, am)
                return -jnp.sum(jnp.where(mask > 0, lp, 0.0)) / den

            loss, g = jax.value_and_grad(loss_fn)(state.params)
            return jax.tree.map(jnp.add, grads, g), loss

        zeros = jax.tree.map(jnp.zeros_like, state.params)
        grads, losses = jax.lax.scan(micro, zeros, batch)
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


