"""One episode as the trainer sees it: `Trajectory` (token ids, loss mask, the sampler's log-probs, the env's last
info) and `Episode`, a row of a rollout batch while it runs; `trajectory_from_turns` assembles the token-in/token-out
sequence (masks from segment lengths, never from token values), `env_reply_ids` tokenizes the env's reply, and
`ended_info` gives an episode the rollout cut the end info the env would report (its reward vector so far through
`orchestra_gym.env.OrchestraEnv.reward_vector_so_far`). `orchestra_jax.rollout` drives the batches.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from orchestra_gym.evaluation.records import EpisodeResult
from orchestra_gym.parsing import parse_action
from orchestra_jax.tokenizer import ChatTokenizer

__all__ = ["Trajectory", "RolloutStats", "Episode", "CUT_REASONS", "trajectory_from_turns", "env_reply_ids",
           "ended_info"]


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
    cut: stopped before the env ended it (whole loss mask zeroed), cut_reason: why (`CUT_REASONS`);
    terminated: the env ended the episode itself; truncated: the env cut it (turn limit, malformed
    actions); `answered`: it ended with a graded outcome of valid actions (the paper's invalid-output
    filter keeps only these); group: index of the task group; task_id; guided: played by a guide
    (`guided_rollouts`), not sampled from the policy (off-policy in the loss).
    """

    tokens: list[int]
    loss_mask: list[float]
    sampler_logp: list[float]
    info: dict[str, Any]
    turns: int = 0
    invalid_turns: int = 0
    cut: bool = False
    cut_reason: str | None = None
    terminated: bool = False
    truncated: bool = False
    group: int = 0
    task_id: Any = None
    texts: list[str] = dataclasses.field(default_factory=list)
    guided: bool = False

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def outcome(self) -> float:
        return float(self.info.get("outcome", 0.0))

    @property
    def solved(self) -> bool:
        return bool(self.info.get("solved", False))

    @property
    def answered(self) -> bool:
        """Whether the episode ended with a graded outcome of the policy's valid actions: the env's
        ``info["answered"]`` (`orchestra_gym.env.OrchestraEnv`: terminated, or, in function-calling envs,
        a graded turn limit or error limit after a valid action, as tau2-bench scores both 0); False for an episode the trainer cut. Envs that do not report it:
        `terminated`."""
        if self.cut:
            return False
        return bool(self.info.get("answered", self.terminated))

    @property
    def cost_usd(self) -> float:
        return float(self.info.get("episode_cost_usd", 0.0))

    def episode(self, task_id: Any = None, seed: int = 0) -> EpisodeResult:
        """This trajectory as the evaluation's record of one played episode (`orchestra_gym.evaluation.EpisodeResult`,
        the metrics' input): its info (a rollout the trainer cut, which the env never ended, gets end reason
        ``"cut: <why>"``; its reward vector is already the unfinished one, `ended_info`), `task_id` (default
        `Trajectory.task_id`), trial 0, `seed`, and its assistant turns as steps."""
        info = dict(self.info)
        info.setdefault("end_reason", f"cut: {self.cut_reason}")
        return EpisodeResult(self.task_id if task_id is None else task_id, 0, seed, info, self.turns)

    @property
    def latency_s(self) -> float:
        return float(self.info.get("episode_latency_s", 0.0))


@dataclasses.dataclass
class RolloutStats:
    """Counts of one collection: episodes, turns, invalid turns, cut episodes, tokens generated; with the
    continuous engine also its slot-decode-steps (slots x decode steps), the busy ones (a slot decoding its own
    turn) and the re-prefills (a later turn fed from its whole conversation after its slot was given away);
    0 for the lockstep engine."""

    episodes: int = 0
    turns: int = 0
    invalid_turns: int = 0
    cut: int = 0
    generated_tokens: int = 0
    slot_steps: int = 0
    busy_slot_steps: int = 0
    reprefills: int = 0


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


def ended_info(env: Any, info: dict[str, Any]) -> dict[str, Any]:
    """The info a `Trajectory` keeps: the env's last `info` without ``new_messages``; an episode stopped
    before the env ended it (a token, cache or turn limit of the rollout) gets what the env reports at an
    end: ``reward_vector`` from `orchestra_gym.env.OrchestraEnv.reward_vector_so_far` (its calls, cost and
    latency so far, outcome 0), ``reward_vector_names`` and ``preference_weights`` from ``describe()``, and
    outcome 0, solved False. So every ended trajectory carries M and P (`orchestra_jax.batch.group_rewards`)."""
    info = dict(info)
    info.pop("new_messages", None)
    if "reward_vector" not in info:
        u = env.unwrapped
        d = u.describe()
        info.update(reward_vector=u.reward_vector_so_far(), reward_vector_names=d.reward_vector_names,
                    preference_weights=list(d.preference_weights), outcome=0.0, solved=False)
    return info


