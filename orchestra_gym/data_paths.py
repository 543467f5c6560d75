"""The one way to point orchestra at its data: ``ORCHESTRA_DATA_DIR``.

Set ``ORCHESTRA_DATA_DIR`` to a folder laid out as below (any part may be missing; only the envs
and tests that need a part look for it)::

    $ORCHESTRA_DATA_DIR/
      tau2/                      tau2-bench v0.2.0's data/tau2 (domains/, user_simulator/)
      tau2_reference/            recordings of tau2-bench's own outputs (tests only)
      frames/frames_test_set.csv FRAMES test set (824 rows; else the Hugging Face file is downloaded)
      hle/hle.jsonl              a local HLE export (else the gated cais/hle on Hugging Face)

A dataset's own variable overrides the folder for that dataset (``TAU2_DATA_DIR``,
``TAU2_REFERENCE_DIR``, ``FRAMES_DATA_PATH``, ``HLE_DATA_PATH``), and a keyword argument
(``data_dir=``, ``data_path=``) overrides both. Nothing here reads or downloads anything;
`hub_unreachable` opens (and closes) one TCP connection to tell a loader to fail at once offline,
instead of spending Hugging Face's retries (about 24 s) before the same error.

The small sample files shipped in the package (``data_path="sample"``: `sample_path`, `is_sample`) live in
``orchestra_gym/data/`` (`orchestra_gym.data`).
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

from orchestra_gym.errors import ConfigError, did_you_mean

__all__ = ["DATA_DIR_ENV", "DATASETS", "SAMPLE_HINT", "data_root", "dataset_path", "how_to_configure",
           "hub_unreachable", "SAMPLE_FILES", "is_sample", "sample_path"]

DATA_DIR_ENV = "ORCHESTRA_DATA_DIR"
SAMPLE_HINT = ('to try the env without the dataset, pass data_path="sample" (a small generated sample shipped '
               "with the package; not the benchmark)")

# dataset -> (its place under ORCHESTRA_DATA_DIR, its own override variable)
DATASETS: dict[str, tuple[str, str]] = {
    "tau2": ("tau2", "TAU2_DATA_DIR"),
    "tau2_reference": ("tau2_reference", "TAU2_REFERENCE_DIR"),
    "frames": ("frames/frames_test_set.csv", "FRAMES_DATA_PATH"),
    "hle": ("hle/hle.jsonl", "HLE_DATA_PATH"),
}


def data_root() -> Path | None:
    """``$ORCHESTRA_DATA_DIR`` as a path, or None when it is not set."""
    root = os.environ.get(DATA_DIR_ENV)
    return Path(root) if root else None


def dataset_path(name: str) -> Path | None:
    """Where dataset `name` (a key of `DATASETS`) is configured to be: its own variable, else its
    place under ``$ORCHESTRA_DATA_DIR``, else None (not configured). The path may not exist.

    Raises:
        ConfigError: unknown dataset name (the message lists the known ones).
    """
    if name not in DATASETS:
        raise ConfigError(f"unknown dataset {name!r}{did_you_mean(name, DATASETS)}; known: {sorted(DATASETS)}")
    sub, own = DATASETS[name]
    if os.environ.get(own):
        return Path(os.environ[own])
    root = data_root()
    return root / sub if root is not None else None


def how_to_configure(name: str, keyword: str) -> str:
    """One sentence telling a user how to point orchestra at dataset `name` (for error messages)."""
    sub, own = DATASETS[name]
    return (f"set {DATA_DIR_ENV} to the folder that holds {sub} (README, Data), or {own}, or pass {keyword}=")


#: The shipped sample files of the QA benchmarks (in the real schemas, made up by `orchestra_gym.data.samples`),
#: by benchmark, under ``orchestra_gym/data/``.
SAMPLE_FILES = {"frames": "frames_sample.csv", "hle": "hle_sample.jsonl"}


def is_sample(data_path: object) -> bool:
    """Whether `data_path` asks for the shipped sample (the string ``"sample"``)."""
    return isinstance(data_path, str) and data_path == "sample"


def sample_path(benchmark: str) -> Path:
    """The shipped sample file of `benchmark` (``"frames"`` or ``"hle"``), in the package's ``data`` folder.

    Raises:
        ConfigError: unknown benchmark.
    """
    if benchmark not in SAMPLE_FILES:
        raise ConfigError(f"no sample for benchmark {benchmark!r}{did_you_mean(benchmark, SAMPLE_FILES)}; "
                          f"samples: {sorted(SAMPLE_FILES)}")
    return Path(__file__).resolve().parent / "data" / SAMPLE_FILES[benchmark]


def hub_unreachable(timeout_s: float = 3.0) -> "str | None":
    """Why the Hugging Face hub cannot be reached now, or None when a TCP connection to it opens.

    The hub is ``$HF_ENDPOINT`` (default ``https://huggingface.co``). ``HF_HUB_OFFLINE=1`` counts as
    unreachable. Name resolution and the connection each wait at most `timeout_s` seconds, so an
    offline machine learns it in seconds.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    found: list = []

    def resolve() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4])
        except OSError as e:
            found.append(e)

    resolver = threading.Thread(target=resolve, daemon=True)  # getaddrinfo itself has no timeout
    resolver.start()
    resolver.join(timeout_s)
    if not found:
        return f"resolving {host} took over {timeout_s:g} s"
    if isinstance(found[0], OSError):
        return f"cannot resolve {host} ({found[0]})"
    try:
        socket.create_connection(found[0][:2], timeout=timeout_s).close()
    except OSError as e:
        return f"cannot connect to {host}:{port} ({e})"
    return None
