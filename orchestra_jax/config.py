"""Model configuration of the policy (architecture and dtype policy only).

`ModelConfig` mirrors the fields of a Hugging Face `config.json` that change the computation, for the
three decoder families the one model (`orchestra_jax.model.Qwen3`) runs: Qwen3 (transformers'
`Qwen3Config`: q/k RMSNorm, no attention bias), Qwen2.5 (`Qwen2Config`: bias on the q/k/v projections,
no q/k norm) and Llama (`LlamaConfig`, e.g. SmolLM2: neither), plus our dtype / remat / scan policy.
The training hyper-parameters live elsewhere (a separate module), not here.

Source of the preset numbers: the `config.json` files of the Hugging Face repositories
`Qwen/Qwen3-0.6B`, `Qwen/Qwen3-1.7B`, `Qwen/Qwen3-4B`, `Qwen/Qwen3-8B`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from orchestra_gym.errors import ConfigError, did_you_mean

__all__ = ["ModelConfig", "PRESETS", "FAMILIES", "ROPE_TYPES", "dtype_name", "ConfigError"]

_DTYPES = ("float32", "bfloat16", "float16")
# model_type of config.json -> (architectures entry, q/k RMSNorm, bias on q/k/v)
FAMILIES: dict[str, tuple[str, bool, bool]] = {
    "qwen3": ("Qwen3ForCausalLM", True, False),
    "qwen2": ("Qwen2ForCausalLM", False, True),
    "llama": ("LlamaForCausalLM", False, False),
}
ROPE_TYPES = ("default", "linear", "llama3")


def dtype_name(value: Any, field: str = "dtype") -> str:
    """The canonical name ("float32", "bfloat16" or "float16") of a dtype given as a string or as a
    NumPy / JAX dtype object (``np.float32``, ``jnp.bfloat16``, ``np.dtype("float16")``...).

    Raises: ConfigError naming `field` for any other dtype.
    """
    if isinstance(value, str):
        name = value
    else:
        try:
            name = np.dtype(value).name
        except TypeError:
            name = repr(value)
    if name not in _DTYPES:
        raise ConfigError(f"{field}={value!r}: unsupported dtype{did_you_mean(name, _DTYPES)}; use one of "
                          f"{_DTYPES} (a string or a NumPy/JAX dtype)")
    return name


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Decoder architecture (Qwen3, Qwen2.5 or Llama family) plus the dtype policy.

    Attributes:
        vocab_size: number of token ids V (Qwen3: 151936, of which 151669 are used).
        hidden_size: model width D.
        intermediate_size: SwiGLU width F.
        num_layers: number of decoder layers L.
        num_heads: query heads N.
        num_kv_heads: key/value heads K (grouped-query attention; N % K == 0).
        head_dim: per-head width H (Qwen3: 128, not necessarily D / N).
        rope_theta: RoPE base frequency.
        rms_norm_eps: epsilon of every RMSNorm (layer norms and QK-norm).
        tie_word_embeddings: LM head shares the embedding matrix.
        max_position_embeddings: informational (RoPE is computed on the fly).
        family: the Hugging Face model_type written on export ("qwen3", "qwen2", "llama"; `FAMILIES`).
        qk_norm: per-head RMSNorm of queries and keys before RoPE (Qwen3: True; Qwen2.5, Llama: False).
        attention_bias: bias vectors on the q, k and v projections (Qwen2.5: True).
        rope_type: "default", "linear" (positions divided by rope_factor) or "llama3" (Llama 3.1's
            frequency-dependent scaling; transformers' `_compute_llama3_parameters`).
        rope_factor, rope_low_freq_factor, rope_high_freq_factor, rope_original_max_position: the
            scaling parameters of `rope_type` (`rope_scaling` in config.json); unused by "default".
        param_dtype: storage dtype of the weights ("float32" master weights for training,
            "bfloat16" for inference on accelerators).
        compute_dtype: dtype of matmul inputs and activations; softmax, log-softmax, norms
            and logits are always float32.
        remat: rematerialise each layer in the backward pass (jax.checkpoint).
        scan_layers: run the layer stack with `jax.lax.scan` (compile time independent of L).
            When False, layers run in a Python loop over the same stacked params (same math).
        attn_block: query block of the full causal forward (training, log-probs, prefill-free
            paths): queries [i*blk, (i+1)*blk) attend to keys [0, (i+1)*blk) only, each block
            rematerialised in the backward pass, so attention does about half the FLOPs of the
            dense [T, T] product and holds [B, N, blk, T] scores instead of [B, N, T, T].
            0 = one dense block. Same values either way (float32 softmax).
        name: preset name, for logs.
    """

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope_theta: float = 1_000_000.0
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 40960
    family: str = "qwen3"
    qk_norm: bool = True
    attention_bias: bool = False
    rope_type: str = "default"
    rope_factor: float = 1.0
    rope_low_freq_factor: float = 1.0
    rope_high_freq_factor: float = 4.0
    rope_original_max_position: int = 8192
    param_dtype: str = "float32"
    compute_dtype: str = "float32"
    remat: bool = False
    scan_layers: bool = True
    attn_block: int = 256
    name: str = "custom"

    def __post_init__(self) -> None:
        for field in ("vocab_size", "hidden_size", "intermediate_size", "num_layers",
                      "num_heads", "num_kv_heads", "head_dim"):
            value = getattr(self, field)
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f"ModelConfig.{field} must be a positive int, got {value!r}")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(
                f"ModelConfig.num_heads ({self.num_heads}) must be a multiple of num_kv_heads "
                f"({self.num_kv_heads}) for grouped-query attention")
        if not isinstance(self.attn_block, int) or self.attn_block < 0:
            raise ConfigError(f"ModelConfig.attn_block must be an int >= 0 (0 = dense), got {self.attn_block!r}")
        if self.head_dim % 2:
            raise ConfigError(f"ModelConfig.head_dim must be even for RoPE, got {self.head_dim}")
        if self.family not in FAMILIES:
            raise ConfigError(f"ModelConfig.family={self.family!r}{did_you_mean(self.family, FAMILIES)}; "
                              f"use one of {sorted(FAMILIES)}")
        if self.rope_type not in ROPE_TYPES:
            raise ConfigError(f"ModelConfig.rope_type={self.rope_type!r}{did_you_mean(self.rope_type, ROPE_TYPES)}; "
                              f"use one of {ROPE_TYPES}")
        for field in ("param_dtype", "compute_dtype"):  # stored as the canonical string
            object.__setattr__(self, field, dtype_name(getattr(self, field), f"ModelConfig.{field}"))

    # ------------------------------------------------------------------ presets
    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "ModelConfig":
        """Return a named preset; keyword overrides replace fields (e.g. param_dtype="bfloat16").

        Raises:
            ConfigError: unknown preset name (the message lists the known ones), or a bad field.
        """
        if name not in PRESETS:
            raise ConfigError(f"unknown model preset {name!r}{did_you_mean(name, PRESETS)}; "
                              f"known presets: {sorted(PRESETS)}")
        return dataclasses.replace(PRESETS[name], **overrides)

    def replace(self, **overrides: Any) -> "ModelConfig":
        """Copy with some fields replaced."""
        return dataclasses.replace(self, **overrides)

    # ---------------------------------------------------------------- HF format
    @classmethod
    def from_hf(cls, path_or_dict: str | Path | Mapping[str, Any], **overrides: Any) -> "ModelConfig":
        """Read a Hugging Face Qwen3, Qwen2 (Qwen2.5) or Llama `config.json` (a directory, the file, or its
        parsed dict).

        The family comes from `model_type` ("qwen3", "qwen2", "llama"; `architectures` is not read) and
        sets `qk_norm` and `attention_bias` as transformers' modeling code of that family does (Llama:
        `attention_bias` from the file, which must be false, as must `mlp_bias`). `head_dim`,
        `rope_theta` and `tie_word_embeddings` are taken from the file (HF's defaults apply only when a
        key is absent: head_dim = hidden/heads, theta 10000, tie False). RoPE settings may sit at the top
        level or in `rope_scaling` / `rope_parameters` (transformers 5 layout); rope types "default",
        "linear" and "llama3" are supported.

        Raises:
            FileNotFoundError: no config.json at the path.
            ConfigError (a ValueError): another model_type, a required key missing, a rope type not
                supported (yarn, dynamic ...), a Llama with bias on the output or MLP projections, sliding-window
                attention switched on.
        """
        if isinstance(path_or_dict, Mapping):
            raw = dict(path_or_dict)
        else:
            path = Path(path_or_dict)
            if path.is_dir():
                path = path / "config.json"
            if not path.exists():
                raise FileNotFoundError(f"no Hugging Face config.json at {path}")
            raw = json.loads(path.read_text())
        model_type = raw.get("model_type", "qwen3")
        if model_type not in FAMILIES:
            raise ConfigError(f"config.json model_type={model_type!r}{did_you_mean(model_type, FAMILIES)}; "
                              f"supported: {sorted(FAMILIES)}")
        _, qk_norm, bias = FAMILIES[model_type]
        if model_type == "llama" and (raw.get("attention_bias") or raw.get("mlp_bias")):
            raise ConfigError("config.json: a Llama with attention_bias / mlp_bias true (bias on the output and "
                              "MLP projections) is not supported; only q/k/v bias (Qwen2.5)")
        if raw.get("use_sliding_window"):
            raise ConfigError("config.json use_sliding_window=true: sliding-window attention is not supported; "
                              "only full causal attention")
        missing = [k for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                               "num_attention_heads") if k not in raw]
        if missing:
            raise ConfigError(f"config.json lacks required keys {missing}")
        rope = raw.get("rope_scaling") or raw.get("rope_parameters") or {}
        params = raw.get("rope_parameters") or {}
        rope_type = rope.get("rope_type", rope.get("type")) or "default"
        if rope_type not in ROPE_TYPES:
            raise ConfigError(f"config.json rope_type {rope_type!r} is not supported; use one of {ROPE_TYPES}")
        theta = raw.get("rope_theta", params.get("rope_theta", rope.get("rope_theta", 10000.0)))
        heads = raw["num_attention_heads"]
        kwargs = dict(
            vocab_size=raw["vocab_size"],
            hidden_size=raw["hidden_size"],
            intermediate_size=raw["intermediate_size"],
            num_layers=raw["num_hidden_layers"],
            num_heads=heads,
            num_kv_heads=raw.get("num_key_value_heads") or heads,
            head_dim=raw.get("head_dim") or raw["hidden_size"] // heads,
            rope_theta=float(theta),
            rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
            max_position_embeddings=int(raw.get("max_position_embeddings", 40960)),
            family=model_type,
            qk_norm=qk_norm,
            attention_bias=bias,
            rope_type=rope_type,
            name=str(raw.get("_name_or_path") or "hf"),
        )
        if rope_type != "default":
            kwargs.update(rope_factor=float(rope["factor"]),
                          rope_low_freq_factor=float(rope.get("low_freq_factor", 1.0)),
                          rope_high_freq_factor=float(rope.get("high_freq_factor", 4.0)),
                          rope_original_max_position=int(rope.get("original_max_position_embeddings", 8192)))
        kwargs.update(overrides)
        return cls(**kwargs)

    def to_hf_dict(self) -> dict[str, Any]:
        """The `config.json` dict transformers (`Qwen3Config`, `Qwen2Config` or `LlamaConfig`, by `family`)
        and vLLM read for this model. bos / eos ids are Qwen3's for the qwen3 family and absent otherwise
        (the exporter writes the tokenizer's)."""
        torch_dtype = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}[self.param_dtype]
        rope_scaling = None
        if self.rope_type == "linear":
            rope_scaling = {"rope_type": "linear", "factor": self.rope_factor}
        elif self.rope_type == "llama3":
            rope_scaling = {"rope_type": "llama3", "factor": self.rope_factor,
                            "low_freq_factor": self.rope_low_freq_factor,
                            "high_freq_factor": self.rope_high_freq_factor,
                            "original_max_position_embeddings": self.rope_original_max_position}
        out = {
            "architectures": [FAMILIES[self.family][0]],
            "model_type": self.family,
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "num_key_value_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "rope_theta": self.rope_theta,
            "rope_scaling": rope_scaling,
            "rms_norm_eps": self.rms_norm_eps,
            "tie_word_embeddings": self.tie_word_embeddings,
            "max_position_embeddings": self.max_position_embeddings,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "use_sliding_window": False,
            "torch_dtype": torch_dtype,
            "dtype": torch_dtype,
        }
        if self.family == "qwen3":
            out.update(bos_token_id=151643, eos_token_id=151645)
        elif self.family == "llama":
            out.update(mlp_bias=False, pretraining_tp=1)
        if self.qk_norm != FAMILIES[self.family][1] or self.attention_bias != FAMILIES[self.family][2]:
            raise ConfigError(f"ModelConfig family={self.family!r} with qk_norm={self.qk_norm}, attention_bias="
                              f"{self.attention_bias} has no Hugging Face architecture; set the family's values "
                              f"(qk_norm, attention_bias) = {FAMILIES[self.family][1:]}")
        return out

    # -------------------------------------------------------------- accounting
    def num_params(self) -> int:
        """Exact parameter count (same as `sum(p.numel())` of transformers' model)."""
        d, f, h = self.hidden_size, self.intermediate_size, self.head_dim
        attn = d * h * (self.num_heads * 2 + self.num_kv_heads * 2)
        attn += 2 * h if self.qk_norm else 0
        attn += h * (self.num_heads + 2 * self.num_kv_heads) if self.attention_bias else 0
        layer = attn + 3 * d * f + 2 * d
        head = 0 if self.tie_word_embeddings else self.vocab_size * d
        return self.vocab_size * d + self.num_layers * layer + d + head


