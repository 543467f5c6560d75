"""QA environments (HLE, FRAMES): offline episodes, check_env, observation budget, modes, corpus, metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from orchestra_gym.domains.qa_corpus import build_corpus, evidence_chain, plausible_wrong_answer, write_corpus
from orchestra_gym.tools.search import LocalSearch, WebSearch, read_corpus
from orchestra_gym.envs.qa import QA_MODELS, QAEnv, estimate_tokens
from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.rewards import reward_vector_names
from orchestra_gym.types import Task, ToolCall
from tests.gym.tasks.test_frames import synthetic_rows as frames_rows
from tests.gym.tasks.test_frames import write as write_frames
from tests.gym.tasks.test_hle import synthetic_rows as hle_rows

REPO = Path(__file__).resolve().parents[3]
Q = "records of the register"  # a query every generated corpus has documents for
ENTRY = {"ToolOrchestra-HLE-v0": "orchestra_gym.envs.qa:HLEEnv", "ToolOrchestra-FRAMES-v0": "orchestra_gym.envs.qa:FRAMESEnv"}


def _ensure_registered() -> None:
    import orchestra_gym  # noqa: F401  (registers the ids the lead has added)

    for env_id, entry in ENTRY.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry)


def call(name: str, **args) -> str:
    return render_tool_calls([ToolCall(name, args)])


@pytest.fixture()
def hle_file(tmp_path) -> Path:
    p = tmp_path / "hle.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in hle_rows()), encoding="utf-8")
    return p


@pytest.fixture()
def frames_file(tmp_path) -> Path:
    return write_frames(tmp_path / "frames.csv", frames_rows())


def play(env, actions):
    out = None
    for a in actions:
        out = env.step(a)
        if out[2] or out[3]:
            break
    return out


# ---------------------------------------------------------------------------------- corpus

def _tasks():
    return [Task("1", "hle", "What is the capital city of Zembla?", "Vornstad"),
            Task("2", "hle", "How many moons does the planet Kest have?", "42"),
            Task("3", "frames", "Who wrote the Vorn saga?", "Ada Lind ", metadata={"links": ["https://en.wikipedia.org/wiki/Vorn_saga"]})]


def test_corpus_deterministic_and_local(tmp_path):
    a = build_corpus(_tasks(), seed=3)
    assert a == build_corpus(_tasks(), seed=3)
    assert len(a) == 3 * (2 + 2 * 2) + 40 and len({d["id"] for d in a}) == len(a)  # 2 hops, 2 distractors a hop
    # adding a task never changes another task's documents
    b = build_corpus(_tasks()[:2], seed=3)
    assert [d for d in a if d["id"].split("-")[1:3] in (["hle", "1"], ["hle", "2"])] == [
        d for d in b if not d["id"].startswith("filler")]
    docs = {d["id"]: d for d in a}
    chain = evidence_chain(_tasks()[2], seed=3)
    assert chain.entities[0] == "Vorn saga" and docs["ev-frames-3-0"]["title"] == "Vorn saga"
    assert chain.entities[1] in docs["ev-frames-3-0"]["text"]  # hop 0 names hop 1's entity
    assert "given name Ada" in docs["ev-frames-3-1"]["text"] and "family name Lind" in docs["ev-frames-3-1"]["text"]
    assert "figure of" not in docs["ev-hle-2-1"]["text"] and "struck off" in docs["ev-hle-2-1"]["text"]
    p = write_corpus(a, tmp_path / "c" / "corpus.jsonl")
    assert [(d.id, d.title, d.text) for d in read_corpus(p)] == [(d["id"], d["title"], d["text"]) for d in a]
    with pytest.raises(ValueError, match="no gold answer"):
        build_corpus([Task("x", "hle", "q?", None)])
    with pytest.raises(ValueError, match="duplicate task id '1'"):
        build_corpus(_tasks()[:1] * 2)


def test_no_document_states_the_answer():
    """The answer follows from the chain's pieces; no document holds it as whole words (normalised)."""
    from orchestra_gym.judges import normalize_answer
    from orchestra_gym.tasks.frames import load_frames
    from orchestra_gym.tasks.hle import load_hle

    for tasks in (_tasks(), load_frames(data_path="sample"), load_hle(data_path="sample")):
        docs = build_corpus(tasks)
        text = {d["id"]: f" {normalize_answer(d['title'] + ' ' + d['text'])} " for d in docs}
        for t in tasks:
            gold = f" {normalize_answer(t.answer)} "
            own = [v for k, v in text.items() if k.startswith((f"ev-{t.domain}-{t.id}-", f"dx-{t.domain}-{t.id}-"))]
            assert len(own) >= 6 and not any(gold in v for v in own), t.id
            assert " answer " not in " ".join(own)


