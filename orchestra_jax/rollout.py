"""Multi-turn rollouts of the orchestrator policy against orchestra_gym environments, token-in/token-out.

For every task, G rollouts share the task, the preference vector and the tool set (ToolOrchestra
Sec. 3.2). All N x G episodes of a step run as one batch through a KV-cache sampler
(`orchestra_jax.sampler.Sampler`: ``prefill`` / ``generate`` / ``extend``); the tool calls of different
episodes run concurrently in a thread pool (the envs are independent objects).

Token-in/token-out: each trajectory is the concatenation of
  * environment blocks (system prompt, user, tool results, the next ``<|im_start|>assistant`` header),
    rendered in ChatML (the Qwen3 chat format) and tokenized on their own: loss mask 0;
  * the sampler's own ids for each assistant turn, with the sampler's log-probs, EOS included: mask 1.
The chat is never re-rendered from parsed messages (Qwen3's template drops earlier ``<think>`` blocks,
so re-rendering would change the tokens the policy saw). Masks come from segment lengths, never from
token values (Qwen3's pad id is an EOS id).

A turn cut by the token limit (no EOS) ends the episode and zeroes the trajectory's whole loss mask;
a turn whose text is not a valid action (`orchestra_gym.parsing.parse_action(...).valid` is False) gets
mask 0 for its tokens (the paper's filter) and is counted.

The environment is used only through the Gymnasium API (`reset`, `step`, `info`) plus
`orchestra_gym.parsing` and `orchestra_gym.rewards`.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Sequence

import numpy as np

from orchestra_gym.parsing import parse_action

__all__ = [
    "ChatTokenizer",
    "build_bpe_tokenizer",
    "render_messages",
    "Trajectory",
    "RolloutStats",
    "collect_rollouts",
    "trajectory_from_turns",
    "scripted_trajectory",
    "to_batch",
    "group_rewards",
    "CHAT_SPECIAL_TOKENS",
]

IM_START, IM_END, ENDOFTEXT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
# ChatML control tokens plus the Qwen3 / Hermes tool tags (special in Qwen3's tokenizer as well)
CHAT_SPECIAL_TOKENS = (
    ENDOFTEXT, IM_START, IM_END, "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
)


# ----------------------------------------------------------------------------------------------------------
# Tokenizer and chat rendering
# ----------------------------------------------------------------------------------------------------------


class ChatTokenizer:
    """A `tokenizers.Tokenizer` with the ChatML specials, as the rollout needs it.

    encode(text) -> list[int] (special tokens in the text map to their ids; no BOS/EOS added);
    decode(ids) -> str (specials kept); eos_ids: ids that end an assistant turn
    (``<|im_end|>`` first, then ``<|endoftext|>``, like Qwen3's {151645, 151643}); pad_id.
    """

    def __init__(self, tokenizer: Any):
        self.tk = tokenizer
        ids = {t: tokenizer.token_to_id(t) for t in (IM_END, ENDOFTEXT)}
        missing = [t for t, i in ids.items() if i is None]
        if missing:
            raise ValueError(f"tokenizer lacks the chat special token(s) {missing}; add them as special tokens")
        self.im_end_id = int(ids[IM_END])
        self.eos_ids = (self.im_end_id, int(ids[ENDOFTEXT]))
        self.pad_id = int(ids[ENDOFTEXT])  # as Qwen3: the pad id is an EOS id (masks never use token values)
        self.vocab_size = int(tokenizer.get_vocab_size())

    def encode(self, text: str) -> list[int]:
        return list(self.tk.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tk.decode(list(ids), skip_special_tokens=False)

    def save(self, path: str) -> None:
        self.tk.save(str(path))

    @classmethod
    def from_file(cls, path: str) -> "ChatTokenizer":
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(path)))


def build_bpe_tokenizer(texts: Iterable[str], vocab_size: int = 1024) -> ChatTokenizer:
    """Train a small byte-level BPE (HF `tokenizers`) on `texts`, with `CHAT_SPECIAL_TOKENS` as specials.

    Byte-level, so any text round-trips (unseen characters fall back to bytes). Deterministic for the
    same texts and size. Used by the offline `tiny-toolscale` preset, whose model has this vocab size.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(CHAT_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(list(texts), trainer=trainer)
    return ChatTokenizer(tk)


def _message_text(m: dict[str, Any]) -> tuple[str, str]:
    role, content = m.get("role", "user"), m.get("content") or ""
    if role == "tool":  # Qwen3 chat template: tool results are a user turn with <tool_response> blocks
        return "user", f"<tool_response>\n{content}\n</tool_response>"
    return role, content


def render_messages(messages: Sequence[dict[str, Any]], *, add_generation_prompt: bool = True,
                    after_assistant: bool = False) -> str:
    """ChatML text of environment messages (Qwen3's format): ``<|im_start|>role\\ncontent<|im_end|>\\n``.

    after_assistant: the block follows a sampled assistant turn, which ended on ``<|im_end|>``; the
    newline that the template puts after it starts this block. add_generation_prompt: end with the next
    ``<|im_start|>assistant\\n`` header.
    """
    parts = ["\n"] if after_assistant else []
    for m in messages:
        role, content = _message_text(m)
        parts.append(f"{IM_START}{role}\n{content}{IM_END}\n")
    if add_generation_prompt:
        parts.append(f"{IM_START}assistant\n")
    return "".join(parts)


# ----------------------------------------------------------------------------------------------------------
# Trajectories
# ----------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Trajectory:
    """One episode as the trainer sees it.

    tokens: int ids of the whole conversation; loss_mask: 1.0 on tokens the policy sampled (and that
    are kept), else 0.0; sampler_logp: the sampler's log-prob of each sampled token (0.0 elsewhere);
    all three of equal length. info: the env's last info (reward_vector, outcome, cost, latency, tool
    calls, parse errors...). turns: assistant turns; invalid_turns: of those, not a valid action;
    cut: ended by the token limit (whole loss mask zeroed); terminated: the env ended the episode
    itself (a valid answer); group: index of the task group; task_id.
    """

    tokens: list[int]
    loss_mask: list[float]
    sampler_logp: list[float]
    info: dict[str, Any]
    turns: int = 0
    invalid_turns: int = 0
    cut: bool = False
    terminated: bool = False
    truncated: bool = False
    group: int = 0
    task_id: Any = None
    texts: list[str] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def outcome(self) -> float:
        return float(self.info.get("outcome", 0.0))

    @property
    def solved(self) -> bool:
        return bool(self.info.get("solved", False))

    @property
    def cost_usd(self) -> float:
        return float(self.info.get("episode_cost_usd", 0.0))

    @property
    def latency_s(self) -> float:
        return float(self.info.get("episode_latency_s", 0.0))


@dataclasses.dataclass
class RolloutStats:
    """Counts of one collection: episodes, turns, invalid turns, cut episodes, env errors."""

    episodes: int = 0
    turns: int = 0
    invalid_turns: int = 0
    cut: int = 0
    generated_tokens: int = 0


def trajectory_from_turns(prompt_ids: list[int], turns: Sequence[tuple[list[int], list[float], list[int]]],
                          *, cut: bool = False, invalid: Sequence[bool] = ()) -> tuple[list[int], list[float], list[float]]:
    """Assemble (tokens, loss_mask, sampler_logp) from a prompt and (sampled ids, log-probs, env ids) turns.

    Masks follow the segment lengths: sampled ids get 1 (0 if that turn is `invalid`), env ids 0; a
    `cut` trajectory gets an all-zero mask.
    """
    tokens, mask, logp = list(prompt_ids), [0.0] * len(prompt_ids), [0.0] * len(prompt_ids)
    for i, (ids, lps, env_ids) in enumerate(turns):
        if len(ids) != len(lps):
            raise ValueError(f"turn {i}: {len(ids)} ids but {len(lps)} log-probs")
        keep = 0.0 if (cut or (i < len(invalid) and invalid[i])) else 1.0
        tokens += ids
        mask += [keep] * len(ids)
        logp += [float(x) for x in lps]
        tokens += env_ids
        mask += [0.0] * len(env_ids)
        logp += [0.0] * len(env_ids)
    return tokens, mask, logp


def _unfinished_vector(info: dict[str, Any], names: list[str]) -> np.ndarray:
    """Reward vector of an episode stopped by the token limit: outcome 0, its calls, cost, latency so far."""
    calls = info.get("tool_calls", {})
    counts = [float(calls.get(n.split("/", 1)[1], 0.0)) for n in names if n.startswith("calls/")]
    return np.array(counts + [0.0, -float(info.get("episode_cost_usd", 0.0)),
                              -float(info.get("episode_latency_s", 0.0))], np.float64)


def _fits(sampler: Any, state: Any, appended: Sequence[Sequence[int]], max_new_tokens: int) -> bool:
    """Whether the next block + a full turn fit the sampler's cache. The rows share cache slots and every
    block is padded to a power of two, so the cache fills faster than the longest row grows."""
    cache, cap = getattr(state, "cache", None), getattr(sampler, "max_cache_len", None)
    if cache is None or cap is None:
        return True
    longest = max((len(a) for a in appended), default=0) + max((len(p) for p in getattr(state, "pending", [])), default=0)
    width = max(16, 1 << max(0, longest - 1).bit_length()) if longest else 0
    return int(cache.slot) + min(width, max(longest, 0) if int(cache.slot) + width > cap else width) + max_new_tokens <= cap


def collect_rollouts(
    sampler: Any,
    tokenizer: ChatTokenizer,
    envs: Sequence[Any],
    task_options: Sequence[dict[str, Any]],
    *,
    rollouts_per_task: int,
    seed: int,
    max_new_tokens: int,
    max_seq_len: int,
    temperature: float = 1.0,
    max_turns: int = 50,
    executor: ThreadPoolExecutor | None = None,
    drop_invalid_turns: bool = True,
    keep_texts: bool = False,
) -> tuple[list[Trajectory], RolloutStats]:
    """Run N = len(task_options) groups of G = rollouts_per_task episodes as one batch.

    Args:
      sampler: `orchestra_jax.sampler.Sampler` (or any object with the same prefill / generate / extend).
      tokenizer: `ChatTokenizer` (encode, decode, eos_ids).
      envs: N x G gymnasium envs (reused; each is reset here).
      task_options: per group, the `reset` options shared by its G episodes (task_id, preference,
        tools...); a group without task_id gets the task the first env draws from its seed.
      seed: base of the env seeds and the sampler's PRNG (same seed -> same rollouts).
      max_new_tokens: per assistant turn; max_seq_len: per trajectory (prompt + all turns).
      max_turns: assistant turns per episode (the env's own limit may be lower).

    Returns:
      (trajectories in row order: group-major, G per group; RolloutStats).
    """
    g = int(rollouts_per_task)
    n = len(task_options)
    if len(envs) != n * g:
        raise ValueError(f"need {n} x {g} = {n * g} envs, got {len(envs)}")
    own_pool = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=min(16, n * g))
    try:
        # ---- reset: the group's first env picks the task; the others get the same task_id/options
        opts: list[dict[str, Any]] = []
        for i in range(n):
            o = dict(task_options[i])
            if o.get("task_id") is None:
                _, info0 = envs[i * g].reset(seed=int(seed) * 1000 + i, options={k: v for k, v in o.items() if k != "task_id"})
                if "task_id" in info0:
                    o["task_id"] = info0["task_id"]
            opts.append(o)

        def do_reset(r):
            i = r // g
            return envs[r].reset(seed=int(seed) * 1000 + i, options=opts[i])

        resets = list(pool.map(do_reset, range(n * g)))
        infos: list[dict[str, Any]] = [inf for _, inf in resets]
        prompts = [tokenizer.encode(render_messages(inf.get("new_messages", []))) for inf in infos]
        for r, p in enumerate(prompts):
            if len(p) + max_new_tokens > max_seq_len:
                raise ValueError(f"prompt of row {r} has {len(p)} tokens; max_seq_len={max_seq_len} leaves no room "
                                 f"for max_new_tokens={max_new_tokens}: raise max_seq_len or shorten the prompt")
        turns: list[list[tuple[list[int], list[float], list[int]]]] = [[] for _ in range(n * g)]
        invalid: list[list[bool]] = [[] for _ in range(n * g)]
        texts: list[list[str]] = [[] for _ in range(n * g)]
        length = [len(p) for p in prompts]
        active = [True] * (n * g)
        cut = [False] * (n * g)
        term = [False] * (n * g)
        trunc = [False] * (n * g)
        stats = RolloutStats(episodes=n * g)
        state = sampler.prefill(prompts)
        for turn in range(max_turns):
            if not any(active):
                break
            state, out = sampler.generate(
                state, max_new_tokens=max_new_tokens, temperature=temperature,
                rng=int(seed) * 100_003 + turn, active=list(active),
            )
            step_rows = []
            for r in range(n * g):
                if not active[r]:
                    continue
                ids, lps, reason = list(out.tokens[r]), list(out.logprobs[r]), out.finish_reasons[r]
                stats.generated_tokens += len(ids)
                stats.turns += 1
                length[r] += len(ids)
                finished = bool(ids) and ids[-1] in tokenizer.eos_ids  # ends on any EOS id (incl. the secondary)
                body = ids[:-1] if finished else ids
                text = tokenizer.decode(body)
                if keep_texts:
                    texts[r].append(text)
                turns[r].append((ids, lps, []))
                if not finished or reason in ("length", "cache_full"):
                    cut[r], active[r] = True, False  # token limit: no EOS; the whole sample leaves the loss
                    stats.cut += 1
                    stats.invalid_turns += 1  # an unfinished turn is not a valid action either
                    invalid[r].append(True)
                    continue
                bad = not parse_action(text).valid
                invalid[r].append(bad and drop_invalid_turns)
                stats.invalid_turns += int(bad)
                step_rows.append((r, text))

            results = list(pool.map(lambda rt: envs[rt[0]].step(rt[1]), step_rows))
            appended: list[list[int]] = [[] for _ in range(n * g)]
            for (r, _), (_, _, terminated, truncated, info) in zip(step_rows, results):
                infos[r] = info
                if terminated or truncated:
                    active[r] = False
                    term[r], trunc[r] = bool(terminated), bool(truncated)
                    continue
                new = [m for m in info.get("new_messages", []) if m.get("role") != "assistant"]
                env_ids = tokenizer.encode(render_messages(new, after_assistant=True))
                if length[r] + len(env_ids) + max_new_tokens > max_seq_len:
                    cut[r], active[r] = True, False  # the next turn would not fit: stop, out of the loss
                    stats.cut += 1
                    continue
                ids, lps, _ = turns[r][-1]
                turns[r][-1] = (ids, lps, env_ids)
                appended[r] = env_ids
                length[r] += len(env_ids)
            if any(active) and not _fits(sampler, state, appended, max_new_tokens):
                for r in range(n * g):  # the shared KV cache (with its padding slots) is full: stop the batch
                    if active[r]:
                        cut[r], active[r] = True, False
                        stats.cut += 1
            if any(active):
                state = sampler.extend(state, appended)
        for r in range(n * g):  # turn limit of the rollout reached while the env still runs
            if active[r]:
                cut[r] = True
                stats.cut += 1
    finally:
        if own_pool:
            pool.shutdown(wait=True)

    # ---- assemble
    names = next((list(inf["reward_vector_names"]) for inf in infos if "reward_vector_names" in inf), [])
    trajs = []
    for r in range(n * g):
        toks, mask, lp = trajectory_from_turns(prompts[r], turns[r], cut=cut[r], invalid=invalid[r])
        info = dict(infos[r])
        info.pop("new_messages", None)
        if "reward_vector" not in info and names:
            info["reward_vector"] = _unfinished_vector(info, names)
            info["outcome"], info["solved"] = 0.0, False
        trajs.append(Trajectory(
            tokens=toks, loss_mask=mask, sampler_logp=lp, info=info, turns=len(turns[r]),
            invalid_turns=int(sum(invalid[r])), cut=cut[r], terminated=term[r], truncated=trunc[r],
            group=r // g, task_id=opts[r // g].get("task_id"), texts=texts[r],
        ))
    return trajs, stats


def scripted_trajectory(env: Any, tokenizer: ChatTokenizer, agent: Any, *, seed: int,
                        options: dict[str, Any] | None = None, max_turns: int = 50) -> Trajectory:
    """Play an `orchestra_gym.agents` agent (e.g. the oracle: golden actions) and tokenize the episode
    exactly as `collect_rollouts` does: the agent's text + ``<|im_end|>`` is the assistant turn (mask 1),
    environment blocks mask 0. Used for the supervised warm start and to check the format."""
    obs, info = env.reset(seed=seed, options=options or {})
    agent.reset(env, obs, info)
    task_id = info.get("task_id")
    prompt = tokenizer.encode(render_messages(info.get("new_messages", [])))
    turns, texts, term, trunc = [], [], False, False
    for _ in range(max_turns):
        text = agent.act(obs, info)
        ids = tokenizer.encode(text) + [tokenizer.im_end_id]
        obs, _, term, trunc, info = env.step(text)
        texts.append(text)
        env_ids: list[int] = []
        if not (term or trunc):
            new = [m for m in info.get("new_messages", []) if m.get("role") != "assistant"]
            env_ids = tokenizer.encode(render_messages(new, after_assistant=True))
        turns.append((ids, [0.0] * len(ids), env_ids))
        if term or trunc:
            break
    toks, mask, lp = trajectory_from_turns(prompt, turns)
    info = dict(info)
    info.pop("new_messages", None)
    return Trajectory(tokens=toks, loss_mask=mask, sampler_logp=lp, info=info, turns=len(turns),
                      terminated=bool(term), truncated=bool(trunc), cut=not (term or trunc),
                      task_id=task_id, texts=texts)


# ----------------------------------------------------------------------------------------------------------
# Rewards and the trainer batch
# ----------------------------------------------------------------------------------------------------------


def group_rewards(trajs: Sequence[Trajectory], rollouts_per_task: int, preference: np.ndarray | None,
                  kind: str = "preference") -> np.ndarray:
    """Rewards [N, G]: the paper's preference reward per group (`orchestra_gym.rewards.
    group_preference_rewards`) or the outcome. preference: float [K] in reward-vector order."""
    from orchestra_gym.rewards import group_preference_rewards

    g = int(rollouts_per_task)
    if len(trajs) % g:
        raise ValueError(f"{len(trajs)} trajectories are not a multiple of rollouts_per_task={g}")
    n = len(trajs) // g
    out = np.zeros((n, g), np.float64)
    for i in range(n):
        grp = trajs[i * g:(i + 1) * g]
        if kind == "outcome":
            out[i] = [t.outcome for t in grp]
            continue
        if preference is None:
            raise ValueError("kind='preference' needs the preference vector")
        solved = np.array([t.solved for t in grp], bool)
        if not solved.any():  # paper Sec. 3.2: R = 0 for unsolved rollouts; such a group may hold
            continue  # episodes that never finished and so carry no reward vector at all
        vecs = np.stack([np.asarray(t.info["reward_vector"], np.float64) for t in grp])
        out[i] = group_preference_rewards(vecs, solved, np.asarray(preference, np.float64))
    return out


def to_batch(trajs: Sequence[Trajectory], advantages: np.ndarray | None = None, *, pad_to: int | None = None,
             multiple: int = 64) -> dict[str, np.ndarray]:
    """Right-padded trainer batch ([B, T] arrays; see `orchestra_jax.train`).

    attention_mask comes from the lengths (1 for the first len(tokens) positions); loss_mask and
    sampler_logp are the trajectories' own, 0 in the padding. T = pad_to, or the longest trajectory
    rounded up to `multiple`, or (multiple=0) to a power of two (few distinct shapes, few compilations).
    The pad id written is 0.

    Raises: ValueError if a trajectory is longer than pad_to.
    """
    b = len(trajs)
    longest = max(len(t) for t in trajs)
    if pad_to is not None:
        t_len = pad_to
    elif multiple == 0:  # power-of-two buckets (>= 64): at most log2(T) shapes, so few compilations
        t_len = max(64, 1 << (longest - 1).bit_length())
    else:
        t_len = -(-longest // multiple) * multiple
    if longest > t_len:
        raise ValueError(f"a trajectory has {longest} tokens > pad_to={t_len}")
    tokens = np.zeros((b, t_len), np.int32)
    am = np.zeros((b, t_len), np.int32)
    lm = np.zeros((b, t_len), np.float32)
    slp = np.zeros((b, t_len), np.float32)
    for i, t in enumerate(trajs):
        n = len(t.tokens)
        if not (len(t.loss_mask) == len(t.sampler_logp) == n):
            raise ValueError(f"trajectory {i}: tokens/loss_mask/sampler_logp lengths differ")
        tokens[i, :n] = t.tokens
        am[i, :n] = 1
        lm[i, :n] = t.loss_mask
        slp[i, :n] = t.sampler_logp
    adv = np.zeros(b, np.float32) if advantages is None else np.asarray(advantages, np.float32).reshape(b)
    return {"tokens": tokens, "attention_mask": am, "loss_mask": lm, "sampler_logp": slp, "advantages": adv}
