"""`orchestra export RUN_DIR --hf DIR` (`orchestra_jax.export.export_run`).

One tiny run per module (the SFT warm start of ``tests/jax/test_agents.py``'s run, long enough that the
greedy policy writes whole tool calls), exported with the CLI, then:

- transformers loads the directory (Qwen3ForCausalLM, float32) with the JAX policy's logits (1e-4);
- the exported tokenizer's ``apply_chat_template`` of a played ToolScale conversation is exactly the
  token sequence the policy saw (prompt, its sampled turns, the environment blocks), and the exported
  template renders what Qwen3's official template renders (tools included);
- end to end: ``transformers serve`` on the exported run, ``orchestra eval --agent llm:<id>`` (text
  tool calling, temperature 0) and the in-process `PolicyAgent` (temperature 0) play the same actions
  on at least 9 of 10 seeds of ToolOrchestra-ToolScale-v0 in the run's setting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("orchestra_jax.model", reason="the Qwen3 policy is not in this checkout")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import gymnasium as gym  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from flax import nnx  # noqa: E402

from orchestra_gym.parsing import parse_action  # noqa: E402
from orchestra_jax import train  # noqa: E402
from orchestra_jax.agents import PolicyAgent, load_policy_agent  # noqa: E402
from orchestra_jax.cli import main as orchestra  # noqa: E402
from orchestra_jax.export import CHAT_TEMPLATE  # noqa: E402
from orchestra_jax.train_config import TrainConfig  # noqa: E402
from tests.jax.test_agents import OVERRIDES  # noqa: E402
from tests.servers import transformers_serve  # noqa: E402

ENV = "ToolOrchestra-ToolScale-v0"
SEEDS = range(10)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(run dir, TrainConfig) of one tiny run (SFT warm start + 1 GRPO step)."""
    cfg = TrainConfig.preset("tiny-toolscale").replace(**OVERRIDES)
    out = tmp_path_factory.mktemp("tiny_run")
    train.run_training(cfg, out)
    return out, cfg