def test_query_matters():
    """BM25 with the query: naming a hop's entity retrieves its evidence first; naming a near-identical
    entity (what a confused search model writes) retrieves the distractor, and the evidence rarely."""
    from orchestra_gym.tasks.frames import load_frames

    tasks = load_frames(data_path="sample")
    ix = LocalSearch(build_corpus(tasks))
    right = wrong_hits = n = 0
    for t in tasks:
        c = evidence_chain(t)
        for i in range(len(c.entities)):
            n += 1
            right += ix.search(c.query_for(i), 5)[0].id == c.doc_ids[i]
            hits = [h.id for h in ix.search(f"{c.variants[i][0]} {c.relations[i]}", 5)]
            assert hits[0] == c.distractor_ids[i][0]
            wrong_hits += c.doc_ids[i] in hits
    assert (n, right, wrong_hits) == (340, 340, 20)
    assert ix.search("xyzzy plugh", 3) == []


def test_plausible_wrong_answer_is_wrong():
    rng = np.random.default_rng(0)
    for ans in ["42", "3.14", "B", "Jane Ballou", "Zorbish", "1,000"]:
        for _ in range(20):
            w = plausible_wrong_answer(ans, rng)
            assert w and w.strip().lower() != ans.strip().lower()
    assert plausible_wrong_answer("Ada", rng, ["Ada", "Bo"]) == "Bo"


# ---------------------------------------------------------------------------------- envs

@pytest.mark.parametrize("env_id,fixture", [("ToolOrchestra-HLE-v0", "hle_file"), ("ToolOrchestra-FRAMES-v0", "frames_file")])
def test_gym_make_check_env_and_full_episode(env_id, fixture, request):
    _ensure_registered()
    path = request.getfixturevalue(fixture)
    env = gym.make(env_id, data_path=str(path))
    check_env(env.unwrapped)
    obs, info = env.reset(seed=7)
    assert "## Problem\n" + env.unwrapped.task.prompt in obs
    for tool, models in (("search", 3), ("enhance_reasoning", 3), ("answer", 6)):
        spec = next(s for s in env.unwrapped.tool_specs if s.name == tool)
        assert spec.parameters["required"] == (["query", "model"] if tool == "search" else ["model"])
        assert len(spec.parameters["properties"]["model"]["enum"]) == models
        assert "/1M input tokens" in spec.description and "typical latency" in spec.description
    obs, r, term, trunc, info = env.step(call("search", query=Q, model="search-2"))
    assert (r, term, trunc) == (0.0, False, False) and info["cost_usd"] > 0 and info["latency_s"] > 0
    assert "## Documents\n" in obs
    obs, r, term, trunc, info = env.step(call("enhance_reasoning", model="reasoner-1"))
    assert "## Code and outputs" in obs and "Output:\ncandidate answer:" in obs
    obs, r, term, trunc, info = env.step(call("answer", model="answer-1"))
    assert term and not trunc and r == info["outcome"] and r in (0.0, 1.0)
    names = info["reward_vector_names"]
    assert names == reward_vector_names(list(QA_MODELS)) and names[0] == "calls/search-1"
    vec = info["reward_vector"]
    assert vec.shape == (15,) and vec.dtype == np.float64
    assert vec[names.index("calls/search-2")] == 1 and vec[names.index("calls/reasoner-1")] == 1
    assert vec[names.index("calls/answer-1")] == 1 and vec[:12].sum() == 3
    assert vec[-3] == r and vec[-2] == pytest.approx(-info["episode_cost_usd"]) and vec[-1] == pytest.approx(-info["episode_latency_s"])
    assert info["tool_calls"] == {"search": 1.0, "search-2": 1.0, "enhance_reasoning": 1.0, "reasoner-1": 1.0, "answer": 1.0, "answer-1": 1.0}
    assert info["reward_breakdown"]["judge_method"] in ("exact", "none")
    env.close()


