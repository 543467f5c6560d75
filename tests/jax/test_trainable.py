"""Partial training (orchestra_jax.trainable): top-N layers and LoRA, frozen part never differentiated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from orchestra_gym.errors import ConfigError
from orchestra_jax import train_step
from orchestra_jax.config import ModelConfig
from orchestra_jax.model import LAYER_PARAMS, Qwen3
from orchestra_jax.trainable import Trainable

REPO = Path(__file__).resolve().parents[2]
V = 64


def small(num_layers: int = 4, tie: bool = False) -> ModelConfig:
    return ModelConfig.from_preset("tiny", vocab_size=V, num_layers=num_layers, tie_word_embeddings=tie)


def batch(seed: int = 0, b: int = 4, t: int = 10) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = np.array([10, 6, 8, 4])[:b]
    pos = np.arange(t)[None]
    am = (pos < lengths[:, None]).astype(np.int32)
    tokens = np.where(am > 0, rng.integers(1, V, (b, t)), 0).astype(np.int32)
    lm = ((pos >= 2) & (am > 0)).astype(np.float32)
    return {"tokens": tokens, "attention_mask": am, "loss_mask": lm,
            "sampler_logp": np.where(lm > 0, -1.0, 0.0).astype(np.float32),
            "advantages": rng.normal(size=b).astype(np.float32)}


def setup(tr: Trainable, seed: int = 0):
    model = Qwen3(tr.config, rngs=nnx.Rngs(seed))
    graphdef, params = nnx.split(model, nnx.Param)
    return graphdef, params


def test_parse_and_errors():
    c = small()
    assert Trainable.from_spec(c, "all").is_full and Trainable.from_spec(c, "top:4").is_full
    assert Trainable.from_spec(c, "top:1").frozen_layers == 3
    assert not Trainable.from_spec(c, "all", lora_rank=2).is_full
    with pytest.raises(ConfigError, match="model.trainable"):
        Trainable.from_spec(c, "top:5")
    with pytest.raises(ConfigError, match="did you mean"):
        Trainable.from_spec(c, "all", lora_rank=2, lora_targets=["wqq"])


@pytest.mark.parametrize("tie", [False, True])
def test_top_n_step_keeps_frozen_bit_identical_and_changes_the_trained(tie):
    tr = Trainable.from_spec(small(tie=tie), "top:2")
    graphdef, params = setup(tr)
    p0 = {k: np.asarray(v) for k, v in nnx.to_pure_dict(params).items()}
    tx = optax.adamw(1e-2)
    state = train_step.init_state(params, tx, with_reference=False, trainable=tr)
    # the optimizer state covers the trained part only
    mu = state.opt_state[0].mu
    assert set(mu) == set(LAYER_PARAMS) | {"final_norm"} | (set() if tie else {"lm_head"})
    assert mu["wq"].shape[0] == 2
    step = train_step.make_sft_step(train_step.make_logp_fn(graphdef, chunk=4, trainable=tr), tx, donate=False)
    new, m = step(state, train_step.split_micro(batch(), 2))
    assert np.isfinite(float(m["nll"]))
    full = {k: np.asarray(v) for k, v in nnx.to_pure_dict(tr.policy_params(new.params, new.frozen)).items()}
    for name in LAYER_PARAMS:
        assert np.array_equal(full[name][:2], p0[name][:2])   # frozen layers bit-identical
        if name not in ("q_norm", "k_norm", "attn_norm", "mlp_norm"):
            assert np.abs(full[name][2:] - p0[name][2:]).max() > 1e-4  # trained layers moved
    assert np.array_equal(full["embed"], p0["embed"])
    assert np.abs(full["final_norm"] - p0["final_norm"]).max() > 0


def test_top_n_grads_equal_the_full_grads_on_those_layers():
    tr = Trainable.from_spec(small(), "top:2")
    graphdef, params = setup(tr, seed=3)
    b = {k: jnp.asarray(v) for k, v in batch(1).items()}
    inp, tgt, am, mask = train_step._shift(b)

    def nll(fn, p):
        lp = fn(p, inp, tgt, am)
        return -jnp.sum(jnp.where(mask > 0, lp, 0.0)) / mask.sum()

    g_full = jax.grad(lambda p: nll(train_step.make_logp_fn(graphdef, chunk=4), p))(params)
    g_full = nnx.to_pure_dict(g_full)
    trained, frozen = tr.split(params)
    split_fn = train_step.make_logp_fn(graphdef, chunk=4, trainable=tr)
    g_top = jax.grad(lambda p: nll(split_fn, (p, frozen)))(trained)
    for name in LAYER_PARAMS:
        np.testing.assert_allclose(np.asarray(g_top[name]), np.asarray(g_full[name][2:]), rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(g_top["lm_head"]), np.asarray(g_full["lm_head"]), rtol=2e-5, atol=1e-7)
    # and the same loss value
    assert float(nll(split_fn, (trained, frozen))) == pytest.approx(float(nll(train_step.make_logp_fn(graphdef, chunk=4), params)), rel=1e-6)


def test_frozen_layers_have_no_backward_pass():
    """The gradient program of a top-1 split differentiates one layer: its jaxpr holds exactly one
    transposed (backward) scan, of length 1, while the full model's backward scans all 4 layers."""
    tr = Trainable.from_spec(small(), "top:1")
    graphdef, params = setup(tr)
    b = {k: jnp.asarray(v) for k, v in batch().items()}
    inp, tgt, am, _ = train_step._shift(b)
    trained, frozen = tr.split(params)
    fn = train_step.make_logp_fn(graphdef, chunk=16, trainable=tr)
    jaxpr = jax.make_jaxpr(jax.grad(lambda p: fn((p, frozen), inp, tgt, am).sum()))(trained)
    lengths = [e.params["length"] for e in jaxpr.jaxpr.eqns if e.primitive.name == "scan"]
    # forward: frozen scan (3 layers) + trained scan (1 layer); backward: one scan of the trained layer
    assert sorted(lengths) == [1, 1, 3]


