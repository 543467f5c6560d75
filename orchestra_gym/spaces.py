"""Gymnasium spaces that hold real text: prompts, transcripts and model outputs.

Gymnasium's own `gymnasium.spaces.Text` only contains strings over a finite character set
(by default ``[a-zA-Z0-9]``: no space, no newline, no punctuation), so a real prompt fails its
``contains`` and ``gymnasium.utils.env_checker.check_env`` rejects the environment. Listing all
of Unicode as a charset is not practical (1.1 million code points held in memory, and Text's
flattening and shared-memory code index into that set).

`TextSpace` instead contains *every* Python ``str`` whose length (in Unicode code points) lies
in ``[min_length, max_length]``, and samples seeded random text over a small mixed alphabet
(ASCII letters, digits, punctuation, space, newline, accented letters, CJK, emoji) so that
``action_space.sample()`` exercises an environment's handling of arbitrary text.

Action space of the orchestra environments: `text_action_space`, a `TextSpace` holding the
policy's raw output (thinking, ``<tool_call>`` blocks, ``<message>``; see
`orchestra_gym.parsing`). ``env.step`` also accepts structured actions (a call dict, a list of
calls, ``{"message": ...}``) for scripted agents and tests, but the *declared* action space is
text: it is what a language-model policy emits, ``sample()`` stays meaningful, and a single
declared type keeps vector-env batching simple. Structured actions are therefore not members of
``action_space`` (``contains`` is False for them) even though ``step`` takes them.

Vector environments must use ``shared_memory=False``::

    gym.make_vec(env_id, num_envs=8, vectorization_mode="async",
                 vector_kwargs={"shared_memory": False})

Shared memory in `gymnasium.vector.AsyncVectorEnv` preallocates fixed-size numeric buffers
(one int32 per character up to ``max_length`` for `Text`, registered per space type), which
cannot represent variable-length arbitrary-Unicode text of up to megabytes; for `TextSpace`
``create_shared_memory`` has no registration and raises ``CustomSpaceError``. With
``shared_memory=False`` the workers send observations through pipes (pickled strings), which is
what text needs. ``SyncVectorEnv`` needs nothing special.

Source: Gymnasium 1.x `gymnasium.spaces.Space` / `Text` API and `gymnasium.vector` utilities.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Space

from orchestra_gym.errors import ConfigError

__all__ = [
    "ACTION_MAX_CHARS",
    "OBSERVATION_MAX_CHARS",
    "SAMPLE_ALPHABET",
    "TextSpace",
    "text_action_space",
    "text_observation_space",
]

# An orchestrator turn is at most 8k generated tokens (DESIGN.md Sec. 5, the paper's training
# setup); at <= ~4 characters per token that is 32k characters. The bound is generous so that
# no real output is rejected.
ACTION_MAX_CHARS = 1 << 17  # 131,072 characters
# A whole rendered transcript (50 turns with tool outputs) stays far below this.
OBSERVATION_MAX_CHARS = 1 << 23  # 8,388,608 characters

SAMPLE_ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    " \n\t.,;:!?'\"()[]{}<>/\\-_=+*&%$#@|~`^"
    "äöüßéèêñçøåłžščığ"  # accented Latin
    "中文字日本語한국어"  # CJK
    "ΩπΣжЯ→✓€"  # Greek, Cyrillic, symbols
    "🙂🚀"  # emoji outside the BMP (one code point each)
)


class TextSpace(Space[str]):
    """Any Unicode string with ``min_length <= len(x) <= max_length`` (lengths in code points).

    Unlike `gymnasium.spaces.Text`, there is no character set: every ``str`` (spaces, newlines,
    any script, emoji) of an allowed length is a member. ``sample`` draws a seeded random
    string over `SAMPLE_ALPHABET` (or ``sample_alphabet``) with a uniform length in
    ``[min_length, max(min_length, min(max_length, sample_max_length))]``; samples are members.

    Args:
        max_length: largest allowed length (characters, >= min_length).
        min_length: smallest allowed length (characters, default 0: a model may output nothing).
        sample_max_length: cap on the length of *sampled* strings (default 256, raised to
            min_length if smaller), so that sampling from a space that allows megabytes stays
            cheap. Does not affect ``contains``.
        sample_alphabet: characters that ``sample`` draws from (non-empty).
        seed: seed for ``sample`` (int or `np.random.Generator`), as every Gymnasium space.

    Raises:
        ConfigError: on negative or inconsistent lengths or an empty alphabet (message names the
            argument).

    Not flattenable to a Box (``is_np_flattenable`` is False) and not storable in shared
    memory; see the module docstring for vector environments.
    """

    def __init__(
        self,
        max_length: int,
        *,
        min_length: int = 0,
        sample_max_length: int = 256,
        sample_alphabet: str = SAMPLE_ALPHABET,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        for name, v in (("max_length", max_length), ("min_length", min_length), ("sample_max_length", sample_max_length)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ConfigError(f"{name} must be an int, got {v!r}")
        if min_length < 0:
            raise ConfigError(f"min_length must be >= 0, got {min_length}")
        if max_length < min_length:
            raise ConfigError(f"max_length ({max_length}) must be >= min_length ({min_length})")
        if sample_max_length < 0:
            raise ConfigError(f"sample_max_length must be >= 0, got {sample_max_length}")
        if not isinstance(sample_alphabet, str) or not sample_alphabet:
            raise ConfigError("sample_alphabet must be a non-empty string of characters to sample from")
        self.max_length = int(max_length)
        self.min_length = int(min_length)
        self.sample_max_length = int(sample_max_length)
        self.sample_alphabet = sample_alphabet
        self._alphabet = np.array(list(dict.fromkeys(sample_alphabet)), dtype=object)
        super().__init__(shape=None, dtype=str, seed=seed)

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> str:
        """A seeded random string of this space (uniform length, uniform characters).

        Args:
            mask: optional ``(length, None)``: fix the length (must be allowed); Gymnasium's
                per-character masks do not apply to an unbounded character set.
            probability: not supported (must be None).

        Raises:
            ConfigError: on a character mask, a probability mask, or a length outside the space.
        """
        if probability is not None:
            raise ConfigError("TextSpace.sample does not support a probability mask (there is no character set)")
        hi = max(self.min_length, min(self.max_length, self.sample_max_length))
        if mask is not None:
            if not (isinstance(mask, tuple) and len(mask) == 2 and mask[1] is None):
                raise ConfigError("TextSpace.sample mask must be (length, None); character masks are not supported")
            length = mask[0]
            if length is None:
                length = int(self.np_random.integers(self.min_length, hi + 1))
            elif not self.min_length <= int(length) <= self.max_length:
                raise ConfigError(f"mask length {length} is outside [{self.min_length}, {self.max_length}]")
        else:
            length = int(self.np_random.integers(self.min_length, hi + 1))
        chars = self.np_random.choice(self._alphabet, size=int(length))
        return "".join(chars.tolist())

    def contains(self, x: Any) -> bool:
        """True for a ``str`` whose length (code points) is in ``[min_length, max_length]``."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    @property
    def is_np_flattenable(self) -> bool:
        """False: text has no fixed-size numeric form."""
        return False

    def __repr__(self) -> str:
        return f"TextSpace(min_length={self.min_length}, max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSpace) and (self.min_length, self.max_length) == (other.min_length, other.max_length)

    def __hash__(self) -> int:
        return hash((TextSpace, self.min_length, self.max_length))


def text_action_space(max_length: int = ACTION_MAX_CHARS, *, seed: int | None = None) -> TextSpace:
    """The action space of the orchestra environments: the policy's raw output text.

    ``min_length`` is 0 (an empty output is a legal, if useless, action that the environment
    answers with a parse error). Structured actions are accepted by ``step`` but are not members
    (module docstring).
    """
    return TextSpace(max_length, min_length=0, seed=seed)


def text_observation_space(max_length: int = OBSERVATION_MAX_CHARS, *, seed: int | None = None) -> TextSpace:
    """A text observation (a rendered prompt or transcript), up to `OBSERVATION_MAX_CHARS`."""
    return TextSpace(max_length, min_length=0, seed=seed)
