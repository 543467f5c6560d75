"""Tests for orchestra_gym.spaces: TextSpace membership, seeded sampling, check_env, vector envs."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from orchestra_gym.parsing import parse_action
from orchestra_gym.spaces import (
    ACTION_MAX_CHARS,
    SAMPLE_ALPHABET,
    TextSpace,
    text_action_space,
    text_observation_space,
)


# ------------------------------------------------------------------ a tiny throwaway text env


class TinyAdditionEnv(gym.Env):
    """Asks for a sum; the agent answers with <tool_call>{"name": "answer", "arguments": {"value": n}}."""

    metadata = {"render_modes": []}

    def __init__(self, observation_space: gym.Space | None = None):
        self.observation_space = observation_space or text_observation_space()
        self.action_space = text_action_space()
        self._a = self._b = 0
        self._turn = 0

    def _prompt(self) -> str:
        return (
            f"Turn {self._turn}. Compute {self._a} + {self._b}.\n"
            'Reply with <tool_call>{"name": "answer", "arguments": {"value": <number>}}</tool_call> — merci !'
        )

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._a, self._b = (int(x) for x in self.np_random.integers(0, 100, size=2))
        self._turn = 0
        return self._prompt(), {"cost_usd": 0.0}

    def step(self, action):
        self._turn += 1
        parsed = parse_action(action)
        reward, terminated = 0.0, False
        if parsed.errors:
            obs = parsed.error_text()
        elif parsed.tool_calls and parsed.tool_calls[0].name == "answer":
            terminated = True
            reward = float(parsed.tool_calls[0].arguments.get("value") == self._a + self._b)
            obs = f"Answer received: {parsed.tool_calls[0].arguments}"
        else:
            obs = self._prompt()
        truncated = not terminated and self._turn >= 3
        return obs, reward, terminated, truncated, {"cost_usd": 0.0, "parse_errors": float(len(parsed.errors))}


# ------------------------------------------------------------------ contains


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain ascii with spaces",
        "line one\nline two\r\n\ttabbed",
        "Unicode: ÄÖÜ ß 中文 日本語 한국어 Ωπ 🙂🚀 \u200b\u2028",
        '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>',
        "x" * ACTION_MAX_CHARS,
    ],
)
def test_action_space_contains_real_text(text):
    assert text in text_action_space()


def test_contains_rejects_non_strings_and_bad_lengths():
    space = TextSpace(10, min_length=2)
    assert "ab" in space and "a" * 10 in space
    assert "a" not in space  # too short
    assert "a" * 11 not in space  # too long
    assert "🙂🙂" in space  # lengths are code points, not bytes
    for x in (None, 3, b"bytes", ["a", "b"], {"name": "a"}, np.array(["ab"])):
        assert not space.contains(x)
    assert "x" * (ACTION_MAX_CHARS + 1) not in text_action_space()


def test_gymnasium_text_rejects_what_textspace_accepts():
    prompt = "What is 2 + 3?\nAnswer briefly."
    assert prompt not in gym.spaces.Text(1000)  # the reason this module exists
    assert prompt in TextSpace(1000)


# ------------------------------------------------------------------ sample


def test_sample_is_deterministic_under_seed_and_a_member():
    a = TextSpace(500, min_length=3, seed=7)
    b = TextSpace(500, min_length=3, seed=7)
    xs = [a.sample() for _ in range(20)]
    assert xs == [b.sample() for _ in range(20)]
    assert all(x in a for x in xs)
    assert all(set(x) <= set(SAMPLE_ALPHABET) for x in xs)
    assert len({len(x) for x in xs}) > 1  # lengths vary
    c = TextSpace(500, min_length=3, seed=8)
    assert [c.sample() for _ in range(20)] != xs
    a.seed(7)
    assert a.sample() == xs[0]


def test_sample_respects_caps_and_alphabet():
    s = TextSpace(10**7, sample_max_length=5, sample_alphabet="ab", seed=0)
    xs = [s.sample() for _ in range(200)]
    assert max(len(x) for x in xs) == 5 and min(len(x) for x in xs) == 0
    assert set("".join(xs)) == {"a", "b"}
    assert len(TextSpace(3, seed=1).sample(mask=(3, None))) == 3
    long_min = TextSpace(5000, min_length=1000, seed=2)  # min_length above the sampling cap
    assert all(len(x) == 1000 for x in (long_min.sample(), long_min.sample()))


def test_sample_mixes_scripts():
    s = TextSpace(10_000, sample_max_length=4000, min_length=4000, seed=0)
    x = s.sample()
    assert " " in x and "\n" in x and "🙂" in x and "中" in x


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(max_length=-1), "max_length"),
        (dict(max_length=3, min_length=4), "max_length (3) must be >= min_length (4)"),
        (dict(max_length=3, min_length=-1), "min_length must be >= 0"),
        (dict(max_length=10, sample_alphabet=""), "sample_alphabet"),
        (dict(max_length=2.5), "must be an int"),
    ],
)
def test_bad_arguments(kwargs, needle):
    with pytest.raises(ValueError) as e:
        TextSpace(**kwargs)
    assert needle in str(e.value)


def test_bad_sample_masks():
    s = TextSpace(5, seed=0)
    with pytest.raises(ValueError, match="probability"):
        s.sample(probability=np.ones(3))
    with pytest.raises(ValueError, match="length, None"):
        s.sample(mask=(2, np.ones(3, dtype=np.int8)))
    with pytest.raises(ValueError, match="outside"):
        s.sample(mask=(6, None))


def test_equality_pickle_and_copy():
    s = TextSpace(100, min_length=1, seed=3)
    assert s == TextSpace(100, min_length=1) and s != TextSpace(101, min_length=1) and s != gym.spaces.Text(100)
    t = pickle.loads(pickle.dumps(s))
    assert t == s and t.sample() == copy.deepcopy(s).sample()
    assert not s.is_np_flattenable
    assert "max_length=100" in repr(s)


# ------------------------------------------------------------------ env checker and vector envs


def test_check_env_passes_on_text_env():
    env = TinyAdditionEnv()
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert obs in env.observation_space and "Compute" in obs
    a, b = env._a, env._b
    obs, reward, term, trunc, info = env.step(f'<tool_call>{{"name": "answer", "arguments": {{"value": {a + b}}}}}</tool_call>')
    assert (reward, term, trunc) == (1.0, True, False)


def test_check_env_fails_with_gymnasium_default_text():
    env = TinyAdditionEnv(observation_space=gym.spaces.Text(10_000))
    with pytest.raises(AssertionError):
        check_env(env, skip_render_check=True)


def test_sync_vector_env():
    envs = gym.vector.SyncVectorEnv([TinyAdditionEnv, TinyAdditionEnv])
    obs, info = envs.reset(seed=[0, 1])
    assert isinstance(obs, tuple) and len(obs) == 2 and all("Compute" in o for o in obs)
    obs, rew, term, trunc, info = envs.step(("<message>hi</message>", "broken <tool_call>{"))
    assert "Compute" in obs[0] and "could not be executed" in obs[1]
    np.testing.assert_array_equal(info["parse_errors"], [0.0, 1.0])
    envs.close()


def test_async_vector_env_needs_shared_memory_off():
    envs = gym.vector.AsyncVectorEnv([TinyAdditionEnv, TinyAdditionEnv], shared_memory=False)
    try:
        obs, info = envs.reset(seed=[3, 4])
        assert len(obs) == 2 and all(o in envs.single_observation_space for o in obs)
        obs, rew, term, trunc, info = envs.step(envs.action_space.sample())
        assert len(obs) == 2 and rew.dtype == np.float64
    finally:
        envs.close()
    with pytest.raises(Exception, match="shared_memory"):
        gym.vector.AsyncVectorEnv([TinyAdditionEnv], shared_memory=True)
