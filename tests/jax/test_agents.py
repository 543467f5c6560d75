"""`orchestra_jax.agents`: a trained run's checkpoint as an orchestra_gym agent.

One tiny `run_training` run per module (SFT warm start long enough that the greedy policy writes whole
tool calls ending on EOS, then one GRPO step), then: the loader rebuilds the run's setting and its final
parameters; played turn by turn through a plain Gymnasium loop, the greedy agent writes exactly the
texts of `collect_rollouts` (the trainer's own rollout) for the same task and seed, with the same
episode info; phase="sft" gives the warm-start parameters; bad folders and phases fail clearly.
"""

from __future__ import annotations

import json

import shutil

import pytest

pytest.importorskip("orchestra_jax.model", reason="the Qwen3 policy is not in this checkout")

from flax import nnx  # noqa: E402

from orchestra_jax import rollout as rollout_mod  # noqa: E402
from orchestra_jax import train  # noqa: E402  (run_training)
from orchestra_jax.evaluation import EVAL_TASK_BASE  # noqa: E402
from orchestra_jax.policy import build_tokenizer, make_envs  # noqa: E402
from orchestra_jax.tokenizer import ChatTokenizer, render_messages  # noqa: E402
from orchestra_jax.train_step import params_digest  # noqa: E402
from orchestra_jax.agents import PolicyAgent, load_policy_agent  # noqa: E402
from orchestra_jax.train_config import TrainConfig  # noqa: E402