def test_lora_at_init_gives_the_base_logits_exactly_and_trains_only_adapters():
    tr = Trainable.from_spec(small(), "all", lora_rank=4, lora_alpha=8.0, lora_targets=["wq", "wv", "wo", "w_down"])
    graphdef, params = setup(tr)
    b = {k: jnp.asarray(v) for k, v in batch().items()}
    inp, tgt, am, _ = train_step._shift(b)
    base = train_step.make_logp_fn(graphdef, chunk=4)(params, inp, tgt, am)
    state = train_step.init_state(params, optax.adamw(1e-2), with_reference=False, trainable=tr,
                                  key=jax.random.key(0))
    assert set(state.params["lora"]) == {"wq", "wv", "wo", "w_down"}
    assert state.params["lora"]["wo"]["a"].shape == (4, 4, 16, 4) and state.params["lora"]["wo"]["b"].shape[1] == 4
    fn = train_step.make_logp_fn(graphdef, chunk=4, trainable=tr)
    assert np.array_equal(np.asarray(fn(state.logp_params(), inp, tgt, am)), np.asarray(base))
    merged = tr.policy_params(state.params, state.frozen)
    assert all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree.leaves(merged), jax.tree.leaves(params)))
    # after a step: the base weights are untouched, the merged policy equals the unmerged adapters
    step = train_step.make_sft_step(fn, optax.adamw(1e-2), donate=False)
    new, _ = step(state, train_step.split_micro(batch(), 1))
    assert all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree.leaves(new.frozen), jax.tree.leaves(nnx.to_pure_dict(params))))
    unmerged = fn(new.logp_params(), inp, tgt, am)
    merged_lp = train_step.make_logp_fn(graphdef, chunk=4)(tr.policy_params(new.params, new.frozen), inp, tgt, am)
    assert float(jnp.abs(unmerged - base).max()) > 1e-4
    np.testing.assert_allclose(np.asarray(unmerged), np.asarray(merged_lp), atol=2e-5)


