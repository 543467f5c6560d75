"""Mesh (data, fsdp, tp) on 8 fake CPU devices: sharded forward and gradient equal 1 device.

The 8-device run happens in a subprocess because XLA_FLAGS must be set before jax is imported
(the rest of the suite runs with one CPU device).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(r'''
    import json, sys
    import numpy as np
    import jax, jax.numpy as jnp
    from flax import nnx
    from jax.sharding import NamedSharding, PartitionSpec as P
    from orchestra_jax.config import ModelConfig
    from orchestra_jax.model import Qwen3, token_logprobs
    from orchestra_jax import sharding as sh
    from orchestra_jax.weights import load_hf_checkpoint, save_hf_checkpoint

    assert jax.device_count() == 8, jax.devices()
    config = ModelConfig.from_preset("tiny")
    model = Qwen3(config, rngs=nnx.Rngs(0))
    rs = np.random.RandomState(0)
    ids = jnp.asarray(rs.randint(0, config.vocab_size, (4, 12)), jnp.int32)
    mask = jnp.asarray(np.arange(12)[None] >= np.array([0, 3, 0, 7])[:, None])

    def loss(m, ids, mask):
        lp = token_logprobs(m, ids, jnp.roll(ids, -1, axis=1), mask, chunk=4)
        return -(lp * mask).sum() / mask.sum()

    @nnx.jit
    def run(m, ids, mask):
        val, grads = nnx.value_and_grad(loss)(m, ids, mask)
        return m(ids, mask), val, grads

    logits1, loss1, g1 = run(model, ids, mask)
    from orchestra_jax.sampler import Sampler
    prompts = [[5, 6, 7], [8, 9, 10, 11, 12], [13], [14, 15]]
    s1 = Sampler(model, eos_ids=(), max_cache_len=32, chunk=8)
    greedy1 = s1.generate(s1.prefill(prompts), 6, 0.0)[1]

    mesh = sh.make_mesh(data=2, fsdp=2, tp=2)
    sh.shard_model(model, mesh)
    ids_s = jax.device_put(ids, sh.batch_sharding(mesh, ids.shape))
    mask_s = jax.device_put(mask, sh.batch_sharding(mesh, mask.shape))
    logits8, loss8, g8 = run(model, ids_s, mask_s)
    s8 = Sampler(model, eos_ids=(), max_cache_len=32, chunk=8, mesh=mesh)
    st8 = s8.prefill(prompts)
    greedy8 = s8.generate(st8, 6, 0.0)[1]

    def spec(x):
        s = [list(a) if isinstance(a, tuple) else a for a in x.sharding.spec]
        while s and s[-1] is None:
            s.pop()
        return s

    out = {
        "wq_spec": spec(model.wq[...]),
        "embed_spec": spec(model.embed[...]),
        "wk_spec": spec(model.wk[...]),
        "ids_spec": spec(ids_s),
        "logits_diff": float(jnp.abs(logits1 - logits8).max()),
        "loss_diff": float(abs(loss1 - loss8)),
        "grad_diff": max(float(jnp.abs(a - b).max()) for a, b in
                         zip(jax.tree.leaves(nnx.state(g1)), jax.tree.leaves(nnx.state(g8)))),
        "greedy_equal": greedy1.tokens == greedy8.tokens,
        "greedy_lp_diff": float(np.abs(np.asarray(greedy1.logprobs) - np.asarray(greedy8.logprobs)).max()),
        "cache_spec": spec(st8.cache.k),
        "grad_max": max(float(jnp.abs(a).max()) for a in jax.tree.leaves(nnx.state(g1))),
    }
    # sharded loading straight onto the mesh
    save_hf_checkpoint(model, config, sys.argv[1])
    loaded, _ = load_hf_checkpoint(sys.argv[1], mesh=mesh)
    out["loaded_wq_spec"] = spec(loaded.wq[...])
    out["loaded_diff"] = float(jnp.abs(loaded(ids, mask) - logits1).max())
    print("RESULT" + json.dumps(out))
''')


def test_eight_fake_devices_match_single_device(tmp_path):
    env = dict(os.environ)
    env["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "ckpt")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT")][-1]
    r = json.loads(line[len("RESULT"):])
    assert r["wq_spec"] == [None, "fsdp", "tp"]  # [L, D, N, H]
    assert r["wk_spec"] == [None, "fsdp", "tp"]
    assert r["embed_spec"] == ["tp", "fsdp"]     # [V, D]
    assert r["ids_spec"] == [["data", "fsdp"]]
    assert r["loaded_wq_spec"] == r["wq_spec"]
    assert r["logits_diff"] <= 1e-5
    assert r["loss_diff"] <= 1e-5
    assert r["grad_diff"] <= 1e-5 and r["grad_max"] > 1e-4
    assert r["loaded_diff"] <= 1e-5
    assert r["greedy_equal"] and r["greedy_lp_diff"] <= 1e-5
    assert r["cache_spec"] == [None, ["data", "fsdp"], None, "tp"]  # [L, B, S, K, H]


def test_partition_rules_on_one_device_mesh():
    import jax
    from flax import nnx

    from orchestra_jax import sharding as sh
    from orchestra_jax.config import ModelConfig
    from orchestra_jax.model import Qwen3

    mesh = sh.make_mesh()
    assert dict(mesh.shape) == {"data": 1, "fsdp": jax.device_count(), "tp": 1}
    model = Qwen3(ModelConfig.from_preset("tiny"), rngs=nnx.Rngs(0))
    sh.shard_model(model, mesh)
    assert model.wq[...].sharding.mesh.shape == mesh.shape
    with pytest.raises(ValueError, match="pick sizes"):
        sh.make_mesh(data=1, fsdp=3, tp=1)
    with pytest.raises(KeyError, match="no partition rule"):
        sh.logical_to_spec(("nope",), (4,), mesh)


SLOTS_SCRIPT = textwrap.dedent(r'''
    import json
    import numpy as np
    import jax
    from flax import nnx
    from orchestra_jax import sharding as sh
    from orchestra_jax.config import ModelConfig
    from orchestra_jax.model import Qwen3
    from orchestra_jax.sampler import Sampler
    from orchestra_jax.slots import SlotSampler

    assert jax.device_count() == 8, jax.devices()
    config = ModelConfig.from_preset("tiny")
    model = Qwen3(config, rngs=nnx.Rngs(0))
    prompts = [[5, 6, 7], [8, 9, 10, 11, 12], [13], [14, 15], [16, 17, 18, 19], [20]]

    def run(sampler):
        """Six turns through 4 slots (two refills), then a second turn in slot 0: ids and log-probs per turn."""
        eng = SlotSampler(sampler, 4, 96, chunk=4, prefill_chunk=16)
        out, todo = {}, list(enumerate(prompts))
        while todo or eng.any_busy():
            for s in range(4):
                if todo and not eng.busy(s):
                    r, p = todo.pop(0)
                    eng.start(s, p, reset=True, row_key=(r, 0))
            for f in eng.step(max_new_tokens=5 + len(out) % 3, temperature=0.0):
                out[len(out)] = (f.tokens, f.logprobs)
        eng.start(0, [21, 22], reset=False, row_key=(9, 1))
        while eng.any_busy():
            for f in eng.step(max_new_tokens=6, temperature=0.0):
                out["again"] = (f.tokens, f.logprobs)
        return out, eng

    one, _ = run(Sampler(model, eos_ids=(), max_cache_len=128, chunk=4))
    mesh = sh.make_mesh(data=2, fsdp=2, tp=2)
    sh.shard_model(model, mesh)
    eight, eng = run(Sampler(model, eos_ids=(), max_cache_len=128, chunk=4, mesh=mesh))
    print("RESULT" + json.dumps({
        "same_tokens": {str(k): one[k][0] == eight[k][0] for k in one},
        "lp_diff": max(float(np.abs(np.subtract(one[k][1], eight[k][1])).max()) for k in one),
        "cache_spec": [str(a) for a in eng.cache.k.sharding.spec],
        "slot_spec": [str(a) for a in eng.cache.slot.sharding.spec],
        "turns": len(one),
    }))
''')


def test_continuous_batching_engine_on_eight_fake_devices(tmp_path):
    """`SlotSampler` over a sharded sampler (data 2 x fsdp 2 x tp 2): its cache stays sharded as the
    lockstep sampler's (slots over data/fsdp, KV heads over tp) through feeds, refills and decode steps, and
    every turn's greedy ids and log-probs equal one device's."""
    env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu",
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", SLOTS_SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads([x for x in proc.stdout.splitlines() if x.startswith("RESULT")][-1][len("RESULT"):])
    assert out["turns"] == 7 and all(out["same_tokens"].values()), out
    assert out["lp_diff"] < 1e-4, out
    assert out["cache_spec"][:4] == ["None", "('data', 'fsdp')", "None", "tp"], out
    assert out["slot_spec"] == ["('data', 'fsdp')"], out