OVERRIDES = {
    "model.overrides": {"vocab_size": 512, "hidden_size": 32, "intermediate_size": 64, "num_layers": 1,
                        "num_heads": 2, "num_kv_heads": 1, "head_dim": 16, "tie_word_embeddings": True},
    "rollout.tasks_per_step": 2, "rollout.rollouts_per_task": 2, "optimizer.micro_batches": 2, "max_steps": 1,
    "rollout.guide_experts": [],
    "sft.steps": 120, "sft.batch_size": 4, "sft.tasks": 16,  # enough for whole tool calls at temperature 0
    "sft.lr_schedule": "constant", "env.preference": {"outcome": 1.0, "cost": 1.0, "latency": 0.0},
    "evaluation.tasks": 0, "env.max_turns": 3, "rollout.max_new_tokens": 40, "checkpoint.every": 1000,
    "rollout.tool_workers": 2, "checkpoint.async_save": False, "progress_bar": False,
    # the setting these tests pin (the preset's prompt-stated, sampled preferences and per-episode
    # demonstrations are tested in test_train_config / test_batch / gym's test_agents)
    "env.kwargs": {"system_prompt": "compact"}, "env.train_preferences": [], "env.eval_preferences": {},
    "sft.expert_choice": "per_turn", "sft.state_kind": False, "grpo.ppo_epochs": 1, "grpo.loss.kl_coef": 0.0,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(run dir, TrainConfig, summary) of one tiny SFT + 1-step GRPO run."""
    cfg = TrainConfig.preset("tiny-toolscale").replace(**OVERRIDES)
    out = tmp_path_factory.mktemp("tiny_run")
    summary = train.run_training(cfg, out)
    return out, cfg, summary


@pytest.fixture(scope="module")
def greedy_agent(run):
    return load_policy_agent(run[0], temperature=0.0)


def _model(agent: PolicyAgent):
    return nnx.merge(agent.sampler.graphdef, agent.sampler.params)


def _digest(agent: PolicyAgent) -> str:
    return params_digest(nnx.state(_model(agent), nnx.Param))


def test_loader_rebuilds_the_run_setting_and_final_params(run, greedy_agent):
    out, cfg, summary = run
    a = greedy_agent
    assert isinstance(a, PolicyAgent)
    assert a.env_id == "ToolOrchestra-ToolScale-v0" == cfg.env.id
    pref = {"outcome": 1.0, "cost": 1.0, "latency": 0.0}
    assert a.env_kwargs == {"system_prompt": "compact", "max_turns": 3, "preference": pref}
    assert a.reset_options == {"preference": pref, "tools": ["call_expert"]}
    from orchestra_gym.setting import Setting
    from orchestra_jax.policy import run_setting

    # the run folder holds the setting the agent plays in, for `orchestra eval --setting-of` (no JAX there)
    assert Setting.read(out) == run_setting(cfg) == Setting(a.env_id, a.env_kwargs, a.reset_options)
    assert (a.max_new_tokens, a.max_seq_len, a.temperature) == (40, cfg.rollout.max_seq_len, 0.0)
    assert summary["steps"] == 1
    assert _digest(a) == summary["params_sha256"]  # the GRPO checkpoint = the run's final parameters
    assert a.tok.encode("<|im_end|>") == [a.tok.im_end_id]
    assert a.tok.vocab_size == ChatTokenizer.from_file(str(out / "tokenizer.json")).vocab_size <= 512


def _trainer_rollout(run, agent, task, seed):
    """The trainer's rollout of `task` (as Run.evaluate builds it: its own tokenizer and sampler)."""
    from orchestra_jax.sampler import Sampler

    out, cfg, _ = run
    tok = build_tokenizer(cfg, out)
    sampler = Sampler(_model(agent), eos_ids=tok.eos_ids, max_cache_len=3 * cfg.rollout.max_seq_len, pad_id=tok.pad_id)
    return rollout_mod.collect_rollouts(
        sampler, tok, make_envs(cfg, 1), [cfg.reset_options(task)], rollouts_per_task=1, seed=seed,
        max_new_tokens=cfg.rollout.max_new_tokens, max_seq_len=cfg.rollout.max_seq_len, temperature=0.0, max_turns=cfg.env.max_turns,
        keep_texts=True,
    )


@pytest.fixture(scope="module")
def whole_turn_tasks(run, greedy_agent):
    """The first two held-out tasks on which the greedy tiny policy writes >= 2 whole turns (each ending on
    EOS), so the comparison covers the KV-cache extend path; a cut turn ends a trainer rollout by design."""
    found = []
    for task in range(EVAL_TASK_BASE, EVAL_TASK_BASE + 40):
        (t,), _ = _trainer_rollout(run, greedy_agent, task, seed=5)
        if not t.cut and t.turns >= 2:
            found.append(task)
        if len(found) == 2:
            return found
    pytest.fail(f"the tiny policy wrote >= 2 whole turns on only {found} of 40 tasks: its warm start is too short")


@pytest.mark.parametrize("which", [0, 1])
def test_greedy_agent_plays_exactly_the_trainer_rollout(run, greedy_agent, whole_turn_tasks, which):
    import gymnasium as gym

    out, cfg, _ = run
    a = greedy_agent
    task = whole_turn_tasks[which]
    seed = 5
    options = cfg.reset_options(task)
    assert dict(a.reset_options, task_id=task) == options

    # the agent in a plain Gymnasium loop, env made and reset as the agent says
    env = gym.make(a.env_id, **a.env_kwargs)
    obs, info = env.reset(seed=seed * 1000, options=dict(a.reset_options, task_id=task))
    a.reset(env, obs, info)
    assert str(info["task_id"]).endswith(f"-{task}")  # ToolScale ids: "<domain>-<seed>"
    texts, done = [], False
    while not done:
        text = a.act(obs, info)
        texts.append(text)
        obs, _, term, trunc, info = env.step(text)
        done = term or trunc

    # the trainer's rollout with the same params
    trajs, stats = _trainer_rollout(run, a, task, seed)
    (t,) = trajs
    assert t.task_id == task
    assert not t.cut and t.turns == len(t.texts) >= 2  # whole turns (EOS), and the KV cache was extended
    assert texts == t.texts
    assert (term, trunc) == (t.terminated, t.truncated)
    for key in ("solved", "outcome", "episode_cost_usd", "episode_latency_s", "turn", "parse_errors", "end_reason",
                "tool_calls"):
        assert info[key] == t.info[key], key
    assert stats.invalid_turns == info["parse_errors"]


def test_sft_phase_loads_the_warm_start(run, greedy_agent):
    out, cfg, _ = run
    sft = load_policy_agent(out, phase="sft")
    # default: the run's evaluation decoding (the preset's: Qwen3's thinking-mode T 0.6, top-k 20, top-p 0.95)
    decoding = (cfg.evaluation.temperature, cfg.evaluation.top_k, cfg.evaluation.top_p)
    assert (sft.temperature, sft.top_k, sft.top_p) == decoding == (0.6, 20, 0.95)
    # the one GRPO step moved the weights unless no rollout was kept (then the step is a no-op)
    grpo_rec = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if '"grpo"' in x][-1]
    assert (_digest(sft) == _digest(greedy_agent)) == bool(grpo_rec["skipped"])
    grpo = load_policy_agent(out, phase="grpo", step=1, temperature=0.0)
    assert _digest(grpo) == _digest(greedy_agent)


