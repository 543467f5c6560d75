"""Humanity's Last Exam (HLE) -> `orchestra_gym.types.Task`.

Source: the HLE dataset card and schema on Hugging Face (``cais/hle``, split ``test``; gated: a
user must accept its terms). Columns used: ``id``, ``question``, ``image`` (empty string when the
question is text-only), ``answer``, ``answer_type`` (``exactMatch`` | ``multipleChoice``),
``category``, ``raw_subject``; every other column is kept in ``Task.metadata`` (the image itself
is replaced by ``has_image``). The ToolOrchestra paper evaluates on the text-only subset
(arXiv 2511.21689 Sec. 4), hence ``text_only=True`` by default.

The HLE rows carry a canary string that forbids training use; this project never ships real HLE
rows (its tests write synthetic rows in the same schema).
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

from orchestra_gym.data_paths import SAMPLE_HINT, dataset_path, hub_unreachable
from orchestra_gym.types import Task

__all__ = ["load_hle", "hle_task", "read_rows", "category_slug", "HF_DATASET", "ACCESS_HELP"]

HF_DATASET = "cais/hle"
ANSWER_TYPES = ("exactMatch", "multipleChoice")
_REQUIRED = ("id", "question", "answer")

ACCESS_HELP = (
    "HLE is a gated Hugging Face dataset. To load it: (1) open https://huggingface.co/datasets/cais/hle "
    "and accept its terms while logged in; (2) authenticate this machine with `huggingface-cli login` "
    "(or `hf auth login`) or set the HF_TOKEN environment variable to a token with read access; "
    "(3) install the optional extra: `pip install -e \".[hf]\"` from the clone (it brings `datasets`). "
    "Offline, pass a local file in HLE's schema instead: load_hle(data_path='hle.jsonl') or "
    "gym.make('ToolOrchestra-HLE-v0', data_path='hle.jsonl') (JSONL, JSON or parquet with columns "
    "id, question, image, answer, answer_type, category, raw_subject); "
    + SAMPLE_HINT + "."
)


def category_slug(category: str) -> str:
    """Lower-case id of a category name: ``"Computer Science/AI"`` -> ``"computer_science_ai"``.

    Used for `Task.category` (simulated experts' accuracy tables key on it); the original name
    stays in ``Task.metadata["category"]``. Empty input gives ``"general"``.
    """
    slug = re.sub(r"[^a-z0-9]+", "_", str(category or "").strip().lower()).strip("_")
    return slug or "general"


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a table of records from JSONL, JSON (a list of objects), parquet, CSV or TSV.

    The format comes from the file suffix (``.jsonl``/``.ndjson``, ``.json``, ``.parquet``,
    ``.csv``, ``.tsv``). CSV/TSV cells are kept verbatim (no stripping: some gold answers end in
    spaces upstream). Parquet needs ``pyarrow`` (installed with the ``hf`` extra).

    Raises:
        FileNotFoundError: the path does not exist.
        ValueError: unknown suffix, a malformed JSON line (with its line number) or a JSON file
            that is not a list of objects.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data file {str(p)!r} does not exist; pass an existing JSONL/JSON/parquet/CSV/TSV file")
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        rows = []
        with p.open(encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{p}: line {i} is not valid JSON ({e.msg}); each line must be one JSON object") from None
                if not isinstance(obj, dict):
                    raise ValueError(f"{p}: line {i} is a JSON {type(obj).__name__}, expected an object")
                rows.append(obj)
        return rows
    if suffix == ".json":
        obj = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(obj, list) or not all(isinstance(r, dict) for r in obj):
            raise ValueError(f"{p}: a .json data file must hold a list of objects; use .jsonl for one object per line")
        return obj
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError(
                f"reading {p.name} needs pyarrow: `pip install -e \".[hf]\"` from the clone (or pyarrow), or convert it to JSONL"
            ) from None
        return pq.read_table(p).to_pylist()
    if suffix in (".csv", ".tsv"):
        with p.open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f, delimiter="\t" if suffix == ".tsv" else ","))
    raise ValueError(f"unsupported data file suffix {suffix!r} for {p.name}; use .jsonl, .json, .parquet, .csv or .tsv")


def _has_image(row: dict[str, Any]) -> bool:
    img = row.get("image")
    if img is None:
        return False
    if isinstance(img, str):
        return bool(img.strip())
    return True  # decoded image object (datasets' Image feature)


def hle_task(row: dict[str, Any], index: int = 0) -> Task:
    """Convert one HLE row to a `Task` (domain ``"hle"``, difficulty ``"hard"``).

    The answer is kept verbatim; normalisation happens only when matching (`orchestra_gym.judges`).

    Raises:
        ValueError: a required field (id, question, answer) is missing, or ``answer_type`` is not
            exactMatch/multipleChoice; the message names the row and the field.
    """
    for k in _REQUIRED:
        if row.get(k) is None or (isinstance(row.get(k), str) and not row[k].strip()):
            raise ValueError(f"HLE row {index} (id={row.get('id')!r}) has no {k!r}; every row needs {list(_REQUIRED)}")
    answer_type = row.get("answer_type") or "exactMatch"
    if answer_type not in ANSWER_TYPES:
        raise ValueError(
            f"HLE row {index} (id={row['id']!r}) has answer_type={answer_type!r}; expected one of {list(ANSWER_TYPES)}"
        )
    meta = {k: v for k, v in row.items() if k not in ("image", "question", "answer", "id") and not _is_binary(v)}
    meta["answer_type"] = answer_type
    meta["has_image"] = _has_image(row)
    meta.setdefault("category", "")
    meta.setdefault("raw_subject", "")
    return Task(
        id=str(row["id"]),
        domain="hle",
        prompt=str(row["question"]),
        answer=str(row["answer"]),
        category=category_slug(row.get("category", "")),
        difficulty="hard",
        metadata=meta,
    )


def _is_binary(v: Any) -> bool:
    return isinstance(v, (bytes, bytearray)) or (isinstance(v, dict) and "bytes" in v)


def _from_rows(rows: Iterable[dict[str, Any]], text_only: bool) -> list[Task]:
    tasks = []
    for i, row in enumerate(rows):
        if text_only and _has_image(row):
            continue
        tasks.append(hle_task(row, i))
    return tasks


def load_hle(split: str = "test", text_only: bool = True, data_path: str | os.PathLike[str] | None = None) -> list[Task]:
    """Load HLE questions as `Task` objects.

    Args:
        split: Hugging Face split (HLE has ``"test"``); ignored for a local file.
        text_only: drop rows with an image (the paper's text-only subset).
        data_path: a local JSONL/JSON/parquet/CSV file in HLE's schema; when None, the
            ``HLE_DATA_PATH`` environment variable, else ``$ORCHESTRA_DATA_DIR/hle/hle.jsonl`` when
            that file exists, else the gated ``cais/hle`` through `datasets`.

    Returns:
        list of `Task` (domain ``"hle"``), in file order.

    Raises:
        RuntimeError: no local file and the Hugging Face dataset cannot be loaded (not installed,
            offline, not authenticated or terms not accepted); the message says how to get access
            (`ACCESS_HELP`, ``data_path="sample"`` included). Offline it comes within seconds
            (`orchestra_gym.data_paths.hub_unreachable`), not after the hub's retries.
        FileNotFoundError, ValueError: a bad local file (see `read_rows`, `hle_task`).

    ``data_path="sample"`` loads the shipped generated sample (`orchestra_gym.data`, 120 rows).
    """
    from orchestra_gym.data import is_sample, sample_path

    if is_sample(data_path):
        data_path = sample_path("hle")
    if data_path is None:  # $HLE_DATA_PATH, else $ORCHESTRA_DATA_DIR/hle/hle.jsonl when that file exists
        configured = dataset_path("hle")
        if configured is not None and (os.environ.get("HLE_DATA_PATH") or configured.is_file()):
            data_path = configured
    if data_path is not None:
        return _from_rows(read_rows(data_path), text_only)
    try:
        import datasets  # optional extra `hf`; imported lazily to keep `import orchestra_gym` cheap
    except ImportError:
        raise RuntimeError(f"loading HLE from Hugging Face needs the `datasets` package. {ACCESS_HELP}") from None
    try:  # cais/hle is gated: without a token the hub can only refuse, so fail at once (no retries)
        from huggingface_hub import get_token

        has_token = get_token() is not None
    except Exception:
        has_token = True
    if not has_token:
        raise RuntimeError(f"no Hugging Face token found for the gated {HF_DATASET!r}. {ACCESS_HELP}")
    offline_mode = any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
                       for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))  # then `datasets` reads its cache at once
    offline = None if offline_mode else hub_unreachable()
    if offline:  # fail now, not after the hub's retries (about 24 s)
        raise RuntimeError(f"could not load {HF_DATASET!r}: the hub is unreachable ({offline}); if it is cached, "
                           f"set HF_HUB_OFFLINE=1 to read the cache. {ACCESS_HELP}")
    try:
        ds = datasets.load_dataset(HF_DATASET, split=split)
    except Exception as e:  # gated / offline / missing token: all end here with the same fix
        raise RuntimeError(f"could not load {HF_DATASET!r} split {split!r} ({type(e).__name__}: {e}). {ACCESS_HELP}") from e
    if text_only and "image" in ds.column_names:
        ds = ds.filter(lambda r: not r["image"])
    return _from_rows((dict(r) for r in ds), text_only)