@pytest.fixture(scope="module")
def exported(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("hf") / "tiny-orchestrator"
    assert orchestra(["export", str(run[0]), "--hf", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def agent(run):
    return load_policy_agent(run[0], temperature=0.0)


def test_export_of_a_folder_without_a_run_is_one_line(tmp_path, capsys):
    assert orchestra(["export", str(tmp_path), "--hf", str(tmp_path / "hf")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("orchestra export: ") and "train_config.json not found" in err and "\n" not in err
    assert not (tmp_path / "hf").exists()


def _jax_model(agent: PolicyAgent):
    return nnx.merge(agent.sampler.graphdef, agent.sampler.params)


def test_the_directory_has_what_servers_load(exported, agent):
    names = sorted(p.name for p in exported.iterdir())
    assert names == ["chat_template.jinja", "config.json", "generation_config.json", "model.safetensors",
                     "orchestra_setting.json", "tokenizer.json", "tokenizer_config.json"]
    setting = json.loads((exported / "orchestra_setting.json").read_text())
    assert setting == {"env_id": ENV, "env_kwargs": agent.env_kwargs, "reset_options": agent.reset_options}
    cfg = json.loads((exported / "config.json").read_text())
    im_end, endoftext = agent.tok.eos_ids
    assert cfg["architectures"] == ["Qwen3ForCausalLM"] and cfg["eos_token_id"] == im_end
    gen = json.loads((exported / "generation_config.json").read_text())
    assert gen["eos_token_id"] == [im_end, endoftext] and gen["max_new_tokens"] == 40
    tok_cfg = json.loads((exported / "tokenizer_config.json").read_text())
    assert tok_cfg["eos_token"] == "<|im_end|>" and tok_cfg["chat_template"] == CHAT_TEMPLATE
    tok = transformers.AutoTokenizer.from_pretrained(exported)
    assert tok.eos_token_id == im_end and tok.pad_token_id == endoftext
    ids = tok.encode("<tool_call>\n{}\n</tool_call><|im_end|>", add_special_tokens=False)
    assert ids == agent.tok.encode("<tool_call>\n{}\n</tool_call><|im_end|>")
    # the tool tags survive a server's skip_special_tokens decoding; the ChatML controls do not
    assert tok.decode(ids, skip_special_tokens=True) == "<tool_call>\n{}\n</tool_call>"
    # transformers serve's reply parsing: the policy's text as written (tool calls not extracted)
    text = '<tool_call>\n{"name": "call_expert", "arguments": {}, "id": ""}\n</tool_call>'
    parsed = tok.parse_response(tok.encode(text + "<|im_end|>", add_special_tokens=False),
                                prefix="<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert parsed == {"role": "assistant", "content": text}


def test_transformers_logits_equal_the_jax_policy(exported, agent):
    model = transformers.AutoModelForCausalLM.from_pretrained(exported, dtype=torch.float32)
    model.eval()
    env = gym.make(agent.env_id, **agent.env_kwargs)
    _, info = env.reset(seed=3, options=agent.reset_options)
    from orchestra_jax.tokenizer import render_messages

    ids = agent.tok.encode(render_messages(info["new_messages"]))[:256]
    ours = np.asarray(_jax_model(agent)(jnp.asarray([ids], dtype=jnp.int32)))[0]
    with torch.no_grad():
        theirs = model(torch.tensor([ids])).logits[0].numpy()
    assert ours.shape == theirs.shape == (len(ids), 512)
    assert np.abs(ours - theirs).max() <= 1e-4
    env.close()


def _play(agent: PolicyAgent, seed: int, max_turns: int = 3):
    """A greedy episode in a plain loop: (conversation messages, [(token sequence after act k)], texts)."""
    env = gym.make(agent.env_id, **agent.env_kwargs)
    obs, info = env.reset(seed=seed, options=agent.reset_options)
    agent.reset(env, obs, info)
    messages, seqs, texts, done = list(info["new_messages"]), [], [], False
    while not done and len(texts) < max_turns:
        if texts:
            messages += [{"role": "assistant", "content": texts[-1]}]
            messages += [m for m in info["new_messages"] if m["role"] != "assistant"]
        texts.append(agent.act(obs, info))
        seqs.append(list(agent._state.tokens[0]))
        obs, _, term, trunc, info = env.step(texts[-1])
        done = term or trunc
    env.close()
    return messages, seqs, texts


def test_the_chat_template_renders_the_policy_tokens(exported, agent, shared_data):
    tok = transformers.AutoTokenizer.from_pretrained(exported)
    official = (shared_data / "qwen3" / "chat_template.jinja").read_text()
    checked = 0
    for seed in range(20):
        messages, seqs, texts = _play(agent, seed)
        if len(texts) < 2:
            continue
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        # the policy's sequence of its last turn: the conversation so far, then the turn's sampled tokens
        assert seqs[-1][:len(ids)] == ids
        assert agent.tok.decode(seqs[-1][len(ids):]).removesuffix("<|im_end|>") == texts[-1]
        # the exported template renders what Qwen3's official one does, with tools too
        tools = [{"type": "function", "function": {"name": "call_expert", "description": "ask an expert",
                                                   "parameters": {"type": "object", "properties": {}}}}]
        for kw in ({}, {"tools": tools}, {"enable_thinking": False}):
            ours = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **kw)
            theirs = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                             chat_template=official, **kw)
            assert ours == theirs
        checked += 1
        if checked == 2:
            return
    pytest.fail(f"the tiny policy played >= 2 turns on only {checked} of 20 seeds")


def _actions(texts: list[str]) -> list[tuple]:
    """Each assistant turn as the env parses it: (tool calls as (name, arguments), message, is an error)."""
    out = []
    for text in texts:
        p = parse_action(text)
        out.append(([(c.name, c.arguments) for c in p.tool_calls], p.message, bool(p.errors)))
    return out


def test_transformers_serve_plays_the_policy_actions(run, exported, agent, tmp_path):
    out, cfg = run
    t0 = time.monotonic()
    with transformers_serve(tmp_path / "serve.log") as base_url:
        models = tmp_path / "models.toml"
        models.write_text(
            f'[models."tiny-orchestrator"]\nbase_url = "{base_url}"\nserved_name = "{exported}"\n'
            f'input_per_m = 0.2\noutput_per_m = 0.2\ntool_calling = "text"\nmax_retries = 1\ntimeout_s = 120.0\n'
            f"sampling = {{ temperature = 0.0, max_tokens = {cfg.rollout.max_new_tokens} }}\n")
        setting = json.loads((exported / "orchestra_setting.json").read_text())  # the run's setting
        kwargs = dict(setting["env_kwargs"], models=None)
        args = ["eval", "--env", ENV, "--agent", "llm:tiny-orchestrator", "--models", str(models), "--episodes",
                str(len(SEEDS)), "--seed", str(SEEDS[0]), "--env-kwargs", json.dumps(kwargs),
                "--reset-options", json.dumps(setting["reset_options"]), "--max-concurrency", "2",
                "--output-dir", str(tmp_path / "llm"), "--no-progress"]
        done = subprocess.run([sys.executable, "-m", "orchestra_jax.cli", *args], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, PYTHONPATH=os.getcwd()))
        assert done.returncode == 0, done.stderr[-2000:]
    served = {r["seed"]: r for r in map(json.loads, (tmp_path / "llm" / "trajectories.jsonl").read_text().splitlines())}
    assert sorted(served) == list(SEEDS)
    summary = json.loads((tmp_path / "llm" / "summary.json").read_text())
    assert summary["episodes"] == len(SEEDS) and summary["infra_failures"] == 0
    assert summary["mean_orchestrator_cost_usd"] > 0  # the server's usage, priced by the models file
    same, same_text, differ = 0, 0, {}
    for seed in SEEDS:
        messages, _, texts = _play(agent, seed, max_turns=cfg.env.max_turns)
        served_texts = [m.get("content") or "" for m in served[seed]["messages"] if m["role"] == "assistant"]
        ours, theirs = _actions(texts), _actions(served_texts)
        same_text += [t.strip() for t in texts] == served_texts
        if ours == theirs:
            same += 1
        else:  # a difference would be a logit tie broken differently (float32 sums in torch vs XLA)
            differ[seed] = (ours, theirs)
    print(f"transformers serve vs PolicyAgent: {same}/{len(SEEDS)} seeds with the same actions, {same_text} with "
          f"the same texts ({time.monotonic() - t0:.1f} s); differ: {differ}")
    assert same >= 9, differ


def test_generation_config_carries_the_runs_decoding(run, tmp_path):
    """``generation_config.json`` holds the run's evaluation decoding (evaluation.temperature, top_k,
    top_p), the decoding a server should use for the trained policy; greedy runs say do_sample false."""
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(run[0], folder)
    conf = json.loads((folder / "train_config.json").read_text())
    for setting, want in (
        (dict(temperature=0.6, top_k=20, top_p=0.95),
         {"do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95}),
        (dict(temperature=0.0, top_k=20, top_p=0.95), {"do_sample": False}),
    ):
        (folder / "train_config.json").write_text(json.dumps(dict(conf, evaluation={**conf["evaluation"], **setting})))
        hf = tmp_path / f"hf{setting['temperature']}"
        assert orchestra(["export", str(folder), "--hf", str(hf)]) == 0
        gen = json.loads((hf / "generation_config.json").read_text())
        assert {k: gen[k] for k in gen if k in ("do_sample", "temperature", "top_k", "top_p")} == want
