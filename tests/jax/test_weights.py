"""Hugging Face checkpoint I/O: load (single file, sharded index), save, transformers round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

jax = pytest.importorskip("jax")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jax.numpy as jnp  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402

from orchestra_jax.config import ConfigError  # noqa: E402
from orchestra_jax.model import LAYER_PARAMS  # noqa: E402
from orchestra_jax.weights import load_hf_checkpoint, save_hf_checkpoint  # noqa: E402
from tests.jax.test_model import hf_logits, make_hf  # noqa: E402

IDS = np.random.RandomState(11).randint(0, 300, (2, 10)).astype(np.int32)


@pytest.mark.parametrize("tied", [False, True])
def test_save_then_transformers_loads_same_logits(tmp_path, tied):
    hf = make_hf(tmp_path / "src", tied=tied, heads=4, kv=2, head_dim=16, seed=3)
    model, config = load_hf_checkpoint(tmp_path / "src")
    ours = np.asarray(model(jnp.asarray(IDS)))
    save_hf_checkpoint(model, config, tmp_path / "out")
    back = transformers.Qwen3ForCausalLM.from_pretrained(tmp_path / "out").eval()
    assert back.config.tie_word_embeddings == tied
    assert np.abs(hf_logits(back, IDS) - ours).max() <= 1e-4
    assert np.abs(hf_logits(hf, IDS) - ours).max() <= 1e-4
    gen = json.loads((tmp_path / "out" / "generation_config.json").read_text())
    assert gen["eos_token_id"] == [151645, 151643]


def test_sharded_index_round_trip_and_bf16(tmp_path):
    make_hf(tmp_path / "src", seed=4)
    model, config = load_hf_checkpoint(tmp_path / "src")
    save_hf_checkpoint(model, config, tmp_path / "sharded", max_shard_bytes=40_000)
    index = json.loads((tmp_path / "sharded" / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 2
    again, _ = load_hf_checkpoint(tmp_path / "sharded")
    for name in ("embed", "lm_head", "final_norm", *LAYER_PARAMS):
        np.testing.assert_array_equal(np.asarray(getattr(model, name)[...]), np.asarray(getattr(again, name)[...]))
    save_hf_checkpoint(model, config, tmp_path / "bf16", dtype="bfloat16")
    back = transformers.Qwen3ForCausalLM.from_pretrained(tmp_path / "bf16")
    assert back.model.embed_tokens.weight.dtype == torch.bfloat16
    m16, c16 = load_hf_checkpoint(tmp_path / "bf16")
    assert c16.param_dtype == "bfloat16" and m16.wq[...].dtype == jnp.bfloat16
    m32, c32 = load_hf_checkpoint(tmp_path / "bf16", dtype=jnp.float32)  # a JAX dtype object, as JAX users pass
    assert c32.param_dtype == "float32" and m32.wq[...].dtype == jnp.float32
    with pytest.raises(ConfigError, match=r"dtype=.*int8.*use one of \('float32', 'bfloat16', 'float16'\)"):
        load_hf_checkpoint(tmp_path / "bf16", dtype=np.int8)


def test_missing_and_unused_tensors_are_errors(tmp_path):
    make_hf(tmp_path / "src", seed=5)
    tensors = load_file(tmp_path / "src" / "model.safetensors")
    cfg = (tmp_path / "src" / "config.json").read_text()
    for name, mutate, match in (
        ("missing", lambda t: t.pop("model.layers.1.mlp.up_proj.weight"), "lacks 1 tensors"),
        ("extra", lambda t: t.__setitem__("model.layers.2.mlp.up_proj.weight", t["model.norm.weight"]),
         "does not use"),
        ("shape", lambda t: t.__setitem__("model.norm.weight", t["model.norm.weight"][:10]), "has shape"),
    ):
        d = tmp_path / name
        d.mkdir()
        t = dict(tensors)
        mutate(t)
        save_file(t, str(d / "model.safetensors"), metadata={"format": "pt"})
        (d / "config.json").write_text(cfg)
        with pytest.raises(ValueError, match=match):
            load_hf_checkpoint(d)
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        (tmp_path / "empty").mkdir()
        (tmp_path / "empty" / "config.json").write_text(cfg)
        load_hf_checkpoint(tmp_path / "empty")
