"""HLE loader: synthetic rows in HLE's schema (never real HLE rows), local files, offline error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestra_gym.tasks.hle import ACCESS_HELP, category_slug, hle_task, load_hle, read_rows

REPO = Path(__file__).resolve().parents[3]


def synthetic_rows() -> list[dict]:
    """Made-up questions in HLE's column layout (not from HLE)."""
    return [
        {"id": "syn-001", "question": "What is 17 * 3?", "image": "", "image_preview": None, "answer": "51",
         "answer_type": "exactMatch", "author_name": "test", "rationale": "17*3=51", "rationale_image": None,
         "raw_subject": "Arithmetic", "category": "Math", "canary": "SYNTHETIC"},
        {"id": "syn-002", "question": "Which gas is most abundant in air?\n\nAnswer Choices:\nA. Oxygen\nB. Nitrogen\nC. Argon",
         "image": "", "answer": "B", "answer_type": "multipleChoice", "raw_subject": "Chemistry",
         "category": "Chemistry"},
        {"id": "syn-003", "question": "What shape is shown?", "image": "data:image/png;base64,iVBORw0KGgo=",
         "answer": "circle", "answer_type": "exactMatch", "raw_subject": "Geometry", "category": "Math"},
        {"id": "syn-004", "question": "Name the language of the Zorblax protocol. ", "image": "",
         "answer": "Zorbish ", "answer_type": "exactMatch", "raw_subject": "CS", "category": "Computer Science/AI"},
    ]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_text_only_drops_image_rows(tmp_path):
    p = write_jsonl(tmp_path / "hle.jsonl", synthetic_rows())
    tasks = load_hle(data_path=p)
    assert [t.id for t in tasks] == ["syn-001", "syn-002", "syn-004"]
    t = tasks[0]
    assert (t.domain, t.prompt, t.answer, t.category, t.difficulty) == ("hle", "What is 17 * 3?", "51", "math", "hard")
    assert t.metadata["answer_type"] == "exactMatch" and t.metadata["raw_subject"] == "Arithmetic"
    assert t.metadata["category"] == "Math" and t.metadata["has_image"] is False
    assert tasks[1].metadata["answer_type"] == "multipleChoice" and tasks[1].answer == "B"
    # answers are stored verbatim (trailing space kept); normalisation happens only in judges
    assert tasks[2].answer == "Zorbish " and tasks[2].category == "computer_science_ai"


def test_text_only_false_keeps_images_without_bytes(tmp_path):
    tasks = load_hle(data_path=write_jsonl(tmp_path / "hle.jsonl", synthetic_rows()), text_only=False)
    assert len(tasks) == 4
    assert tasks[2].metadata["has_image"] is True and "image" not in tasks[2].metadata


def test_parquet_and_json_match_jsonl(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="parquet needs pyarrow (the `hf` extra)")
    import pyarrow.parquet as pq

    rows = synthetic_rows()
    cols = sorted({k for r in rows for k in r})
    table = pa.table({c: [None if r.get(c) is None else str(r.get(c)) for r in rows] for c in cols})
    pq.write_table(table, tmp_path / "hle.parquet")
    (tmp_path / "hle.json").write_text(json.dumps(rows), encoding="utf-8")
    a = load_hle(data_path=write_jsonl(tmp_path / "hle.jsonl", rows))
    b = load_hle(data_path=tmp_path / "hle.parquet")
    c = load_hle(data_path=tmp_path / "hle.json")
    key = lambda ts: [(t.id, t.prompt, t.answer, t.category) for t in ts]  # noqa: E731
    assert key(a) == key(b) == key(c)
    assert len(a) == 3


def test_env_var_path(tmp_path, monkeypatch):
    monkeypatch.setenv("HLE_DATA_PATH", str(write_jsonl(tmp_path / "x.jsonl", synthetic_rows()[:1])))
    assert [t.id for t in load_hle()] == ["syn-001"]


def test_bad_rows_name_the_field(tmp_path):
    with pytest.raises(ValueError, match=r"row 0 .*no 'answer'"):
        hle_task({"id": "a", "question": "q"}, 0)
    with pytest.raises(ValueError, match=r"answer_type='freeForm'.*exactMatch"):
        hle_task({"id": "a", "question": "q", "answer": "x", "answer_type": "freeForm"}, 0)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2 is not valid JSON"):
        read_rows(bad)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_hle(data_path=tmp_path / "missing.jsonl")
    txt = tmp_path / "rows.txt"
    txt.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="unsupported data file suffix '.txt'"):
        read_rows(txt)


def test_category_slug():
    assert category_slug("Biology/Medicine") == "biology_medicine"
    assert category_slug("") == "general"


def test_offline_without_data_names_the_fix():
    """No file, no network: the error says how to get access (terms, login/HF_TOKEN) or pass a file."""
    env = {k: v for k, v in os.environ.items() if k != "HLE_DATA_PATH"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO))
    code = (
        "from orchestra_gym.tasks.hle import load_hle\n"
        "try:\n    load_hle()\nexcept RuntimeError as e:\n    print('ERR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120).stdout
    assert out.startswith("ERR")
    for needle in ("huggingface.co/datasets/cais/hle", "accept its terms", "huggingface-cli login", "HF_TOKEN", "data_path="):
        assert needle in out
    assert "huggingface-cli login" in ACCESS_HELP


def load_offline(call: str, tmp_path: Path) -> tuple[float, str]:
    """Run `call` (a loader call) in a fresh process whose Hugging Face hub is a closed port on
    127.0.0.1 (nothing listens: every connection is refused) with an empty cache; (seconds, message)."""
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connections to it are refused
    env = {k: v for k, v in os.environ.items()
           if k not in ("HLE_DATA_PATH", "FRAMES_DATA_PATH", "ORCHESTRA_DATA_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HOME=str(tmp_path / "hf"), HF_TOKEN="hf_not_a_real_token",
               PYTHONPATH=str(REPO))
    code = (f"from orchestra_gym.tasks.frames import load_frames\nfrom orchestra_gym.tasks.hle import load_hle\n"
            f"try:\n    {call}\nexcept RuntimeError as e:\n    print('ERR', e)\n")
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    return time.monotonic() - t0, out.stdout


def test_offline_hub_fails_at_once_naming_the_sample(tmp_path):
    """Item 7 (issue 48): with no file and an unreachable hub, load_hle fails within seconds (not after
    the hub's ~24 s of retries) and names data_path="sample"."""
    seconds, out = load_offline("load_hle()", tmp_path)
    assert out.startswith("ERR") and 'data_path="sample"' in out and "unreachable" in out, out
    assert seconds < 15, seconds  # the interpreter and imports take most of it
