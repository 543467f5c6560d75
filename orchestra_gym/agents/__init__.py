"""Baseline agents for any orchestra environment: ``reset(env, observation, info)`` once per episode,
then ``act(observation, info) -> action`` per turn. Agents read the env through
``env.unwrapped.describe()`` (`orchestra_gym.description.EnvDescription`) and ``info``.

Modules (each one job): `base` (the `Agent` protocol, price and tool helpers), `scripted` (``random``,
``oracle``: the env's golden next action, an upper bound; ``expert-<k>``; ``cascade``: cheapest first,
escalating; ``delegating``: the warm start's demonstrator), `qa` (`QAPipelineAgent`, the QA envs' fixed
rule behind ``expert-<k>`` and ``cascade`` there), `rules` (``most-accurate``, ``cheapest``, ``fastest``,
``random-offered`` and the text router, for expert pools), `router` (`RouterAgent`, fitted by
`orchestra_gym.evaluation.fit.fit_router`), `llm` (``llm:<model id>``: `LLMAgent`, the paper's prompted
baselines) and `registry` (`make_agent`, `agent_factory`, `register_agent_kind`: ``policy:<run dir>``
comes from `orchestra_jax`, which this package never imports).
"""

from orchestra_gym.agents.base import Agent, listed_price, qa_tool_models
from orchestra_gym.agents.llm import LLMAgent, llm_agent
from orchestra_gym.agents.qa import QAPipelineAgent
from orchestra_gym.agents.registry import (
    AGENT_NAMES,
    AgentFactory,
    agent_factory,
    check_agent_name,
    make_agent,
    register_agent_kind,
)
from orchestra_gym.agents.router import RouterAgent
from orchestra_gym.agents.scripted import CascadeAgent, DelegatingAgent, ExpertAgent, OracleAgent, RandomAgent

__all__ = ["Agent", "RandomAgent", "OracleAgent", "ExpertAgent", "QAPipelineAgent", "qa_tool_models", "CascadeAgent",
           "DelegatingAgent", "RouterAgent", "LLMAgent", "make_agent", "check_agent_name", "llm_agent", "AgentFactory",
           "agent_factory", "register_agent_kind", "AGENT_NAMES", "listed_price"]
