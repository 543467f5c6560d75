"""The training loop of `orchestra train` / `orchestra sft`: warm start, evaluate, GRPO, evaluate.

Phases of a run (`run_training`), each resumable from DIR/checkpoints/{sft,grpo}:
  1. build: the run's tokenizer, policy and environments (`orchestra_jax.policy`); DIR/train_config.json and
     DIR/orchestra_setting.json (`orchestra_jax.policy.run_setting`, read by ``orchestra eval --setting-of DIR``);
  2. SFT warm start (`Run.sft`): demonstrations of `orchestra_gym.agents.DelegatingAgent`, the pure
     `train_step.make_sft_step`;
  3. evaluation on held-out tasks (`Run.evaluate`, seeds >= 2^31);
  4. GRPO (`Run.grpo`), per step: sample tasks -> roll out (`Run.rollout_step`: `rollout.collect_rollouts`
     and the guided rollouts; with grpo.max_staleness k > 0 generated up to k steps ahead by an older
     policy in background threads, `orchestra_jax.async_grpo`) -> rewards,
     filters, advantages and padding (`batch.grpo_batch`) -> update (`train_step.grpo_updates`:
     ppo_epochs x ppo_mini_batches steps of `train_step.make_grpo_step` with pi_old fixed, none when no
     token is kept; a non-finite loss or gradient stops the run) -> log (JSONL, TensorBoard, tqdm) ->
     the training guard (`orchestra_jax.guard`: restore the last healthy checkpoint with a smaller
     learning rate, or stop) -> checkpoint (`orchestra_jax.checkpoint`; the warm start is step 0 when
     the guard is on);
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

from orchestra_gym.agents.rules import RULE_NAMES
from orchestra_gym.evaluation import by_label, rollout_summary
from orchestra_jax import checkpoint, sharding
from orchestra_jax.async_grpo import AsyncRollouts
from orchestra_jax.batch import compact_rows, grpo_batch, preference_vector, to_batch
from orchestra_jax.plots import write_plots
from orchestra_jax.policy import build_policy, build_tokenizer, demonstrator, guide, make_envs, run_setting
from orchestra_jax.rollout import Trajectory, collect_rollouts, guided_rollouts, scripted_trajectory
from orchestra_jax.sampler import Sampler
from orchestra_jax.train_config import TrainConfig
from orchestra_jax.guard import TrainingGuard, TrainingStopped
from orchestra_jax.train_step import (UpdateResult, grpo_updates, init_state, make_grpo_step, make_logp_fn,
                                      gather_params, make_old_logp_fn, make_sft_step, optimizer_from_config,
                                      params_digest, split_micro)
from orchestra_jax.trainable import Trainable

__all__ = ["Run", "run_training", "episode_summary", "play_tasks", "held_out_tasks", "json_safe", "EVAL_TASK_BASE",
           "TrainingStopped"]

EVAL_TASK_BASE = 2**31  # held-out tasks: ToolScale seeds >= 2^31 (training tasks draw seeds < 2^31)


def _peak_rss_gib() -> float:
    """Peak resident memory of this process so far, GiB (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _step_seed(seed: int, step: int) -> int:
    """The data order: tasks, env seeds and sampler PRNG of `step` derive from (seed, step) only."""
    return int(np.random.default_rng([seed, step]).integers(0, 2**30))


def group_preferences(cfg: TrainConfig, trajs: list[Trajectory]) -> np.ndarray | None:
    """The preference vector P of each group, [N, K] in reward-vector order, read from what the env
    used (``info["preference"]``, the task's sampled or the run's preference) and laid out by
    ``info["reward_vector_names"]`` (`orchestra_gym.rewards.RewardLayout`). None for the outcome
    reward, or when no episode carries the reward vector's names."""
    if cfg.grpo.reward != "preference":
        return None
    names = next((t.info["reward_vector_names"] for t in trajs if "reward_vector_names" in t.info), None)
    if names is None:
        return None
    g = cfg.rollout.rollouts_per_task
    return np.stack([preference_vector(trajs[i].info.get("preference") or cfg.env.preference, list(names))
                     for i in range(0, len(trajs), g)])


# metrics of the last optimizer update of a step, logged as last_<name> next to the first update's
LAST_UPDATE_KEYS = ("loss", "grad_norm", "ratio_mean", "ratio_min", "ratio_max", "approx_kl", "clipfrac_low",
                    "clipfrac_high", "clipfrac_dual")

# why a number is not finite, for the <key>_note written next to it in JSON (by key suffix)
_NON_FINITE_NOTES = {"cost_per_solved_usd": "no task was solved, so the cost per solved task is undefined"}


def _update_metrics(res: UpdateResult) -> dict[str, float]:
    """A GRPO step's update metrics: the first update's under their names, the last update's as
    last_<name> (`LAST_UPDATE_KEYS`) when there were several, the number of updates, and skipped
    (1: no kept token, no update)."""
    out: dict[str, float] = {"skipped": int(res.skipped), "updates": len(res.updates)}
    if res.updates:
        out.update(res.updates[0])
    if len(res.updates) > 1:
        out.update({f"last_{k}": res.updates[-1][k] for k in LAST_UPDATE_KEYS if k in res.updates[-1]})
    return out


def json_safe(obj: Any) -> Any:
    """A copy of `obj` (dicts, lists, numbers) that is valid JSON: numpy scalars become Python numbers, a
    non-finite float becomes null with a ``<key>_note`` entry next to it saying why (RFC 8259 has no
    Infinity or NaN)."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out[k] = json_safe(v)
            f = float(v) if isinstance(v, (float, np.floating)) else None
            if f is not None and not np.isfinite(f):
                note = next((n for suffix, n in _NON_FINITE_NOTES.items() if str(k).endswith(suffix)), None)
                out[f"{k}_note"] = note or f"the value was {f} (not a JSON number)"
        return out
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    return obj


def episode_summary(trajs: list[Trajectory]) -> dict[str, Any]:
    """success rate, cost per solved task (USD), mean cost (USD) and latency (s), valid-format rate,
    tool-call mix (calls per episode), cut and invalid counts (`orchestra_gym.evaluation.rollout_summary`),
    plus ``valid_call_rate``: the share of the policy's turns that parse as an action and whose calls fit
    their tools' schemas (1 - (invalid turns + turns with an argument error) / turns; env
    ``info["argument_error_turns"]``), beside ``valid_format_rate`` (parsing only, what the training
    guard reads), and ``argument_error_turns`` (per episode). ``turns_per_episode`` counts the env's
    turns (``info["turn"]``, what ``max_turns`` limits; an expert's extra actions in ``expert_scope="turn"``
    included), ``policy_turns_per_episode`` the policy's own generations."""
    s = rollout_summary([t.info for t in trajs], turns=[t.turns for t in trajs],
                        invalid_turns=[t.invalid_turns for t in trajs], cut=[t.cut for t in trajs])
    # turns as the env counts them (info["turn"]: what max_turns limits, and what `orchestra eval` reports
    # as mean_turns: with expert_scope="turn" one policy turn is several env turns), the policy's own apart
    s["policy_turns_per_episode"] = s["turns_per_episode"]
    s["turns_per_episode"] = sum(float(t.info.get("turn", 0.0)) for t in trajs) / max(len(trajs), 1)
    arg_turns = [float(t.info.get("argument_error_turns", 0.0)) for t in trajs]
    total_turns = sum(t.turns for t in trajs)
    s["valid_call_rate"] = 1.0 - (sum(t.invalid_turns for t in trajs) + sum(arg_turns)) / max(total_turns, 1)
    s["argument_error_turns"] = sum(arg_turns) / max(len(trajs), 1)
    return s


