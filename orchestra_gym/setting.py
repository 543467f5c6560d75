"""The setting an agent plays in: env id, ``gym.make`` keyword arguments and ``env.reset`` options.

A trained run's setting (tools exposed, system prompt, turn and error limits, preference) is part of
what its numbers mean: a baseline compared with the run must play in the same one. `Setting` is that
triple; `SETTING_FILE` (``orchestra_setting.json``: ``env_id``, ``env_kwargs``, ``reset_options``)
is its file, written by ``orchestra train`` into its ``--output-dir`` and by ``orchestra export``
into the exported folder (`orchestra_jax.policy.run_setting` computes it from the run's
TrainConfig), and read here without importing `orchestra_jax`: ``orchestra eval --setting-of RUN``
plays any agent in it. `Setting.describe` is the one line ``orchestra eval`` and
``benchmarks/bench_agents.py`` print for the setting they play in.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestra_gym.errors import ConfigError

__all__ = ["Setting", "SETTING_FILE"]

SETTING_FILE = "orchestra_setting.json"


@dataclass(frozen=True)
class Setting:
    """Where an agent plays.

    Attributes:
        env_id: a registered env id (``orchestra_gym.ENV_IDS``).
        env_kwargs: ``gym.make(env_id, **env_kwargs)`` keyword arguments (JSON-able).
        reset_options: the ``env.reset(options=...)`` of every episode (``tools``, ``preference``...;
            ``task_id`` is added per episode by the runner).
    """

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    reset_options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The file's object: ``{"env_id", "env_kwargs", "reset_options"}``."""
        return {"env_id": self.env_id, "env_kwargs": dict(self.env_kwargs), "reset_options": dict(self.reset_options)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "setting") -> "Setting":
        """Inverse of `to_dict`.

        Raises:
            ConfigError: no string ``env_id``, or ``env_kwargs`` / ``reset_options`` not objects
                (the message names `source` and the field).
        """
        if not isinstance(d, Mapping) or not isinstance(d.get("env_id"), str):
            raise ConfigError(f"{source}: expected an object with a string env_id, env_kwargs and reset_options")
        for key in ("env_kwargs", "reset_options"):
            if not isinstance(d.get(key, {}), Mapping):
                raise ConfigError(f"{source}: {key} must be a JSON object, got {type(d[key]).__name__}")
        return cls(d["env_id"], dict(d.get("env_kwargs", {})), dict(d.get("reset_options", {})))

    def describe(self) -> str:
        """One line: ``<env id>, env kwargs {...}, reset options {...}`` (JSON, keys sorted)."""
        def js(x: Any) -> str:
            return json.dumps(x, sort_keys=True, default=str)

        return f"{self.env_id}, env kwargs {js(self.env_kwargs)}, reset options {js(self.reset_options)}"

    def write(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``folder/orchestra_setting.json`` (JSON, indent 2); returns its path."""
        path = Path(folder) / SETTING_FILE
        path.write_text(json.dumps(self.to_dict(), indent=2))
        return path

    @classmethod
    def read(cls, folder: str | os.PathLike[str]) -> "Setting":
        """The setting of an ``orchestra train`` run folder or an ``orchestra export`` folder.

        Raises:
            FileNotFoundError: the folder has no ``orchestra_setting.json`` (the message says which
                folders have one, and how an older run gets it).
            ConfigError: the file is not a setting (names the file).
        """
        path = Path(folder) / SETTING_FILE
        if not path.is_file():
            older = (" (a run trained before runs wrote it: `orchestra eval --agent policy:"
                     f"{folder} --episodes 1` writes it)") if (Path(folder) / "train_config.json").is_file() else ""
            raise FileNotFoundError(f"{path} not found: pass the --output-dir of an `orchestra train` run or an "
                                    f"`orchestra export` folder{older}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not JSON ({e})") from None
        return cls.from_dict(data, str(path))
