"""The training loop of `orchestra train` / `orchestra sft`: warm start, evaluate, GRPO, evaluate.

Phases of a run (`run_training`), each resumable from DIR/checkpoints/{sft,grpo}:
  1. build: the run's tokenizer, policy and environments (`orchestra_jax.policy`);
  2. SFT warm start (`Run.sft`): demonstrations of `orchestra_gym.agents.DelegatingAgent`, the pure
     `train_step.make_sft_step`;
  3. evaluation on held-out tasks (`Run.evaluate`, seeds >= 2^31);
  4. GRPO (`Run.grpo`), per step: sample tasks -> roll out (`rollout.collect_rollouts`) -> rewards,
     filters, advantages and padding (`batch.grpo_batch`) -> update (`train_step.make_grpo_step`) ->
     log (JSONL, TensorBoard, tqdm) -> checkpoint (`orchestra_jax.checkpoint`);
  5. evaluation again, plots (`orchestra_jax.plots`) and DIR/summary.json.

Data flow (DESIGN.md Sec. 1): tasks -> `orchestra_jax.rollout` (sampler <-> envs) -> rewards
(`orchestra_gym.rewards.group_preference_rewards`) -> `grpo.filter_and_advantages` -> the train step
(`grpo.loss_sums` with the global denominator, micro-batched) -> optax AdamW -> orbax checkpoint.
The data order (tasks, env seeds, sampler PRNG) of step s derives from (seed, s) only, so a resumed run
repeats it. The command line is `orchestra_jax.cli`.
"""

from __future__ import annotations

import json
import resource
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P
from tensorboardX import SummaryWriter
from tqdm import tqdm

from orchestra_gym.agents import DelegatingAgent
from orchestra_jax import checkpoint, sharding
from orchestra_jax.batch import grpo_batch, preference_vector, to_batch
from orchestra_jax.plots import write_plots
from orchestra_jax.policy import build_policy, build_tokenizer, make_envs
from orchestra_jax.rollout import Trajectory, collect_rollouts, scripted_trajectory
from orchestra_jax.sampler import Sampler
from orchestra_jax.train_config import TrainConfig
from orchestra_jax.train_step import (init_state, make_grpo_step, make_logp_fn, make_sft_step, optimizer_from_config,
                                      params_digest, split_micro)

__all__ = ["Run", "run_training", "episode_summary", "EVAL_TASK_BASE"]

EVAL_TASK_BASE = 2**31  # held-out tasks: ToolScale seeds >= 2^31 (training tasks draw seeds < 2^31)


