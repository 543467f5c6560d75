"""What a run trains: all parameters, only the top N layers, or LoRA adapters on them (issue 51 item 2).

`Trainable` splits the policy's parameters (the pure dict of `nnx.split(model, nnx.Param)`) into a
trained part and a frozen part. The train state's ``params`` is then the trained part only, so the
gradients and the AdamW state exist only for it; the frozen part travels as the state's ``frozen``
argument of the jitted step, never differentiated. In the forward pass the frozen layers below the first
trained one run on stop-gradient weights and their output enters it through `jax.lax.stop_gradient`
(`orchestra_jax.model.Qwen3.hidden_states` ``frozen_layers``), so no backward pass runs through them.

Modes (``model.trainable`` / ``model.lora_rank``):
  * ``"all"``: every parameter (the default; the train state is then exactly the full params, as before).
  * ``"top:N"``: the stacked layer weights of the top N layers, the final norm, and the LM head when it
    is untied (a tied head is the embedding, which stays frozen); the embedding and lower layers frozen.
  * LoRA (lora_rank r > 0, with "all" or "top:N" choosing the layers): low-rank adapters
    W + (alpha / r) A B on the `targets` projections of those layers (Hu et al. 2021, "LoRA", Sec. 4.1:
    A Gaussian, B zero, so the adapted model equals the base model at init); every base weight frozen.

`policy_params` joins the two parts into the plain parameter pytree of the policy (LoRA merged into the
weights), which the sampler, checkpoints' exports and digests use.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from orchestra_gym.errors import ConfigError, did_you_mean
from orchestra_jax.config import ModelConfig
from orchestra_jax.model import LAYER_PARAMS, Qwen3

__all__ = ["Trainable", "LORA_TARGETS", "parse_layers"]

#: projections LoRA can adapt -> number of input axes of the weight (after the layer axis)
LORA_TARGETS = {"wq": 1, "wk": 1, "wv": 1, "wo": 2, "w_gate": 1, "w_up": 1, "w_down": 1}


def parse_layers(spec: str, num_layers: int) -> int:
    """``"all"`` -> num_layers; ``"top:N"`` -> N (1 <= N <= num_layers). Raises ConfigError naming
    model.trainable otherwise."""
    if spec == "all":
        return num_layers
    head, _, n = str(spec).partition(":")
    if head != "top" or not n.isdigit() or not 1 <= int(n) <= num_layers:
        raise ConfigError(f"model.trainable={spec!r}: use 'all' or 'top:N' with 1 <= N <= {num_layers} "
                          f"(the model's num_layers)")
    return int(n)


@dataclasses.dataclass(frozen=True)
class Trainable:
    """The trained part of a `ModelConfig`'s parameters.

    Attributes:
        config: the model architecture.
        layers: number of top layers trained (config.num_layers = all).
        lora_rank: LoRA rank r (0 = train the weights themselves).
        lora_alpha: LoRA alpha; the low-rank term is scaled by alpha / r.
        lora_targets: the projections adapted (keys of `LORA_TARGETS`).
    """

    config: ModelConfig
    layers: int
    lora_rank: int = 0
    lora_alpha: float = 16.0
    lora_targets: tuple[str, ...] = tuple(LORA_TARGETS)

    def __post_init__(self) -> None:
        if not 1 <= self.layers <= self.config.num_layers:
            raise ConfigError(f"Trainable.layers={self.layers}: must be in [1, {self.config.num_layers}]")
        if self.lora_rank < 0:
            raise ConfigError(f"model.lora_rank={self.lora_rank}: must be >= 0 (0 = no LoRA)")
        for t in self.lora_targets:
            if t not in LORA_TARGETS:
                raise ConfigError(f"model.lora_targets: unknown projection {t!r}{did_you_mean(t, LORA_TARGETS)}; "
                                  f"known: {sorted(LORA_TARGETS)}")
        if self.lora_rank and not self.lora_targets:
            raise ConfigError("model.lora_targets is empty: name at least one projection, e.g. ['wq', 'wv']")

    @classmethod
    def from_spec(cls, config: ModelConfig, spec: str = "all", *, lora_rank: int = 0, lora_alpha: float = 16.0,
                  lora_targets: tuple[str, ...] | list[str] = tuple(LORA_TARGETS)) -> "Trainable":
        """From the config keys ``model.trainable`` ("all" / "top:N"), ``model.lora_rank``,
        ``model.lora_alpha``, ``model.lora_targets``."""
        return cls(config, parse_layers(spec, config.num_layers), int(lora_rank), float(lora_alpha),
                   tuple(lora_targets))

    # ------------------------------------------------------------------ properties
    @property
    def is_full(self) -> bool:
        """Every parameter trained: no split (the trainer's default path)."""
        return self.layers == self.config.num_layers and self.lora_rank == 0

    @property
    def frozen_layers(self) -> int:
        """Number of bottom layers with no backward pass."""
        return self.config.num_layers - self.layers

    @property
    def scale(self) -> float:
        return self.lora_alpha / self.lora_rank if self.lora_rank else 0.0

    def _top_names(self) -> list[str]:
        return ["final_norm"] + ([] if self.config.tie_word_embeddings else ["lm_head"])

    # ------------------------------------------------------------------ split / join
    def split(self, params: Any, key: jax.Array | None = None) -> tuple[dict, dict]:
        """(trained, frozen) plain dicts from the policy's params (`nnx.State` or its pure dict).

        Top-N: trained = {layer weight: w[L-N:]} + final_norm (+ lm_head when untied); frozen = the rest,
        layer weights as w[:L-N]. LoRA: trained = {"lora": {target: {"a": [N, *in, r], "b": [N, r, *out]}}}
        (a ~ N(0, 1/r) from `key`, b = 0), frozen = every parameter. Shapes keep the params' dtype; a
        float32 master copy is the caller's (`orchestra_jax.train_step.init_state`)."""
        pure = nnx.to_pure_dict(params) if isinstance(params, nnx.State) else dict(params)
        if self.lora_rank:
            if key is None:
                raise ValueError("Trainable.split needs a PRNG key to draw the LoRA A matrices")
            lora = {}
            for i, t in enumerate(self.lora_targets):
                w = pure[t]
                n_in = LORA_TARGETS[t]
                in_shape, out_shape = w.shape[1:1 + n_in], w.shape[1 + n_in:]
                a = jax.random.normal(jax.random.fold_in(key, i), (self.layers, *in_shape, self.lora_rank),
                                      jnp.float32) / math.sqrt(self.lora_rank)
                lora[t] = {"a": a.astype(w.dtype), "b": jnp.zeros((self.layers, self.lora_rank, *out_shape), w.dtype)}
            return {"lora": lora}, pure
        k = self.frozen_layers
        trained = {name: pure[name][k:] for name in LAYER_PARAMS}
        frozen = {name: pure[name][:k] for name in LAYER_PARAMS}
        for name, v in pure.items():
            if name not in LAYER_PARAMS:
                (trained if name in self._top_names() else frozen)[name] = v
        return trained, frozen

    def model_params(self, trained: dict, frozen: dict) -> tuple[dict, dict | None]:
        """(pure params of the base model for `nnx.merge`, LoRA adapters with the scale folded into b,
        or None) for the forward pass of the split model."""
        if self.lora_rank:
            ad = {t: {"a": v["a"], "b": v["b"] * self.scale} for t, v in trained["lora"].items()}
            return frozen, ad
        pure = {**frozen, **{n: v for n, v in trained.items() if n not in LAYER_PARAMS}}
        for name in LAYER_PARAMS:
            pure[name] = jnp.concatenate([frozen[name], trained[name]], axis=0)
        return pure, None

    def policy_params(self, trained: dict, frozen: dict, like: nnx.State | None = None) -> nnx.State:
        """The policy's full parameters (`nnx.State`, the structure of ``nnx.split(model, nnx.Param)[1]``, or of
        `like` with its variables): top-N concatenated back; LoRA merged, W[L-N:] + (alpha / r) A B."""
        pure, ad = self.model_params(trained, frozen)
        if ad is not None:
            pure = dict(pure)
            k = self.frozen_layers
            for t, v in ad.items():
                delta = jax.vmap(lambda a, b: jnp.tensordot(a, b, axes=1))(v["a"], v["b"])
                w = pure[t]
                pure[t] = w.at[k:].add(delta.astype(w.dtype))
        if like is None:
            return nnx.State(pure)
        out = jax.tree.map(lambda x: x, like)
        nnx.replace_by_pure_dict(out, pure)
        return out

    def num_trained(self) -> int:
        """Number of trained scalars."""
        abstract = nnx.eval_shape(lambda: Qwen3(self.config, rngs=nnx.Rngs(0)))
        pure = nnx.to_pure_dict(nnx.state(abstract, nnx.Param))
        if self.lora_rank:
            total = 0
            for t in self.lora_targets:
                n_in = LORA_TARGETS[t]
                shape = pure[t].shape
                total += self.layers * self.lora_rank * (math.prod(shape[1:1 + n_in]) + math.prod(shape[1 + n_in:]))
            return total
        per_layer = sum(math.prod(pure[n].shape[1:]) for n in LAYER_PARAMS)
        return self.layers * per_layer + sum(math.prod(pure[n].shape) for n in self._top_names())