def test_clear_errors(run, tmp_path):
    out = run[0]
    with pytest.raises(FileNotFoundError, match="train_config.json"):
        load_policy_agent(tmp_path)
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(out / "train_config.json", bare / "train_config.json")
    with pytest.raises(FileNotFoundError, match="no finalized checkpoint"):
        load_policy_agent(bare)
    assert [p.name for p in bare.iterdir()] == ["train_config.json"]  # nothing built or written there
    with pytest.raises(ValueError, match="phase='foo'"):
        load_policy_agent(out, phase="foo")
    (bare / "checkpoints" / "grpo").mkdir(parents=True)  # an empty checkpoint folder is no checkpoint
    with pytest.raises(FileNotFoundError, match="no finalized checkpoint"):
        load_policy_agent(bare, phase="grpo")


def test_a_turn_cut_by_max_new_tokens_is_closed_before_the_next_block(run, greedy_agent):
    import gymnasium as gym

    _, cfg, _ = run
    g = greedy_agent
    a = PolicyAgent(_model(g), g.tok, max_new_tokens=4, max_seq_len=cfg.rollout.max_seq_len, temperature=0.0,
                    env_id=g.env_id, env_kwargs=g.env_kwargs, reset_options=g.reset_options)
    env = gym.make(a.env_id, **a.env_kwargs)
    obs, info = env.reset(seed=1, options=dict(a.reset_options, task_id=EVAL_TASK_BASE + 3))
    a.reset(env, obs, info)
    prompt = a.tok.encode(render_messages(info["new_messages"]))
    first = a.act(obs, info)
    assert first == "<tool_call>" or first.startswith("<tool_call>\n")  # 4 tokens of a tool call, no EOS
    obs, _, term, trunc, info = env.step(first)
    assert not (term or trunc) and info["parse_errors"] == 1
    env_ids = a.tok.encode(render_messages(
        [m for m in info["new_messages"] if m["role"] != "assistant"], after_assistant=True))
    a.act(obs, info)
    seq = a._state.tokens[0]  # the conversation the policy has seen
    p = len(prompt)
    assert seq[:p] == prompt
    assert a.tok.eos_ids[0] not in seq[p:p + 4] and a.tok.decode(seq[p:p + 4]) == first
    assert seq[p + 4] == a.tok.im_end_id  # the cut turn closed as a finished one would be
    assert seq[p + 5:p + 5 + len(env_ids)] == env_ids
    assert len(seq) == p + 4 + 1 + len(env_ids) + 4


def test_orchestra_eval_plays_a_trained_run_in_its_setting(run, tmp_path, capsys):
    """``orchestra eval --agent policy:RUN_DIR`` (no --env): the run's env, kwargs and reset options, the
    run's eval temperature; the same texts as a freshly loaded agent in a plain Gymnasium loop."""
    import json

    import gymnasium as gym

    from orchestra_jax.cli import main

    from orchestra_gym.setting import Setting

    out, cfg, _ = run
    summary, traj = tmp_path / "s.json", tmp_path / "t.jsonl"
    capsys.readouterr()
    assert main(["eval", "--agent", f"policy:{out}", "--episodes", "2", "--seed", "3", "--output-json", str(summary),
                 "--trajectories", str(traj), "--no-progress"]) == 0
    assert capsys.readouterr().err == f"orchestra eval: setting: {Setting.read(out).describe()} (policy:{out}'s own)\n"
    s = json.loads(summary.read_text())
    assert s["env"] == cfg.env.id and s["agent"] == f"policy:{out}" and s["episodes"] == 2
    assert s["mean_orchestrator_cost_usd"] == 0.0  # a local policy reports no model usage
    recs = [json.loads(line) for line in traj.read_text().splitlines()]

    a = load_policy_agent(out, seed=3)  # the run's eval temperature (1.0 here): same PRNG keys as the CLI's agent
    env = gym.make(a.env_id, **a.env_kwargs)
    for i, rec in enumerate(recs):
        obs, info = env.reset(seed=3 + i, options=dict(a.reset_options) or None)
        a.reset(env, obs, info)
        texts, done = [], False
        while not done:
            texts.append(a.act(obs, info))
            obs, _, term, trunc, info = env.step(texts[-1])
            done = term or trunc
        assert rec["messages"][0] == env.unwrapped.messages[0].to_dict()  # the run's system prompt and tools
        assert [m["content"] for m in rec["messages"] if m["role"] == "assistant"] == texts
        assert (rec["end_reason"], rec["turns"]) == (info["end_reason"], info["turn"])


