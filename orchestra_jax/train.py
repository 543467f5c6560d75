"""GRPO training of the orchestrator policy: train state, the jit-compiled train step, the loop, the CLI.

Data flow (DESIGN.md Sec. 1): tasks -> `orchestra_jax.rollout` (sampler <-> envs) -> rewards
(`orchestra_gym.rewards.group_preference_rewards`) -> `grpo.filter_and_advantages` -> `train_step`
(`grpo.loss_sums` with the global denominator, micro-batched) -> optax AdamW -> orbax checkpoint.

Batch format (numpy or jax arrays, built by `orchestra_jax.rollout.to_batch`), with M micro-batches of
b rows (B = M x b) and T tokens:
  tokens          int32   [M, b, T]  the full token sequence of each trajectory (right-padded)
  attention_mask  int32   [M, b, T]  1 for real tokens (from lengths, never from token values)
  loss_mask       float32 [M, b, T]  1 where tokens[t] was sampled by the policy (assistant tokens, EOS
                                     included); 0 for prompt, tool, user tokens and padding
  sampler_logp    float32 [M, b, T]  the sampler's log-prob of tokens[t] (0 where loss_mask is 0)
  advantages      float32 [M, b]     one advantage per trajectory (0 for filtered ones)
Position t's log-prob is log p(tokens[t] | tokens[<t]), so the step shifts by one internally.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from orchestra_jax import grpo
from orchestra_jax import rollout as rollout_mod
from orchestra_jax.checkpoint import Checkpointer
from orchestra_jax.train_config import TrainConfig

__all__ = [
    "TrainState",
    "make_optimizer",
    "init_state",
    "make_logp_fn",
    "make_grpo_step",
    "make_sft_step",
    "train_main",
    "sft_main",
]


class TrainState(NamedTuple):
    """The whole trainable state (a pytree; checkpointed as is).

    params: float32 master weights (`nnx.State` of the policy's `nnx.Param`s).
    opt_state: optax state of `make_optimizer`.
    step: int32 scalar, optimizer steps taken.
    ref_params: frozen reference policy (same structure as params) when kl_coef > 0, else None.
    """

    params: Any
    opt_state: Any
    step: jax.Array
    ref_params: Any


def make_optimizer(
    learning_rate: float,
    *,
    weight_decay: float = 0.01,
    grad_clip: float = 1.0,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    warmup_steps: int = 0,
    decay_steps: int = 0,
) -> optax.GradientTransformation:
    """AdamW with global-norm clipping (the released verl actor: AdamW, lr 1e-6, wd 0.01, clip 1.0).

    Learning rate: linear warm-up from 0 over `warmup_steps`, then constant, or (decay_steps > 0) a
    cosine decay to 0 over the next `decay_steps` (optax schedules; steps count optimizer updates)."""
    after: Any = (optax.cosine_decay_schedule(learning_rate, decay_steps) if decay_steps > 0
                  else optax.constant_schedule(learning_rate))
    lr: Any = learning_rate if decay_steps == 0 else after
    if warmup_steps > 0:
        lr = optax.join_schedules([optax.linear_schedule(0.0, learning_rate, warmup_steps), after], [warmup_steps])
    parts = []
    if grad_clip > 0:
        parts.append(optax.clip_by_global_norm(grad_clip))
    parts.append(optax.adamw(lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay))
    return optax.chain(*parts)


def optimizer_from_config(cfg: TrainConfig, *, sft: bool = False) -> optax.GradientTransformation:
    return make_optimizer(
        cfg.sft_learning_rate if sft else cfg.learning_rate,
        weight_decay=cfg.weight_decay,
        grad_clip=cfg.grad_clip,
        b1=cfg.adam_b1,
        b2=cfg.adam_b2,
        eps=cfg.adam_eps,
        warmup_steps=0 if sft else cfg.warmup_steps,
        decay_steps=cfg.sft_steps if sft and cfg.sft_lr_schedule == "cosine" else 0,
    )


def _fp32(tree: Any) -> Any:
    return jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def init_state(params: Any, tx: optax.GradientTransformation, *, with_reference: bool) -> TrainState:
    """Train state from policy params (cast to float32 master weights); the reference is a frozen copy."""
    params = _fp32(params)
    ref = jax.tree.map(jnp.copy, params) if with_reference else None
    return TrainState(params=params, opt_state=tx.init(params), step=jnp.zeros((), jnp.int32), ref_params=ref)


def make_logp_fn(graphdef: Any, rest: Any = None, *, chunk: int = 256,
                 with_entropy: bool = False) -> Callable[..., Any]:
    """logp_fn(params, input_ids [b, T], targets [b, T], attention_mask [b, T]) -> float32 [b, T].

    Uses `orchestra_jax.model.token_logprobs` (chunked over the sequence, no [b, T, V] logits) for the
    Qwen3 policy; any other nnx module with ``__call__(input_ids, attention_mask=...) -> logits`` works
    through a plain log-softmax. with_entropy=True returns (logp, entropy), both float32 [b, T]
    (entropy of the full next-token distribution in nats, from the same logits); `make_grpo_step`
    then reports the `entropy` metric.
    """

    def logp_fn(params, input_ids, targets, attention_mask):
        model = nnx.merge(graphdef, params, rest) if rest is not None else nnx.merge(graphdef, params)
        try:
            from orchestra_jax.model import Qwen3, token_logprobs
        except ImportError:  # policy module not present: generic path
            Qwen3 = None
        if Qwen3 is not None and isinstance(model, Qwen3):
            return token_logprobs(model, input_ids, targets, attention_mask, chunk=chunk, with_entropy=with_entropy)
        logits = model(input_ids, attention_mask=attention_mask).astype(jnp.float32)
        lsm = jax.nn.log_softmax(logits, axis=-1)
        lp = jnp.take_along_axis(lsm, targets[..., None], axis=-1)[..., 0]
        if with_entropy:
            return lp, -jnp.sum(jnp.exp(lsm) * lsm, axis=-1)
        return lp

    return logp_fn


def _split_logp(out: Any) -> tuple[jax.Array, jax.Array | None]:
    return out if isinstance(out, tuple) else (out, None)


def _shift(mb: dict[str, jax.Array]) -> tuple[jax.Array, ...]:
    """Inputs/targets/masks for next-token log-probs: position t+1 predicted from tokens[:t+1]."""
    tokens = mb["tokens"]
    inp, tgt = tokens[:, :-1], tokens[:, 1:]
    am = mb["attention_mask"][:, :-1]
    mask = mb["loss_mask"][:, 1:] * (mb["attention_mask"][:, 1:] > 0)
    return inp, tgt, am, mask


def _reduce_sums(stacked: dict[str, jax.Array]) -> dict[str, jax.Array]:
    out = {}
    for k, v in stacked.items():
        out[k] = v.min(0) if k.endswith("_min") else (v.max(0) if k.endswith("_max") else v.sum(0))
    return out


def _accumulate(micro: Callable, params: Any, batch: dict[str, jax.Array]) -> tuple[Any, Any]:
    """Sum the gradients of the M micro-batches (leading batch axis) with `jax.lax.scan`; M = 1 runs
    the micro step once, without a loop. Returns (gradient sum, per-micro-batch outputs stacked [M, ...])."""
    zeros = jax.tree.map(jnp.zeros_like, params)
    if jax.tree.leaves(batch)[0].shape[0] == 1:
        grads, out = micro(zeros, jax.tree.map(lambda x: x[0], batch))
        return grads, jax.tree.map(lambda x: x[None], out)
    return jax.lax.scan(micro, zeros, batch)


def make_grpo_step(
    logp_fn: Callable[..., jax.Array],
    tx: optax.GradientTransformation,
    loss_cfg: grpo.LossConfig | None = None,
    *,
    old_logp_source: str = "trainer",
    donate: bool = True,
) -> Callable[[TrainState, dict[str, jax.Array]], tuple[TrainState, dict[str, jax.Array]]]:
    """The jit-compiled GRPO update: ``(state, batch) -> (state, metrics)`` (state donated).

    The micro-batches (leading axis M of the batch) are scanned; each adds the gradient of
    ``loss_sum / D`` where D = `grpo.loss_denominator` of the *whole* batch, so the accumulated gradient
    equals the full-batch gradient for every aggregation. pi_old is the current policy with no
    gradient ("trainer": verl with one PPO epoch, ratio 1 at the start) or the sampler's log-probs
    ("sampler"). Under a mesh, shard params and the batch's row axis; XLA inserts the reductions.

    Metrics: loss, pg_loss, kl, kl_k1, clipfrac_low/high/dual, approx_kl, ratio_mean/min/max,
    logp_diff_sampler (mean |sampler - trainer| log-prob), tokens, sequences, grad_norm, and entropy
    (mean over loss tokens, nats) when logp_fn was made with ``with_entropy=True``.
    """
    cfg = loss_cfg or grpo.DEFAULT_LOSS_CONFIG
    use_ref = cfg.kl_coef > 0

    def step(state: TrainState, batch: dict[str, jax.Array]):
        full_mask = batch["loss_mask"][:, :, 1:] * (batch["attention_mask"][:, :, 1:] > 0)
        den = grpo.loss_denominator(full_mask.reshape(-1, full_mask.shape[-1]), cfg)

        def micro(grads, mb):
            inp, tgt, am, mask = _shift(mb)
            slp = mb["sampler_logp"][:, 1:]
            ref = jax.lax.stop_gradient(_split_logp(logp_fn(state.ref_params, inp, tgt, am))[0]) if use_ref else None

            def loss_fn(params):
                lp, ent = _split_logp(logp_fn(params, inp, tgt, am))
                ent = None if ent is None else jax.lax.stop_gradient(ent)
                old = jax.lax.stop_gradient(lp) if old_logp_source == "trainer" else slp
                loss_sum, sums = grpo.loss_sums(lp, old, mb["advantages"], mask, ref, cfg, entropy=ent,
                                                sampler_logp=slp)
                return loss_sum / den, sums

            (loss, sums), g = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
            sums["loss_part"] = loss
            return jax.tree.map(jnp.add, grads, g), sums

        grads, stacked = _accumulate(micro, state.params, batch)
        sums = _reduce_sums(stacked)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        loss = sums.pop("loss_part")
        metrics = grpo.finalize_metrics(sums)
        metrics["loss"] = loss
        metrics["grad_norm"] = optax.tree.norm(grads)
        new = TrainState(params=params, opt_state=opt_state, step=state.step + 1, ref_params=state.ref_params)
        return new, metrics

    return jax.jit(step, donate_argnums=(0,) if donate else ())


def make_sft_step(
    logp_fn: Callable[..., jax.Array], tx: optax.GradientTransformation, *, donate: bool = True
) -> Callable[[TrainState, dict[str, jax.Array]], tuple[TrainState, dict[str, jax.Array]]]:
    """Supervised warm start: token-mean negative log-likelihood of the loss-mask tokens (the same masks
    as GRPO: only assistant tokens are learned), micro-batched with the global token count.

    Batch: tokens, attention_mask, loss_mask as in the module docstring ([M, b, T]).
    Metrics: nll (nats per token), tokens, grad_norm.
    """

    def step(state: TrainState, batch: dict[str, jax.Array]):
        full_mask = batch["loss_mask"][:, :, 1:] * (batch["attention_mask"][:, :, 1:] > 0)
        den = jnp.maximum(jnp.sum(full_mask > 0).astype(jnp.float32), 1.0)

        def micro(grads, mb):
            inp, tgt, am, mask = _shift(mb)

            def loss_fn(params):
                lp = _split_logp(logp_fn(params, inp, tgt, am))[0]
                return -jnp.sum(jnp.where(mask > 0, lp, 0.0)) / den

            loss, g = jax.value_and_grad(loss_fn)(state.params)
            return jax.tree.map(jnp.add, grads, g), loss

        grads, losses = _accumulate(micro, state.params, batch)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {"nll": losses.sum(), "tokens": den, "grad_norm": optax.tree.norm(grads)}
        return TrainState(params, opt_state, state.step + 1, state.ref_params), metrics

    return jax.jit(step, donate_argnums=(0,) if donate else ())


def split_micro(batch: dict[str, np.ndarray], micro_batches: int) -> dict[str, np.ndarray]:
    """[B, ...] arrays -> [M, B/M, ...]. Raises ValueError when M does not divide B."""
    out = {}
    for k, v in batch.items():
        v = np.asarray(v)
        if v.shape[0] % micro_batches:
            raise ValueError(f"batch[{k!r}] has {v.shape[0]} rows, not divisible by micro_batches={micro_batches}")
        out[k] = v.reshape((micro_batches, v.shape[0] // micro_batches) + v.shape[1:])
    return out




# ==========================================================================================================
# The loop: sample tasks -> roll out -> reward -> update -> log -> checkpoint (and the CLI)
# ==========================================================================================================


EVAL_TASK_BASE = 2**31  # held-out tasks: ToolScale seeds >= 2^31 (training tasks draw seeds < 2^31)


class DelegatingAgent:
    """Warm-start demonstrator: every turn delegates to an expert drawn uniformly at random
    (``call_expert``), so the warm-start policy writes valid tool calls with a uniform expert mix and
    GRPO has to discover which experts are worth their price. Seeded; an `orchestra_gym.agents` agent."""

    name = "delegating"

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.experts = sorted(getattr(env.unwrapped, "experts", {}))
        if not self.experts:
            raise ValueError("the delegating agent needs an environment with experts (call_expert)")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        from orchestra_gym.parsing import render_tool_calls
        from orchestra_gym.types import ToolCall

        expert = self.experts[int(self.rng.integers(len(self.experts)))]
        return render_tool_calls([ToolCall("call_expert", {"expert": expert})])


def _peak_rss_gib() -> float:
    """Peak resident memory of this process so far, GiB (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _step_seed(seed: int, step: int) -> int:
    """The data order: tasks, env seeds and sampler PRNG of `step` derive from (seed, step) only."""
    return int(np.random.default_rng([seed, step]).integers(0, 2**30))


def env_kwargs(cfg: TrainConfig) -> dict[str, Any]:
    """The `gym.make(cfg.env_id, **kwargs)` keyword arguments of a run (env_kwargs, max_turns, preference)."""
    kwargs = dict(cfg.env_kwargs)
    kwargs.setdefault("max_turns", cfg.max_turns)
    if cfg.preference:
        kwargs.setdefault("preference", cfg.preference)
    return kwargs


def _make_envs(cfg: TrainConfig, n: int) -> list[Any]:
    import gymnasium as gym

    import orchestra_gym  # noqa: F401  (registers the ids)

    return [gym.make(cfg.env_id, **env_kwargs(cfg)) for _ in range(n)]


def _reset_options(cfg: TrainConfig, task_id: Any = None) -> dict[str, Any]:
    o: dict[str, Any] = {}
    if cfg.preference:
        o["preference"] = cfg.preference
    if cfg.tools:
        o["tools"] = list(cfg.tools)
    if task_id is not None:
        o["task_id"] = task_id
    return o


def preference_vector(preference: dict[str, Any], names: list[str]) -> np.ndarray:
    """The preference vector P in reward-vector order from `info["reward_vector_names"]`."""
    from orchestra_gym.types import Preference

    p = Preference.from_dict(preference or None)
    tools = [n.split("/", 1)[1] for n in names if n.startswith("calls/")]
    return p.as_vector(tools)


def build_tokenizer(cfg: TrainConfig, out_dir: Path) -> rollout_mod.ChatTokenizer:
    """The run's tokenizer: a small byte-level BPE trained on the env's own texts ("toolscale-bpe",
    saved to DIR/tokenizer.json and reused on resume), the offline Qwen3 tokenizer ("qwen3"), or a
    tokenizer.json path."""
    if cfg.tokenizer == "toolscale-bpe":
        path = out_dir / "tokenizer.json"
        if path.exists():
            return rollout_mod.ChatTokenizer.from_file(str(path))
        from orchestra_gym.agents import OracleAgent

        byte_tok = rollout_mod.build_bpe_tokenizer(["a"], vocab_size=300)
        env = _make_envs(cfg, 1)[0]
        texts = []
        for i in range(24):  # oracle and delegating episodes: prompts, tool results, tool-call texts
            agent = OracleAgent() if i % 2 else DelegatingAgent(i)
            t = rollout_mod.scripted_trajectory(env, byte_tok, agent, seed=10_000 + i,
                                                options=_reset_options(cfg), max_turns=cfg.max_turns)
            texts.append(byte_tok.decode(t.tokens))
        vocab = int(cfg.model_overrides.get("vocab_size", 1024))
        tok = rollout_mod.build_bpe_tokenizer(texts, vocab_size=vocab)
        out_dir.mkdir(parents=True, exist_ok=True)
        tok.save(str(path))
        return tok
    from orchestra_jax import tokenizer as qtok

    path = Path(cfg.tokenizer)
    if cfg.tokenizer == "qwen3":
        path = out_dir / "qwen3-tokenizer"
        if not (path / "tokenizer.json").exists():
            qtok.build_qwen3_tokenizer(path)
    return rollout_mod.ChatTokenizer(qtok.load_tokenizer(path).backend)


def build_policy(cfg: TrainConfig, tok: rollout_mod.ChatTokenizer) -> tuple[Any, Any]:
    """(Qwen3 model, mesh or None). Random init from (preset, overrides, seed) or a HF checkpoint."""
    from orchestra_jax import config as model_config
    from orchestra_jax.model import Qwen3

    mesh = None
    n_dev = jax.device_count()
    if n_dev > 1 or cfg.mesh_tp > 1 or cfg.mesh_data > 1:
        from orchestra_jax import sharding

        mesh = sharding.make_mesh(data=cfg.mesh_data, fsdp=cfg.mesh_fsdp or None, tp=cfg.mesh_tp)
    if cfg.hf_checkpoint:
        from orchestra_jax.weights import load_hf_checkpoint

        model, _ = load_hf_checkpoint(cfg.hf_checkpoint, mesh=mesh, dtype="float32", **cfg.model_overrides)
        return model, mesh
    mcfg = model_config.ModelConfig.from_preset(cfg.model_preset, **cfg.model_overrides)
    if mcfg.vocab_size < tok.vocab_size:
        raise ValueError(f"model vocab_size={mcfg.vocab_size} < tokenizer vocab {tok.vocab_size}; "
                         f"set model_overrides.vocab_size >= {tok.vocab_size}")
    model = Qwen3(mcfg, rngs=nnx.Rngs(cfg.seed))
    if mesh is not None:
        from orchestra_jax import sharding

        sharding.shard_model(model, mesh)
    return model, mesh


def gather_params(params: Any) -> list[np.ndarray]:
    """Every leaf of `params` (in `jax.tree.leaves` order) as a full host numpy array.

    Multi-host: a replicated leaf is read from a local copy; a sharded leaf this process does not hold
    entirely is all-gathered (`jax.experimental.multihost_utils.process_allgather`), a collective, so
    every process must call this.
    """
    from jax.experimental import multihost_utils

    out = []
    for x in jax.tree.leaves(params):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            x = x.addressable_data(0) if x.is_fully_replicated else multihost_utils.process_allgather(x, tiled=True)
        out.append(np.asarray(x))
    return out


def params_digest(params: Any) -> str:
    """sha256 of all parameter bytes (to compare runs bit for bit; multi-host: see `gather_params`)."""
    h = hashlib.sha256()
    for x in gather_params(params):
        h.update(x.tobytes())
    return h.hexdigest()


def episode_summary(trajs: list[rollout_mod.Trajectory]) -> dict[str, Any]:
    """success rate, cost per solved task (USD), mean cost (USD) and latency (s), valid-format rate,
    tool-call mix (calls per episode), cut and invalid counts."""
    n = max(len(trajs), 1)
    solved = sum(t.solved for t in trajs)
    cost = float(sum(t.cost_usd for t in trajs))
    turns = sum(t.turns for t in trajs)
    invalid = sum(t.invalid_turns for t in trajs)
    mix: dict[str, float] = {}
    for t in trajs:
        for k, v in t.info.get("tool_calls", {}).items():
            mix[k] = mix.get(k, 0.0) + float(v) / n
    return {
        "episodes": len(trajs),
        "success_rate": solved / n,
        "cost_per_solved_usd": cost / solved if solved else float("inf"),
        "mean_cost_usd": cost / n,
        "mean_latency_s": float(sum(t.latency_s for t in trajs)) / n,
        "valid_format_rate": 1.0 - invalid / max(turns, 1),
        "turns_per_episode": turns / n,
        "cut": int(sum(t.cut for t in trajs)),
        "tool_mix": dict(sorted(mix.items())),
    }


class Run:
    """One training run (`orchestra train`): builds everything from a `TrainConfig`, then `sft()`,
    `evaluate()`, `grpo()` with checkpoints under DIR/checkpoints/{sft,grpo}."""

    def __init__(self, cfg: TrainConfig, output_dir: str | Path | None = None):
        self.cfg = cfg
        self.dir = Path(output_dir or cfg.output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.t0 = time.time()
        (self.dir / "train_config.json").write_text(json.dumps(cfg.to_dict(), indent=1))
        self.tok = build_tokenizer(cfg, self.dir)
        self.model, self.mesh = build_policy(cfg, self.tok)
        self.graphdef, params = nnx.split(self.model, nnx.Param)
        self.logp_fn = make_logp_fn(self.graphdef, chunk=cfg.logp_chunk)
        self.logp_entropy_fn = make_logp_fn(self.graphdef, chunk=cfg.logp_chunk, with_entropy=True)
        self.params0 = params
        rows = cfg.tasks_per_step * cfg.rollouts_per_task
        self.envs = _make_envs(cfg, rows)
        self.pool = ThreadPoolExecutor(max_workers=cfg.tool_workers)
        self._sampler = None
        self.log_file = open(self.dir / "metrics.jsonl", "a")
        self._tb = None

    # ------------------------------------------------------------------ helpers
    @property
    def tb(self):
        if self._tb is None:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(str(self.dir / "tb"))
        return self._tb

    def log(self, record: dict[str, Any]) -> None:
        self.log_file.write(json.dumps(record, default=float) + "\n")
        self.log_file.flush()
        step = int(record.get("step", 0))
        for k, v in record.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v):
                self.tb.add_scalar(f"{record.get('phase', 'train')}/{k}", v, step)

    def sampler(self, params: Any):
        from orchestra_jax.sampler import Sampler

        nnx.update(self.model, params)
        if self._sampler is None:
            self._sampler = Sampler(self.model, eos_ids=self.tok.eos_ids, max_cache_len=3 * self.cfg.max_seq_len,
                                    pad_id=self.tok.pad_id)
        else:
            self._sampler.update_params(self.model)
        return self._sampler

    def place_batch(self, batch: dict[str, np.ndarray]) -> dict[str, jax.Array]:
        if self.mesh is None:
            return {k: jnp.asarray(v) for k, v in batch.items()}
        from jax.sharding import NamedSharding, PartitionSpec as P

        def put(v):
            spec = P(None, ("data", "fsdp")) if v.shape[1] % (self.mesh.shape["data"] * self.mesh.shape["fsdp"]) == 0 else P()
            # every process holds the same global batch (rollouts derive from (seed, step)); each places
            # the rows of its own devices, so this also works when the mesh spans several hosts
            return jax.make_array_from_callback(v.shape, NamedSharding(self.mesh, spec), lambda idx: v[idx])

        return {k: put(v) for k, v in batch.items()}

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, params: Any, n_tasks: int, tag: str) -> dict[str, Any]:
        """Greedy (eval_temperature) rollouts on `n_tasks` held-out tasks (seeds >= 2^31), one each."""
        cfg = self.cfg
        g = cfg.rollouts_per_task
        trajs: list[rollout_mod.Trajectory] = []
        sampler = self.sampler(params)
        ids = [EVAL_TASK_BASE + i for i in range(n_tasks)]
        per_batch = len(self.envs)
        for start in range(0, n_tasks, per_batch):
            chunk = ids[start:start + per_batch]
            envs = self.envs[:len(chunk)]
            out, _ = rollout_mod.collect_rollouts(
                sampler, self.tok, envs, [_reset_options(cfg, t) for t in chunk], rollouts_per_task=1,
                seed=cfg.seed + 7 + start, max_new_tokens=cfg.max_new_tokens, max_seq_len=cfg.max_seq_len,
                temperature=cfg.eval_temperature, max_turns=cfg.max_turns, executor=self.pool,
            )
            trajs += out
        del g
        s = episode_summary(trajs)
        s["tag"] = tag
        (self.dir / f"eval_{tag}.json").write_text(json.dumps(s, indent=1, default=float))
        return s

    # ------------------------------------------------------------------ SFT
    def sft(self) -> Any:
        """Supervised warm start on `sft_tasks` demonstrations (resumable; returns the params)."""
        cfg = self.cfg
        tx = optimizer_from_config(cfg, sft=True)
        state = init_state(self.params0, tx, with_reference=False)
        ck = Checkpointer(self.dir / "checkpoints" / "sft", keep=cfg.keep_checkpoints, async_save=cfg.async_checkpoint)
        start = 0
        if ck.latest_step() is not None:
            state, meta = ck.restore(None, state)
            start = int(meta["step"])
        if start >= cfg.sft_steps:
            ck.close()
            return state.params
        env = _make_envs(cfg, 1)[0]
        data = []
        for i in range(cfg.sft_tasks):
            t = rollout_mod.scripted_trajectory(env, self.tok, DelegatingAgent(cfg.seed * 7919 + i),
                                                seed=cfg.seed * 7919 + i, options=_reset_options(cfg),
                                                max_turns=cfg.max_turns)
            if len(t) <= cfg.max_seq_len:
                data.append(t)
        step_fn = make_sft_step(self.logp_fn, tx)
        bar = _bar(cfg, cfg.sft_steps, "sft", start)
        for s in range(start, cfg.sft_steps):
            order = np.random.default_rng([cfg.seed, 1_000_000 + s]).choice(len(data), cfg.sft_batch_size,
                                                                             replace=len(data) < cfg.sft_batch_size)
            batch = rollout_mod.to_batch([data[i] for i in order], multiple=cfg.pad_multiple)
            batch = split_micro({k: batch[k] for k in ("tokens", "attention_mask", "loss_mask")}, cfg.micro_batches)
            state, m = step_fn(state, self.place_batch(batch))
            rec = {"phase": "sft", "step": s + 1, "nll": float(m["nll"]), "grad_norm": float(m["grad_norm"]),
                   "time_s": time.time() - self.t0, "peak_rss_gib": _peak_rss_gib()}
            if (s + 1) % cfg.log_every == 0:
                self.log(rec)
            bar.update(1)
            bar.set_postfix(nll=f"{rec['nll']:.3f}")
            if (s + 1) % cfg.checkpoint_every == 0 or s + 1 == cfg.sft_steps:
                ck.save(s + 1, state, {"step": s + 1, "phase": "sft"})
        bar.close()
        ck.close()
        return state.params

    # ------------------------------------------------------------------ GRPO
    def grpo(self, params: Any, initial_eval: dict[str, Any] | None) -> tuple[Any, int, dict[str, Any] | None]:
        """GRPO from `params` (the warm start), resuming from DIR/checkpoints/grpo when present."""
        cfg = self.cfg
        tx = optimizer_from_config(cfg)
        state = init_state(params, tx, with_reference=cfg.kl_coef > 0)
        ck = Checkpointer(self.dir / "checkpoints" / "grpo", keep=cfg.keep_checkpoints, async_save=cfg.async_checkpoint)
        start = 0
        if ck.latest_step() is not None:
            state, meta = ck.restore(None, state)
            start = int(meta["step"])
            initial_eval = meta.get("initial_eval", initial_eval)
        step_fn = make_grpo_step(self.logp_entropy_fn, tx, cfg.loss_config(), old_logp_source=cfg.old_logp_source)
        g = cfg.rollouts_per_task
        pref = None
        bar = _bar(cfg, cfg.max_steps, "grpo", start)
        for s in range(start, cfg.max_steps):
            t_step = time.time()
            seed = _step_seed(cfg.seed, s)
            sampler = self.sampler(state.params)
            trajs, stats = rollout_mod.collect_rollouts(
                sampler, self.tok, self.envs, [_reset_options(cfg) for _ in range(cfg.tasks_per_step)],
                rollouts_per_task=g, seed=seed, max_new_tokens=cfg.max_new_tokens, max_seq_len=cfg.max_seq_len,
                temperature=cfg.temperature, max_turns=cfg.max_turns, executor=self.pool,
            )
            t_roll = time.time() - t_step
            if pref is None and cfg.reward == "preference":
                names = next((t.info["reward_vector_names"] for t in trajs if "reward_vector_names" in t.info), None)
                pref = preference_vector(cfg.preference, list(names)) if names else None
            kind = cfg.reward if pref is not None else "outcome"
            rewards = rollout_mod.group_rewards(trajs, g, pref, kind=kind)
            filt = grpo.filter_and_advantages(
                rewards, np.array([[t.terminated for t in trajs[i * g:(i + 1) * g]] for i in range(len(rewards))]),
                min_std=cfg.min_group_std, eps=cfg.adv_eps, clip=cfg.adv_clip, ddof=cfg.adv_ddof,
            )
            adv = filt.advantages.reshape(-1)
            batch = rollout_mod.to_batch(trajs, adv, multiple=cfg.pad_multiple)
            batch["loss_mask"] = batch["loss_mask"] * filt.keep.reshape(-1, 1).astype(np.float32)
            state, m = step_fn(state, self.place_batch(split_micro(batch, cfg.micro_batches)))
            ep = episode_summary(trajs)
            rec = {"phase": "grpo", "step": s + 1, "reward_mean": float(rewards.mean()), **{
                k: float(v) for k, v in m.items()}, **{k: v for k, v in ep.items() if k != "tool_mix"},
                **filt.counts, "invalid_turns": stats.invalid_turns, "generated_tokens": stats.generated_tokens,
                "rollout_s": t_roll, "step_s": time.time() - t_step, "time_s": time.time() - self.t0,
                "peak_rss_gib": _peak_rss_gib(),
                **{f"mix/{k}": v for k, v in ep["tool_mix"].items()}}
            if (s + 1) % cfg.log_every == 0:
                self.log(rec)
            bar.update(1)
            bar.set_postfix(reward=f"{rec['reward_mean']:.2f}", success=f"{ep['success_rate']:.2f}",
                            cost=f"{ep['mean_cost_usd']:.4f}", latency=f"{ep['mean_latency_s']:.0f}s")
            if (s + 1) % cfg.checkpoint_every == 0 or s + 1 == cfg.max_steps:
                ck.save(s + 1, state, {"step": s + 1, "phase": "grpo", "initial_eval": initial_eval})
        bar.close()
        ck.close()
        return state.params, int(state.step), initial_eval

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.log_file.close()
        if self._tb is not None:
            self._tb.close()


def _bar(cfg: TrainConfig, total: int, desc: str, start: int):
    from tqdm import tqdm

    return tqdm(total=total, initial=start, desc=desc, disable=not cfg.progress_bar, dynamic_ncols=True)


def write_plots(out_dir: Path, initial: dict[str, Any] | None, final: dict[str, Any] | None) -> list[str]:
    """reward / success / cost / latency per GRPO step and the tool-call mix before and after (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    last: dict[int, dict] = {}
    for r in recs:
        if r.get("phase") == "grpo":
            last[int(r["step"])] = r  # a resumed run may repeat steps: keep the latest record
    steps = sorted(last)
    files = []
    (out_dir / "plots").mkdir(exist_ok=True)
    if steps:
        fig, axes = plt.subplots(1, 4, figsize=(16, 3.2))
        for ax, key, label in zip(axes, ["reward_mean", "success_rate", "mean_cost_usd", "mean_latency_s"],
                                  ["reward", "success rate", "cost per episode (USD)", "latency per episode (s)"]):
            ax.plot(steps, [last[s].get(key, np.nan) for s in steps])
            ax.set_xlabel("GRPO step")
            ax.set_title(label)
        fig.tight_layout()
        fig.savefig(out_dir / "plots" / "training.png", dpi=90)
        plt.close(fig)
        files.append("plots/training.png")
    if initial and final:
        keys = sorted(set(initial["tool_mix"]) | set(final["tool_mix"]))
        keys = [k for k in keys if k.startswith("expert") or k == "call_expert"] or keys
        x = np.arange(len(keys))
        fig, ax = plt.subplots(figsize=(max(5, len(keys) * 1.2), 3.2))
        ax.bar(x - 0.2, [initial["tool_mix"].get(k, 0) for k in keys], 0.4, label="warm start")
        ax.bar(x + 0.2, [final["tool_mix"].get(k, 0) for k in keys], 0.4, label="after GRPO")
        ax.set_xticks(x, keys, rotation=20)
        ax.set_ylabel("calls per episode")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "plots" / "tool_mix.png", dpi=90)
        plt.close(fig)
        files.append("plots/tool_mix.png")
    return files


def run_training(cfg: TrainConfig, output_dir: str | Path | None = None, *, sft_only: bool = False) -> dict[str, Any]:
    """SFT warm start (if sft_steps > 0), evaluation, GRPO, evaluation; writes DIR/summary.json.

    Multi-host: with JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID set on every host,
    `jax.distributed` starts first (`sharding.initialize_distributed`) and the mesh spans all hosts'
    devices; every host runs this same function (same config and seed)."""
    from orchestra_jax import sharding

    sharding.initialize_distributed()
    run = Run(cfg, output_dir)
    try:
        params = run.sft() if cfg.sft_steps > 0 else run.params0
        grpo_ck = run.dir / "checkpoints" / "grpo"
        initial = None
        resumed = grpo_ck.exists() and Checkpointer(grpo_ck).latest_step() is not None
        if cfg.eval_tasks and not resumed:
            initial = run.evaluate(params, cfg.eval_tasks, "initial")
        steps = 0
        if not sft_only:
            params, steps, initial = run.grpo(params, initial)
        final = run.evaluate(params, cfg.eval_tasks, "final") if cfg.eval_tasks else None
        summary = {
            "config": cfg.name,
            "steps": steps,
            "sft_steps": cfg.sft_steps,
            "wall_time_s": time.time() - run.t0,
            "initial": initial,
            "final": final,
            "initial_success_rate": initial["success_rate"] if initial else None,
            "final_success_rate": final["success_rate"] if final else None,
            "initial_cost_per_solved_usd": initial["cost_per_solved_usd"] if initial else None,
            "final_cost_per_solved_usd": final["cost_per_solved_usd"] if final else None,
            "params_sha256": params_digest(params),
            "peak_rss_gib": _peak_rss_gib(),
            "devices": [str(d) for d in jax.devices()],
        }
        summary["plots"] = write_plots(run.dir, initial, final)
        (run.dir / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
        return summary
    finally:
        run.close()


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="GRPO training of an orchestrator policy (ToolOrchestra)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--preset", default=None, help="a TrainConfig preset (default tiny-toolscale)")
    g.add_argument("--config", default=None, help="a .toml or .json TrainConfig file (strict keys)")
    p.add_argument("--max-steps", type=int, default=None, help="GRPO steps (overrides the config)")
    p.add_argument("--output-dir", default=None, help="run directory (logs, checkpoints, summary.json, plots)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    return p


def _config_from_args(args: argparse.Namespace) -> TrainConfig:
    from orchestra_jax.train_config import TrainConfig as TC

    cfg = TC.from_file(args.config) if args.config else TC.preset(args.preset or "tiny-toolscale")
    over: dict[str, Any] = {}
    if args.max_steps is not None:
        over["max_steps"] = args.max_steps
    if args.output_dir is not None:
        over["output_dir"] = args.output_dir
    if args.no_progress:
        over["progress_bar"] = False
    return cfg.replace(**over) if over else cfg


def _load_config(prog: str, argv: list[str] | None) -> TrainConfig | None:
    """Parse the command line and load the config strictly; None (message on stderr) when it is bad."""
    args = _parser(prog).parse_args(argv)
    from orchestra_jax.train_config import ConfigError

    try:
        return _config_from_args(args)
    except (ConfigError, FileNotFoundError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None


def train_main(argv: list[str] | None = None) -> int:
    """`orchestra train [--preset NAME | --config FILE] [--max-steps N] [--output-dir DIR]`.

    Resumes from DIR/checkpoints when present. Prints and writes DIR/summary.json. Returns 0; a bad config
    exits with code 2 and the message naming the key, before any compute."""
    cfg = _load_config("orchestra train", argv)
    if cfg is None:
        return 2
    summary = run_training(cfg)
    print(json.dumps({k: summary[k] for k in ("steps", "wall_time_s", "initial_success_rate", "final_success_rate",
                                              "initial_cost_per_solved_usd", "final_cost_per_solved_usd")},
                     default=float))
    return 0


def sft_main(argv: list[str] | None = None) -> int:
    """`orchestra sft [--preset NAME | --config FILE] [--output-dir DIR]`: the warm start only (+ evaluation)."""
    cfg = _load_config("orchestra sft", argv)
    if cfg is None:
        return 2
    if cfg.sft_steps == 0:
        print("orchestra sft: sft_steps is 0 in this config; set sft_steps >= 1", file=sys.stderr)
        return 2
    summary = run_training(cfg, sft_only=True)
    print(json.dumps({k: summary[k] for k in ("sft_steps", "wall_time_s", "final_success_rate")}, default=float))
    return 0