PRESETS: dict[str, ModelConfig] = {
    # Qwen/Qwen3-0.6B config.json
    "qwen3-0.6b": ModelConfig(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_layers=28,
                              num_heads=16, num_kv_heads=8, head_dim=128, tie_word_embeddings=True,
                              name="qwen3-0.6b"),
    # Qwen/Qwen3-1.7B config.json
    "qwen3-1.7b": ModelConfig(vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_layers=28,
                              num_heads=16, num_kv_heads=8, head_dim=128, tie_word_embeddings=True,
                              name="qwen3-1.7b"),
    # Qwen/Qwen3-4B config.json
    "qwen3-4b": ModelConfig(vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_layers=36,
                            num_heads=32, num_kv_heads=8, head_dim=128, tie_word_embeddings=True,
                            name="qwen3-4b"),
    # Qwen/Qwen3-8B config.json (the ToolOrchestra Orchestrator-8B base)
    "qwen3-8b": ModelConfig(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_layers=36,
                            num_heads=32, num_kv_heads=8, head_dim=128, tie_word_embeddings=False,
                            name="qwen3-8b"),
    # Test sizes: same code path, small numbers. head_dim != hidden/heads on purpose.
    "tiny": ModelConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_layers=2,
                        num_heads=4, num_kv_heads=2, head_dim=16, tie_word_embeddings=False, name="tiny"),
    "tiny-tied": ModelConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_layers=2,
                             num_heads=4, num_kv_heads=2, head_dim=16, tie_word_embeddings=True,
                             name="tiny-tied"),
    "small": ModelConfig(vocab_size=2048, hidden_size=256, intermediate_size=768, num_layers=4,
                         num_heads=8, num_kv_heads=4, head_dim=32, tie_word_embeddings=False, name="small"),
}