def env_reply_ids(tokenizer: ChatTokenizer, info: dict[str, Any]) -> list[int]:
    """Token ids of the environment's reply after a sampled assistant turn: the non-assistant
    ``info["new_messages"]`` as Qwen3's chat template renders them (`render_messages`: consecutive tool
    results in one user turn), starting with the newline after ``<|im_end|>`` and ending on the next
    assistant header. Loss mask 0."""
    new = [m for m in info.get("new_messages", []) if m.get("role") != "assistant"]
    return tokenizer.encode(tokenizer.render_messages(new, after_assistant=True))



# why an episode left the loss before the environment ended it (`Episode.cut`, `Trajectory.cut_reason`)
CUT_REASONS = ("max_new_tokens", "cache_full", "max_seq_len", "max_turns")


@dataclasses.dataclass
class Episode:
    """One row of a rollout batch while it runs: its tokens so far, flags and the env's last info.

    The rollout feeds it a sampled turn (`feed_turn`), then the environment's reply (`feed_reply`); or
    stops it (`cut`, with a reason from `CUT_REASONS`). A cut episode leaves the loss (its whole mask
    is zeroed in `trajectory`).

    Fields: prompt (token ids); info (the env's last info); turns ((sampled ids, log-probs, env reply
    ids) per assistant turn); invalid (per turn: its tokens leave the loss); bad_turns (turns that
    are not a valid action, counted whatever drop_invalid says); texts (decoded turns, when kept);
    length (tokens so far); active; cut_reason (None, or why it was cut); terminated / truncated
    (the env ended it).
    """

    prompt: list[int]
    info: dict[str, Any]
    turns: list[tuple[list[int], list[float], list[int]]] = dataclasses.field(default_factory=list)
    invalid: list[bool] = dataclasses.field(default_factory=list)
    bad_turns: int = 0
    texts: list[str] = dataclasses.field(default_factory=list)
    length: int = 0
    active: bool = True
    cut_reason: str | None = None
    terminated: bool = False
    truncated: bool = False

    def __post_init__(self) -> None:
        self.length = self.length or len(self.prompt)

    def cut(self, reason: str) -> None:
        """Stop the episode and take it out of the loss (reason: one of `CUT_REASONS`)."""
        self.cut_reason, self.active = reason, False

    def feed_turn(self, ids: list[int], logprobs: list[float], finish_reason: str, tokenizer: ChatTokenizer,
                  *, drop_invalid: bool, keep_text: bool) -> str | None:
        """Record a sampled assistant turn (EOS included). Returns its text (EOS stripped) to step the
        env with, or None when the turn has no EOS (cut by max_new_tokens or the full cache: the
        episode is cut). A text that is not a valid action (`orchestra_gym.parsing.parse_action`) is
        still returned (the env answers it with a parse error); its tokens leave the loss when
        drop_invalid."""
        self.length += len(ids)
        finished = bool(ids) and ids[-1] in tokenizer.eos_ids  # ends on any EOS id (incl. the secondary)
        text = tokenizer.decode(ids[:-1] if finished else ids)
        if keep_text:
            self.texts.append(text)
        self.turns.append((ids, logprobs, []))
        if not finished or finish_reason in ("length", "cache_full"):
            self.bad_turns += 1  # an unfinished turn is not a valid action either
            self.invalid.append(True)
            self.cut("cache_full" if finish_reason == "cache_full" else "max_new_tokens")
            return None
        bad = not parse_action(text).valid
        self.invalid.append(bad and drop_invalid)
        self.bad_turns += int(bad)
        return text

    def feed_reply(self, info: dict[str, Any], terminated: bool, truncated: bool, tokenizer: ChatTokenizer,
                   *, max_new_tokens: int, max_seq_len: int) -> list[int]:
        """Record the env's answer to the last turn. Returns the reply's token ids to feed the sampler
        (empty when the env ended the episode, or when the reply and a full next turn would pass
        max_seq_len: the episode is cut)."""
        self.info = info
        if terminated or truncated:
            self.active, self.terminated, self.truncated = False, bool(terminated), bool(truncated)
            return []
        env_ids = env_reply_ids(tokenizer, info)
        if self.length + len(env_ids) + max_new_tokens > max_seq_len:
            self.cut("max_seq_len")  # the next turn would not fit: stop, out of the loss
            return []
        ids, lps, _ = self.turns[-1]
        self.turns[-1] = (ids, lps, env_ids)
        self.length += len(env_ids)
        return env_ids

    def trajectory(self, group: int, task_id: Any, env: Any) -> Trajectory:
        """The finished episode as a `Trajectory`; `env` is the row's env, not stepped since the episode
        stopped (an episode the rollout cut gets its unfinished reward vector from it: `ended_info`)."""
        toks, mask, lp = trajectory_from_turns(self.prompt, self.turns, cut=self.cut_reason is not None,
                                               invalid=self.invalid)
        info = ended_info(env, self.info)
        return Trajectory(
            tokens=toks, loss_mask=mask, sampler_logp=lp, info=info, turns=len(self.turns),
            invalid_turns=int(sum(self.invalid)), cut=self.cut_reason is not None, cut_reason=self.cut_reason,
            terminated=self.terminated, truncated=self.truncated, group=group, task_id=task_id, texts=self.texts,
        )