def test_num_trained_counts_the_trained_scalars():
    c = small()
    tr = Trainable.from_spec(c, "top:1")
    trained, _ = tr.split(setup(tr)[1])
    assert tr.num_trained() == sum(x.size for x in jax.tree.leaves(trained))
    lo = Trainable.from_spec(c, "top:2", lora_rank=2)
    trained, _ = lo.split(setup(lo)[1], jax.random.key(0))
    assert lo.num_trained() == sum(x.size for x in jax.tree.leaves(trained))


SCRIPT = textwrap.dedent(r'''
    import json
    import numpy as np, jax, jax.numpy as jnp, optax
    from flax import nnx
    from orchestra_jax import sharding as sh, train_step
    from orchestra_jax.config import ModelConfig
    from orchestra_jax.model import Qwen3
    from orchestra_jax.trainable import Trainable

    assert jax.device_count() == 8
    out = {}
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 64, (8, 12)).astype(np.int32)
    b = {"tokens": tokens, "attention_mask": np.ones_like(tokens), "loss_mask": np.ones((8, 12), np.float32)}
    for name, tr in (("top", dict(spec="top:1")), ("lora", dict(spec="all", lora_rank=2))):
        cfg = ModelConfig.from_preset("tiny", vocab_size=64, num_layers=2)
        spec = Trainable.from_spec(cfg, tr.pop("spec"), **tr)
        res = []
        for mesh in (None, sh.make_mesh(data=2, fsdp=2, tp=2)):
            model = Qwen3(cfg, rngs=nnx.Rngs(0))
            if mesh is not None:
                sh.shard_model(model, mesh)
            graphdef, params = nnx.split(model, nnx.Param)
            tx = optax.adamw(1e-2)
            state = train_step.init_state(params, tx, with_reference=False, trainable=spec, key=jax.random.key(1))
            step = train_step.make_sft_step(train_step.make_logp_fn(graphdef, chunk=4, trainable=spec), tx)
            mb = train_step.split_micro(b, 2)
            if mesh is not None:
                rows = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, ("data", "fsdp")))
                mb = {k: jax.device_put(v, rows) for k, v in mb.items()}
                with mesh:
                    new, m = step(state, mb)
            else:
                new, m = step(state, mb)
            res.append((float(m["nll"]), [np.asarray(x) for x in jax.tree.leaves(new.params)]))
        out[name] = {"nll_diff": abs(res[0][0] - res[1][0]),
                     "param_diff": max(float(np.abs(a - c).max()) for a, c in zip(res[0][1], res[1][1]))}
    print("RESULT" + json.dumps(out))
''')


def test_trainable_split_on_eight_fake_devices_matches_one_device():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    r = json.loads([x for x in proc.stdout.splitlines() if x.startswith("RESULT")][-1][len("RESULT"):])
    for name in ("top", "lora"):
        assert r[name]["nll_diff"] <= 1e-5 and r[name]["param_diff"] <= 1e-5, r


def test_memory_plan_of_a_split_step_matches_the_compiled_step():
    """The planned state of a top-1 step (trained params, AdamW mu/nu for them only, frozen rest) equals the
    parameter counts, the compiled step's arguments are exactly that state plus the batch, and it needs fewer
    bytes than the full step (no gradients or AdamW state for the frozen part)."""
    from orchestra_jax import memory_plan as mp
    from orchestra_jax import sharding as sh

    c = small(num_layers=4)
    mesh = sh.make_mesh(data=1, fsdp=1, tp=1)
    tr = Trainable.from_spec(c, "top:1")
    split = mp.train_step_memory(c, mesh, rows=2, seq=32, kl=False, trainable=tr)
    full = mp.train_step_memory(c, mesh, rows=2, seq=32, kl=False)
    n = tr.num_trained()
    assert split["params"] == 4 * n and split["frozen"] == 4 * (c.num_params() - n)
    assert 8 * n <= split["opt_state"] <= 8 * n + 64  # mu, nu (+ step counts)
    assert split["compiled"]["argument"] == split["params"] + split["opt_state"] + split["frozen"] + split["batch"] + 4
    assert mp.resident_train_bytes(split) < mp.resident_train_bytes(full)
    assert split["compiled"]["peak"] < full["compiled"]["peak"]
