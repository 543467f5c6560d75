"""Tests of orchestra_jax.grpo: gradient table, micro-batch / data-parallel invariance, masking, KL, advantages."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from orchestra_jax import grpo
from orchestra_jax.grpo import LossConfig

jax.config.update("jax_enable_x64", False)
REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- gradient table (issue 7)


def _dloss_dratio(ratio: float, adv: float, cfg: LossConfig) -> float:
    """d loss / d ratio for one token, via d loss / d logp = ratio * d loss / d ratio."""
    old = jnp.zeros((1, 1))
    mask = jnp.ones((1, 1))
    a = jnp.array([adv], jnp.float32)

    def f(lp):
        return grpo.policy_loss(lp, old, a, mask, config=cfg)[0]

    g = jax.grad(f)(jnp.full((1, 1), np.log(ratio), jnp.float32))
    return float(g[0, 0]) / ratio


@pytest.mark.parametrize(
    "adv,ratio,expected",
    [(-1.0, 0.5, 0.0), (-1.0, 1.5, 1.0), (1.0, 0.5, -1.0), (1.0, 1.5, 0.0), (1.0, 1.1, -1.0), (-1.0, 0.9, 1.0)],
)
def test_gradient_table_eps_0_2(adv, ratio, expected):
    cfg = LossConfig(clip_eps_low=0.2, clip_eps_high=0.2, dual_clip_c=0.0, kl_coef=0.0)
    assert _dloss_dratio(ratio, adv, cfg) == pytest.approx(expected, abs=1e-6)


def test_gradient_table_dual_clip():
    cfg = LossConfig(clip_eps_low=0.2, clip_eps_high=0.2, dual_clip_c=10.0, kl_coef=0.0)
    # far above c: the dual clip caps the loss at c |A|, gradient 0
    assert _dloss_dratio(50.0, -1.0, cfg) == pytest.approx(0.0, abs=1e-7)
    # below c the ordinary clipped gradient (1 for A=-1 above 1+eps) remains
    assert _dloss_dratio(5.0, -1.0, cfg) == pytest.approx(1.0, abs=1e-5)
    # without the dual clip the far-off ratio still pushes
    no_dual = LossConfig(clip_eps_low=0.2, clip_eps_high=0.2, dual_clip_c=0.0, kl_coef=0.0)
    assert _dloss_dratio(50.0, -1.0, no_dual) == pytest.approx(1.0, abs=1e-5)
    # loss value at r = 50: c |A| = 10
    lp = jnp.full((1, 1), np.log(50.0), jnp.float32)
    loss, m = grpo.policy_loss(lp, jnp.zeros((1, 1)), jnp.array([-1.0]), jnp.ones((1, 1)), config=cfg)
    assert float(loss) == pytest.approx(10.0, rel=1e-6)
    assert float(m["clipfrac_dual"]) == 1.0


def test_released_clip_high_0_28():
    cfg = LossConfig(kl_coef=0.0)  # released: 0.2 / 0.28
    assert _dloss_dratio(1.25, 1.0, cfg) == pytest.approx(-1.0, abs=1e-6)  # inside 1.28: still pushed
    assert _dloss_dratio(1.30, 1.0, cfg) == pytest.approx(0.0, abs=1e-7)  # above 1.28: clipped
    assert _dloss_dratio(0.79, -1.0, cfg) == pytest.approx(0.0, abs=1e-7)  # below 0.8: clipped


# ---------------------------------------------------------------- float64 NumPy reference


def _np_reference(logp, old, adv, mask, ref, cfg: LossConfig) -> float:
    logp, old, ref = (np.asarray(x, np.float64) for x in (logp, old, ref))
    m = np.asarray(mask) > 0
    lr = np.clip(np.where(m, logp - old, 0.0), -cfg.log_ratio_clamp, cfg.log_ratio_clamp)
    r = np.exp(lr)
    a = np.asarray(adv, np.float64)[:, None] * np.ones_like(r)
    pg = np.maximum(-a * r, -a * np.clip(r, 1 - cfg.clip_eps_low, 1 + cfg.clip_eps_high))
    if cfg.dual_clip_c > 0:
        pg = np.where(a < 0, np.minimum(pg, -a * cfg.dual_clip_c), pg)
    d = np.where(m, logp - ref, 0.0)
    kl = 0.5 * d**2 if cfg.kl_estimator == "k2" else np.clip(np.exp(-d) + d - 1, -10, 10)
    tok = pg + cfg.kl_coef * kl
    tok = np.where(m, tok, 0.0)
    n = m.sum(1)
    if cfg.aggregation == "token-mean":
        return tok.sum() / m.sum()
    if cfg.aggregation == "seq-mean-token-mean":
        keep = n > 0
        return float(np.mean(tok.sum(1)[keep] / n[keep]))
    return tok.sum() / (m.shape[0] * (cfg.max_len or m.shape[1]))


def _random_batch(seed=0, b=8, t=12):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, t + 1, size=b)
    lengths[0] = t
    mask = (np.arange(t)[None, :] < lengths[:, None]).astype(np.float32)
    old = np.log(rng.uniform(0.05, 0.9, size=(b, t))).astype(np.float32)
    logp = (old + rng.normal(0, 0.4, size=(b, t))).astype(np.float32)
    ref = (old + rng.normal(0, 0.3, size=(b, t))).astype(np.float32)
    adv = rng.normal(0, 1.5, size=b).astype(np.float32)
    return logp, old, adv, mask, ref, lengths


@pytest.mark.parametrize("agg", grpo.AGGREGATIONS)
@pytest.mark.parametrize("est", grpo.KL_ESTIMATORS)
def test_matches_float64_numpy_reference(agg, est):
    logp, old, adv, mask, ref, _ = _random_batch(1)
    logp[2, 0] = old[2, 0] + 4.0  # a ratio beyond the dual clip (e^4 > 10)
    adv[2] = -1.0
    cfg = LossConfig(aggregation=agg, kl_estimator=est, kl_coef=0.05)
    loss, m = grpo.policy_loss(logp, old, adv, mask, ref, cfg)
    assert float(loss) == pytest.approx(_np_reference(logp, old, adv, mask, ref, cfg), rel=2e-6, abs=1e-7)
    assert float(m["clipfrac_dual"]) == pytest.approx(1.0 / mask.sum())
    r = np.exp(logp - old)[mask > 0]
    assert float(m["ratio_max"]) == pytest.approx(r.max(), rel=1e-5)
    assert float(m["ratio_min"]) == pytest.approx(r.min(), rel=1e-5)
    assert float(m["ratio_mean"]) == pytest.approx(r.mean(), rel=1e-5)
    k1 = (logp - ref)[mask > 0].mean()
    assert float(m["kl_k1"]) == pytest.approx(k1, rel=1e-4, abs=1e-6)


def test_metrics_clipfracs_and_sampler_diff():
    logp = np.log(np.array([[0.5, 1.5, 1.0, 1.0]], np.float32))
    old = np.zeros((1, 4), np.float32)
    mask = np.array([[1, 1, 1, 0]], np.float32)
    _, m = grpo.policy_loss(logp, old, np.array([-1.0], np.float32), mask, config=LossConfig(kl_coef=0.0))
    assert float(m["clipfrac_low"]) == pytest.approx(1 / 3)  # r=0.5 < 0.8 with A<0
    assert float(m["clipfrac_high"]) == 0.0  # A<0: upper clip never active
    _, m = grpo.policy_loss(logp, old, np.array([1.0], np.float32), mask, config=LossConfig(kl_coef=0.0))
    assert float(m["clipfrac_high"]) == pytest.approx(1 / 3)  # r=1.5 > 1.28 with A>0
    assert float(m["clipfrac_low"]) == 0.0
    sampler = logp + np.array([[0.1, -0.3, 0.2, 99.0]], np.float32)
    ent = np.array([[1.0, 2.0, 3.0, np.nan]], np.float32)
    _, m = grpo.policy_loss(
        logp, old, np.array([1.0], np.float32), mask, config=LossConfig(kl_coef=0.0), entropy=ent,
        sampler_logp=sampler,
    )
    assert float(m["logp_diff_sampler"]) == pytest.approx(0.2, rel=1e-5)
    assert float(m["entropy"]) == pytest.approx(2.0)


def test_kl_needs_reference():
    z = np.zeros((1, 2), np.float32)
    with pytest.raises(ValueError, match="ref_logp"):
        grpo.policy_loss(z, z, np.zeros(1, np.float32), np.ones((1, 2)), config=LossConfig(kl_coef=0.1))
    with pytest.raises(ValueError, match="aggregation"):
        LossConfig(aggregation="mean")
    with pytest.raises(ValueError, match="advantages"):
        grpo.policy_loss(z, z, np.zeros(2, np.float32), np.ones((1, 2)), config=LossConfig(kl_coef=0.0))


# ---------------------------------------------------------------- garbage in masked positions


def test_garbage_in_masked_positions_changes_nothing():
    logp, old, adv, mask, ref, _ = _random_batch(2)
    cfg = LossConfig(kl_coef=0.01)
    ent = np.abs(logp)

    def run(lp, o, r, e, s):
        (loss, m), g = jax.value_and_grad(
            lambda x: grpo.policy_loss(x, o, adv, mask, r, cfg, entropy=e, sampler_logp=s), has_aux=True
        )(jnp.asarray(lp))
        return loss, m, g

    base = run(logp, old, ref, ent, old)
    bad = mask == 0
    assert bad.any()
    garbage = []
    for val in (np.nan, 1e30, -1e30, np.inf):
        g_lp, g_old, g_ref, g_ent, g_s = (x.copy() for x in (logp, old, ref, ent, old))
        for x in (g_lp, g_old, g_ref, g_ent, g_s):
            x[bad] = val
        garbage.append(run(g_lp, g_old, g_ref, g_ent, g_s))
    for loss, m, g in garbage:
        assert float(loss) == float(base[0])
        for k in base[1]:
            assert float(m[k]) == float(base[1][k]), k
        g = np.asarray(g)
        assert np.all(np.isfinite(g))
        np.testing.assert_array_equal(g, np.asarray(base[2]))


# ---------------------------------------------------------------- micro-batch invariance


def _toy_policy_logp(theta, ctx, tok):
    """A real (tiny) policy: logits = theta[ctx] -> log-softmax -> log-prob of the sampled token. [B,T]."""
    logits = theta[ctx]  # [B, T, V]
    lsm = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(lsm, tok[..., None], axis=-1)[..., 0]


def _toy_batch(seed=3, b=8, t=10, c=5, v=7):
    rng = np.random.default_rng(seed)
    lengths = np.array([3, 10, 1, 7, 5, 9, 2, 6])[:b]
    mask = (np.arange(t)[None, :] < lengths[:, None]).astype(np.float32)
    ctx = rng.integers(0, c, size=(b, t)).astype(np.int32)
    tok = rng.integers(0, v, size=(b, t)).astype(np.int32)
    theta0 = rng.normal(0, 1.0, size=(c, v)).astype(np.float32)
    theta_old = theta0 + rng.normal(0, 0.3, size=(c, v)).astype(np.float32)
    theta_ref = theta0 + rng.normal(0, 0.3, size=(c, v)).astype(np.float32)
    old = np.asarray(_toy_policy_logp(theta_old, ctx, tok))
    ref = np.asarray(_toy_policy_logp(theta_ref, ctx, tok))
    adv = rng.normal(0, 1.0, size=b).astype(np.float32)
    return theta0, ctx, tok, old, ref, adv, mask, lengths


def _grad_full(theta, ctx, tok, old, ref, adv, mask, cfg):
    def f(th):
        return grpo.policy_loss(_toy_policy_logp(th, ctx, tok), old, adv, mask, ref, cfg)[0]

    return np.asarray(jax.grad(f)(theta))


def _grad_micro(theta, ctx, tok, old, ref, adv, mask, lengths, cfg, groups):
    den = grpo.loss_denominator(mask, cfg)  # global, from the whole batch
    total = np.zeros_like(theta)
    for idx in groups:
        idx = np.asarray(idx)
        tmax = int(lengths[idx].max())  # each micro-batch cut to its own max length (variable T)
        sl = (idx, slice(None))

        def f(th, idx=idx, tmax=tmax):
            lp = _toy_policy_logp(th, ctx[idx, :tmax], tok[idx, :tmax])
            return grpo.policy_loss(
                lp, old[idx, :tmax], adv[idx], mask[idx, :tmax], ref[idx, :tmax], cfg, denominator=den
            )[0]

        del sl
        total += np.asarray(jax.grad(f)(theta))
    return total


@pytest.mark.parametrize("agg", grpo.AGGREGATIONS)
def test_microbatch_gradient_equals_full_batch(agg):
    theta, ctx, tok, old, ref, adv, mask, lengths = _toy_batch()
    cfg = LossConfig(aggregation=agg, kl_coef=0.1, max_len=10 if agg == "dr-grpo" else None)
    full = _grad_full(theta, ctx, tok, old, ref, adv, mask, cfg)
    assert np.abs(full).max() > 1e-3
    splits = {
        "2": [range(0, 4), range(4, 8)],
        "4": [range(0, 2), range(2, 4), range(4, 6), range(6, 8)],
        "shuffled-4": [[5, 0], [7, 2], [1, 6], [3, 4]],
        "uneven": [[6], [0, 3, 5, 1], [2, 4, 7]],
    }
    for name, groups in splits.items():
        micro = _grad_micro(theta, ctx, tok, old, ref, adv, mask, lengths, cfg, groups)
        np.testing.assert_allclose(micro, full, atol=1e-6, rtol=0, err_msg=name)


def test_data_parallel_two_devices_gradient_equals_full_batch():
    """Same gradient when the batch is sharded over a 2-device 'data' mesh axis (psum of shard gradients)."""
    script = textwrap.dedent(
        """
        import numpy as np, jax, jax.numpy as jnp
        from jax.sharding import Mesh, PartitionSpec as P
        from tests.jax.test_grpo import _toy_batch, _grad_full, _toy_policy_logp
        from orchestra_jax import grpo
        assert jax.device_count() == 2, jax.devices()
        mesh = Mesh(np.array(jax.devices()), ("data",))
        theta, ctx, tok, old, ref, adv, mask, lengths = _toy_batch()
        for agg in grpo.AGGREGATIONS:
            cfg = grpo.LossConfig(aggregation=agg, kl_coef=0.1)
            den = grpo.loss_denominator(mask, cfg)
            def shard_loss(th, ctx, tok, old, ref, adv, mask):
                lp = _toy_policy_logp(th, ctx, tok)
                loss = grpo.policy_loss(lp, old, adv, mask, ref, cfg, denominator=den)[0]
                return jax.lax.psum(loss, "data")  # sum of shard losses = full-batch loss
            sharded = jax.shard_map(shard_loss, mesh=mesh, in_specs=(P(),) + (P("data"),) * 6, out_specs=P())
            fn = jax.jit(jax.grad(sharded))
            g = np.asarray(fn(theta, ctx, tok, old, ref, adv, mask))
            full = _grad_full(theta, ctx, tok, old, ref, adv, mask, cfg)
            np.testing.assert_allclose(g, full, atol=1e-6, rtol=0, err_msg=agg)
        print("DP-OK")
        """
    )
    env = dict(os.environ)
    env["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "DP-OK" in out.stdout


# ---------------------------------------------------------------- KL moves toward the reference


@pytest.mark.parametrize("est", grpo.KL_ESTIMATORS)
def test_kl_gradient_moves_policy_toward_reference(est):
    """With A = 0 the loss is the KL term alone; its mean gradient over samples from the policy (k2/k3 are
    estimated on the policy's own samples) must decrease the exact KL(pi || ref)."""
    rng = np.random.default_rng(0)
    v, n = 6, 4096
    theta = jnp.asarray(rng.normal(0, 1, v), jnp.float32)
    ref_logits = jnp.asarray(rng.normal(0, 1, v), jnp.float32)
    ref_lsm = jax.nn.log_softmax(ref_logits)

    def exact_kl(th):
        lsm = jax.nn.log_softmax(th)
        return float(jnp.sum(jnp.exp(lsm) * (lsm - ref_lsm)))

    cfg = LossConfig(kl_coef=1.0, kl_estimator=est)
    kl0 = exact_kl(theta)
    assert kl0 > 0.05
    key = jax.random.PRNGKey(0)
    th = theta
    for step in range(5):
        key, sub = jax.random.split(key)
        toks = jax.random.categorical(sub, th, shape=(n,))  # samples from the current policy
        old = jax.nn.log_softmax(th)[toks][None, :]
        ref = ref_lsm[toks][None, :]

        def f(t, toks=toks, old=old, ref=ref):
            lp = jax.nn.log_softmax(t)[toks][None, :]
            return grpo.policy_loss(lp, old, jnp.zeros(1), jnp.ones((1, n)), ref, cfg)[0]

        g = jax.grad(f)(th)
        th = th - 0.5 * g
    assert exact_kl(th) < 0.8 * kl0
    # and the KL metric equals the estimator on the batch
    assert exact_kl(th) < kl0


# ---------------------------------------------------------------- advantages and filters


def test_group_advantages_ddof1_and_clip():
    r = np.array([0.0, 1.0, 1.0, 2.0])
    a = grpo.group_advantages(r)
    std1 = np.std(r, ddof=1)  # torch.std default (unbiased), as the released code
    np.testing.assert_allclose(a, (r - 1.0) / (std1 + 1e-6), rtol=1e-6)
    a0 = grpo.group_advantages(r, ddof=0)
    np.testing.assert_allclose(a0, (r - 1.0) / (np.std(r) + 1e-6), rtol=1e-6)
    assert not np.allclose(a, a0)
    # one outlier among many: |A| beyond 3 is clipped ([-3, 3])
    big = np.array([0.0] * 15 + [10.0])
    ab = grpo.group_advantages(big)
    assert ab.max() == pytest.approx(3.0)
    assert grpo.group_advantages(big, clip=None).max() > 3.0


def test_group_advantages_degenerate_groups():
    np.testing.assert_array_equal(grpo.group_advantages(np.full(8, 0.7)), np.zeros(8, np.float32))
    np.testing.assert_array_equal(grpo.group_advantages(np.array([[5.0]])), np.zeros((1, 1), np.float32))
    two = grpo.group_advantages(np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]]))
    assert two.shape == (2, 3)
    np.testing.assert_array_equal(two[0], 0.0)
    np.testing.assert_allclose(two[1], [-1.0, 0.0, 1.0], atol=1e-5)
    assert np.all(np.isfinite(two))
    with pytest.raises(ValueError, match="NaN"):
        grpo.group_advantages(np.array([1.0, np.nan]))


