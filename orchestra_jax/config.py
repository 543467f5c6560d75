"""Model configuration for the Qwen3 policy (architecture and dtype policy only).

`ModelConfig` mirrors the fields of a Hugging Face Qwen3 `config.json` (transformers'
`Qwen3Config`) that change the computation, plus our dtype / remat / scan policy. The
training hyper-parameters live elsewhere (a separate module), not here.

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

__all__ = ["ModelConfig", "PRESETS", "dtype_name", "ConfigError"]

_DTYPES = ("float32", "bfloat16", "float16")


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
    """Qwen3 decoder architecture plus the dtype policy.

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
        """Read a Hugging Face Qwen3 `config.json` (a directory, the file, or its parsed dict).

        `head_dim`, `rope_theta` and `tie_word_embeddings` are taken from the file (HF's
        defaults apply only when a key is absent: head_dim = hidden/heads, theta 10000,
        tie False as in `Qwen3Config`). `rope_theta` may also sit in `rope_parameters`
        (transformers 5 layout).

        Raises:
            FileNotFoundError: no config.json at the path.
            ConfigError (a ValueError): model_type is not qwen3 or a required key is missing, or RoPE scaling
                other than the default is requested (not implemented).
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
        if model_type != "qwen3":
            raise ConfigError(f"config.json model_type={model_type!r}; only 'qwen3' is supported")
        missing = [k for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                               "num_attention_heads") if k not in raw]
        if missing:
            raise ConfigError(f"config.json lacks required keys {missing}")
        rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        if rope_type not in ("default", None):
            raise ConfigError(f"rope_type {rope_type!r} is not supported; only default RoPE")
        theta = raw.get("rope_theta", rope.get("rope_theta", 10000.0))
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
            name=str(raw.get("_name_or_path") or "hf"),
        )
        kwargs.update(overrides)
        return cls(**kwargs)

    def to_hf_dict(self) -> dict[str, Any]:
        """The `config.json` dict transformers' `Qwen3Config` (and vLLM) read for this model."""
        torch_dtype = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}[self.param_dtype]
        return {
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "num_key_value_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "rope_theta": self.rope_theta,
            "rope_scaling": None,
            "rms_norm_eps": self.rms_norm_eps,
            "tie_word_embeddings": self.tie_word_embeddings,
            "max_position_embeddings": self.max_position_embeddings,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "use_sliding_window": False,
            "bos_token_id": 151643,
            "eos_token_id": 151645,
            "torch_dtype": torch_dtype,
            "dtype": torch_dtype,
        }

    # -------------------------------------------------------------- accounting
    def num_params(self) -> int:
        """Exact parameter count (same as `sum(p.numel())` of transformers' model)."""
        d, f, h = self.hidden_size, self.intermediate_size, self.head_dim
        attn = d * h * (self.num_heads * 2 + self.num_kv_heads * 2) + 2 * h
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