def _label_metrics(trajs: list[Trajectory]) -> dict[str, float]:
    """Per task difficulty (the env's ``task_difficulty`` label, which the policy never sees): its share
    of the rollouts, success rate and expert calls per episode, as ``kind/<difficulty>/<name>``."""
    out: dict[str, float] = {}
    n = max(len(trajs), 1)
    for label, g in by_label([t.info for t in trajs]).items():
        out[f"kind/{label}/share"] = g["episodes"] / n
        out[f"kind/{label}/success"] = g["success_rate"]
        out.update({f"kind/{label}/{k}": v for k, v in g["tool_mix"].items() if k.startswith("expert-")})
    return out


def tool_mix_summary(mix: dict[str, float], models: list[str], aggregates: list[str]) -> dict[str, float]:
    """A tool mix (calls per episode) as a newcomer reads it: each model's calls (the experts, in the
    env's reward-layout order) and ``domain_calls``, the calls of every other tool together (the
    policy's and those an expert made for it). The aggregate model tools (``call_expert``: the sum of
    the expert counts) are left out."""
    out = {m: float(mix.get(m, 0.0)) for m in models}
    out["domain_calls"] = float(sum(v for k, v in mix.items() if k not in out and k not in aggregates))
    return out


def _mix_names(env: Any) -> tuple[list[str], list[str]]:
    """(models, aggregate model tools) of an env after a reset: its reward layout's tools and its
    ``kind="model"`` tool names."""
    u = env.unwrapped
    specs = u._tool_specs() if hasattr(u, "_tool_specs") else []
    return list(u.reward_layout.tools), [s.name for s in specs if s.kind == "model"]