def test_a_baseline_plays_in_the_runs_setting_with_setting_of(run, tmp_path, capsys):
    """``orchestra eval --agent expert-2 --setting-of RUN``: the baseline in the trained run's setting (env, kwargs,
    reset options as the policy's own), printed as one line; a run folder without orchestra_setting.json (trained
    before runs wrote it) gets it from ``--agent policy:RUN``."""
    import json
    import shutil

    from orchestra_gym.setting import SETTING_FILE
    from orchestra_jax.cli import main

    out, cfg, _ = run
    a = load_policy_agent(out)
    capsys.readouterr()
    assert main(["eval", "--agent", "expert-2", "--setting-of", str(out), "--episodes", "2", "--output-dir",
                 str(tmp_path / "e2"), "--no-progress"]) == 0
    assert f"(--setting-of {out})" in capsys.readouterr().err
    r = json.loads((tmp_path / "e2" / "run.json").read_text())
    assert (r["env"], r["env_kwargs"], r["options"]) == (a.env_id, a.env_kwargs, a.reset_options)
    old = tmp_path / "old_run"
    shutil.copytree(out, old)
    (old / SETTING_FILE).unlink()
    with pytest.raises(SystemExit):
        main(["eval", "--agent", "expert-2", "--setting-of", str(old), "--no-progress"])
    assert f"`orchestra eval --agent policy:{old} --episodes 1` writes it" in capsys.readouterr().err
    assert main(["eval", "--agent", f"policy:{old}", "--episodes", "1", "--no-progress"]) == 0
    assert json.loads((old / SETTING_FILE).read_text()) == json.loads((out / SETTING_FILE).read_text())


