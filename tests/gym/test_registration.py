"""orchestra_gym.registration: every id registered, keywords checked before the env is built."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest

import orchestra_gym  # noqa: F401
from orchestra_gym.errors import ConfigError
from orchestra_gym.registration import ENV_IDS, EnvFactory, accepted_kwargs


@pytest.mark.parametrize(("env_id", "key", "hint"), [
    ("ToolOrchestra-Tau2-Retail-v0", "data_path", "(did you mean 'data_dir'?)"),
    ("ToolOrchestra-Tau2-Mock-v0", "max_turn", "(did you mean 'max_turns'?)"),
    ("ToolOrchestra-ToolScale-v0", "max_turn", "(did you mean 'max_turns'?)"),
    ("ToolOrchestra-HLE-v0", "max_turn", "(did you mean 'max_turns'?)"),
    ("ToolOrchestra-ToolScale-v0", "zzz", ""),
])
def test_wrong_keyword_names_it_the_accepted_ones_and_the_nearest(env_id, key, hint):
    with pytest.raises(ConfigError) as e:
        gym.make(env_id, **{key: 1})
    text = str(e.value)
    assert text.startswith(f"gym.make({env_id!r}): unknown keyword {key!r}{' ' + hint if hint else ''}; ")
    assert "accepts: " in text and "max_turns" in text and "render_mode" in text
    assert "domain," not in text  # fixed by the id itself


def test_accepted_kwargs_follow_kwargs_up_the_hierarchy():
    cls = EnvFactory("ToolOrchestra-ToolScale-v0", "orchestra_gym.envs.function_calling:ToolScaleEnv").env_class()
    names = accepted_kwargs(cls)
    assert names[:2] == ["domains", "max_turns"] and {"experts", "pricing", "render_mode"} <= set(names)

    class Open:
        def __init__(self, **kwargs):
            pass

    assert accepted_kwargs(Open) is None


def test_good_keywords_still_make_the_env_and_the_factory_pickles():
    env = gym.make("ToolOrchestra-ToolScale-v0", max_turns=3)
    assert env.unwrapped.max_turns == 3 and env.spec.id == "ToolOrchestra-ToolScale-v0"
    factory = pickle.loads(pickle.dumps(gym.spec("ToolOrchestra-ToolScale-v0").entry_point))
    assert isinstance(factory, EnvFactory) and set(ENV_IDS) <= set(gym.registry)