def test_deterministic_under_seed(hle_file):
    def run(seed):
        env = QAEnv("hle", data_path=hle_file)
        env.reset(seed=seed)
        out = play(env, [call("search", query=Q, model="search-3"), call("enhance_reasoning", model="reasoner-2"), call("answer", model="answer-4")])
        return env.task.id, out[1], out[4]["episode_cost_usd"], out[4]["episode_latency_s"], out[0]

    assert run(11) == run(11)


@pytest.mark.parametrize("benchmark,fixture,task_id", [("hle", "hle_file", "syn-001"), ("frames", "frames_file", "0")])
def test_simulated_accuracy_depends_on_evidence_and_skill(benchmark, fixture, task_id, request):
    """Over many seeds: the oracle's sequence (every hop found, code where needed, the best models for the
    kind) beats answering with no evidence, and a model weak on the kind falls behind a strong one."""
    env = QAEnv(benchmark, data_path=request.getfixturevalue(fixture))
    oracle, alone = [], []
    for seed in range(40):
        env.reset(seed=seed, options={"task_id": task_id})
        oracle.append(_oracle_episode(env))
        env.reset(seed=seed, options={"task_id": task_id})
        alone.append(play(env, [call("answer", model="answer-1")])[1])
    assert np.mean(oracle) >= 0.85 and np.mean(alone) <= 0.1
    env.reset(seed=0, options={"task_id": task_id})
    tools = env.toolset
    group_skill = {m: tools.skill(m) for m in ("search-1", "search-2", "search-3")}
    assert max(group_skill.values()) == 0.97 and min(group_skill.values()) == 0.3  # strong and weak on this kind


def _oracle_episode(env) -> float:
    while True:
        obs, r, term, trunc, info = env.step(env.oracle_action())
        if term or trunc:
            return r


def test_oracle_and_errors_never_crash(hle_file):
    env = QAEnv("hle", data_path=hle_file, max_errors=3)
    env.reset(seed=0, options={"task_id": "syn-002"})
    obs, r, term, trunc, info = env.step(call("search", query=Q, model="search-7"))
    assert "one of ['search-1', 'search-2', 'search-3'], got 'search-7' (did you mean" in obs
    obs, *_ = env.step("just some words")
    assert "There is no user in this task" in obs
    obs, r, term, trunc, info = env.step("<tool_call>{bad json</tool_call>")
    assert not term and info["parse_errors"] >= 1
    obs, r, term, trunc, info = env.step(call("answr", model="answer-1"))
    assert "did you mean 'answer'" in obs and not term
    env.reset(seed=0, options={"task_id": "syn-002"})
    while True:
        obs, r, term, trunc, info = env.step(env.oracle_action())
        if term or trunc:
            break
    assert term and info["end_reason"] == "answer" and info["tool_calls"].get("search-1", 0) >= 1


def test_turn_limit_truncates(hle_file):
    env = QAEnv("hle", data_path=hle_file, max_turns=3)
    env.reset(seed=0)
    out = play(env, [call("search", query=Q, model="search-3")] * 5)
    assert out[3] and not out[2] and out[4]["end_reason"] == "turn_limit" and out[4]["outcome"] == 0.0
    assert out[4]["answered"] is False  # no answer was given: the paper's invalid-output filter drops it
    assert env.max_turns == 3 and QAEnv("hle", data_path=hle_file).max_turns == 50


