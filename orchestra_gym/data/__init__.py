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

from orchestra_gym.data_paths import SAMPLE_FILES, is_sample, sample_path

__all__ = ["SAMPLE_FILES", "sample_path", "is_sample"]
