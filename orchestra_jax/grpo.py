"""GRPO: group advantages, the paper's filters and the clipped surrogate loss.

Sources followed (cited line by line below):
  [TO]   ToolOrchestra, arXiv 2511.21689, Sec. 3.2 (reward, group-normalised advantage, filters).
  [GRPO] DeepSeekMath, arXiv 2402.03300, Eq. 3 (group-relative advantage, clipped objective).
  [DAPO] arXiv 2503.14476, Eq. 10 (separate clip_low / clip_high, "clip-higher").
  [DC]   Dual-clip PPO, arXiv 1912.09729, Eq. 6 (lower bound c * A for A < 0).
  [DR]   Dr. GRPO, arXiv 2503.20783, Sec. 3.1 (sum over tokens divided by a constant).
  [KL]   J. Schulman, "Approximating KL Divergence" (2020): estimators k1, k2, k3.
  [DEC]  AReaL, Fu et al. 2025, arXiv 2505.24298, Eq. 5: the decoupled PPO objective for rollouts of a stale
         behaviour policy: the clipped ratio is to a proximal policy pi_old, times pi_old / pi_behaviour.
  [TIS]  Yao et al. 2025, "Your efficient RL framework secretly brings you off-policy RL training": that weight
         truncated at C (min(w, C), C = 2), as IMPALA's V-trace rho-bar (Espeholt et al. 2018, arXiv 1802.01561).
  [REL]  The released training script `training/train_orchestrator.sh` (verl): clip_ratio_low=0.2,
         clip_ratio_high=0.28, clip_ratio_c=10.0, use_kl_loss=True, kl_loss_coef=0.0001,
         kl_loss_type=mse (k2), token-mean aggregation, GRPO advantage with `torch.std` (unbiased, ddof=1).

The loss is computed as a *sum* over tokens divided by a *global denominator* (`loss_denominator`, taken
from the whole batch), so the gradient of a batch equals the sum of the gradients of its micro-batches or
data-parallel shards, whatever the assignment of sequences (tests/jax/test_grpo.py checks this to 1e-6).
The loss's hyper-parameters are `LossConfig` (the run config's ``grpo.loss`` section, defined in
`orchestra_jax.train_sections`, re-exported here). Masked positions are removed with `jnp.where` (never multiplication), so NaN or huge garbage there
changes neither the loss, the metrics nor the gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from orchestra_jax.train_sections import AGGREGATIONS, KL_ESTIMATORS, LossConfig

__all__ = [
    "LossConfig", "DEFAULT_LOSS_CONFIG", "AGGREGATIONS", "KL_ESTIMATORS", "group_advantages", "group_std",
    "filter_and_advantages", "GroupFilterResult", "loss_denominator", "policy_loss", "loss_sums", "merge_metric_sums", "finalize_metrics",
]

DEFAULT_LOSS_CONFIG = LossConfig()


# ----------------------------------------------------------------------------------------------------------
# Advantages and filters ([TO] Sec. 3.2, [GRPO] Eq. 3)
# ----------------------------------------------------------------------------------------------------------


def group_advantages(
    rewards: np.ndarray | jax.Array,
    *,
    eps: float = 1e-6,
    clip: float | None = 3.0,
    ddof: int = 1,
) -> np.ndarray:
    """Group-normalised advantages A = (R - mean) / (std + eps), clipped to [-clip, clip].

    Args:
      rewards: float [G] (one group) or [N, G] (N groups of G rollouts of the same task).
      eps: added to the std (verl's epsilon 1e-6).
      clip: symmetric clip of A ([TO] Sec. 3.2: [-3, 3]); None disables.
      ddof: std's delta degrees of freedom. 1 (unbiased) as the released code's `torch.std` ([REL]).

    Returns:
      float32 NumPy array with the shape of `rewards`. A group whose rewards are all equal gives 0 (never
      NaN); a group of size 1 gives 0 (verl would return R itself there; a single rollout carries no
      relative signal, so we return 0).

    Raises:
      ValueError: rewards of rank other than 1 or 2, or non-finite rewards.
    """
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim not in (1, 2):
        raise ValueError(f"rewards must be [G] or [N, G], got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards contain NaN/inf; fix the reward function before computing advantages")
    squeeze = r.ndim == 1
    r = r[None, :] if squeeze else r
    g = r.shape[1]
    if g <= ddof:  # std undefined for one rollout: no relative signal
        adv = np.zeros_like(r)
    else:
        mean = r.mean(axis=1, keepdims=True)  # [GRPO] Eq. 3: mean over the group
        std = r.std(axis=1, ddof=ddof, keepdims=True)  # [REL] torch.std, unbiased
        centred = r - mean
        # equal rewards: centred is exactly 0 up to rounding; force 0 so tiny noise / eps is not amplified
        centred = np.where(std > 0.0, centred, 0.0)
        adv = centred / (std + eps)  # [TO] Sec. 3.2: A = (R - mean) / (std + eps)
    if clip is not None:
        adv = np.clip(adv, -clip, clip)  # [TO] Sec. 3.2: A clipped to [-3, 3]
    adv = adv.astype(np.float32)
    return adv[0] if squeeze else adv


def group_std(rewards: np.ndarray, *, ddof: int = 1) -> np.ndarray:
    """Per-group reward std, float64 [N] for rewards [N, G] (0 for G <= ddof)."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"rewards must be [N, G], got shape {r.shape}")
    if r.shape[1] <= ddof:
        return np.zeros(r.shape[0])
    return r.std(axis=1, ddof=ddof)


@dataclasses.dataclass(frozen=True)
class GroupFilterResult:
    """Output of `filter_and_advantages`.

    advantages: float32 [N, G]; 0 for dropped groups / rollouts.
    keep: bool [N, G]; rollouts that enter the loss.
    counts: ints for logging: groups_total, groups_low_std (dropped), rollouts_total,
      rollouts_no_answer (dropped), rollouts_kept, and with `off_policy` given: off_policy_total,
      off_policy_kept.
    """

    advantages: np.ndarray
    keep: np.ndarray
    counts: dict[str, int]


def filter_and_advantages(
    rewards: np.ndarray,
    has_answer: np.ndarray | None = None,
    *,
    min_std: float = 0.1,
    eps: float = 1e-6,
    clip: float | None = 3.0,
    ddof: int = 1,
    off_policy: np.ndarray | None = None,
) -> GroupFilterResult:
    """The paper's rollout filters plus group advantages ([TO] Sec. 3.2).

    Args:
      rewards: float [N, G] preference rewards (or outcomes) of N groups of G rollouts.
      has_answer: bool [N, G]; False for rollouts that ended without a valid final answer. They keep their
        reward inside the group statistics but are excluded from the loss. None = all True.
      min_std: groups whose reward std (same ddof) is below this are dropped (0.1 in [TO]).
      eps, clip, ddof: as in `group_advantages`.
      off_policy: bool [N, G]; True for rollouts the policy did not sample (guided rollouts,
        `orchestra_jax.train_config.TrainConfig.rollout.guide_experts`). They count in the group's mean and std
        like any rollout, but enter the loss only with a positive advantage: an off-policy episode that
        did better than its group is a demonstration to move towards (LUFFY, Yan et al. 2025, arXiv
        2504.14945, learns from off-policy successes); one that did worse is dropped, because pushing
        down an action the policy did not choose, without an importance weight, biases the update
        towards whatever the guides did well once (with both signs kept, a contextual-bandit check
        converged on the mid-priced expert for every request). None = every rollout is on-policy.

    The third filter of the paper (turns whose output is not a valid tool call) acts on tokens, not on
    rollouts: `orchestra_jax.rollout` zeroes the loss mask of such turns and counts them.
    """
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"rewards must be [N, G], got shape {r.shape}")
    ans = np.ones(r.shape, bool) if has_answer is None else np.asarray(has_answer, bool)
    if ans.shape != r.shape:
        raise ValueError(f"has_answer shape {ans.shape} != rewards shape {r.shape}")
    adv = group_advantages(r, eps=eps, clip=clip, ddof=ddof)
    group_ok = group_std(r, ddof=ddof) >= min_std  # [TO]: drop groups with reward std < 0.1
    keep = group_ok[:, None] & ans  # [TO]: drop rollouts without a valid answer
    extra = {}
    if off_policy is not None:
        off = np.asarray(off_policy, bool)
        if off.shape != r.shape:
            raise ValueError(f"off_policy shape {off.shape} != rewards shape {r.shape}")
        keep = keep & ~(off & (adv <= 0.0))  # off-policy rollouts: only those better than their group
        extra = {"off_policy_total": int(off.sum()), "off_policy_kept": int((keep & off).sum())}
    adv = np.where(keep, adv, 0.0).astype(np.float32)
    counts = {
        "groups_total": int(r.shape[0]),
        "groups_low_std": int((~group_ok).sum()),
        "rollouts_total": int(r.size),
        "rollouts_no_answer": int((~ans).sum()),
        "rollouts_kept": int(keep.sum()),
        **extra,
    }
    return GroupFilterResult(advantages=adv, keep=keep, counts=counts)


