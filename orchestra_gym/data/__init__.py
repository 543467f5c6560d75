"""Small generated sample files in the real schemas of the QA benchmarks (see `orchestra_gym.data.samples`).

* ``frames_sample.csv``: FRAMES' 16 columns (``id, Prompt, Answer, wikipedia_link_1`` ..
  ``wikipedia_link_11+, reasoning_types, wiki_links``), as the vendored ``frames_test_set.csv``.
* ``hle_sample.jsonl``: ``cais/hle``'s fields (``id, question, image, image_preview, answer,
  answer_type, author_name, rationale, rationale_image, raw_subject, category, canary``).

Both are made up by `orchestra_gym.data.samples` (fictional entities; no row comes from either
dataset) and regenerate byte for byte with ``python -m orchestra_gym.data.samples``. Load them with
``data_path="sample"`` (`load_frames`, `load_hle`, ``gym.make(..., data_path="sample")``,
``orchestra eval --data-path sample``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SAMPLE_FILES", "sample_path", "is_sample"]

SAMPLE_FILES = {"frames": "frames_sample.csv", "hle": "hle_sample.jsonl"}


def is_sample(data_path: object) -> bool:
    """Whether `data_path` asks for the shipped sample (the string ``"sample"``)."""
    return isinstance(data_path, str) and data_path == "sample"


def sample_path(benchmark: str) -> Path:
    """The shipped sample file of `benchmark` (``"frames"`` or ``"hle"``).

    Raises:
        ValueError: unknown benchmark.
    """
    if benchmark not in SAMPLE_FILES:
        raise ValueError(f"no sample for benchmark {benchmark!r}; samples: {sorted(SAMPLE_FILES)}")
    return Path(__file__).resolve().parent / SAMPLE_FILES[benchmark]
