"""FRAMES loader: synthetic files in FRAMES' schema, URL-cell parsing, and the real file when present."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from orchestra_gym.tasks.frames import default_frames_path, frames_task, load_frames, parse_url_cell, parse_wiki_links

REPO = Path(__file__).resolve().parents[3]
COLUMNS = ["id", "Prompt", "Answer"] + [f"wikipedia_link_{i}" for i in range(1, 11)] + [
    "wikipedia_link_11+", "reasoning_types", "wiki_links"]
W = "https://en.wikipedia.org/wiki/"


def synthetic_rows() -> list[dict]:
    r0 = {c: "" for c in COLUMNS}
    r0.update({"id": "0", "Prompt": "Which river flows through the capital of Zembla? ", "Answer": "The Vorn ",
               "wikipedia_link_1": W + "Zembla", "wikipedia_link_2": W + "Vorn_River",
               "reasoning_types": "Multiple constraints | Temporal reasoning",
               "wiki_links": repr([W + "Zembla", W + "Vorn_River"])})
    r1 = {c: "" for c in COLUMNS}
    links = [W + f"Page_{i}" for i in range(1, 11)]
    r1.update({"id": "1", "Prompt": "How many moons do the ten planets of Kest have in total?", "Answer": "42",
               **{f"wikipedia_link_{i}": links[i - 1] for i in range(1, 11)},
               "wikipedia_link_11+": f"{W}Paris,_Texas, {W}Prince_(musician), also see {W}Escape_from_L.A. "
                                      f"for context (and {W}Kest_(planet)), ",
               "reasoning_types": "Numerical reasoning",
               "wiki_links": repr(links + [W + "Paris,_Texas"])})
    return [r0, r1]


def write(path: Path, rows: list[dict], delimiter: str = ",") -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, delimiter=delimiter)
        w.writeheader()
        w.writerows(rows)
    return path


def test_parse_url_cell_multi_urls_and_prose():
    urls, notes = parse_url_cell(synthetic_rows()[1]["wikipedia_link_11+"])
    assert urls == [W + "Paris,_Texas", W + "Prince_(musician)", W + "Escape_from_L.A.", W + "Kest_(planet)"]
    assert notes == "also see for context (and"
    assert parse_url_cell("") == ([], "")
    assert parse_url_cell(f"{W}A, {W}B, ") == ([W + "A", W + "B"], "")
    assert parse_url_cell("en.wikipedia.org/wiki/Grazia_Deledda") == ([W + "Grazia_Deledda"], "")  # upstream row 226


def test_parse_wiki_links_is_literal_only():
    assert parse_wiki_links("['a', 'b']") == ["a", "b"]
    assert parse_wiki_links("__import__('os').system('echo hi')") == []  # not a literal: never evaluated
    assert parse_wiki_links(f"[{W}X, broken") == [W + "X"]  # not a valid literal: falls back to URLs found
    assert parse_wiki_links(None) == [] and parse_wiki_links("") == []


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_load_local_formats(tmp_path, fmt):
    rows = synthetic_rows()
    if fmt == "jsonl":
        p = tmp_path / "f.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        p = write(tmp_path / f"f.{fmt}", rows, "\t" if fmt == "tsv" else ",")
    t0, t1 = load_frames(p)
    assert (t0.id, t0.domain, t0.answer, t0.prompt) == ("0", "frames", "The Vorn ", rows[0]["Prompt"])  # trailing spaces kept
    assert t0.metadata["reasoning_types"] == ["Multiple constraints", "Temporal reasoning"]
    assert t0.category == "multiple_constraints" and t0.difficulty == "easy"
    assert t1.metadata["links"][:10] == [W + f"Page_{i}" for i in range(1, 11)]
    assert t1.metadata["links"][10:] == [W + "Paris,_Texas", W + "Prince_(musician)", W + "Escape_from_L.A.", W + "Kest_(planet)"]
    assert t1.metadata["wiki_links"][-1] == W + "Paris,_Texas"
    assert t1.difficulty == "hard" and t1.category == "numerical_reasoning"


def test_upstream_tsv_unnamed_index_and_aliases(tmp_path):
    p = tmp_path / "test.tsv"
    p.write_text("\tPrompt\tAnswer\treasoning_types\twiki_links\n7\tQ?\tA\tTabular reasoning\t[]\n", encoding="utf-8")
    (t,) = load_frames(p)
    assert (t.id, t.prompt, t.answer, t.metadata["links"]) == ("7", "Q?", "A", [])
    t2 = frames_task({"question": "Q2", "true_answer": "B"}, 3)
    assert (t2.id, t2.prompt, t2.answer, t2.category) == ("3", "Q2", "B", "general")
    with pytest.raises(ValueError, match=r"no 'Answer' column"):
        frames_task({"Prompt": "Q"}, 0)


def test_real_frames_file_when_present():
    path = default_frames_path()
    if not path.exists():
        pytest.skip(f"real FRAMES file not present at {path} (set ORCHESTRA_DATA_DIR or FRAMES_DATA_PATH to run this test)")
    tasks = load_frames(path)
    assert len(tasks) == 824
    assert len({t.prompt for t in tasks}) == 824 and all(t.answer for t in tasks)
    with path.open(newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    extra = [(i, parse_url_cell(r["wikipedia_link_11+"])) for i, r in enumerate(raw) if r["wikipedia_link_11+"]]
    assert len(extra) == 13  # rows with wikipedia_link_11+ filled (README of the shared copy)
    assert [len(u) for _, (u, _) in extra] == [1, 1, 3, 1, 5, 2, 9, 1, 13, 1, 7, 10, 3]
    assert all(notes == "" for _, (_, notes) in extra)
    for i, (urls, _) in extra:
        assert tasks[i].metadata["links"][-len(urls):] == urls
    for t in tasks:
        assert all(u.startswith("https://") and " " not in u and not u.endswith(",") for u in t.metadata["links"])
        assert t.metadata["wiki_links"]
    assert tasks[226].metadata["links"][1] == W + "Grazia_Deledda"
    counts = {}
    for t in tasks:
        for r in t.metadata["reasoning_types"]:
            counts[r] = counts.get(r, 0) + 1
    assert counts == {"Multiple constraints": 549, "Numerical reasoning": 293, "Temporal reasoning": 278,
                      "Tabular reasoning": 236, "Post processing": 107}
    assert tasks[0].answer == "Jane Ballou"
    assert sum(t.answer != t.answer.strip() for t in tasks) == 23  # trailing spaces kept verbatim


def test_default_path_env_var(monkeypatch, tmp_path):
    monkeypatch.setenv("FRAMES_DATA_PATH", str(write(tmp_path / "f.csv", synthetic_rows()[:1])))
    assert default_frames_path() == tmp_path / "f.csv"
    assert [t.id for t in load_frames()] == ["0"]
    monkeypatch.delenv("FRAMES_DATA_PATH")
    # without it: $ORCHESTRA_DATA_DIR/frames/... (tests/conftest.py sets it to ../shared/data when unset)
    assert default_frames_path() == Path(os.environ["ORCHESTRA_DATA_DIR"]) / "frames" / "frames_test_set.csv"


def test_offline_hub_fails_at_once_naming_the_sample(tmp_path):
    """Item 7 (issue 48): no local file, FRAMES not cached and the hub unreachable: load_frames fails
    within seconds (not after the hub's ~24 s of retries) and names data_path="sample"."""
    from tests.gym.tasks.test_hle import load_offline

    seconds, out = load_offline("load_frames()", tmp_path)
    assert out.startswith("ERR") and 'data_path="sample"' in out and "unreachable" in out, out
    assert seconds < 15, seconds