# ----------------------------------------------------------------------------------------------------------
# The loss
# ----------------------------------------------------------------------------------------------------------


def _check_shapes(logp, old_logp, advantages, mask, ref_logp) -> None:
    if logp.ndim != 2:
        raise ValueError(f"logp must be [B, T], got shape {logp.shape}")
    for name, x in (("old_logp", old_logp), ("mask", mask), ("ref_logp", ref_logp)):
        if x is not None and x.shape != logp.shape:
            raise ValueError(f"{name} shape {x.shape} != logp shape {logp.shape}")
    if advantages.shape != logp.shape[:1]:
        raise ValueError(f"advantages must be [B]={logp.shape[:1]}, got {advantages.shape}")


def loss_denominator(mask: jax.Array | np.ndarray, config: LossConfig | None = None) -> jax.Array:
    """The global denominator of the loss for the *whole* batch (before any micro-batch split).

    mask: [B, T] (1 = token in the loss). Returns float32 scalar:
      token-mean: number of loss tokens (>= 1);
      seq-mean-token-mean: number of sequences with at least one loss token (>= 1);
      dr-grpo: B x max_len (max_len from config, else T), a constant [DR].
    """
    cfg = config or DEFAULT_LOSS_CONFIG
    m = jnp.asarray(mask) > 0
    if cfg.aggregation == "token-mean":
        d = m.sum()
    elif cfg.aggregation == "seq-mean-token-mean":
        d = (m.sum(axis=1) > 0).sum()
    else:
        d = jnp.asarray(m.shape[0] * (cfg.max_len or m.shape[1]))
    return jnp.maximum(d.astype(jnp.float32), 1.0)