#: the fixed rules on the training plot and in summary.json: always the same expert (`orchestra_gym.agents`)
BASELINE_PREFIX = "expert-"


def held_out_tasks(n: int) -> list[int]:
    """The first `n` held-out task ids of the evaluation (ToolScale generator seeds 2^31, 2^31 + 1, ...;
    training draws its tasks from seeds below 2^31)."""
    return [EVAL_TASK_BASE + i for i in range(n)]


def play_tasks(sampler: Sampler, tok: Any, envs: list[Any], cfg: TrainConfig, task_ids: list[Any],
               preference: dict[str, Any] | None = None, *, temperature: float | None = None,
               executor: Any = None) -> list[Trajectory]:
    """One rollout of the policy per task, batched over `envs` (len(envs) tasks at a time), at
    `temperature` (default: the run's evaluation.temperature; with its evaluation.top_k / top_p) under
    `preference` (default: the run's); the evaluation of `Run.evaluate` and of
    `orchestra_jax.agents.evaluate_run`. Deterministic under the run's seed."""
    trajs: list[Trajectory] = []
    for start in range(0, len(task_ids), len(envs)):
        chunk = task_ids[start:start + len(envs)]
        out, _ = collect_rollouts(
            sampler, tok, envs[:len(chunk)], [cfg.reset_options(t, preference) for t in chunk],
            rollouts_per_task=1, seed=cfg.seed + 7 + start, max_new_tokens=cfg.rollout.max_new_tokens,
            max_seq_len=cfg.rollout.max_seq_len, temperature=cfg.evaluation.temperature if temperature is None else temperature,
            top_k=cfg.evaluation.top_k, top_p=cfg.evaluation.top_p, max_turns=cfg.env.max_turns, executor=executor,
        )
        trajs += out
    return trajs


