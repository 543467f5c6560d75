"""The training loop of `orchestra train` / `orchestra sft`: warm start, evaluate, GRPO, evaluate.

Phases of a run (`run_training`), each resumable from DIR/checkpoints/{sft,grpo} (`orchestra_jax.run_checkpoints`):
  1. build (`Run`): the run's tokenizer, policy and environments (`orchestra_jax.policy`); DIR/train_config.json
     and DIR/orchestra_setting.json (`orchestra_jax.policy.run_setting`, read by ``orchestra eval --setting-of DIR``);
  2. SFT warm start (`Run.sft`): demonstrations of `orchestra_gym.agents.DelegatingAgent`, then per step:
     batch -> update (the pure `train_step.make_sft_step`) -> record -> checkpoint;
  3. evaluation on held-out tasks (`orchestra_jax.evaluation`, seeds >= 2^31);
  4. GRPO (`Run.grpo`), per step:
       collect: the step's rollouts from the rollout source (`orchestra_jax.rollout_source`: played now, or with
         grpo.max_staleness k > 0 ahead of the trainer by an older policy, `orchestra_jax.async_grpo`);
       rewards and advantages: rewards, filters, advantages and padding (`batch.grpo_batch`);
       update: ppo_epochs x ppo_mini_batches steps of `train_step.make_grpo_step` with pi_old fixed
         (`train_step.grpo_updates`; none when no token is kept; a non-finite loss or gradient stops the run);
       record: JSONL, TensorBoard, tqdm (`orchestra_jax.run_log`);
       guard: restore the last healthy checkpoint with a smaller learning rate, or stop (`orchestra_jax.guard`);
       checkpoint (`orchestra_jax.checkpoint`; the warm start is step 0 when the guard is on);
  5. evaluation again, the fixed-rule baselines, plots (`orchestra_jax.plots`) and DIR/summary.json.

Data flow (DESIGN.md Sec. 1): tasks -> `orchestra_jax.rollout` (sampler <-> envs) -> rewards
(`orchestra_gym.rewards.group_preference_rewards`) -> `grpo.filter_and_advantages` -> the train step
(`grpo.loss_sums` with the global denominator, micro-batched) -> optax AdamW -> orbax checkpoint.
The data order (tasks, env seeds, sampler PRNG) of step s derives from (seed, s) only
(`orchestra_jax.rollout_source.step_seed`), so a resumed run repeats it. The command line is `orchestra_jax.cli`.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from orchestra_jax import checkpoint, sharding
from orchestra_jax.async_grpo import AsyncRollouts
from orchestra_jax.batch import compact_rows, grpo_batch, to_batch
from orchestra_jax.evaluation import episode_summary, evaluate_policy, play_baselines
from orchestra_jax.guard import TrainingGuard, TrainingStopped
from orchestra_jax.plots import write_plots
from orchestra_jax.policy import build_policy, build_tokenizer, demonstrator, make_envs, run_setting
from orchestra_jax.rollout import Trajectory, scripted_trajectory
from orchestra_jax.rollout_source import StepRollouts, SyncRollouts, behaviour_logp, step_seed
from orchestra_jax.run_checkpoints import (StopRequest, due, grpo_meta, phase_checkpointer, resume, save_unless_saved,
                                           sft_meta, stop_if_sft_not_finite, stop_if_update_not_finite)
from orchestra_jax.run_log import RunLog, json_safe, label_metrics, peak_rss_gib, update_metrics
from orchestra_jax.sampler import Sampler
from orchestra_jax.train_config import TrainConfig
from orchestra_jax.train_sections import GrpoSection, OptimizerSection, SftSection
from orchestra_jax.trainable import Trainable
from orchestra_jax.train_step import (UpdateResult, grpo_updates, init_state, make_grpo_step, make_logp_fn,
                                      make_old_logp_fn, make_sft_step, optimizer_from_config, params_digest,
                                      split_micro)

__all__ = ["Run", "run_training", "TrainingStopped"]


def sft_demonstrations(cfg: TrainConfig, tok: Any) -> list[Trajectory]:
    """The warm start's data: sft.tasks episodes of the demonstrator (`orchestra_jax.policy.demonstrator`,
    env seeds seed * 7919 + i, preferences drawn from ``default_rng([seed, 23])`` as in training), those that
    fit rollout.max_seq_len."""
    env = make_envs(cfg, 1)[0]
    data = []
    pref_rng = np.random.default_rng([cfg.seed, 23])  # the demonstrations' preferences, as in training
    for i in range(cfg.sft.tasks):
        agent = demonstrator(cfg, cfg.seed * 7919 + i)
        t = scripted_trajectory(env, tok, agent, seed=cfg.seed * 7919 + i,
                                options=cfg.reset_options(preference=cfg.sample_preference(pref_rng)),
                                max_turns=cfg.env.max_turns)
        if len(t) <= cfg.rollout.max_seq_len:
            data.append(t)
    return data


def sft_batch(data: list[Trajectory], seed: int, s: int, sft: SftSection, optimizer: OptimizerSection
              ) -> dict[str, np.ndarray]:
    """SFT step `s`'s batch: sft.batch_size demonstrations drawn by ``default_rng([seed, 1_000_000 + s])``
    (with replacement only when there are fewer), padded and split into optimizer.micro_batches [M, b, T]."""
    order = np.random.default_rng([seed, 1_000_000 + s]).choice(len(data), sft.batch_size,
                                                                replace=len(data) < sft.batch_size)
    batch = to_batch([data[i] for i in order], multiple=optimizer.pad_multiple)
    return split_micro({k: batch[k] for k in ("tokens", "attention_mask", "loss_mask")}, optimizer.micro_batches)


def grpo_update(state: Any, batch: dict[str, np.ndarray], fns: dict[str, Any], place: Any, seed: int,
                grpo: GrpoSection, optimizer: OptimizerSection) -> UpdateResult:
    """The update phase of a GRPO step: grpo.ppo_epochs x grpo.ppo_mini_batches optimizer updates of the
    jitted step ``fns["step"]`` (none without a kept token), rows permuted by `seed`."""
    return grpo_updates(state, batch, fns["step"], place=place, epochs=grpo.ppo_epochs,
                        mini_batches=grpo.ppo_mini_batches, micro_batches=optimizer.micro_batches,
                        seed=seed, old_logp_fn=fns["old_logp"])


def grpo_record(step: int, sampled: list[Trajectory], bstats: dict[str, Any], res: UpdateResult, stats: Any,
                times: dict[str, float]) -> dict[str, Any]:
    """The record of GRPO step `step` (1-based): the batch's reward and counts, the update's metrics, the
    policy's own rollouts' summary (guided ones count only in the batch counts), tool mix and task kinds,
    and `times` (rollout_s, step_s, time_s; staleness and rollout_wait_s when rolled out ahead)."""
    ep = episode_summary(sampled)
    rec = {"phase": "grpo", "step": step, "reward_mean": bstats.pop("reward_mean"),
           **update_metrics(res), **{k: v for k, v in ep.items() if k != "tool_mix"},
           **bstats, "invalid_turns": stats.invalid_turns, "generated_tokens": stats.generated_tokens,
           "rollout_s": times["rollout_s"], "step_s": times["step_s"], "time_s": times["time_s"],
           "peak_rss_gib": peak_rss_gib(),
           **{f"mix/{k}": v for k, v in ep["tool_mix"].items()},
           **label_metrics(sampled)}
    if "staleness" in times:  # how stale the step's rollouts were, and how long the trainer waited for them
        rec.update({"staleness": times["staleness"], "rollout_wait_s": times["rollout_wait_s"]})
    if stats.slot_steps:  # the continuous engine: the idle-slot fraction and the re-prefills
        rec.update({"slot_idle": 1.0 - stats.busy_slot_steps / stats.slot_steps, "reprefills": stats.reprefills})
    return rec


class Run:
    """One training run (`orchestra train`): builds everything from a `TrainConfig`, then `sft()`,
    `evaluate()`, `grpo()` with checkpoints under DIR/checkpoints/{sft,grpo}."""

    def __init__(self, cfg: TrainConfig, output_dir: str | Path | None = None):
        cfg.check_env()  # env.id and env.kwargs, before anything is written
        self.cfg = cfg
        self.dir = Path(output_dir or cfg.output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.t0 = time.time()
        (self.dir / "train_config.json").write_text(json.dumps(cfg.to_dict(), indent=1))
        run_setting(cfg).write(self.dir)  # orchestra_setting.json: the setting `orchestra eval --setting-of` reads
        self.tok = build_tokenizer(cfg, self.dir)
        self.model, self.mesh = build_policy(cfg, self.tok)
        self.graphdef, self.params0 = nnx.split(self.model, nnx.Param)
        # what trains (model.trainable / model.lora_*): every parameter by default (the train state is the params)
        self.trainable = Trainable.from_spec(self.model.config, cfg.model.trainable, lora_rank=cfg.model.lora_rank,
                                             lora_alpha=cfg.model.lora_alpha, lora_targets=cfg.model.lora_targets)
        split = None if self.trainable.is_full else self.trainable
        self.logp_fn = make_logp_fn(self.graphdef, chunk=cfg.optimizer.logp_chunk, trainable=split)  # SFT: temperature 1
        # GRPO: log-probs at the sampling temperature, the sampler's convention (pi_old and the loss)
        self.grpo_logp_fn = make_logp_fn(self.graphdef, chunk=cfg.optimizer.logp_chunk, temperature=cfg.rollout.temperature)
        self.old_logp_fn = (self.grpo_logp_fn if split is None else
                            make_logp_fn(self.graphdef, chunk=cfg.optimizer.logp_chunk, temperature=cfg.rollout.temperature,
                                         trainable=split))
        self.logp_entropy_fn = make_logp_fn(self.graphdef, chunk=cfg.optimizer.logp_chunk, with_entropy=True,
                                            temperature=cfg.rollout.temperature, trainable=split)
        self.behaviour_logp_fn = make_old_logp_fn(self.grpo_logp_fn)  # guided rollouts' log-probs
        self.envs = make_envs(cfg, cfg.rollout.tasks_per_step * cfg.rollout.rollouts_per_task)
        self.pool = ThreadPoolExecutor(max_workers=cfg.rollout.tool_workers)
        self._sampler: Sampler | None = None
        self.logger = RunLog(self.dir, cfg.progress_bar)
        self.rollouts = StepRollouts(cfg, self.tok, self.envs, self.pool, self._policy_logp)
        self.stop = StopRequest()  # `run_training` installs it: Ctrl-C / SIGTERM stop at a step boundary, checkpointed

    # ------------------------------------------------------------------ the run's parts
    def wrap_envs(self, wrapper: Any) -> None:
        """Wrap the run's envs, and every env set made later, with `wrapper` (a benchmark's
        `orchestra_gym.wrappers.SleepLatency`)."""
        self.envs = self.rollouts.wrap(wrapper)

    def sampler(self, params: Any) -> Sampler:
        """The KV-cache sampler with `params` loaded (built once, cache 3 x max_seq_len)."""
        nnx.update(self.model, params)
        if self._sampler is None:
            self._sampler = Sampler(self.model, eos_ids=self.tok.eos_ids, max_cache_len=3 * self.cfg.rollout.max_seq_len,
                                    pad_id=self.tok.pad_id)
        else:
            self._sampler.update_params(self.model)
        return self._sampler

    def row_multiple(self) -> int:
        """The unit of a GRPO batch's row count: ppo_mini_batches x micro_batches x the data-parallel devices."""
        devices = 1 if self.mesh is None else int(self.mesh.shape["data"]) * int(self.mesh.shape["fsdp"])
        return self.cfg.grpo.ppo_mini_batches * self.cfg.optimizer.micro_batches * devices

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

    def _policy_logp(self, trajs: list[Trajectory], params: Any) -> None:
        """The guided episodes' behaviour log-probs: `rollout_source.behaviour_logp` with the run's pi_old
        forward, placement and micro-batching."""
        behaviour_logp(trajs, params, self.behaviour_logp_fn, self.place_batch, self.row_multiple(),
                       self.cfg.optimizer.pad_multiple, self.cfg.optimizer.micro_batches)

    def _rollout_source(self, max_staleness: int) -> SyncRollouts | AsyncRollouts:
        """The GRPO loop's rollout source: played now (0), or up to `max_staleness` steps ahead."""
        if not max_staleness:
            return SyncRollouts(self.rollouts, self.sampler)
        return AsyncRollouts(self.rollouts, self.sampler, self.rollouts.env_set, self.cfg.max_steps, max_staleness)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, params: Any, n_tasks: int, tag: str, preference: dict[str, Any] | None = None) -> dict[str, Any]:
        """`orchestra_jax.evaluation.evaluate_policy` of `params` on the run's envs (DIR/eval_<tag>.json)."""
        return evaluate_policy(self.sampler(params), self.tok, self.envs, self.cfg, n_tasks, tag, self.dir, preference,
                               executor=self.pool)

    def baselines(self, n_tasks: int, preference: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        """`orchestra_jax.evaluation.play_baselines` in the run's setting (DIR/baseline_<agent>.json)."""
        return play_baselines(self.cfg, n_tasks, self.dir, self.envs, preference)

    # ------------------------------------------------------------------ SFT
    def sft(self) -> Any:
        """Supervised warm start on `sft.tasks` demonstrations (resumable; returns the params)."""
        cfg = self.cfg
        tx = optimizer_from_config(cfg, sft=True)
        ck = phase_checkpointer(self.dir, "sft", cfg.checkpoint)
        state, _, start = resume(ck, init_state(self.params0, tx, with_reference=False, **self._split_args()))
        self.logger.truncate("sft", start)
        if start >= cfg.sft.steps:
            ck.close()
            return self.policy(state)
        data = sft_demonstrations(cfg, self.tok)
        step_fn = make_sft_step(self.logp_fn, tx)
        bar = self.logger.bar(cfg.sft.steps, "sft", start)
        self.stop.check("sft", start, lambda: ck.close())
        for s in range(start, cfg.sft.steps):
            # ---- batch -> update
            state, m = step_fn(state, self.place_batch(sft_batch(data, cfg.seed, s, cfg.sft, cfg.optimizer)))
            # ---- record (a non-finite step stops before its checkpoint)
            rec = {"phase": "sft", "step": s + 1, "nll": float(m["nll"]), "grad_norm": float(m["grad_norm"]),
                   "time_s": time.time() - self.t0, "peak_rss_gib": peak_rss_gib()}
            stop_if_sft_not_finite(s + 1, rec, ck, self.dir)
            if (s + 1) % cfg.log_every == 0:
                self.logger.log(rec)
            bar.update(1)
            bar.set_postfix(nll=f"{rec['nll']:.3f}")
            # ---- checkpoint
            if due(s + 1, cfg.checkpoint, cfg.sft.steps):
                ck.save(s + 1, state, sft_meta(s + 1))
            # ---- stop here after Ctrl-C / SIGTERM, checkpointed
            self.stop.check("sft", s + 1, lambda: (save_unless_saved(ck, s + 1, state, sft_meta(s + 1)), ck.close()))
        bar.close()
        ck.close()
        return self.policy(state)

    def _split_args(self) -> dict[str, Any]:
        """`init_state`'s trainable split arguments (none when every parameter trains: the default path)."""
        if self.trainable.is_full:
            return {}
        return {"trainable": self.trainable, "key": jax.random.key(self.cfg.seed)}

    def policy(self, state: Any) -> Any:
        """The policy's full params of a train state (`Trainable.policy_params` under a trainable split)."""
        if state.frozen is None:
            return state.params
        return self.trainable.policy_params(state.params, state.frozen, like=self.params0)

    # ------------------------------------------------------------------ GRPO
    def grpo(self, params: Any, initial_eval: dict[str, Any] | None) -> tuple[Any, int, dict[str, Any] | None]:
        """GRPO from `params` (the warm start), resuming from DIR/checkpoints/grpo when present.
        Returns (params, GRPO steps done, the initial evaluation).

        Raises: `orchestra_jax.guard.TrainingStopped` when the training guard gives up or an update's
        loss or gradient norm is not finite (no checkpoint is written after such an update)."""
        cfg = self.cfg
        guard = TrainingGuard(cfg.guard) if cfg.guard.enabled else None
        state = init_state(params, optimizer_from_config(cfg), with_reference=cfg.grpo.loss.kl_coef > 0,
                           **self._split_args())
        ck = phase_checkpointer(self.dir, "grpo", cfg.checkpoint)
        source: SyncRollouts | AsyncRollouts | None = None
        try:
            state, meta, start = resume(ck, state)
            if meta is not None:
                initial_eval = meta.get("initial_eval", initial_eval)
                if guard is not None:
                    guard.load_state_dict(meta.get("guard", {}))
            elif guard is not None:  # the warm start is checkpoint 0: the guard always has a restore target
                guard.checkpointed(0)
                ck.save(0, state, grpo_meta(0, initial_eval, guard))
            self.logger.truncate("grpo", start)
            update = self._grpo_update_fns(guard.lr_scale if guard else 1.0)
            source = self._rollout_source(cfg.grpo.max_staleness)
            source.start(start, self.policy(state))
            bar = self.logger.bar(cfg.max_steps, "grpo", start)
            self.stop.check("grpo", start, lambda: None)
            for s in range(start, cfg.max_steps):
                t_step = time.time()
                # ---- collect: tasks_per_step new tasks, rollouts_per_task episodes each (with max_staleness
                # k > 0: generated in the background by the policy of step s - k)
                sampled, trajs, stats, t_roll, version = source.collect(s, self.policy(state))
                t_wait = time.time() - t_step
                # ---- rewards and advantages -> batch
                batch, bstats = grpo_batch(trajs, cfg)
                if cfg.grpo.compact_batch and cfg.grpo.loss.aggregation != "dr-grpo":
                    batch = compact_rows(batch, self.row_multiple(), cfg.optimizer.pad_multiple)
                # ---- update (a non-finite loss or gradient stops before any checkpoint)
                res = grpo_update(state, batch, update, self.place_batch, step_seed(cfg.seed, s), cfg.grpo, cfg.optimizer)
                state = res.state
                stop_if_update_not_finite(s + 1, res.updates, ck, self.dir)
                source.updated(s, self.policy(state))
                # ---- record
                times = {"rollout_s": t_roll, "step_s": time.time() - t_step, "time_s": time.time() - self.t0}
                if cfg.grpo.max_staleness:
                    times.update(staleness=s - version, rollout_wait_s=t_wait)
                rec = grpo_record(s + 1, sampled, bstats, res, stats, times)
                if (s + 1) % cfg.log_every == 0:
                    self.logger.log(rec)
                bar.update(1)
                bar.set_postfix(reward=f"{rec['reward_mean']:.2f}", success=f"{rec['success_rate']:.2f}",
                                cost=f"{rec['mean_cost_usd']:.4f}", latency=f"{rec['mean_latency_s']:.0f}s")
                # ---- guard
                if guard is not None:
                    event = guard.observe(s + 1, rec, available=lambda: (ck.wait(), ck.all_steps())[1])
                    if event.reasons or event.action != "ok":
                        self.logger.log(event.to_record())
                    if event.action == "stop":
                        raise TrainingStopped(event.message)
                    if event.action == "restore":
                        state, _ = ck.restore(event.restore_step, state)
                        update = self._grpo_update_fns(guard.lr_scale)
                        source.restored(s + 1, self.policy(state))
                # ---- checkpoint
                if due(s + 1, cfg.checkpoint, cfg.max_steps):
                    if guard is not None:
                        guard.checkpointed(s + 1)
                    ck.save(s + 1, state, grpo_meta(s + 1, initial_eval, guard))
                # ---- stop here after Ctrl-C / SIGTERM, checkpointed
                self.stop.check("grpo", s + 1, lambda: self._save_now(ck, s + 1, state, initial_eval, guard))
            bar.close()
        finally:
            if source is not None:
                source.close()
            ck.close()
        return self.policy(state), cfg.max_steps, initial_eval

    @staticmethod
    def _save_now(ck: Any, step: int, state: Any, initial_eval: dict[str, Any] | None, guard: TrainingGuard | None) -> None:
        """Checkpoint the state after GRPO step `step` (a stop requested), a guard restore target if healthy."""
        if guard is not None:
            guard.checkpointed(step)
        save_unless_saved(ck, step, state, grpo_meta(step, initial_eval, guard))

    def _grpo_update_fns(self, lr_scale: float) -> dict[str, Any]:
        """The jitted GRPO step (AdamW at learning_rate x lr_scale) and, when pi_old is the trainer's and
        a batch gets several updates, the jitted pi_old forward (log-probs at the sampling temperature)."""
        cfg = self.cfg
        tx = optimizer_from_config(cfg, lr_scale=lr_scale)
        several = cfg.grpo.ppo_epochs * cfg.grpo.ppo_mini_batches > 1 and cfg.grpo.old_logp_source == "trainer"
        return {"step": make_grpo_step(self.logp_entropy_fn, tx, cfg.loss_config(), old_logp_source=cfg.grpo.old_logp_source,
                                       behaviour_correction=cfg.grpo.max_staleness > 0),
                "old_logp": make_old_logp_fn(self.old_logp_fn) if several else None}

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.logger.close()


def run_training(cfg: TrainConfig, output_dir: str | Path | None = None, *, sft_only: bool = False) -> dict[str, Any]:
    """SFT warm start (if sft.steps > 0), evaluation, GRPO, evaluation; writes DIR/summary.json.

    summary.json holds the evaluations before and after GRPO (tool mix summarised: `tool_mix_summary`;
    the whole mix in DIR/eval_<tag>.json), the fixed-rule ``baselines`` on the same held-out tasks
    (`Run.baselines`), ``sft_params_sha256`` (the warm start's
    parameters) and ``params_sha256`` (the final ones; `train_step.params_digest`) to compare runs bit
    for bit.

    Multi-host: with JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID set on every host,
    `jax.distributed` starts first (`sharding.initialize_distributed`) and the mesh spans all hosts'
    devices; every host runs this same function (same config and seed)."""
    sharding.initialize_distributed()
    run = Run(cfg, output_dir)
    run.stop.install()
    try:
        params = run.sft() if cfg.sft.steps > 0 else run.params0
        sft_digest = params_digest(params)
        initial = None
        resumed = checkpoint.latest(run.dir, ["grpo"]) is not None
        if cfg.evaluation.tasks and not resumed:
            initial = run.evaluate(params, cfg.evaluation.tasks, "initial")
        steps = 0
        if not sft_only:
            params, steps, initial = run.grpo(params, initial)
        final = run.evaluate(params, cfg.evaluation.tasks, "final") if cfg.evaluation.tasks else None
        # the held-out preference vectors (paper Table 3): does the policy follow what each asks?
        held_out = {name: run.evaluate(params, cfg.evaluation.tasks, f"final_{name}", pref)
                    for name, pref in cfg.env.eval_preferences.items()} if cfg.evaluation.tasks else {}
        baselines = run.baselines(cfg.evaluation.tasks) if cfg.evaluation.tasks else {}
        summary = {
            "config": cfg.name,
            "steps": steps,
            "sft_steps": cfg.sft.steps,
            "wall_time_s": time.time() - run.t0,
            "initial": initial,
            "final": final,
            "initial_success_rate": initial["success_rate"] if initial else None,
            "final_success_rate": final["success_rate"] if final else None,
            "initial_cost_per_solved_usd": initial["cost_per_solved_usd"] if initial else None,
            "final_cost_per_solved_usd": final["cost_per_solved_usd"] if final else None,
            "held_out_preferences": held_out,
            "baselines": baselines,
            "sft_params_sha256": sft_digest,
            "params_sha256": params_digest(params),
            "peak_rss_gib": peak_rss_gib(),
            "devices": [str(d) for d in jax.devices()],
        }
        summary["plots"] = write_plots(run.dir, initial, final, baselines)
        summary = json_safe(summary)  # valid JSON: inf/NaN -> null with a <key>_note
        (run.dir / "summary.json").write_text(json.dumps(summary, indent=1))
        return summary
    finally:
        run.stop.uninstall()
        run.close()