def loss_sums(
    logp: jax.Array,
    old_logp: jax.Array,
    advantages: jax.Array,
    mask: jax.Array,
    ref_logp: jax.Array | None = None,
    config: LossConfig | None = None,
    *,
    entropy: jax.Array | None = None,
    sampler_logp: jax.Array | None = None,
    behaviour_logp: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Un-normalised loss and metric sums of one (micro-)batch; divide by `loss_denominator` of the batch.

    Args:
      logp: float32 [B, T] log pi_theta of each sampled token (differentiated).
      old_logp: float32 [B, T] log pi_old (behaviour policy; no gradient).
      advantages: float32 [B], one advantage per sequence (broadcast over its tokens, [GRPO] Eq. 3).
      mask: [B, T], 1 where the token is an assistant token in the loss, else 0.
      ref_logp: float32 [B, T] log pi_ref, required when config.kl_coef > 0.
      config: LossConfig; None = released defaults.
      entropy: optional float32 [B, T] token entropies (nats), for the `entropy` metric.
      sampler_logp: optional float32 [B, T] log-probs reported by the sampler, for `logp_diff_sampler`.
      behaviour_logp: optional float32 [B, T] log-probs of the (stale) policy that generated the tokens
        (asynchronous GRPO, `GrpoSection.max_staleness` > 0). Each token's clipped surrogate is then weighed
        by w = min(exp(old_logp - behaviour_logp), config.behaviour_is_cap), no gradient ([DEC] Eq. 5, [TIS]);
        metrics `is_weight` (mean w) and `is_truncated` (fraction with w at the cap). None = no weight (the
        synchronous loss, unchanged).

    Returns:
      (loss_sum, sums): loss_sum is a float32 scalar such that loss = loss_sum / denominator. `sums` holds
      token counts / sums / min / max for the metrics; combine micro-batches with `merge_metric_sums` and
      turn them into metrics with `finalize_metrics`.

    Raises:
      ValueError: on shape mismatches or kl_coef > 0 without ref_logp.
    """
    cfg = config or DEFAULT_LOSS_CONFIG
    _check_shapes(logp, old_logp, advantages, mask, ref_logp)
    if cfg.kl_coef > 0 and ref_logp is None:
        raise ValueError("config.kl_coef > 0 needs ref_logp (log-probs of the frozen reference policy)")
    m = jnp.asarray(mask) > 0  # boolean mask; values are never multiplied by it
    zero = jnp.zeros_like(logp)
    lp = jnp.where(m, logp, zero)  # garbage (NaN/inf) in masked slots is removed here, gradient-safe
    olp = jnp.where(m, jax.lax.stop_gradient(old_logp), zero)
    adv = jnp.broadcast_to(jax.lax.stop_gradient(advantages)[:, None], logp.shape)  # [GRPO] Eq. 3: A_{i,t} = A_i

    log_ratio = jnp.clip(lp - olp, -cfg.log_ratio_clamp, cfg.log_ratio_clamp)  # clamp before exp (verl)
    ratio = jnp.exp(log_ratio)  # r_t = pi_theta / pi_old  [GRPO] Eq. 3
    pg1 = -adv * ratio  # -A r                                                [GRPO] Eq. 3
    pg2 = -adv * jnp.clip(ratio, 1.0 - cfg.clip_eps_low, 1.0 + cfg.clip_eps_high)  # -A clip(r)   [DAPO] Eq. 10
    pg_clip = jnp.maximum(pg1, pg2)  # -min(A r, A clip(r))                   [GRPO] Eq. 3
    if cfg.dual_clip_c > 0:
        pg3 = -adv * cfg.dual_clip_c  # -c A  (positive for A < 0)            [DC] Eq. 6
        pg_dual = jnp.minimum(pg3, pg_clip)  # -max(min(A r, A clip r), c A)  [DC] Eq. 6
        pg = jnp.where(adv < 0, pg_dual, pg_clip)  # dual clip only for A < 0 [DC] Eq. 6
    else:
        pg = pg_clip
    if behaviour_logp is not None:  # [DEC] Eq. 5: pi_old / pi_behaviour, truncated at C [TIS]
        blp = jnp.where(m, jax.lax.stop_gradient(behaviour_logp), zero)
        raw_w = jnp.exp(jnp.clip(olp - blp, -cfg.log_ratio_clamp, cfg.log_ratio_clamp))
        is_w = jnp.minimum(raw_w, cfg.behaviour_is_cap)
        pg = pg * is_w

    per_token = pg
    kl_tok = zero
    if ref_logp is not None:
        rlp = jnp.where(m, jax.lax.stop_gradient(ref_logp), zero)
        d = lp - rlp  # log pi_theta - log pi_ref
        if cfg.kl_estimator == "k2":
            kl_tok = 0.5 * jnp.square(d)  # k2 = 0.5 (logp - ref)^2             [KL], [REL] kl_loss_type=mse
        else:
            kl_tok = jnp.clip(jnp.exp(-d) + d - 1.0, -10.0, 10.0)  # k3 = r - 1 - log r, r = ref/pi  [KL] (verl clamp)
        if cfg.kl_coef > 0:
            per_token = pg + cfg.kl_coef * kl_tok  # L = L_pg + beta KL         [GRPO] Eq. 3

    # per-sequence weights of the aggregation (local to a row, so micro-batch invariant)
    n_tok = m.sum(axis=1).astype(jnp.float32)  # tokens in the loss per sequence
    if cfg.aggregation == "seq-mean-token-mean":
        w_row = jnp.where(n_tok > 0, 1.0 / jnp.maximum(n_tok, 1.0), 0.0)  # mean over tokens, then sequences [GRPO]
    else:
        w_row = jnp.ones_like(n_tok)  # token-mean [REL] and Dr. GRPO's sum [DR]: every token weight 1
    loss_sum = jnp.sum(jnp.where(m, per_token * w_row[:, None], 0.0))

    # metric sums (token-weighted; min/max over loss tokens)
    low = (adv < 0) & (ratio < 1.0 - cfg.clip_eps_low)  # clipped from below ([DAPO] clip_low active)
    high = (adv > 0) & (ratio > 1.0 + cfg.clip_eps_high)  # clipped from above (clip_high active)
    dual = (adv < 0) & (ratio > (cfg.dual_clip_c if cfg.dual_clip_c > 0 else jnp.inf))
    k3_old = jnp.exp(olp - lp) - 1.0 + (lp - olp)  # approx KL(old || new), k3 estimator [KL]

    def tsum(x):
        return jnp.sum(jnp.where(m, x, 0.0).astype(jnp.float32))

    sums = {
        "tokens": tsum(jnp.ones_like(lp)),
        "sequences": jnp.sum(n_tok > 0).astype(jnp.float32),
        "pg_loss_sum": tsum(pg),
        "clipfrac_low_sum": tsum(low.astype(jnp.float32)),
        "clipfrac_high_sum": tsum(high.astype(jnp.float32)),
        "clipfrac_dual_sum": tsum(dual.astype(jnp.float32)),
        "approx_kl_sum": tsum(k3_old),
        "ratio_sum": tsum(ratio),
        "ratio_min": jnp.min(jnp.where(m, ratio, jnp.inf)),
        "ratio_max": jnp.max(jnp.where(m, ratio, -jnp.inf)),
    }
    if ref_logp is not None:
        sums["kl_sum"] = tsum(kl_tok)
        sums["kl_k1_sum"] = tsum(lp - rlp)  # k1 = logp - ref, metric only [KL]
    if behaviour_logp is not None:
        sums["is_weight_sum"] = tsum(is_w)
        sums["is_truncated_sum"] = tsum((raw_w >= cfg.behaviour_is_cap).astype(jnp.float32))
    if entropy is not None:
        sums["entropy_sum"] = tsum(jnp.where(m, entropy, 0.0))
    if sampler_logp is not None:
        slp = jnp.where(m, sampler_logp, zero)
        sums["logp_diff_sampler_sum"] = tsum(jnp.abs(jax.lax.stop_gradient(lp) - slp))
    return loss_sum, sums


def merge_metric_sums(a: dict[str, jax.Array], b: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """Combine the `sums` of two micro-batches (sum, except min/max)."""
    out = {}
    for k in a:
        if k.endswith("_min"):
            out[k] = jnp.minimum(a[k], b[k])
        elif k.endswith("_max"):
            out[k] = jnp.maximum(a[k], b[k])
        else:
            out[k] = a[k] + b[k]
    return out


def finalize_metrics(sums: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """Token means from metric sums: clipfrac_low/high/dual, approx_kl, ratio_mean/min/max, pg_loss,
    kl (chosen estimator), kl_k1, entropy, logp_diff_sampler (mean |sampler - trainer| log-prob), and with a
    behaviour policy is_weight / is_truncated."""
    n = jnp.maximum(sums["tokens"], 1.0)
    out = {"tokens": sums["tokens"], "sequences": sums["sequences"]}
    for k, v in sums.items():
        if k.endswith("_sum"):
            out[k[: -len("_sum")]] = v / n
    any_tok = sums["tokens"] > 0
    out["ratio_mean"] = jnp.where(any_tok, out.pop("ratio"), 1.0)
    out["ratio_min"] = jnp.where(any_tok, sums["ratio_min"], 1.0)
    out["ratio_max"] = jnp.where(any_tok, sums["ratio_max"], 1.0)
    return out


def policy_loss(
    logp: jax.Array,
    old_logp: jax.Array,
    advantages: jax.Array,
    mask: jax.Array,
    ref_logp: jax.Array | None = None,
    config: LossConfig | None = None,
    *,
    denominator: jax.Array | float | None = None,
    entropy: jax.Array | None = None,
    sampler_logp: jax.Array | None = None,
    behaviour_logp: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """GRPO clipped surrogate loss with dual clip and KL-to-reference ([GRPO] Eq. 3, [DAPO], [DC], [REL]).

    Args: as `loss_sums`, plus
      denominator: the global denominator (`loss_denominator` of the whole batch). None = this batch's own,
        i.e. the plain loss of a full batch. Pass it explicitly when `logp` is a micro-batch or a
        data-parallel shard, so that the summed gradients equal the full-batch gradient.

    Returns:
      (loss, metrics): float32 scalar loss (to minimise) and a dict of float32 scalars (see
      `finalize_metrics`). Metrics are token means over this (micro-)batch.
    """
    cfg = config or DEFAULT_LOSS_CONFIG
    loss_sum, sums = loss_sums(
        logp, old_logp, advantages, mask, ref_logp, cfg, entropy=entropy, sampler_logp=sampler_logp,
        behaviour_logp=behaviour_logp,
    )
    den = loss_denominator(mask, cfg) if denominator is None else jnp.asarray(denominator, jnp.float32)
    loss = loss_sum / den  # token-mean / seq-mean / Dr.GRPO: sum over tokens / global constant
    metrics = finalize_metrics(sums)
    metrics["loss"] = loss
    return loss, metrics