def test_observation_token_budget_and_tokenizer(hle_file):
    env = QAEnv("hle", data_path=hle_file, max_observation_tokens=1500, search_k=5)
    obs, _ = env.reset(seed=0, options={"task_id": "syn-001"})
    base = estimate_tokens(obs)
    for m in ("search-1", "search-2", "search-3"):
        obs, *_ = env.step(call("search", query=Q, model=m))
    for _ in range(4):
        obs, *_ = env.step(call("enhance_reasoning", model="reasoner-3"))
    assert estimate_tokens(obs) <= 1500 < base + 2000
    assert len(env.unwrapped.documents) >= 4 and obs.count("[ev-") + obs.count("[dx-") + obs.count("[filler-") <= len(env.documents)
    assert "## Problem\nWhat is 17 * 3?" in obs  # the problem is always kept
    seen = []

    def words(text):
        seen.append(len(text))
        return text.split()  # a tokenizer returning tokens: the count is len()

    env2 = QAEnv("hle", data_path=hle_file, tokenizer=words, max_observation_tokens=520)
    obs, _ = env2.reset(seed=0, options={"task_id": "syn-001"})
    obs, *_ = env2.step(call("search", query=Q, model="search-1"))
    assert seen and len(obs.split()) <= 520 and "## Documents" in obs
    from tokenizers import Tokenizer, models as tk_models, pre_tokenizers  # a real tokenizer object, built offline

    tok = Tokenizer(tk_models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    env3 = QAEnv("hle", data_path=hle_file, tokenizer=tok, max_observation_tokens=960)
    obs, _ = env3.reset(seed=0, options={"task_id": "syn-001"})
    obs, *_ = env3.step(call("search", query=Q, model="search-1"))
    assert len(tok.encode(obs).ids) <= 960 < len(tok.encode(env3._render(env3.task.prompt, env3.documents, [], env3.attempts)).ids)
    with pytest.raises(ValueError, match=r"max_observation_tokens=300 is smaller than the instructions"):
        QAEnv("hle", data_path=hle_file, tokenizer=words, max_observation_tokens=300).reset(seed=0)
    with pytest.raises(ValueError, match="max_observation_tokens must be >= 64"):
        QAEnv("hle", data_path=hle_file, max_observation_tokens=10)


def test_chat_mode_appends_tool_messages(hle_file):
    env = QAEnv("hle", data_path=hle_file, observation="chat")
    env.reset(seed=0)
    obs, *_ = env.step(call("search", query=Q, model="search-1"))
    assert "### tool search [" in obs and "]\nQuery: " in obs and "### system" in obs
    obs, *_ = env.step(call("search", query=Q, model="search-2"))
    full = estimate_tokens(obs)
    small = QAEnv("hle", data_path=hle_file, observation="chat", max_observation_tokens=full - 40)
    small.reset(seed=0)
    for m in ("search-1", "search-2"):
        obs, *_ = small.step(call("search", query=Q, model=m))
    assert estimate_tokens(obs) <= full - 40 and obs.startswith("### system") and "earlier message(s) left out" in obs


def test_basic_tools_mode(frames_file):
    env = QAEnv("frames", data_path=frames_file, mode="basic")
    obs, info = env.reset(seed=0, options={"task_id": "1"})
    assert [s.name for s in env.tool_specs] == ["web_search", "local_search", "python", "answer"]
    obs, r, term, trunc, info = env.step(call("local_search", query="Page 1"))
    assert "[ev-frames-1-0]" in obs and info["cost_usd"] == 0.0
    obs, r, term, trunc, info = env.step(call("web_search", query="Kest moons"))
    assert info["cost_usd"] == pytest.approx(0.01)  # Tavily fee (paper App. D), served locally offline
    obs, r, term, trunc, info = env.step(call("python", code="print(6 * 7)"))
    assert "Output:\n42" in obs and info["latency_s"] == 1.0
    obs, r, term, trunc, info = env.step(call("answer", answer="42"))
    assert term and r == 1.0 and info["reward_vector_names"] == reward_vector_names(["web_search", "local_search", "python", "answer"])
    env.reset(seed=0, options={"task_id": "0"})
    out = play(env, [call("answer", answer="the Vorn river")])
    assert out[1] == 0.0 and out[4]["reward_breakdown"]["judge_method"] == "none"
    env.reset(seed=0, options={"task_id": "0"})
    assert play(env, [call("answer", answer="  the vorn")])[1] == 1.0  # normalised match vs gold "The Vorn "


def test_options_and_arguments(hle_file):
    env = QAEnv("hle", data_path=hle_file)
    env.reset(seed=0, options={"tools": ["search", "answer"], "pricing": 5})
    assert [s.name for s in env.tool_specs] == ["search", "answer"]
    d_random = env.tool_specs[0].description
    env.reset(seed=0)
    assert env.tool_specs[0].description != d_random  # prices in descriptions follow the episode's schedule
    with pytest.raises(ValueError, match="must keep 'answer'"):
        env.reset(seed=0, options={"tools": ["search"]})
    with pytest.raises(ValueError, match=r"\['task_id'\]='syn-00' is not a task of this env \(did you mean 'syn-004'\?\)"):
        env.reset(seed=0, options={"task_id": "syn-00"})
    with pytest.raises(ValueError, match="mode must be 'orchestra'"):
        QAEnv("hle", data_path=hle_file, mode="fancy")
    with pytest.raises(ValueError, match=r"unknown id\(s\) \['search-9'\]"):
        QAEnv("hle", data_path=hle_file, models={"search-9": object()})


def test_offline_without_data_names_the_fix(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HLE_DATA_PATH",)}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO),
               FRAMES_DATA_PATH=str(tmp_path / "absent.csv"))
    code = (
        "import gymnasium as gym\nfrom tests.gym.envs.test_qa import _ensure_registered\n_ensure_registered()\n"
        "for i in ('ToolOrchestra-HLE-v0', 'ToolOrchestra-FRAMES-v0'):\n"
        "    try:\n        gym.make(i)\n    except RuntimeError as e:\n        print('ERR', i, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=180)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("ERR")]
    assert len(lines) == 2, out.stdout + out.stderr
    assert "HF_TOKEN" in lines[0] and "huggingface-cli login" in lines[0] and "data_path=" in lines[0]
    assert "FRAMES_DATA_PATH" in lines[1] and "data_path=" in lines[1]


class _FailingModel:
    """A real chat model whose every call fails with an HTTP error (usage of the failed call kept)."""

    def complete(self, messages, tools=None, **sampling):
        from orchestra_gym.tools.llm import ChatResponse
        from orchestra_gym.types import Message, Usage

        return ChatResponse(Message("assistant", ""), Usage(100.0, 0.0, 0.25, 2.0), error="HTTP 503 after 3 attempts")


def test_one_ask_path_records_a_failed_real_model_call(hle_file):
    from orchestra_gym.envs.qa_tools import BasicTools, ModelTools

    env = QAEnv("hle", data_path=hle_file, models={m: _FailingModel() for m in ("search-2", "reasoner-2", "answer-2")})
    assert type(env.toolset) is ModelTools and not env.all_simulated and env.index is None
    assert type(QAEnv("hle", data_path=hle_file, mode="basic").toolset) is BasicTools
    env.reset(seed=0, options={"task_id": "syn-001"})
    for tool, model, what in (("search", "search-2", "search"), ("enhance_reasoning", "reasoner-2", "reasoning"),
                              ("answer", "answer-2", "answer")):
        obs, r, term, trunc, info = env.step(call(tool, model=model, **({"query": Q} if tool == "search" else {})))
        assert env.messages[-1].content == f"Error: {what} model {model} failed: HTTP 503 after 3 attempts"
        assert env.attempts[-1] == f"turn {int(info['turn'])}: {tool}({model}) failed: HTTP 503 after 3 attempts"
        assert (info["cost_usd"], info["latency_s"], term) == (0.25, 2.0, False)  # the failed call is charged
        assert "## Feedback on your last output\nError: " in obs
    assert env.documents == [] and env.code_runs == [] and info["tool_calls"]["answer-2"] == 1.0
    obs, r, term, trunc, info = env.step(call("answer", model="answer-1"))  # simulated ids still answer
    assert term and info["reward_breakdown"]["answer_model"] == "answer-1"


# ---------------------------------------------------------------------------------- over HTTP

def _responder(body: dict) -> dict:
    """The local server's model: replies by the kind of request it gets (search, code, answer, judge)."""
    text = body["messages"][-1]["content"]
    if "[correct_answer]" in text:
        return {"content": '{"extracted_final_answer": "the Zorbish tongue", "reasoning": "same language",'
                           ' "correct": "yes", "confidence": 70}'}
    if "Write one search query" in text:
        return {"content": "Zorblax protocol language"}
    if "Write a short Python program" in text:
        return {"content": "Here:\n```python\nprint('Zorb' + 'ish')\n```"}
    if "Answer the question using the context" in text:
        return {"content": "Explanation: the documents say so.\nAnswer: the Zorbish tongue\nConfidence: 70%"}
    return {"content": "unexpected request"}


def test_hle_episode_over_http_with_judge_and_cache(tmp_path, hle_file):
    """Every model and the judge are a real OpenAI-compatible server on 127.0.0.1; a second run
    replays everything from the SQLite cache without one HTTP request."""
    from tests.servers import OpenAIServer
    from orchestra_gym.tasks.hle import load_hle

    _ensure_registered()
    corpus = write_corpus(build_corpus(load_hle(data_path=hle_file)), tmp_path / "corpus.jsonl")
    with OpenAIServer(responder=_responder) as srv:
        models = tmp_path / "models.toml"
        aliases = "\n".join(f'"{k}" = "local-llm"' for k in list(QA_MODELS) + ["judge"])
        models.write_text(f'[models."local-llm"]\nbase_url = "{srv.base_url}"\ninput_per_m = 1.0\noutput_per_m = 2.0\n\n'
                          f"[aliases]\n{aliases}\n", encoding="utf-8")

        def episode():
            env = gym.make("ToolOrchestra-HLE-v0", data_path=str(hle_file), models=str(models), judge_model="judge",
                           cache=str(tmp_path / "calls.sqlite"), corpus_path=str(corpus))
            obs, info = env.reset(seed=1, options={"task_id": "syn-004"})
            obs, *_ = env.step(call("search", query=Q, model="search-2"))
            assert "Query: Zorblax protocol language" in env.unwrapped.messages[-1].content
            assert "[ev-hle-syn-004-0]" in obs
            obs, *_ = env.step(call("enhance_reasoning", model="reasoner-1"))
            assert "print('Zorb' + 'ish')" in obs and "Output:\nZorbish" in obs
            out = env.step(call("answer", model="answer-3"))
            env.close()
            return out

        obs, r, term, trunc, info = episode()
        assert term and r == 1.0
        bd = info["reward_breakdown"]
        assert bd["judge_method"] == "llm" and bd["judge_details"]["extracted_final_answer"] == "the Zorbish tongue"
        assert bd["judge_usage"]["prompt_tokens"] > 0  # the judge's own usage, not charged to the episode
        reqs = srv.chat_requests
        assert len(reqs) == 4 and {r["model"] for r in reqs} == {"local-llm"}
        assert "[correct_answer]: Zorbish " in reqs[-1]["messages"][0]["content"]
        model_cost = sum(
            (sum(len(str(m.get("content") or "").split()) for m in q["messages"]) * 1.0
             + len(_responder(q)["content"].split()) * 2.0) / 1e6 for q in reqs[:3])
        assert model_cost <= info["episode_cost_usd"] <= model_cost + 1e-4  # + sandbox CPU seconds x 8.3e-6
        names = info["reward_vector_names"]
        assert info["reward_vector"][names.index("calls/answer-3")] == 1.0

        obs2, r2, term2, trunc2, info2 = episode()  # replay: same result, no new request
        assert len(srv.chat_requests) == 4
        assert (r2, info2["reward_breakdown"]["response"]) == (r, bd["response"])
        assert info2["episode_cost_usd"] == pytest.approx(info["episode_cost_usd"], abs=1e-4)


def test_web_search_when_local_index_has_too_few(tmp_path, frames_file, monkeypatch):
    """search falls back to Tavily-shaped web search (local server) when the local index finds nothing."""
    from tests.servers import TavilyServer

    monkeypatch.setenv("QA_TEST_TAVILY_KEY", "tvly-test-key")
    filler = write_corpus([{"id": "filler-0", "title": "The orchard of Bavo", "text": "The orchard of Bavo was restored in 1901."}],
                          tmp_path / "filler.jsonl")
    pages = {"https://en.wikipedia.org/wiki/Vorn_River": ("Vorn River", "The Vorn flows through Zembla's capital city.")}
    with TavilyServer(pages) as srv:
        web = WebSearch(base_url=srv.base_url, api_key_env="QA_TEST_TAVILY_KEY", max_results=3)
        env = QAEnv("frames", data_path=frames_file, corpus_path=filler, web_search=web)
        env.reset(seed=0, options={"task_id": "0"})
        obs, r, term, trunc, info = env.step(call("search", query=Q, model="search-1"))
        assert "[https://en.wikipedia.org/wiki/Vorn_River] Vorn River" in obs
        assert "(web)" in env.attempts[-1] and srv.count == 1
        assert info["cost_usd"] >= 0.01  # Tavily fee (paper App. D) on top of the search model's tokens
        basic = QAEnv("frames", data_path=frames_file, corpus_path=filler, web_search=web, mode="basic")
        basic.reset(seed=0, options={"task_id": "0"})
        obs, r, term, trunc, info = basic.step(call("web_search", query="Vorn river Zembla"))
        assert "Vorn River" in obs and info["cost_usd"] == pytest.approx(0.01)
        obs, r, term, trunc, info = basic.step(call("local_search", query="Vorn river"))
        assert basic.messages[-1].content == "No results." and srv.count == 2  # local only: no web request
        web.close()


@pytest.mark.parametrize("kwargs", [{"mode": "basic"}, {"observation": "chat"}, {"mode": "basic", "observation": "chat"}])
def test_check_env_other_modes(hle_file, kwargs):
    env = QAEnv("hle", data_path=hle_file, **kwargs)
    check_env(env, skip_render_check=True)  # no spec outside gym.make; render is covered via gym.make above
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs) and info["turn"] == 0.0


def test_corpus_command(tmp_path, frames_file, capsys):
    from orchestra_gym.tasks.corpus import main

    out = tmp_path / "corpus.jsonl"
    assert main(["--benchmark", "frames", "--data-path", str(frames_file), "--out", str(out), "--filler", "5"]) == 0
    assert "wrote 20 documents for 2 frames tasks" in capsys.readouterr().out  # 2 + 4 and 3 + 6 chain docs, 5 filler
    env = QAEnv("frames", data_path=frames_file, corpus_path=out)
    assert len(env.index.docs) == 20 and env.index.docs[0].id == "ev-frames-0-0"


def test_sync_vector_env(hle_file):
    _ensure_registered()
    v = gym.vector.SyncVectorEnv([lambda: gym.make("ToolOrchestra-HLE-v0", data_path=str(hle_file)) for _ in range(2)])
    obs, info = v.reset(seed=0)
    assert len(obs) == 2 and all("## Problem" in o for o in obs)
    obs, r, term, trunc, info = v.step((call("search", query=Q, model="search-1"), call("answer", model="answer-1")))
    assert list(term) == [False, True] and r[0] == 0.0 and r[1] in (0.0, 1.0)
    assert info["episode_cost_usd"].dtype == np.float64 and info["episode_cost_usd"][1] > 0
    v.close()
