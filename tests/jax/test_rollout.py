"""Tests of orchestra_jax.rollout: masks from lengths, EOS handling, token-in/token-out with the real sampler."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import orchestra_gym  # noqa: F401  (registers the env ids)
from orchestra_gym.agents import ExpertAgent, OracleAgent
from orchestra_jax import batch as batch_mod
from orchestra_jax import rollout, train_step
from orchestra_jax.rollout import Trajectory
from orchestra_jax.tokenizer import ChatTokenizer, build_bpe_tokenizer, render_messages

model_mod = pytest.importorskip("orchestra_jax.model", reason="the Qwen3 policy (issue 6) is not merged yet")
config_mod = pytest.importorskip("orchestra_jax.config", reason="the Qwen3 policy (issue 6) is not merged yet")
sampler_mod = pytest.importorskip("orchestra_jax.sampler", reason="the sampler (issue 6) is not merged yet")

ENV_ID = "ToolOrchestra-ToolScale-v0"
ONLY_EXPERT = {"tools": ["call_expert"]}  # short system prompt: the expert tool only
CALL = '<tool_call>\n{"name": "call_expert", "arguments": {"expert": "expert-3"}}\n</tool_call>'


def make_env(**kw):
    return gym.make(ENV_ID, system_prompt="compact", **kw)


@pytest.fixture(scope="module")
def tok() -> ChatTokenizer:
    texts = []
    env = make_env(max_turns=12)
    for seed in range(6):
        t = rollout.scripted_trajectory(env, _plain_tok(), OracleAgent(), seed=seed)
        texts += t.texts
        obs, _ = env.reset(seed=seed)
        texts.append(obs)
    texts.append(CALL)
    return build_bpe_tokenizer(texts, vocab_size=512)


def _plain_tok() -> ChatTokenizer:
    """A byte-level tokenizer with no merges (for collecting texts before the real one is trained)."""
    return build_bpe_tokenizer(["a"], vocab_size=300)


def test_bpe_tokenizer_roundtrip_and_specials(tok):
    text = render_messages([{"role": "system", "content": "Serve the user."},
                            {"role": "tool", "content": '{"total": 12.5} ünïcode'}])
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert ids[0] == tok.tk.token_to_id("<|im_start|>")
    assert tok.encode("<|im_end|>") == [tok.im_end_id]
    assert tok.eos_ids == (tok.im_end_id, tok.tk.token_to_id("<|endoftext|>"))
    assert tok.pad_id in tok.eos_ids  # as Qwen3: masks must never come from token values
    assert "<tool_response>" in text and text.endswith("<|im_start|>assistant\n")


def test_env_reply_puts_parallel_tool_results_in_one_user_turn():
    tok = _plain_tok()
    reply = {"new_messages": [{"role": "assistant", "content": CALL + "\n" + CALL},
                              {"role": "tool", "content": "A", "name": "x", "tool_call_id": "call_0"},
                              {"role": "tool", "content": "B", "name": "x", "tool_call_id": "call_1"},
                              {"role": "user", "content": "U"}]}
    assert tok.decode(rollout.env_reply_ids(tok, reply)) == (
        "\n<|im_start|>user\n<tool_response>\nA\n</tool_response>\n<tool_response>\nB\n</tool_response><|im_end|>\n"
        "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n")


def test_mask_sums_follow_lengths_not_token_values(tok):
    eos = tok.im_end_id
    trajs = []
    for n in (3, 7, 10):
        prompt = [5, 6, 7, tok.pad_id]  # a pad/EOS id inside the prompt must not matter
        sampled = [tok.pad_id] * (n - 1) + [9] + [eos]  # n tokens (pad-valued ones included) + EOS
        toks, mask, lp = rollout.trajectory_from_turns(prompt, [(sampled, [-0.5] * (n + 1), [])])
        trajs.append(Trajectory(tokens=toks, loss_mask=mask, sampler_logp=lp, info={}))
    batch = batch_mod.to_batch(trajs, np.array([1.0, -1.0, 0.5]), multiple=16)
    assert batch["tokens"].shape == (3, 16)
    np.testing.assert_array_equal(batch["loss_mask"].sum(1), [3 + 1, 7 + 1, 10 + 1])
    np.testing.assert_array_equal(batch["attention_mask"].sum(1), [4 + 4, 4 + 8, 4 + 11])
    np.testing.assert_allclose(batch["sampler_logp"].sum(1), [-2.0, -4.0, -5.5])
    # the padding is written with id 0 and masked by length only
    assert batch["loss_mask"][0, 8:].sum() == 0 and batch["attention_mask"][0, 8:].sum() == 0
    # cut samples: all-zero loss mask; invalid turns: zero for that turn only
    toks, mask, _ = rollout.trajectory_from_turns([1, 2], [([3, 4], [0, 0], [5]), ([6, eos], [0, 0], [])], cut=True)
    assert sum(mask) == 0 and len(toks) == 7
    toks, mask, _ = rollout.trajectory_from_turns([1, 2], [([3, 4], [0, 0], [5]), ([6, eos], [0, 0], [])],
                                                  invalid=[True, False])
    assert mask == [0, 0, 0, 0, 0, 1, 1]


def _tiny_qwen3(vocab: int, seed: int = 0):
    cfg = config_mod.ModelConfig.from_preset("tiny", vocab_size=vocab, num_layers=1)
    return model_mod.Qwen3(cfg, rngs=nnx.Rngs(seed))


def _always_emit(model, token_id: int):
    """Parameter surgery: the model puts almost all mass on `token_id` at every position (residual
    stream = embedding with a positive coordinate 0, final norm keeps only that coordinate)."""
    d = model.config.hidden_size
    model.embed[...] = model.embed[...].at[:, 0].set(1.0)
    model.wo[...] = jnp.zeros_like(model.wo[...])
    model.w_down[...] = jnp.zeros_like(model.w_down[...])
    model.final_norm[...] = jnp.zeros((d,)).at[0].set(1.0)
    model.lm_head[...] = jnp.zeros_like(model.lm_head[...]).at[0, token_id].set(60.0)
    return model


def test_secondary_eos_counts_as_terminated(tok):
    eos2 = tok.eos_ids[1]
    model = _always_emit(_tiny_qwen3(tok.vocab_size), eos2)
    sampler = sampler_mod.Sampler(model, eos_ids=tok.eos_ids, max_cache_len=4096, pad_id=tok.pad_id)
    envs = [make_env(max_turns=2) for _ in range(2)]
    trajs, stats = rollout.collect_rollouts(sampler, tok, envs, [{}], rollouts_per_task=2, seed=0,
                                            max_new_tokens=8, max_seq_len=2048, max_turns=2,
                                            drop_invalid_turns=False)
    for t in trajs:
        assert not t.cut  # ended on an EOS id, not by the length limit
        assert t.turns == 2
        sampled = [x for x, m in zip(t.tokens, t.loss_mask) if m > 0]
        assert sampled == [eos2, eos2]  # the EOS token itself is in the loss
    assert stats.cut == 0 and stats.invalid_turns == 4  # empty text is not a valid action


class RecordingSampler:
    """The real sampler, with every id that goes in (prefill / extend) and comes out (generate) logged."""

    def __init__(self, inner):
        self.inner = inner
        self.log: list[tuple[str, list[list[int]], list[list[float]] | None]] = []

    def prefill(self, prompts):
        self.log.append(("in", [list(p) for p in prompts], None))
        return self.inner.prefill(prompts)

    def extend(self, state, appended):
        self.log.append(("in", [list(a) for a in appended], None))
        return self.inner.extend(state, appended)

    def has_room(self, state, appended, max_new_tokens):
        return self.inner.has_room(state, appended, max_new_tokens)

    def generate(self, state, **kw):
        state, out = self.inner.generate(state, **kw)
        self.log.append(("out", [list(t) for t in out.tokens], [list(x) for x in out.logprobs]))
        self.last_state = state
        return state, out


def _memorize(model, tok, text: str, steps: int = 80):
    """A few SFT steps (the real train step) so the tiny model writes `text` after the assistant header."""
    env = make_env(max_turns=3)
    task_id = env.reset(seed=0, options=ONLY_EXPERT)[1]["task_id"]
    # reset exactly as collect_rollouts(seed=0) will (seed 0 and the task id), so that the memorized
    # contexts are the ones the rollouts see, whatever the simulated experts happen to answer
    rows = []
    for seed in range(2):
        t = rollout.scripted_trajectory(env, tok, ExpertAgent("expert-3"), seed=seed, max_turns=3,
                                        options=dict(ONLY_EXPERT, task_id=task_id))
        rows.append(t)
    batch = batch_mod.to_batch(rows, multiple=64)
    graphdef, params = nnx.split(model, nnx.Param)
    tx = train_step.make_optimizer(1e-2, weight_decay=0.0)
    state = train_step.init_state(params, tx, with_reference=False)
    step = train_step.make_sft_step(train_step.make_logp_fn(graphdef, chunk=64), tx)
    mb = train_step.split_micro({k: batch[k] for k in ("tokens", "attention_mask", "loss_mask")}, 1)
    for _ in range(steps):
        state, m = step(state, mb)
    nnx.update(model, state.params)
    return float(m["nll"]), rows[0].task_id


def test_token_in_token_out_three_turn_tool_conversation(tok):
    model = _tiny_qwen3(tok.vocab_size, seed=1)
    nll, task_id = _memorize(model, tok, CALL)
    assert nll < 0.02
    inner = sampler_mod.Sampler(model, eos_ids=tok.eos_ids, max_cache_len=4096, pad_id=tok.pad_id)
    rec = RecordingSampler(inner)
    envs = [make_env(max_turns=3) for _ in range(2)]
    trajs, stats = rollout.collect_rollouts(rec, tok, envs, [dict(ONLY_EXPERT, task_id=task_id)], rollouts_per_task=2,
                                            seed=0, max_new_tokens=40, max_seq_len=2048, temperature=0.0,
                                            max_turns=3, keep_texts=True)
    batch = batch_mod.to_batch(trajs)
    for r, t in enumerate(trajs):
        assert t.turns == 3 and t.invalid_turns == 0 and not t.cut
        assert all("call_expert" in x for x in t.texts)
        assert t.info["tool_calls"]["call_expert"] == 3.0
        assert t.info["preference"] is not None and t.task_id == task_id  # three real tool calls ran
        # the ids that went in and came out, in order
        seen, logps, in_loss = [], [], []
        for kind, rows, lps in rec.log:
            seen += rows[r]
            in_loss += [kind == "out"] * len(rows[r])
            logps += (lps[r] if lps is not None else [0.0] * len(rows[r]))
        n = len(t.tokens)
        assert n == len(seen)
        np.testing.assert_array_equal(batch["tokens"][r, :n], seen)
        np.testing.assert_array_equal(batch["loss_mask"][r, :n], np.array(in_loss, np.float32))
        np.testing.assert_allclose(batch["sampler_logp"][r, :n], np.array(logps, np.float32))
        assert batch["tokens"][r, n - 1] == tok.im_end_id  # the conversation ends on the sampled EOS
        assert t.info["turn"] == 3.0 and "reward_vector" in t.info
    # the sampler's own view of each conversation is the trainer's row
    for r, t in enumerate(trajs):
        assert rec.last_state.tokens[r] == t.tokens


def test_group_rewards_and_advantages(tok):
    env = make_env(max_turns=6)
    trajs = []
    for expert in ("expert-1", "expert-3", "expert-3", "expert-2"):
        t = rollout.scripted_trajectory(env, tok, ExpertAgent(expert), seed=11, max_turns=6)
        trajs.append(t)
    assert len({t.task_id for t in trajs}) == 1
    for t in trajs:
        t.info["preference_weights"] = [0.0, 0.0, 0.0, 1.0, 1.0, 0.0]  # outcome and cost
    r = batch_mod.group_rewards(trajs, 4)
    assert r.shape == (1, 4)
    for t, x in zip(trajs, r[0]):
        assert (x == 0.0) == (not t.solved)
    out = batch_mod.group_rewards(trajs, 4, "outcome")
    np.testing.assert_array_equal(out[0], [t.outcome for t in trajs])


def test_group_without_a_solved_episode_gets_zero_preference_reward(tok):
    # unsolved -> R = 0 (paper Sec. 3.2), whatever the reward vectors say
    env = make_env(max_turns=6)
    trajs = [rollout.scripted_trajectory(env, tok, ExpertAgent("expert-3"), seed=s, max_turns=6) for s in (1, 1)]
    for t in trajs:
        t.info["solved"], t.info["outcome"] = False, 0.0
    np.testing.assert_array_equal(batch_mod.group_rewards(trajs, 2), [[0.0, 0.0]])


def test_episode_feeds_turns_and_replies_and_cuts_with_a_reason(tok):
    call = tok.encode(CALL) + [tok.im_end_id]
    ep = rollout.Episode(prompt=[1, 2, 3], info={})
    assert ep.length == 3 and ep.active
    assert ep.feed_turn(call, [-0.1] * len(call), "eos", tok, drop_invalid=True, keep_text=True) == CALL
    reply = {"new_messages": [{"role": "assistant", "content": CALL}, {"role": "tool", "content": "ok"}]}
    env_ids = ep.feed_reply(reply, False, False, tok, max_new_tokens=8, max_seq_len=2048)
    assert env_ids == rollout.env_reply_ids(tok, reply) == tok.encode(
        render_messages([{"role": "tool", "content": "ok"}], after_assistant=True))
    assert ep.turns[-1][2] == env_ids and ep.length == 3 + len(call) + len(env_ids) and ep.active
    # no EOS: the turn is invalid and the episode is cut (whole mask zeroed)
    assert ep.feed_turn(call[:4], [-0.1] * 4, "length", tok, drop_invalid=True, keep_text=False) is None
    assert (ep.cut_reason, ep.active, ep.invalid, ep.bad_turns) == ("max_new_tokens", False, [False, True], 1)
    env = make_env(max_turns=6)
    env.reset(seed=3)  # the row's env, not stepped: nothing called, nothing spent
    t = ep.trajectory(group=2, task_id="x-1", env=env)
    assert t.cut and t.cut_reason == "max_new_tokens" and sum(t.loss_mask) == 0 and (t.group, t.task_id) == (2, "x-1")
    np.testing.assert_array_equal(t.info["reward_vector"], [0.0, 0.0, 0.0, 0.0, -0.0, -0.0])  # the unfinished vector
    assert t.info["reward_vector_names"][-3:] == ["outcome", "-cost_usd", "-latency_s"] and t.info["solved"] is False
    assert t.texts == [CALL] and t.turns == 2
    # a reply that leaves no room for a full next turn cuts the episode; an invalid action stays in the env
    ep2 = rollout.Episode(prompt=[1, 2, 3], info={})
    bad = "<tool_call>\n{bad\n</tool_call>"  # not a valid action: sent to the env, out of the loss
    ids = tok.encode(bad) + [tok.im_end_id]
    assert ep2.feed_turn(ids, [0.0] * len(ids), "eos", tok, drop_invalid=True, keep_text=False) == bad
    assert ep2.invalid == [True] and ep2.bad_turns == 1
    assert ep2.feed_reply(reply, False, False, tok, max_new_tokens=8, max_seq_len=ep2.length + 8) == []
    assert ep2.cut_reason == "max_seq_len"
    ep3 = rollout.Episode(prompt=[1], info={})
    ep3.feed_turn(call, [0.0] * len(call), "eos", tok, drop_invalid=True, keep_text=False)
    assert ep3.feed_reply({"reward_vector": [1.0]}, True, False, tok, max_new_tokens=8, max_seq_len=2048) == []
    assert ep3.terminated and not ep3.active and ep3.cut_reason is None


def test_guided_rollouts_replay_each_groups_task_and_env_draws(tok):
    from concurrent.futures import ThreadPoolExecutor

    probe = make_env(max_turns=3)
    opts = [dict(ONLY_EXPERT, task_id=probe.reset(seed=s, options=ONLY_EXPERT)[1]["task_id"]) for s in (11, 12)]
    agents = [ExpertAgent("expert-1"), ExpertAgent("expert-3")]
    envs = [make_env(max_turns=3) for _ in range(4)]
    with ThreadPoolExecutor(2) as pool:
        guided = rollout.guided_rollouts(envs, tok, agents, opts, seed=5, max_turns=3, max_seq_len=4096, executor=pool)
    serial = rollout.guided_rollouts(envs, tok, agents, opts, seed=5, max_turns=3, max_seq_len=4096)
    assert len(guided) == 4
    for r, (t, u) in enumerate(zip(guided, serial)):
        i, j = divmod(r, 2)
        # the same episode as the group's sampled rollouts would see: reset seed 5 * 1000 + i, the group's options
        ref = rollout.scripted_trajectory(make_env(max_turns=3), tok, ExpertAgent(agents[j].expert), seed=5000 + i,
                                          options=opts[i], max_turns=3)
        assert (t.group, t.task_id) == (i, opts[i]["task_id"]) and t.tokens == ref.tokens == u.tokens
        np.testing.assert_array_equal(t.info["reward_vector"], ref.info["reward_vector"])
        assert t.info["tool_calls"].get(agents[j].expert) == float(t.turns)
        assert sum(t.loss_mask) == sum(len(tok.encode(x)) + 1 for x in t.texts) and not t.cut
        assert set(t.sampler_logp) == {0.0}  # the trainer fills in the policy's log-probs
    short = rollout.guided_rollouts(envs[:2], tok, agents, opts[:1], seed=5, max_turns=3, max_seq_len=50)
    assert all(t.cut and t.cut_reason == "max_seq_len" and sum(t.loss_mask) == 0 for t in short)
    with pytest.raises(ValueError, match="need 2 x 2 = 4 envs, got 3"):
        rollout.guided_rollouts(envs[:3], tok, agents, opts, seed=5, max_turns=3, max_seq_len=4096)
    with pytest.raises(ValueError, match="group 0: guided rollouts need the group's task_id"):
        rollout.guided_rollouts(envs[:2], tok, agents, [ONLY_EXPERT], seed=5, max_turns=3, max_seq_len=4096)




def test_a_cut_guided_rollout_carries_its_reward_vector_so_a_solved_group_is_scored(tok):
    # issue 48 item 17: a guided rollout cut by the rollout's turn limit (the env still running) had no
    # reward vector, and group_rewards of a group with a solved rollout raised KeyError: 'reward_vector'
    env = make_env(max_turns=6)
    solved = rollout.scripted_trajectory(env, tok, OracleAgent(), seed=11, max_turns=50)
    cut = rollout.scripted_trajectory(env, tok, ExpertAgent("expert-3"), seed=11, max_turns=1)
    assert solved.solved and solved.info["end_reason"] != "turn_limit"
    assert cut.cut and cut.cut_reason == "max_turns" and "end_reason" not in cut.info  # the env never ended it
    names = cut.info["reward_vector_names"]
    assert names == ["calls/expert-1", "calls/expert-2", "calls/expert-3", "outcome", "-cost_usd", "-latency_s"]
    vec = cut.info["reward_vector"]
    assert list(vec[:4]) == [0.0, 0.0, 1.0, 0.0] and cut.info["outcome"] == 0.0 and cut.info["solved"] is False
    assert vec[4] == -cut.info["episode_cost_usd"] < 0 and vec[5] == -cut.info["episode_latency_s"] < 0
    assert cut.info["preference_weights"] == solved.info["preference_weights"] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    r = batch_mod.group_rewards([solved, cut], 2)
    assert r[0, 0] > 0.0 and r[0, 1] == 0.0
