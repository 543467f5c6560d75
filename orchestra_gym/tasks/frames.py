"""FRAMES ("Fact, Fetch, and Reason", Krishna et al. 2024, arXiv 2409.12941) -> `Task`.

Source schema: Hugging Face ``google/frames-benchmark``, file ``test.tsv`` (824 rows, Apache-2.0):
``Prompt``, ``Answer``, ``wikipedia_link_1`` .. ``wikipedia_link_10`` (one URL each),
``wikipedia_link_11+`` (several comma-separated URLs, possibly with prose notes),
``reasoning_types`` (labels joined by ``" | "``) and ``wiki_links`` (a Python-list-style string of
all the row's URLs). The upstream TSV has an unnamed leading index column; vendored CSV copies
call it ``id``. Gold answers are kept verbatim (some end in spaces upstream); normalisation
happens only when matching.

FRAMES has no difficulty label; `Task.difficulty` is derived from the number of Wikipedia
articles a question needs (<= 2 easy, 3-4 medium, >= 5 hard), and `Task.category` is the first
reasoning type as a slug (e.g. ``"numerical_reasoning"``). Both feed the simulated experts.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Any

from orchestra_gym.data_paths import SAMPLE_HINT, dataset_path, hub_unreachable
from orchestra_gym.tasks.hle import category_slug, read_rows
from orchestra_gym.types import Task

__all__ = [
    "load_frames",
    "frames_task",
    "parse_url_cell",
    "parse_wiki_links",
    "default_frames_path",
    "HF_DATASET",
    "HF_FILE",
]

HF_DATASET = "google/frames-benchmark"
HF_FILE = "test.tsv"
_ID_COLUMNS = ("id", "", "Unnamed: 0", "index")
# Column aliases used by some vendored copies (e.g. OpenDeepSearch's question / true_answer).
_ALIASES = {"Prompt": ("Prompt", "question", "prompt"), "Answer": ("Answer", "true_answer", "answer")}
# A URL token: with a scheme, or a bare "xx.wikipedia.org/..." (one upstream row omits the scheme).
_URL = re.compile(r"(?:https?://|(?<![\w/.-])(?:[\w-]+\.)+wikipedia\.org/)\S+", re.IGNORECASE)


def default_frames_path() -> Path | None:
    """``$FRAMES_DATA_PATH``, else ``$ORCHESTRA_DATA_DIR/frames/frames_test_set.csv`` (may not exist),
    else None (`orchestra_gym.data_paths`)."""
    return dataset_path("frames")


def _clean_url(tok: str) -> str:
    tok = tok.rstrip(",;")
    if not re.match(r"https?://", tok, re.IGNORECASE):
        tok = "https://" + tok
    # drop closing brackets that do not belong to the URL, e.g. "(see https://.../X)"
    while tok.endswith(")") and tok.count(")") > tok.count("("):
        tok = tok[:-1].rstrip(",;")
    while tok.endswith("]") and tok.count("]") > tok.count("["):
        tok = tok[:-1].rstrip(",;")
    return tok


def parse_url_cell(cell: str | None) -> tuple[list[str], str]:
    """Split a ``wikipedia_link_11+`` cell into its URLs and any prose left over.

    URLs are whitespace-delimited tokens starting with http(s):// or a bare ``*.wikipedia.org/``
    (given an ``https://`` prefix), with separating commas and unmatched closing brackets removed
    (commas inside a title such as ``Paris,_Texas`` stay, since the separators are ``", "``).

    Returns:
        (urls in order of appearance, the remaining text with separators trimmed; ``""`` if none).
    """
    if not cell:
        return [], ""
    urls = [_clean_url(m.group(0)) for m in _URL.finditer(cell)]
    rest = _URL.sub(" ", cell)
    rest = re.sub(r"\s+", " ", rest).strip(" ,;")
    rest = re.sub(r"(\s*,\s*)+", ", ", rest).strip(" ,;")
    return [u for u in urls if u], rest


def parse_wiki_links(cell: str | list | None) -> list[str]:
    """Parse the ``wiki_links`` column: a Python-list-style string -> list of str.

    Uses `ast.literal_eval` (literals only, never code). A value that is not a list literal falls
    back to the URLs found in the text.

    Raises:
        nothing; an unparseable cell gives the URLs found in it (possibly ``[]``).
    """
    if cell is None:
        return []
    if isinstance(cell, list):
        return [str(x) for x in cell]
    s = str(cell).strip()
    if not s:
        return []
    try:
        val = ast.literal_eval(s)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return parse_url_cell(s)[0]
    if isinstance(val, (list, tuple)):
        return [str(x) for x in val]
    return parse_url_cell(s)[0]


def _pick(row: dict[str, Any], name: str, index: int) -> str:
    for alias in _ALIASES[name]:
        if alias in row and row[alias] is not None:
            return str(row[alias])
    raise ValueError(
        f"FRAMES row {index} has no {name!r} column (also tried {list(_ALIASES[name][1:])}); "
        f"columns present: {sorted(row)}"
    )


def frames_task(row: dict[str, Any], index: int = 0) -> Task:
    """Convert one FRAMES row to a `Task` (domain ``"frames"``).

    ``Task.metadata`` holds ``links`` (all URLs of link_1..10 and the parsed link_11+ cell, in
    order, each with a scheme), ``link_notes`` (prose from link_11+), ``wiki_links`` (parsed list) and
    ``reasoning_types`` (list of labels).

    Raises:
        ValueError: no Prompt/Answer (or alias) column, or an empty prompt; names the row.
    """
    prompt = _pick(row, "Prompt", index)
    answer = _pick(row, "Answer", index)
    if not prompt.strip():
        raise ValueError(f"FRAMES row {index} has an empty Prompt")
    rid = next((row[c] for c in _ID_COLUMNS if c in row and row[c] not in (None, "")), index)
    links: list[str] = []
    for i in range(1, 11):
        v = row.get(f"wikipedia_link_{i}")
        if v and str(v).strip():
            links.extend(parse_url_cell(str(v))[0] or [str(v).strip()])
    extra, notes = parse_url_cell(row.get("wikipedia_link_11+"))
    links.extend(extra)
    wiki_links = parse_wiki_links(row.get("wiki_links"))  # verbatim, as upstream
    rt = row.get("reasoning_types") or ""
    reasoning = [t.strip() for t in (rt if isinstance(rt, list) else str(rt).split(" | ")) if t.strip()]
    n = len(set(links) | set(wiki_links))
    difficulty = "easy" if n <= 2 else ("medium" if n <= 4 else "hard")
    return Task(
        id=str(rid),
        domain="frames",
        prompt=prompt,
        answer=answer,
        category=category_slug(reasoning[0]) if reasoning else "general",
        difficulty=difficulty,
        metadata={"links": links, "link_notes": notes, "wiki_links": wiki_links, "reasoning_types": reasoning},
    )


def _hub_file(default: "Path | None") -> str:
    """FRAMES' ``test.tsv`` from the Hugging Face cache, else downloaded; at once a `RuntimeError`
    when it is not cached and the hub is unreachable (`hub_unreachable`), not after the hub's retries."""
    from huggingface_hub import hf_hub_download

    def failed(cause: str) -> RuntimeError:
        return RuntimeError(
            f"could not get FRAMES: no local file at {str(default)!r} (set FRAMES_DATA_PATH) and {HF_FILE} of the "
            f"Hugging Face dataset {HF_DATASET!r} is not cached ({cause}). Fix: connect to the internet once (the "
            "file is cached), or download https://huggingface.co/datasets/google/frames-benchmark/resolve/main/test.tsv "
            "and pass load_frames(data_path='test.tsv') / gym.make('ToolOrchestra-FRAMES-v0', data_path=...); "
            f"{SAMPLE_HINT}.")

    try:
        return hf_hub_download(repo_id=HF_DATASET, filename=HF_FILE, repo_type="dataset", local_files_only=True)
    except Exception:
        pass  # not cached: go to the hub if it answers
    offline = hub_unreachable()
    if offline:
        raise failed(f"the hub is unreachable: {offline}")
    try:
        return hf_hub_download(repo_id=HF_DATASET, filename=HF_FILE, repo_type="dataset")
    except Exception as e:
        raise failed(f"the download failed: {type(e).__name__}: {e}") from e


def load_frames(data_path: str | os.PathLike[str] | None = None) -> list[Task]:
    """Load the FRAMES questions as `Task` objects.

    Args:
        data_path: a TSV/CSV/JSONL/JSON/parquet file in FRAMES' schema. When None: the file from
            `default_frames_path` if it exists, else ``test.tsv`` from the Hugging Face dataset
            ``google/frames-benchmark`` (needs network or a filled Hugging Face cache).

    Returns:
        list of `Task` (domain ``"frames"``), in file order (824 for the full test set).

    Raises:
        RuntimeError: no local file and the Hugging Face download failed, or (within seconds) the file
            is not cached and the hub is unreachable; says how to fix it, ``data_path="sample"`` included.
        FileNotFoundError, ValueError: a bad local file or row.

    ``data_path="sample"`` loads the shipped generated sample (`orchestra_gym.data`, 150 rows).
    """
    from orchestra_gym.data import is_sample, sample_path

    if is_sample(data_path):
        data_path = sample_path("frames")
    if data_path is None:
        default = default_frames_path()
        if default is not None and default.exists():
            data_path = default
        else:
            data_path = _hub_file(default)
    return [frames_task(r, i) for i, r in enumerate(read_rows(data_path))]