def test_orchestra_eval_policy_errors_are_one_line(tmp_path, capsys):
    from orchestra_jax.cli import main

    with pytest.raises(SystemExit) as e:
        main(["eval", "--agent", f"policy:{tmp_path}", "--episodes", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "train_config.json not found" in err


def test_evaluate_run_plays_held_out_tasks_through_the_trainers_evaluation(run):
    """`evaluate_run`: the trainer's batched evaluation path (`evaluation.play_tasks`) on a run folder:
    deterministic, one trajectory per task in order, under the run's or a given preference."""
    from orchestra_jax.agents import evaluate_run
    from orchestra_jax.evaluation import episode_summary, held_out_tasks

    out, cfg, _ = run
    tasks = held_out_tasks(3)
    a = evaluate_run(out, tasks, temperature=0.0, batch=2)
    b = evaluate_run(out, tasks, temperature=0.0, batch=2)
    assert len(a) == 3 and [t.tokens for t in a] == [t.tokens for t in b]
    assert all("reward_vector" in t.info and t.info["preference"]["cost"] == 1.0 for t in a)
    other = evaluate_run(out, tasks[:1], temperature=0.0, preference={"outcome": 1.0, "latency": 2.0})
    assert other[0].info["preference"]["latency"] == 2.0 and other[0].info["preference"]["cost"] == 0.0
    assert episode_summary(a)["episodes"] == 3


def test_eval_top_k_and_top_p_are_the_runs_decoding(run, greedy_agent, tmp_path):
    """The run's ``evaluation.top_k`` / ``evaluation.top_p`` reach `PolicyAgent` and `evaluate_run` (the sampler's
    convention): top-k 1 at temperature 1 is greedy decoding, token for token; a nucleus of mass 1e-6
    keeps only the top token too; bad values fail with the field named."""
    from orchestra_jax.agents import evaluate_run
    from orchestra_jax.evaluation import held_out_tasks

    out, cfg, _ = run
    tasks = held_out_tasks(3)
    greedy = evaluate_run(out, tasks, temperature=0.0, batch=3)
    sampled = evaluate_run(out, tasks, temperature=1.0, batch=3)
    assert [t.tokens for t in sampled] != [t.tokens for t in greedy]  # temperature 1 samples something else
    for k, p in ((1, 1.0), (0, 1e-6)):
        folder = tmp_path / f"k{k}"
        shutil.copytree(out, folder)
        conf = json.loads((folder / "train_config.json").read_text())
        (folder / "train_config.json").write_text(json.dumps(dict(conf, evaluation={**conf["evaluation"], "top_k": k, "top_p": p})))
        top = evaluate_run(folder, tasks, temperature=1.0, batch=3)
        assert [t.tokens for t in top] == [t.tokens for t in greedy], (k, p)
        agent = load_policy_agent(folder, temperature=1.0)
        assert (agent.temperature, agent.top_k, agent.top_p) == (1.0, k, p)
    m = _model(greedy_agent)
    with pytest.raises(ValueError, match=r"top_k must be >= 0 \(0 = off\) and top_p in \(0, 1\]"):
        PolicyAgent(m, greedy_agent.tok, max_new_tokens=8, max_seq_len=64, temperature=1.0, top_p=0.0)


def test_bench_orchestration_measures_a_run_in_its_own_setting(run):
    """`benchmarks/bench_orchestration.py`'s measurement on the tiny run: every fixed rule, the router and
    the policy on the same held-out tasks; hull gaps as `evaluation.hull_gap` computes them (0 for the hull's
    own vertices); the policy's valid format as the trainer's `episode_summary` of the same evaluation."""
    import importlib.util
    from pathlib import Path

    from orchestra_gym.evaluation import hull_gap
    from orchestra_jax.agents import evaluate_run
    from orchestra_jax.evaluation import episode_summary, held_out_tasks

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_orchestration.py"
    spec = importlib.util.spec_from_file_location("bench_orchestration", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out, cfg, _ = run
    m = bench.measure(out, 4, 6)
    names = [r["agent"] for r in m["rows"]]
    assert names == [*bench.FIXED, "router", "trained policy"] and all(r["episodes"] == 4 for r in m["rows"])
    fixed = [(r["cost_cents"], r["success"]) for r in m["rows"] if r["agent"] in bench.FIXED]
    for r in m["rows"]:
        assert r["hull_gap"] == hull_gap(r["success"], r["cost_cents"], fixed)
    for c, a in m["hull"]:
        assert hull_gap(a, c, fixed) == 0.0
    (entry,) = m["adherence"]  # the run has no held-out preferences: the default only
    want = episode_summary(evaluate_run(out, held_out_tasks(4)))["valid_format_rate"]
    assert entry["preference"] == "default" and entry["valid_format"] == want
    assert set(entry["fixed"]) == set(bench.FIXED) and entry["beats_default"] and entry["beats_other_preferences"]
    # App. L against always expert-1: expert-1 itself scores outcome weight x success - cost - latency weights
    e1 = next(r for r in m["rows"] if r["agent"] == "expert-1")
    w = dict(entry["vector"])
    assert entry["app_l_baseline"]["fixed"]["expert-1"] == pytest.approx(
        w.get("outcome", 1.0) * e1["success"] - w.get("cost", 0.0) - w.get("latency", 0.0))
    # the group form: a fixed expert is one of the references, so its score is its own group reward, >= 0
    assert all(v >= 0.0 for v in entry["fixed"].values())
    assert entry["asked"] == {} and entry["moves_as_asked"] is True  # the default asks nothing of itself
    # the kind oracle picks per kind the best of the fixed experts' episodes: never below always expert-k
    oracle = entry["kind_oracle"]
    assert oracle["headroom"] == 0.0 and oracle["score"] == oracle["default_routes_score"]
    assert all(oracle["score"] >= entry["fixed"][e] - 1e-12 for e in ("expert-1", "expert-2", "expert-3"))
    assert set(oracle["routes"].values()) <= {"expert-1", "expert-2", "expert-3"}
    best = max(entry["fixed"], key=entry["fixed"].get)
    assert oracle["best_fixed"] == best and oracle["over_best_fixed"] == oracle["score"] - entry["fixed"][best]
    # no other preference: the ceiling of the check is the margin over the best fixed rule alone
    assert oracle["over_other_preferences"] == {} and oracle["ceiling"] == oracle["over_best_fixed"]
    text = bench.markdown(m)
    assert "| valid format |" in text and f"{want:.1%}" in text and "| default | " in text.split("Headroom")[1]