class Run:
    """One training run (`orchestra train`): builds everything from a `TrainConfig`, then `sft()`,
    `evaluate()`, `grpo()` with checkpoints under DIR/checkpoints/{sft,grpo}."""

    def __init__(self, cfg: TrainConfig, output_dir: str | Path | None = None):
        self.cfg = cfg
        self.dir = Path(output_dir or cfg.output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.t0 = time.time()
        (self.dir / "train_config.json").write_text(json.dumps(cfg.to_dict(), indent=1))
        run_setting(cfg).write(self.dir)  # orchestra_setting.json: the setting `orchestra eval --setting-of` reads
        self.tok = build_tokenizer(cfg, self.dir)
        self.model, self.mesh = build_policy(cfg, self.tok)
        self.graphdef, self.params0 = nnx.split(self.model, nnx.Param)
        # what trains (model.trainable / model.lora_*): None = every parameter, the train state is the params
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
        self.env_wrapper: Any = None  # applied to the env sets made later (`env_set`)
        self._env_sets = [self.envs]
        self.pool = ThreadPoolExecutor(max_workers=cfg.rollout.tool_workers)
        self._sampler: Sampler | None = None
        self.log_file = open(self.dir / "metrics.jsonl", "a")
        self._tb: dict[str, SummaryWriter] = {}
        self._purge: dict[str, int] = {}

    # ------------------------------------------------------------------ helpers
    def log(self, record: dict[str, Any]) -> None:
        """Append a record to DIR/metrics.jsonl (valid JSON, `json_safe`) and its finite numbers to
        TensorBoard, one writer per phase (DIR/tb/<phase>; guard events go with grpo)."""
        self.log_file.write(json.dumps(json_safe(record)) + "\n")
        self.log_file.flush()
        phase = record.get("phase", "train")
        run = "grpo" if phase == "guard" else phase
        if run not in self._tb:
            self._tb[run] = SummaryWriter(str(self.dir / "tb" / run), purge_step=self._purge.get(run))
        step = int(record.get("step", 0))
        for k, v in record.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v):
                self._tb[run].add_scalar(f"{phase}/{k}", v, step)

    def truncate_log(self, phase: str, step: int) -> None:
        """Resuming `phase` from its checkpoint of `step`: drop the records of that phase (and, for grpo,
        of the guard) after `step` from DIR/metrics.jsonl, and purge TensorBoard events of steps > `step`
        of that phase (tensorboardX ``purge_step``), so each step appears once (issue 16, item 15)."""
        phases = {phase, "guard"} if phase == "grpo" else {phase}
        path = self.dir / "metrics.jsonl"
        self.log_file.close()
        kept = []
        for line in path.read_text().splitlines() if path.exists() else []:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a kill: drop it
                continue
            if not (r.get("phase") in phases and int(r.get("step", 0)) > step):
                kept.append(line)
        path.write_text("".join(x + "\n" for x in kept))
        self.log_file = open(path, "a")
        if step > 0:
            self._purge[phase] = step + 1

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

    def _bar(self, total: int, desc: str, start: int) -> tqdm:
        return tqdm(total=total, initial=start, desc=desc, disable=not self.cfg.progress_bar, dynamic_ncols=True)

    def _checkpointer(self, phase: str) -> checkpoint.Checkpointer:
        cfg = self.cfg
        return checkpoint.Checkpointer(checkpoint.phase_dir(self.dir, phase), keep=cfg.checkpoint.keep,
                                       async_save=cfg.checkpoint.async_save)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, params: Any, n_tasks: int, tag: str, preference: dict[str, Any] | None = None) -> dict[str, Any]:
        """Rollouts at evaluation.temperature (top_k, top_p) on `n_tasks` held-out tasks (seeds >= 2^31),
        one each, under `preference` (default: the run's); writes DIR/eval_<tag>.json and returns its `episode_summary`
        (with ``preference``)."""
        cfg = self.cfg
        trajs = play_tasks(self.sampler(params), self.tok, self.envs, cfg, held_out_tasks(n_tasks), preference,
                           executor=self.pool)
        s = episode_summary(trajs)
        s["tag"] = tag
        s["preference"] = dict(preference if preference is not None else cfg.env.preference)
        return self._summarised(s, f"eval_{tag}.json")

    def _summarised(self, s: dict[str, Any], file_name: str) -> dict[str, Any]:
        """Write `s` (with its whole tool mix, as ``tool_mix_by_tool``) to DIR/`file_name`; return it with
        the mix summarised (`tool_mix_summary`) for summary.json."""
        models, aggregates = _mix_names(self.envs[0])
        full = dict(s["tool_mix"])
        s["tool_mix"] = tool_mix_summary(full, models, aggregates)
        (self.dir / file_name).write_text(json.dumps(json_safe({**s, "tool_mix_by_tool": full}), indent=1))
        return s

    def baselines(self, n_tasks: int, preference: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        """The fixed rules on the held-out tasks of `evaluate`, in the run's setting (env kwargs, reset
        options, preference, and each task's env seed): each expert of the env called for every turn
        (``expert-<k>`` agents of `orchestra_gym.agents`), or over an expert pool the rules on the offered
        experts' stated properties and the cheapest-first cascade, one episode per task. Writes DIR/baseline_<agent>.json; returns
        agent -> its summary (as `evaluate`'s: success_rate, mean_cost_usd (USD), mean_latency_s (s),
        turns_per_episode, tool_mix...). Plays after training: the policy's parameters are untouched."""
        from orchestra_gym.agents import make_agent

        cfg = self.cfg
        env = make_envs(cfg, 1)[0]
        out: dict[str, dict[str, Any]] = {}
        try:
            env.reset(seed=0, options=cfg.reset_options(held_out_tasks(1)[0], preference))
            names = ([m for m in env.unwrapped.reward_layout.tools if m.startswith(BASELINE_PREFIX)]
                     if getattr(env.unwrapped, "pool", None) is None else list(RULE_NAMES) + ["cascade"])
            for name in names:
                infos = []
                for i, task in enumerate(held_out_tasks(n_tasks)):
                    agent = make_agent(name, cfg.seed + i)
                    start = i - i % len(self.envs)  # the env seed `play_tasks` gives task i: same draws
                    obs, info = env.reset(seed=(cfg.seed + 7 + start) * 1000 + i - start,
                                          options=cfg.reset_options(task, preference))
                    agent.reset(env, obs, info)
                    for _ in range(10 * max(cfg.env.max_turns, 1)):  # the env's own turn limit ends it first
                        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
                        if terminated or truncated:
                            break
                    infos.append(info)
                s = rollout_summary(infos)
                s.update(agent=name, tag=f"baseline_{name}",
                         preference=dict(preference if preference is not None else cfg.env.preference))
                out[name] = self._summarised(s, f"baseline_{name}.json")
        finally:
            env.close()
        return out

    # ------------------------------------------------------------------ SFT
    def sft(self) -> Any:
        """Supervised warm start on `sft.tasks` demonstrations (resumable; returns the params)."""
        cfg = self.cfg
        tx = optimizer_from_config(cfg, sft=True)
        state = init_state(self.params0, tx, with_reference=False, **self._split_args())
        ck = self._checkpointer("sft")
        start = 0
        if ck.latest_step() is not None:
            state, meta = ck.restore(None, state)
            start = int(meta["step"])
        self.truncate_log("sft", start)
        if start >= cfg.sft.steps:
            ck.close()
            return self.policy(state)
        # demonstrations: the delegating agent's episodes that fit max_seq_len
        env = make_envs(cfg, 1)[0]
        data = []
        pref_rng = np.random.default_rng([cfg.seed, 23])  # the demonstrations' preferences, as in training
        for i in range(cfg.sft.tasks):
            agent = demonstrator(cfg, cfg.seed * 7919 + i)
            t = scripted_trajectory(env, self.tok, agent, seed=cfg.seed * 7919 + i,
                                    options=cfg.reset_options(preference=cfg.sample_preference(pref_rng)),
                                    max_turns=cfg.env.max_turns)
            if len(t) <= cfg.rollout.max_seq_len:
                data.append(t)
        step_fn = make_sft_step(self.logp_fn, tx)
        bar = self._bar(cfg.sft.steps, "sft", start)
        keys = ("tokens", "attention_mask", "loss_mask")
        for s in range(start, cfg.sft.steps):
            order = np.random.default_rng([cfg.seed, 1_000_000 + s]).choice(len(data), cfg.sft.batch_size,
                                                                             replace=len(data) < cfg.sft.batch_size)
            batch = to_batch([data[i] for i in order], multiple=cfg.optimizer.pad_multiple)
            batch = split_micro({k: batch[k] for k in keys}, cfg.optimizer.micro_batches)
            state, m = step_fn(state, self.place_batch(batch))
            rec = {"phase": "sft", "step": s + 1, "nll": float(m["nll"]), "grad_norm": float(m["grad_norm"]),
                   "time_s": time.time() - self.t0, "peak_rss_gib": _peak_rss_gib()}
            if not (np.isfinite(rec["nll"]) and np.isfinite(rec["grad_norm"])):
                ck.wait()
                latest = ck.latest_step()
                ck.close()
                raise TrainingStopped(
                    f"SFT step {s + 1}: nll={rec['nll']} grad_norm={rec['grad_norm']} is not finite; no checkpoint "
                    f"was written after it; the latest good checkpoint is "
                    f"{'none' if latest is None else checkpoint.phase_dir(self.dir, 'sft') / str(latest)}. "
                    "Fix: lower sft.learning_rate.")
            if (s + 1) % cfg.log_every == 0:
                self.log(rec)
            bar.update(1)
            bar.set_postfix(nll=f"{rec['nll']:.3f}")
            if (s + 1) % cfg.checkpoint.every == 0 or s + 1 == cfg.sft.steps:
                ck.save(s + 1, state, {"step": s + 1, "phase": "sft"})
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
        state = init_state(params, optimizer_from_config(cfg), with_reference=cfg.grpo.loss.kl_coef > 0, **self._split_args())
        ck = self._checkpointer("grpo")
        try:
            start = 0
            if ck.latest_step() is not None:
                state, meta = ck.restore(None, state)
                start = int(meta["step"])
                initial_eval = meta.get("initial_eval", initial_eval)
                if guard is not None:
                    guard.load_state_dict(meta.get("guard", {}))
            elif guard is not None:  # the warm start is checkpoint 0: the guard always has a restore target
                guard.checkpointed(0)
                ck.save(0, state, self._grpo_meta(0, initial_eval, guard))
            self.truncate_log("grpo", start)
            update = self._grpo_update_fns(guard.lr_scale if guard else 1.0)
            lag = cfg.grpo.max_staleness
            ahead = AsyncRollouts(self, lag) if lag else None
            if ahead is not None:  # steps start..start+lag all roll out with the policy of step `start`
                ahead.launch(range(start, min(start + lag + 1, cfg.max_steps)), self.policy(state), start)
            bar = self._bar(cfg.max_steps, "grpo", start)
            for s in range(start, cfg.max_steps):
                t_step = time.time()
                # ---- roll out tasks_per_step new tasks, rollouts_per_task episodes each (with max_staleness
                # k > 0: collect the rollouts of step s, generated in the background by the policy of step s - k)
                if ahead is None:
                    policy = self.policy(state)
                    sampled, trajs, stats = self.rollout_step(s, self.sampler(policy), policy, self.envs)
                    t_roll, version = time.time() - t_step, s
                else:
                    sampled, trajs, stats, t_roll, version = ahead.result(s)
                t_wait = time.time() - t_step
                # ---- rewards, filters, advantages -> batch
                batch, bstats = grpo_batch(trajs, cfg, group_preferences(cfg, trajs))
                if cfg.grpo.compact_batch and cfg.grpo.loss.aggregation != "dr-grpo":
                    batch = compact_rows(batch, self.row_multiple(), cfg.optimizer.pad_multiple)
                # ---- update: ppo_epochs x ppo_mini_batches optimizer updates (none without a kept token)
                res = grpo_updates(state, batch, update["step"], place=self.place_batch, epochs=cfg.grpo.ppo_epochs,
                                   mini_batches=cfg.grpo.ppo_mini_batches, micro_batches=cfg.optimizer.micro_batches,
                                   seed=_step_seed(cfg.seed, s), old_logp_fn=update["old_logp"])
                state = res.state
                self._check_finite(s + 1, res.updates, ck)
                if ahead is not None:  # step s + 1 + k rolls out with the policy of step s + 1, while s + 1 trains
                    ahead.launch([s + 1 + lag], self.policy(state), s + 1)
                # ---- log, guard, checkpoint (the policy's own rollouts; guided ones only in the batch counts)
                ep = episode_summary(sampled)
                rec = {"phase": "grpo", "step": s + 1, "reward_mean": bstats.pop("reward_mean"),
                       **_update_metrics(res), **{k: v for k, v in ep.items() if k != "tool_mix"},
                       **bstats, "invalid_turns": stats.invalid_turns, "generated_tokens": stats.generated_tokens,
                       "rollout_s": t_roll, "step_s": time.time() - t_step, "time_s": time.time() - self.t0,
                       "peak_rss_gib": _peak_rss_gib(),
                       **{f"mix/{k}": v for k, v in ep["tool_mix"].items()},
                       **_label_metrics(sampled)}
                if ahead is not None:  # how stale the step's rollouts were, and how long the trainer waited for them
                    rec.update({"staleness": s - version, "rollout_wait_s": t_wait})
                if stats.slot_steps:  # the continuous engine: the idle-slot fraction and the re-prefills
                    rec.update({"slot_idle": 1.0 - stats.busy_slot_steps / stats.slot_steps,
                                "reprefills": stats.reprefills})
                if (s + 1) % cfg.log_every == 0:
                    self.log(rec)
                bar.update(1)
                bar.set_postfix(reward=f"{rec['reward_mean']:.2f}", success=f"{ep['success_rate']:.2f}",
                                cost=f"{ep['mean_cost_usd']:.4f}", latency=f"{ep['mean_latency_s']:.0f}s")
                if guard is not None:
                    event = guard.observe(s + 1, rec, available=lambda: (ck.wait(), ck.all_steps())[1])
                    if event.reasons or event.action != "ok":
                        self.log(event.to_record())
                    if event.action == "stop":
                        raise TrainingStopped(event.message)
                    if event.action == "restore":
                        state, _ = ck.restore(event.restore_step, state)
                        update = self._grpo_update_fns(guard.lr_scale)
                        if ahead is not None:  # the steps rolled out ahead used the policy given up: redo them
                            ahead.discard()
                            ahead.launch(range(s + 1, min(s + 2 + lag, cfg.max_steps)), self.policy(state), s + 1)
                if (s + 1) % cfg.checkpoint.every == 0 or s + 1 == cfg.max_steps:
                    if guard is not None:
                        guard.checkpointed(s + 1)
                    ck.save(s + 1, state, self._grpo_meta(s + 1, initial_eval, guard))
            bar.close()
        finally:
            if ahead is not None:
                ahead.close()
            ck.close()
        return self.policy(state), cfg.max_steps, initial_eval

    def rollout_step(self, s: int, sampler: Sampler, params: Any, envs: list[Any]
                     ) -> tuple[list[Trajectory], list[Trajectory], Any]:
        """The rollouts of GRPO step `s` by the policy `params` (loaded in `sampler`) on `envs` (one env set
        of tasks_per_step x rollouts_per_task): the step's tasks and preferences (drawn from (seed, s), paper
        Sec. 3.3), rollouts_per_task - len(guide_experts) sampled episodes per task
        (`orchestra_jax.rollout.collect_rollouts`) and the guided ones (`with_guided`, their behaviour
        log-probs from `params`). Returns (sampled, all trajectories in group order, RolloutStats)."""
        cfg = self.cfg
        pref_rng = np.random.default_rng([cfg.seed, s, 17])  # the tasks' preferences (paper Sec. 3.3)
        options = [cfg.reset_options(preference=cfg.sample_preference(pref_rng))
                   for _ in range(cfg.rollout.tasks_per_step)]
        sampled_per_task = cfg.rollout.rollouts_per_task - len(cfg.rollout.guide_experts)
        sampled, stats = collect_rollouts(
            sampler, self.tok, envs[:cfg.rollout.tasks_per_step * sampled_per_task], options,
            rollouts_per_task=sampled_per_task, seed=_step_seed(cfg.seed, s),
            max_new_tokens=cfg.rollout.max_new_tokens, max_seq_len=cfg.rollout.max_seq_len, temperature=cfg.rollout.temperature,
            max_turns=cfg.env.max_turns, executor=self.pool, overlap_tools=cfg.rollout.overlap_tools,
            engine=cfg.rollout.engine, slots=cfg.rollout.slots,
        )
        trajs = self.with_guided(sampled, options, params, _step_seed(cfg.seed, s), envs)
        return sampled, trajs, stats

    def env_set(self, j: int) -> list[Any]:
        """The j-th set of the run's environments (tasks_per_step x rollouts_per_task envs; set 0 is
        `self.envs`), made on first use with `make_envs` and wrapped by `self.env_wrapper` when set (a
        benchmark's `orchestra_gym.wrappers.SleepLatency`). Asynchronous GRPO rolls out several steps at once,
        each on its own set."""
        while len(self._env_sets) <= j:
            envs = make_envs(self.cfg, len(self.envs))
            self._env_sets.append([self.env_wrapper(e) for e in envs] if self.env_wrapper else envs)
        return self._env_sets[j]

    def with_guided(self, sampled: list[Trajectory], options: list[dict[str, Any]], params: Any,
                    seed: int, envs: list[Any] | None = None) -> list[Trajectory]:
        """A step's groups with their guided rollouts (`TrainConfig.rollout.guide_experts`): group i is its
        sampled rollouts, then one `orchestra_jax.rollout.guided_rollouts` episode per guide expert on the
        same task under the same preference and env seed, on `envs` (default `self.envs`) after the sampled
        rows' envs. The guided episodes' sampler_logp are the log-probs of `params` (the policy that rolled
        the step out) at the sampling temperature (they enter the loss as its samples).
        Returns `sampled` itself when no guide is configured."""
        cfg = self.cfg
        k = len(cfg.rollout.guide_experts)
        if not k:
            return sampled
        gs = cfg.rollout.rollouts_per_task - k
        n = len(options)
        opts = [dict(o, task_id=sampled[i * gs].task_id) for i, o in enumerate(options)]
        envs = self.envs if envs is None else envs
        guided = guided_rollouts(envs[n * gs:n * cfg.rollout.rollouts_per_task], self.tok,
                                 [guide(cfg, e) for e in cfg.rollout.guide_experts], opts, seed=seed,
                                 max_turns=cfg.env.max_turns, max_seq_len=cfg.rollout.max_seq_len, executor=self.pool)
        self._policy_logp(guided, params)
        return [t for i in range(n) for t in sampled[i * gs:(i + 1) * gs] + guided[i * k:(i + 1) * k]]

    def _policy_logp(self, trajs: list[Trajectory], params: Any) -> None:
        """Fill each trajectory's sampler_logp with the log-probs of `params` at the sampling temperature
        on its loss tokens (0 elsewhere), micro-batched as the update (rows padded to a multiple)."""
        cfg = self.cfg
        unit = self.row_multiple()
        rows = -(-len(trajs) // unit) * unit
        batch = to_batch(trajs, multiple=cfg.optimizer.pad_multiple)
        data = {k: np.zeros((rows,) + batch[k].shape[1:], batch[k].dtype) for k in ("tokens", "attention_mask", "loss_mask")}
        for k in data:
            data[k][:len(trajs)] = batch[k]
        lp = gather_params(self.behaviour_logp_fn(params, self.place_batch(split_micro(data, cfg.optimizer.micro_batches))))[0]
        lp = lp.reshape(rows, -1)
        for t, row in zip(trajs, lp):
            t.sampler_logp = [float(x) if m > 0 else 0.0 for x, m in zip(row[:len(t)], t.loss_mask)]

    def _grpo_update_fns(self, lr_scale: float) -> dict[str, Any]:
        """The jitted GRPO step (AdamW at learning_rate x lr_scale) and, when pi_old is the trainer's and
        a batch gets several updates, the jitted pi_old forward (log-probs at the sampling temperature)."""
        cfg = self.cfg
        tx = optimizer_from_config(cfg, lr_scale=lr_scale)
        several = cfg.grpo.ppo_epochs * cfg.grpo.ppo_mini_batches > 1 and cfg.grpo.old_logp_source == "trainer"
        return {"step": make_grpo_step(self.logp_entropy_fn, tx, cfg.loss_config(), old_logp_source=cfg.grpo.old_logp_source,
                                       behaviour_correction=cfg.grpo.max_staleness > 0),
                "old_logp": make_old_logp_fn(self.old_logp_fn) if several else None}

    @staticmethod
    def _grpo_meta(step: int, initial_eval: dict[str, Any] | None, guard: TrainingGuard | None) -> dict[str, Any]:
        meta = {"step": step, "phase": "grpo", "initial_eval": json_safe(initial_eval)}
        if guard is not None:
            meta["guard"] = guard.state_dict()
        return meta

    def _check_finite(self, step: int, updates: list[dict[str, float]], ck: checkpoint.Checkpointer) -> None:
        """Stop (`TrainingStopped`) when an update's loss or gradient norm is not finite, before anything
        is checkpointed, naming the step and the latest good checkpoint."""
        for i, m in enumerate(updates):
            bad = {k: m[k] for k in ("loss", "grad_norm") if k in m and not np.isfinite(m[k])}
            if bad:
                ck.wait()
                latest = ck.latest_step()
                where = (f"{checkpoint.phase_dir(self.dir, 'grpo') / str(latest)} (GRPO step {latest})"
                         if latest is not None else "none")
                raise TrainingStopped(
                    f"GRPO step {step} (update {i + 1}): {', '.join(f'{k}={v}' for k, v in bad.items())} is not "
                    f"finite; no checkpoint was written after it; the latest good checkpoint is {where}. Fix: "
                    "lower optimizer.learning_rate or check the restored checkpoint's parameters.")

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.log_file.close()
        for w in self._tb.values():
            w.close()


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
            "peak_rss_gib": _peak_rss_gib(),
            "devices": [str(d) for d in jax.devices()],
        }
        summary["plots"] = write_plots(run.dir, initial, final, baselines)
        summary = json_safe(summary)  # valid JSON: inf/NaN -> null with a <key>_note
        (run.dir / "summary.json").write_text(json.dumps(summary, indent=1))
        return summary
    finally:
        run.close()