def _peak_rss_gib() -> float:
    """Peak resident memory of this process so far, GiB (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _step_seed(seed: int, step: int) -> int:
    """The data order: tasks, env seeds and sampler PRNG of `step` derive from (seed, step) only."""
    return int(np.random.default_rng([seed, step]).integers(0, 2**30))


def _run_preference(cfg: TrainConfig, trajs: list[Trajectory]) -> np.ndarray | None:
    """The preference vector P of the run in reward-vector order (None: outcome reward, or no episode
    carries the reward vector's names yet)."""
    if cfg.reward != "preference":
        return None
    names = next((t.info["reward_vector_names"] for t in trajs if "reward_vector_names" in t.info), None)
    return preference_vector(cfg.preference, list(names)) if names else None


def episode_summary(trajs: list[Trajectory]) -> dict[str, Any]:
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
        self.graphdef, self.params0 = nnx.split(self.model, nnx.Param)
        self.logp_fn = make_logp_fn(self.graphdef, chunk=cfg.logp_chunk)
        self.logp_entropy_fn = make_logp_fn(self.graphdef, chunk=cfg.logp_chunk, with_entropy=True)
        self.envs = make_envs(cfg, cfg.tasks_per_step * cfg.rollouts_per_task)
        self.pool = ThreadPoolExecutor(max_workers=cfg.tool_workers)
        self._sampler: Sampler | None = None
        self.log_file = open(self.dir / "metrics.jsonl", "a")
        self._tb: SummaryWriter | None = None

    # ------------------------------------------------------------------ helpers
    def log(self, record: dict[str, Any]) -> None:
        """Append a record to DIR/metrics.jsonl and its finite numbers to TensorBoard (DIR/tb)."""
        self.log_file.write(json.dumps(record, default=float) + "\n")
        self.log_file.flush()
        if self._tb is None:
            self._tb = SummaryWriter(str(self.dir / "tb"))
        step = int(record.get("step", 0))
        for k, v in record.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v):
                self._tb.add_scalar(f"{record.get('phase', 'train')}/{k}", v, step)

    def sampler(self, params: Any) -> Sampler:
        """The KV-cache sampler with `params` loaded (built once, cache 3 x max_seq_len)."""
        nnx.update(self.model, params)
        if self._sampler is None:
            self._sampler = Sampler(self.model, eos_ids=self.tok.eos_ids, max_cache_len=3 * self.cfg.max_seq_len,
                                    pad_id=self.tok.pad_id)
        else:
            self._sampler.update_params(self.model)
        return self._sampler

    def place_batch(self, batch: dict[str, np.ndarray]) -> dict[str, jax.Array]:
        """Device arrays of a [M, b, ...] batch; under a mesh the row axis b is sharded over
        (data, fsdp) when it divides, else replicated."""
        if self.mesh is None:
            return {k: jnp.asarray(v) for k, v in batch.items()}

        def put(v):
            spec = P(None, ("data", "fsdp")) if v.shape[1] % (self.mesh.shape["data"] * self.mesh.shape["fsdp"]) == 0 else P()
            # every process holds the same global batch (rollouts derive from (seed, step)); each places
            # the rows of its own devices, so this also works when the mesh spans several hosts
            return jax.make_array_from_callback(v.shape, NamedSharding(self.mesh, spec), lambda idx: v[idx])

        return {k: put(v) for k, v in batch.items()}

    def _bar(self, total: int, desc: str, start: int) -> tqdm:
        return tqdm(total=total, initial=start, desc=desc, disable=not self.cfg.progress_bar, dynamic_ncols=True)

    def _checkpointer(self, phase: str) -> checkpoint.Checkpointer:
        cfg = self.cfg
        return checkpoint.Checkpointer(checkpoint.phase_dir(self.dir, phase), keep=cfg.keep_checkpoints,
                                       async_save=cfg.async_checkpoint)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, params: Any, n_tasks: int, tag: str) -> dict[str, Any]:
        """Rollouts at eval_temperature on `n_tasks` held-out tasks (seeds >= 2^31), one each; writes
        DIR/eval_<tag>.json and returns its `episode_summary`."""
        cfg = self.cfg
        trajs: list[Trajectory] = []
        sampler = self.sampler(params)
        ids = [EVAL_TASK_BASE + i for i in range(n_tasks)]
        for start in range(0, n_tasks, len(self.envs)):
            chunk = ids[start:start + len(self.envs)]
            out, _ = collect_rollouts(
                sampler, self.tok, self.envs[:len(chunk)], [cfg.reset_options(t) for t in chunk], rollouts_per_task=1,
                seed=cfg.seed + 7 + start, max_new_tokens=cfg.max_new_tokens, max_seq_len=cfg.max_seq_len,
                temperature=cfg.eval_temperature, max_turns=cfg.max_turns, executor=self.pool,
            )
            trajs += out
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
        ck = self._checkpointer("sft")
        start = 0
        if ck.latest_step() is not None:
            state, meta = ck.restore(None, state)
            start = int(meta["step"])
        if start >= cfg.sft_steps:
            ck.close()
            return state.params
        # demonstrations: the delegating agent's episodes that fit max_seq_len
        env = make_envs(cfg, 1)[0]
        data = []
        for i in range(cfg.sft_tasks):
            t = scripted_trajectory(env, self.tok, DelegatingAgent(cfg.seed * 7919 + i), seed=cfg.seed * 7919 + i,
                                    options=cfg.reset_options(), max_turns=cfg.max_turns)
            if len(t) <= cfg.max_seq_len:
                data.append(t)
        step_fn = make_sft_step(self.logp_fn, tx)
        bar = self._bar(cfg.sft_steps, "sft", start)
        for s in range(start, cfg.sft_steps):
            order = np.random.default_rng([cfg.seed, 1_000_000 + s]).choice(len(data), cfg.sft_batch_size,
                                                                             replace=len(data) < cfg.sft_batch_size)
            batch = to_batch([data[i] for i in order], multiple=cfg.pad_multiple)
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
        """GRPO from `params` (the warm start), resuming from DIR/checkpoints/grpo when present.
        Returns (params, optimizer steps taken, the initial evaluation)."""
        cfg = self.cfg
        tx = optimizer_from_config(cfg)
        state = init_state(params, tx, with_reference=cfg.kl_coef > 0)
        ck = self._checkpointer("grpo")
        start = 0
        if ck.latest_step() is not None:
            state, meta = ck.restore(None, state)
            start = int(meta["step"])
            initial_eval = meta.get("initial_eval", initial_eval)
        step_fn = make_grpo_step(self.logp_entropy_fn, tx, cfg.loss_config(), old_logp_source=cfg.old_logp_source)
        pref = None
        bar = self._bar(cfg.max_steps, "grpo", start)
        for s in range(start, cfg.max_steps):
            t_step = time.time()
            # ---- roll out tasks_per_step new tasks, rollouts_per_task episodes each
            trajs, stats = collect_rollouts(
                self.sampler(state.params), self.tok, self.envs, [cfg.reset_options() for _ in range(cfg.tasks_per_step)],
                rollouts_per_task=cfg.rollouts_per_task, seed=_step_seed(cfg.seed, s), max_new_tokens=cfg.max_new_tokens,
                max_seq_len=cfg.max_seq_len, temperature=cfg.temperature, max_turns=cfg.max_turns, executor=self.pool,
            )
            t_roll = time.time() - t_step
            # ---- rewards, filters, advantages -> batch; update
            pref = pref if pref is not None else _run_preference(cfg, trajs)
            batch, bstats = grpo_batch(trajs, cfg, pref)
            state, m = step_fn(state, self.place_batch(split_micro(batch, cfg.micro_batches)))
            # ---- log, checkpoint
            ep = episode_summary(trajs)
            rec = {"phase": "grpo", "step": s + 1, "reward_mean": bstats.pop("reward_mean"), **{
                k: float(v) for k, v in m.items()}, **{k: v for k, v in ep.items() if k != "tool_mix"},
                **bstats, "invalid_turns": stats.invalid_turns, "generated_tokens": stats.generated_tokens,
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


def run_training(cfg: TrainConfig, output_dir: str | Path | None = None, *, sft_only: bool = False) -> dict[str, Any]:
    """SFT warm start (if sft_steps > 0), evaluation, GRPO, evaluation; writes DIR/summary.json.

    summary.json holds the evaluations before and after GRPO, ``sft_params_sha256`` (the warm start's
    parameters) and ``params_sha256`` (the final ones; `train_step.params_digest`) to compare runs bit
    for bit.

    Multi-host: with JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID set on every host,
    `jax.distributed` starts first (`sharding.initialize_distributed`) and the mesh spans all hosts'
    devices; every host runs this same function (same config and seed)."""
    sharding.initialize_distributed()
    run = Run(cfg, output_dir)
    try:
        params = run.sft() if cfg.sft_steps > 0 else run.params0
        sft_digest = params_digest(params)
        initial = None
        resumed = checkpoint.latest(run.dir, ["grpo"]) is not None
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
            "sft_params_sha256": sft_digest,
            "params_sha256": params_digest(params),
            "peak_rss_gib": _peak_rss_gib(),
            "devices": [str(d) for d in jax.devices()],
        }
        summary["plots"] = write_plots(run.dir, initial, final)
        (run.dir / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
        return summary
    finally:
        run.close()