def test_filters_and_counts():
    rewards = np.array([[0.0, 0.05, 0.0, 0.05], [0.0, 1.0, 0.5, 1.0], [1.0, 0.0, 1.0, 0.0]])
    has_answer = np.array([[1, 1, 1, 1], [1, 0, 1, 1], [1, 1, 1, 1]], bool)
    res = grpo.filter_and_advantages(rewards, has_answer, min_std=0.1)
    assert res.counts == {
        "groups_total": 3,
        "groups_low_std": 1,
        "rollouts_total": 12,
        "rollouts_no_answer": 1,
        "rollouts_kept": 7,
    }
    np.testing.assert_array_equal(res.keep[0], False)
    np.testing.assert_array_equal(res.advantages[0], 0.0)
    assert res.advantages[1, 1] == 0.0 and not res.keep[1, 1]
    np.testing.assert_allclose(res.advantages[2], grpo.group_advantages(rewards[2]), rtol=1e-6)


def test_off_policy_rollouts_enter_the_loss_only_above_their_group():
    rewards = np.array([[0.0, 0.0, 1.0, 0.0], [0.5, 0.45, 0.0, 0.5], [0.0, 0.0, 0.0, 0.0]])
    off = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]], bool)  # the last two of each group are guided
    res = grpo.filter_and_advantages(rewards, None, min_std=0.1, off_policy=off)
    full = grpo.group_advantages(rewards)
    # the statistics use every rollout: the kept advantages are the plain group advantages
    np.testing.assert_allclose(res.advantages[0, :3], full[0, :3], rtol=1e-6)
    assert res.keep[0].tolist() == [True, True, True, False]  # guided failure (A < 0): out
    assert res.keep[1].tolist() == [True, True, False, True]  # guided dearest success (A < 0): out
    assert res.advantages[1, 3] == pytest.approx(full[1, 3]) and res.advantages[1, 2] == 0.0
    assert not res.keep[2].any()  # all equal: dropped by the std filter as before
    assert (res.counts["off_policy_total"], res.counts["off_policy_kept"], res.counts["rollouts_kept"]) == (6, 2, 6)
    with pytest.raises(ValueError, match="off_policy shape"):
        grpo.filter_and_advantages(rewards, None, off_policy=off[:2])
