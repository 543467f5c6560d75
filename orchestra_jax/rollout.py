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

Each row is an `Episode` (fed a sampled turn, then the environment's reply; or cut with a reason). A
turn cut by the token limit (no EOS) ends the episode and zeroes the trajectory's whole loss mask;
a turn whose text is not a valid action (`orchestra_gym.parsing.parse_action(...).valid` is False) gets
mask 0 for its tokens (the paper's filter) and is counted.

The environment is used only through the Gymnasium API (`reset`, `step`, `info`) plus
`orchestra_gym.parsing`; the chat stack is `orchestra_jax.tokenizer`. Rewards and the trainer batch
are built from the trajectories by `orchestra_jax.batch`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from orchestra_gym.evaluation.episode import env_seed
from orchestra_jax.slots import slot_engine
from orchestra_jax.tokenizer import ChatTokenizer
from orchestra_jax.train_sections import ROLLOUT_ENGINES
from orchestra_jax.trajectory import (
    CUT_REASONS,
    Episode,
    RolloutStats,
    Trajectory,
    ended_info,
    env_reply_ids,
    trajectory_from_turns,
)

__all__ = [
    "Trajectory",
    "RolloutStats",
    "Episode",
    "CUT_REASONS",
    "collect_rollouts",
    "trajectory_from_turns",
    "scripted_trajectory",
    "guided_rollouts",
    "env_reply_ids",
    "ended_info",
    "ENGINES",
]


ENGINES = ROLLOUT_ENGINES  # the engines of `collect_rollouts` (`TrainConfig.rollout.engine`)


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
    top_k: int = 0,
    top_p: float = 1.0,
    max_turns: int = 50,
    executor: ThreadPoolExecutor | None = None,
    drop_invalid_turns: bool = True,
    keep_texts: bool = False,
    overlap_tools: bool = False,
    cohorts: int = 2,
    engine: str = "lockstep",
    slots: int = 0,
) -> tuple[list[Trajectory], RolloutStats]:
    """Run N = len(task_options) groups of G = rollouts_per_task episodes as one batch.

    Reset (the group's first env picks the task), then per turn: generate for the active rows, step
    their envs with the texts (concurrently), feed the replies to the sampler; finally assemble the
    trajectories.

    Args:
      sampler: `orchestra_jax.sampler.Sampler` (or any object with the same prefill / generate / extend /
        has_room).
      tokenizer: `ChatTokenizer` (encode, decode, eos_ids).
      envs: N x G gymnasium envs (reused; each is reset here).
      task_options: per group, the `reset` options shared by its G episodes (task_id, preference,
        tools...); a group without task_id gets the task the first env draws from its seed.
      seed: base of the env seeds and the sampler's PRNG (same seed -> same rollouts).
      max_new_tokens: per assistant turn; max_seq_len: per trajectory (prompt + all turns).
      temperature, top_k, top_p: the sampler's decoding (`orchestra_jax.sampler.Sampler.generate`; top_k 0
        and top_p 1 sample the full distribution, as GRPO needs).
      max_turns: assistant turns per episode (the env's own limit may be lower).
      overlap_tools: False: the lockstep batch above (every row generates, then every env steps). True
        (`TrainConfig.rollout.overlap_tools`): the rows are dealt into `cohorts` cohorts (row r to cohort
        r % cohorts), each with its own sampler state; they take turns: a cohort generates its turn and
        submits its env steps to the pool, then the next cohort collects its env replies (submitted one
        round before), extends and generates while the first one's tool calls run. The order of sampler
        calls is fixed (it never depends on which call finishes first), and row r samples its turn t with
        ``row_rng=(r, t)`` (`Sampler.generate`), so the rollouts are deterministic for a seed; they are
        not the lockstep ones (other keys, other batches). Episodes of a group may end on different rounds.
      cohorts: with overlap_tools, how many cohorts (>= 2; capped at the number of rows).
      engine: "lockstep" (the batch above, or the cohorts of overlap_tools) or "continuous"
        (`TrainConfig.rollout.engine`; `_continuous`): `slots` decode slots of a `orchestra_jax.slots.SlotSampler`
        (`orchestra_jax.slots.slot_engine`), each refilled with the next episode's turn as soon as its own ends; an episode's
        env step runs in the pool while the other slots decode. Row r samples its turn t with the keys of
        ``(r, t)``, as overlap_tools, so a row's tokens do not depend on the slot count; the schedule depends on
        the episodes only (deterministic for a seed). Needs a `Sampler` (not a duck-typed one).
      slots: with engine "continuous", how many slots (0 = one per row; capped at the number of rows).

    Returns:
      (trajectories in row order: group-major, G per group; RolloutStats).

    Raises:
      ValueError: len(envs) != N x G, a prompt leaves no room for max_new_tokens within max_seq_len, an unknown
        engine, slots < 0, or engine "continuous" with overlap_tools.
    """
    g = int(rollouts_per_task)
    n = len(task_options)
    if len(envs) != n * g:
        raise ValueError(f"need {n} x {g} = {n * g} envs, got {len(envs)}")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if slots < 0 or (engine == "continuous" and overlap_tools):
        raise ValueError(f"slots must be >= 0 (got {slots}) and engine 'continuous' excludes overlap_tools")
    own_pool = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=min(16, n * g))
    try:
        # ---- reset
        opts = _group_options(envs, task_options, g, seed)
        resets = list(pool.map(lambda r: envs[r].reset(seed=env_seed(seed, r // g), options=opts[r // g]),
                               range(n * g)))
        episodes = [Episode(tokenizer.encode(tokenizer.render_messages(info.get("new_messages", []))), info)
                    for _, info in resets]
        for r, ep in enumerate(episodes):
            if ep.length + max_new_tokens > max_seq_len:
                raise ValueError(f"prompt of row {r} has {ep.length} tokens; max_seq_len={max_seq_len} leaves no room "
                                 f"for max_new_tokens={max_new_tokens}: raise max_seq_len or shorten the prompt")
        if engine == "continuous":
            eng = slot_engine(sampler, min(slots or n * g, n * g), min(sampler.max_cache_len, max_seq_len))
            before = (eng.slot_steps, eng.busy_slot_steps)
            reprefills = _continuous(eng, tokenizer, envs, episodes, pool, seed=seed, max_turns=max_turns,
                                     max_new_tokens=max_new_tokens, max_seq_len=max_seq_len,
                                     drop_invalid=drop_invalid_turns, keep_texts=keep_texts,
                                     decoding=dict(temperature=temperature, top_k=top_k, top_p=top_p))
            trajs, stats = _assemble(episodes, envs, opts, g)
            stats.slot_steps, stats.busy_slot_steps = eng.slot_steps - before[0], eng.busy_slot_steps - before[1]
            stats.reprefills = reprefills
            return trajs, stats
        if overlap_tools:
            _overlapped(sampler, tokenizer, envs, episodes, pool, cohorts=cohorts, seed=seed, max_turns=max_turns,
                        max_new_tokens=max_new_tokens, max_seq_len=max_seq_len, drop_invalid=drop_invalid_turns,
                        keep_texts=keep_texts, decoding=dict(temperature=temperature, top_k=top_k, top_p=top_p))
            return _assemble(episodes, envs, opts, g)
        state = sampler.prefill([ep.prompt for ep in episodes])
        for turn in range(max_turns):
            if not any(ep.active for ep in episodes):
                break
            # ---- generate
            state, out = sampler.generate(
                state, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                rng=int(seed) * 100_003 + turn, active=[ep.active for ep in episodes],
            )
            actions = _feed_generated(episodes, out, tokenizer, drop_invalid_turns, keep_texts)
            # ---- step
            results = list(pool.map(lambda rt: envs[rt[0]].step(rt[1]), actions))
            appended: list[list[int]] = [[] for _ in episodes]
            for (r, _), (_, _, terminated, truncated, info) in zip(actions, results):
                appended[r] = episodes[r].feed_reply(info, terminated, truncated, tokenizer,
                                                     max_new_tokens=max_new_tokens, max_seq_len=max_seq_len)
            _cut_when_full(sampler, state, episodes, appended, max_new_tokens)
            if any(ep.active for ep in episodes):
                state = sampler.extend(state, appended)
        for ep in episodes:  # turn limit of the rollout reached while the env still runs
            if ep.active:
                ep.cut("max_turns")
    finally:
        if own_pool:
            pool.shutdown(wait=True)

    return _assemble(episodes, envs, opts, g)


def _assemble(episodes: list[Episode], envs: Sequence[Any], opts: list[dict[str, Any]],
              g: int) -> tuple[list[Trajectory], RolloutStats]:
    """The finished episodes (group-major rows, G per group; row r played on envs[r]) as trajectories,
    and their counts."""
    n = len(opts)
    trajs = [ep.trajectory(r // g, opts[r // g].get("task_id"), envs[r]) for r, ep in enumerate(episodes)]
    stats = RolloutStats(
        episodes=n * g, turns=sum(len(ep.turns) for ep in episodes),
        invalid_turns=sum(ep.bad_turns for ep in episodes), cut=sum(ep.cut_reason is not None for ep in episodes),
        generated_tokens=sum(len(ids) for ep in episodes for ids, _, _ in ep.turns),
    )
    return trajs, stats


def _feed_generated(episodes: Sequence[Episode], out: Any, tokenizer: ChatTokenizer, drop_invalid: bool,
                    keep_texts: bool) -> list[tuple[int, str]]:
    """Feed a `generate` call's turns (`GenerationOutput`, rows as `episodes`) to the active episodes;
    returns (row, text) of each turn to step its env with (an episode cut by the token limit gets none)."""
    actions = []
    for r, ep in enumerate(episodes):
        if ep.active:
            text = ep.feed_turn(list(out.tokens[r]), list(out.logprobs[r]), out.finish_reasons[r], tokenizer,
                                drop_invalid=drop_invalid, keep_text=keep_texts)
            if text is not None:
                actions.append((r, text))
    return actions


def _cut_when_full(sampler: Any, state: Any, episodes: Sequence[Episode], appended: Sequence[list[int]],
                   max_new_tokens: int) -> None:
    """Cut the active rows of a batch ("cache_full") when its shared KV cache (with its padding slots) has
    no room for `appended` and a full next turn (`Sampler.has_room`)."""
    if any(ep.active for ep in episodes) and not sampler.has_room(state, appended, max_new_tokens):
        for ep in episodes:
            if ep.active:
                ep.cut("cache_full")


def _overlapped(sampler: Any, tokenizer: ChatTokenizer, envs: Sequence[Any], episodes: list[Episode],
                pool: ThreadPoolExecutor, *, cohorts: int, seed: int, max_turns: int, max_new_tokens: int,
                max_seq_len: int, drop_invalid: bool, keep_texts: bool, decoding: dict[str, Any]) -> None:
    """Run `episodes` (reset, not yet prefilled) to their end with the env steps of one cohort overlapped
    with the decoding of the others (`collect_rollouts` overlap_tools=True). Updates the episodes in place.

    Per round, for each cohort c in order: wait for c's env steps of the previous round (futures), feed the
    replies, cut its rows when its cache is full or max_turns is reached, extend; then, if rows are still
    active, generate c's next turn and submit its env steps to `pool` without waiting. The sequence of
    sampler calls depends on the episodes only, never on timing.
    """
    if cohorts < 2:
        raise ValueError(f"overlap_tools needs cohorts >= 2, got {cohorts}")
    k = min(int(cohorts), len(episodes))
    rows = [list(range(c, len(episodes), k)) for c in range(k)]
    states = [sampler.prefill([episodes[r].prompt for r in rs]) for rs in rows]
    pending: list[list[tuple[int, Any]] | None] = [None] * k  # per cohort: (index in cohort, future of env.step)
    turns = [0] * k
    while True:
        progressed = False
        for c, rs in enumerate(rows):
            eps = [episodes[r] for r in rs]
            if pending[c] is not None:
                appended: list[list[int]] = [[] for _ in rs]
                for j, fut in pending[c]:
                    _, _, terminated, truncated, info = fut.result()
                    appended[j] = eps[j].feed_reply(info, terminated, truncated, tokenizer,
                                                    max_new_tokens=max_new_tokens, max_seq_len=max_seq_len)
                pending[c] = None
                _cut_when_full(sampler, states[c], eps, appended, max_new_tokens)
                for ep in eps:  # turn limit of the rollout reached while the env still runs
                    if ep.active and turns[c] >= max_turns:
                        ep.cut("max_turns")
                if any(ep.active for ep in eps):
                    states[c] = sampler.extend(states[c], appended)
            if not any(ep.active for ep in eps):
                continue
            progressed = True
            states[c], out = sampler.generate(states[c], max_new_tokens=max_new_tokens, rng=int(seed) * 100_003,
                                              row_rng=[(r, turns[c]) for r in rs],
                                              active=[ep.active for ep in eps], **decoding)
            turns[c] += 1
            pending[c] = [(j, pool.submit(envs[rs[j]].step, text))
                          for j, text in _feed_generated(eps, out, tokenizer, drop_invalid, keep_texts)]
        if not progressed and all(p is None for p in pending):
            return


def _continuous(eng: Any, tokenizer: ChatTokenizer, envs: Sequence[Any], episodes: list[Episode],
                pool: ThreadPoolExecutor, *, seed: int, max_turns: int, max_new_tokens: int, max_seq_len: int,
                drop_invalid: bool, keep_texts: bool, decoding: dict[str, Any], tool_lag: int = 1) -> int:
    """Run `episodes` (reset, not yet fed) to their end on the slots of `eng` (`orchestra_jax.slots.SlotSampler`;
    `collect_rollouts` engine="continuous"). Updates the episodes in place; returns the number of re-prefills.

    Host loop, per iteration i (one `SlotSampler.step`: a prefill block, then up to `chunk` decode steps):
      1. assign the episodes ready for a turn (in the order they became ready; at first the rows in order) to
         free slots: an episode whose conversation is still in the slot it last used takes that slot and feeds
         only the env's reply; otherwise it takes the free slot that holds no conversation, else the one of an
         ended episode, else the one of an episode waiting on its tools (which then loses its KV), lowest slot
         first, and the whole conversation so far is fed again (re-prefilled) after a reset;
      2. step the engine (while an episode waits for a slot, its decoding stops at the first turn that ends:
         on the tiny preset this idled fewer slot-steps than stopping after a quarter of the slots, 0.48-0.49
         against 0.52-0.68 with 16 slots); each turn that ended is fed to its episode and, when the episode goes on, its env step is
         submitted to `pool` at once while the other slots keep decoding;
      3. collect the env replies due at iteration i: a step submitted at iteration j is collected at
         j + `tool_lag` (waiting for it if it has not finished), in (due iteration, row) order; when no slot is
         busy and no episode is ready, the clock jumps to the next due iteration.
    The schedule therefore depends on the episodes only, never on how long a tool call takes, so the rollouts
    are deterministic for a seed. Row r's turn t draws with the keys of (r, t) (`SlotSampler.start`).
    Cuts: "max_turns" after the max_turns-th turn, "cache_full" when the conversation and a full turn pass the
    slot's capacity, and `Episode.feed_turn` / `Episode.feed_reply`'s own ("max_new_tokens", "max_seq_len").
    """
    s_n = eng.slots
    owner = [-1] * s_n  # the row whose conversation slot s holds (-1: none)
    holder = [-1] * len(episodes)  # the slot holding row r's conversation (-1: none)
    reply: list[list[int]] = [[] for _ in episodes]  # tokens of row r not yet in its slot (the env's reply)
    ready = list(range(len(episodes)))
    due: list[tuple[int, int, Any]] = []  # (iteration, row, future of env.step)
    it = 0
    rng = int(seed) * 100_003  # as _overlapped: row r's turn t draws as Sampler.generate(row_rng=[(r, t)])
    reprefills = 0
    while ready or due or eng.any_busy():
        free = [s for s in range(s_n) if not eng.busy(s)]
        while ready and free:
            r = ready.pop(0)
            ep = episodes[r]
            s = holder[r] if holder[r] in free else None
            if s is None:
                s = min(free, key=lambda x: (owner[x] >= 0, owner[x] >= 0 and episodes[owner[x]].active, x))
                if owner[s] >= 0:
                    holder[owner[s]] = -1
                block, reset = trajectory_from_turns(ep.prompt, ep.turns)[0], True
                reprefills += bool(ep.turns)
            else:
                block, reset = reply[r], False
            if not eng.room(s, len(block), reset, max_new_tokens):
                ep.cut("cache_full")
                continue
            free.remove(s)
            owner[s], holder[r], reply[r] = r, s, []
            eng.start(s, block, reset=reset, row_key=(r, len(ep.turns)))
        for fin in eng.step(max_new_tokens, rng=rng, refill_at=int(bool(ready)), **decoding):
            r = owner[fin.slot]
            text = episodes[r].feed_turn(fin.tokens, fin.logprobs, fin.finish_reason, tokenizer,
                                         drop_invalid=drop_invalid, keep_text=keep_texts)
            if text is not None:
                due.append((it + tool_lag, r, pool.submit(envs[r].step, text)))
        if due and not ready and not eng.any_busy():
            it = max(it, min(d for d, _, _ in due))
        now = sorted((d, r) for d, r, _ in due if d <= it)
        futures = {r: f for d, r, f in due if d <= it}
        due = [x for x in due if x[0] > it]
        for _, r in now:
            ep = episodes[r]
            _, _, terminated, truncated, info = futures[r].result()
            reply[r] = ep.feed_reply(info, terminated, truncated, tokenizer, max_new_tokens=max_new_tokens,
                                     max_seq_len=max_seq_len)
            if ep.active and len(ep.turns) >= max_turns:
                ep.cut("max_turns")  # turn limit of the rollout reached while the env still runs
            if ep.active:
                ready.append(r)
        it += 1
    return reprefills


def _group_options(envs: Sequence[Any], task_options: Sequence[dict[str, Any]], g: int,
                   seed: int) -> list[dict[str, Any]]:
    """Per group, the reset options of its G episodes: a group without task_id gets the task its first
    env draws from the group's seed."""
    opts: list[dict[str, Any]] = []
    for i, given in enumerate(task_options):
        o = dict(given)
        if o.get("task_id") is None:
            _, info0 = envs[i * g].reset(seed=env_seed(seed, i), options={k: v for k, v in o.items() if k != "task_id"})
            if "task_id" in info0:
                o["task_id"] = info0["task_id"]
        opts.append(o)
    return opts


def scripted_trajectory(env: Any, tokenizer: ChatTokenizer, agent: Any, *, seed: int,
                        options: dict[str, Any] | None = None, max_turns: int = 50) -> Trajectory:
    """Play an `orchestra_gym.agents` agent (e.g. the oracle: golden actions) and tokenize the episode
    exactly as `collect_rollouts` does: the agent's text + ``<|im_end|>`` is the assistant turn (mask 1),
    environment blocks mask 0. Used for the supervised warm start and to check the format."""
    obs, info = env.reset(seed=seed, options=options or {})
    agent.reset(env, obs, info)
    task_id = info.get("task_id")
    prompt = tokenizer.encode(tokenizer.render_messages(info.get("new_messages", [])))
    turns, texts, term, trunc = [], [], False, False
    for _ in range(max_turns):
        text = agent.act(obs, info)
        ids = tokenizer.encode(text) + [tokenizer.im_end_id]
        obs, _, term, trunc, info = env.step(text)
        texts.append(text)
        env_ids = [] if (term or trunc) else env_reply_ids(tokenizer, info)
        turns.append((ids, [0.0] * len(ids), env_ids))
        if term or trunc:
            break
    toks, mask, lp = trajectory_from_turns(prompt, turns)
    return Trajectory(tokens=toks, loss_mask=mask, sampler_logp=lp, info=ended_info(env, info), turns=len(turns),
                      terminated=bool(term), truncated=bool(trunc), cut=not (term or trunc),
                      cut_reason=None if (term or trunc) else "max_turns",
                      task_id=task_id, texts=texts)


def guided_rollouts(envs: Sequence[Any], tokenizer: ChatTokenizer, agents: Sequence[Any],
                    task_options: Sequence[dict[str, Any]], *, seed: int, max_turns: int, max_seq_len: int,
                    executor: ThreadPoolExecutor | None = None) -> list[Trajectory]:
    """The guided rollouts of a step (`orchestra_jax.train_config.TrainConfig.rollout.guide_experts`): for each
    group i, one `scripted_trajectory` of every agent in `agents` on the group's task.

    Each episode resets with the seed that `collect_rollouts` gives group i's sampled rollouts
    (`orchestra_gym.evaluation.env_seed`: ``seed * 1000 + i``) and the group's options (task_id included), so the guided and the sampled
    episodes of a group see the same task and the same environment draws. The loss mask covers the
    agent's tokens; sampler_logp is 0 (the trainer fills in the policy's own log-probs). A trajectory
    longer than `max_seq_len` tokens is cut (loss mask 0, cut_reason "max_seq_len"), as a sampled one.

    Args:
      envs: N x K gymnasium envs (reused; each is reset here), K = len(agents).
      agents: K agents (``reset(env, observation, info)`` / ``act(observation, info) -> str``); the same
        agent objects serve every group, one env each.
      task_options: per group, the reset options with its ``task_id`` (as `collect_rollouts` chose it).
      seed: the step's seed, as passed to `collect_rollouts`.

    Returns: N x K trajectories, group-major (group i's are rows i*K .. i*K + K - 1), ``group`` = i.
    Raises: ValueError when len(envs) != N x K or a group's options lack a task_id.
    """
    n, k = len(task_options), len(agents)
    if len(envs) != n * k:
        raise ValueError(f"need {n} x {k} = {n * k} envs, got {len(envs)}")
    for i, o in enumerate(task_options):
        if o.get("task_id") is None:
            raise ValueError(f"group {i}: guided rollouts need the group's task_id in its options (use the ones "
                             "collect_rollouts chose: Trajectory.task_id)")

    def play(r: int) -> Trajectory:
        i, j = divmod(r, k)
        t = scripted_trajectory(envs[r], tokenizer, agents[j], seed=env_seed(seed, i), options=task_options[i],
                                max_turns=max_turns)
        t.group, t.guided = i, True
        if len(t) > max_seq_len:
            t.loss_mask = [0.0] * len(t)
            t.cut, t.cut_reason = True, "max_seq_len"
        return t

    # agents keep per-episode state (reset / act), so rows of one agent run one after another
    if executor is None:
        return [play(r) for r in range(n * k)]
    columns = list(executor.map(lambda j: [play(i * k + j) for i in range(n)], range(k)))
    return [columns[j][i] for i in range(n) for j in range(k)]
