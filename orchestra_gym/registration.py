"""The table of environment ids and their registration with Gymnasium (cheap: strings only)."""

from __future__ import annotations

import gymnasium as gym

# id -> (entry point "module:Class", default kwargs, max_episode_steps handled by the env itself)
ENV_SPECS: dict[str, tuple[str, dict]] = {
    "ToolOrchestra-ToolScale-v0": ("orchestra_gym.envs.function_calling:ToolScaleEnv", {}),
    "ToolOrchestra-Tau2-Mock-v0": ("orchestra_gym.envs.tau2:Tau2Env", {"domain": "mock"}),
    "ToolOrchestra-Tau2-Retail-v0": ("orchestra_gym.envs.tau2:Tau2Env", {"domain": "retail"}),
    "ToolOrchestra-Tau2-Airline-v0": ("orchestra_gym.envs.tau2:Tau2Env", {"domain": "airline"}),
    "ToolOrchestra-Tau2-Telecom-v0": ("orchestra_gym.envs.tau2:Tau2Env", {"domain": "telecom"}),
    "ToolOrchestra-HLE-v0": ("orchestra_gym.envs.qa:HLEEnv", {}),
    "ToolOrchestra-FRAMES-v0": ("orchestra_gym.envs.qa:FRAMESEnv", {}),
}
ENV_IDS: tuple[str, ...] = tuple(ENV_SPECS)


def register_all() -> None:
    """Register every id in `ENV_SPECS` (idempotent; the entry points are imported lazily)."""
    for env_id, (entry_point, kwargs) in ENV_SPECS.items():
        if env_id in gym.registry:
            continue
        gym.register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs), disable_env_checker=False)
