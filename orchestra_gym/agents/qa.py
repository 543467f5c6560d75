"""`QAPipelineAgent`: the fixed rule of the QA envs (HLE, FRAMES) with models as tools."""

from __future__ import annotations

from typing import Any

from orchestra_gym.agents.base import qa_price
from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.types import ToolCall

__all__ = ["QAPipelineAgent"]


class QAPipelineAgent:
    """A fixed rule on the QA envs' models-as-tools: ``search`` `searches` times, then
    ``enhance_reasoning`` once, then ``answer``, each with a fixed model (or, with `escalate`, the
    cheapest model first and the next dearer one after a search that brought no new document).

    Its queries follow what it reads: the problem for the first search, then the best-ranked new
    document of the last search (which names the next entity to look up); after a search with no
    new document, the problem again. The rule never looks at the kind of question: it is the
    "always the same models" baseline of the QA envs (``expert-<k>``: search-k, reasoner-k,
    answer-k; ``cascade``: escalating).

    Args:
        models: tool -> model id (``{"search": "search-1", ...}``); with `escalate`, ignored.
        searches: searches before reasoning. escalate: the cascade. name: for tables.

    Raises (in `reset`): ValueError when the env has no models-as-tools or lacks a model named.
    """

    def __init__(self, models: "dict[str, str] | None" = None, searches: int = 3, escalate: bool = False,
                 name: str = "qa-pipeline"):
        self.models = dict(models or {})
        self.searches = int(searches)
        self.escalate = bool(escalate)
        self.name = name

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.env = env.unwrapped
        description = self.env.describe()
        tools = description.tool_models()
        if "answer" not in tools:
            raise ValueError(f"agent {self.name!r} needs a QA env with models as tools (search / enhance_reasoning / answer)")
        if self.escalate:  # cheapest first, by the listed price of each tool's models
            self.order = {t: sorted(ms, key=lambda m: qa_price(description, m)) for t, ms in tools.items()}
            self.models = {t: ms[0] for t, ms in self.order.items()}
        for tool, model in self.models.items():
            if tool not in tools or model not in tools[tool]:
                raise ValueError(f"agent {self.name!r}: the environment has no {tool} model {model!r}; "
                                 f"{tool} models: {tools.get(tool, [])}")
        self.tools = tools
        self.done_searches, self.reasoned, self.before = 0, False, None

    def _query(self) -> str:
        docs = self.env.documents
        if self.before is not None and len(docs) > self.before:
            d = docs[self.before]
            return f"{d.get('title', '')} {d['text']}".strip()
        return self.env.task.prompt

    def act(self, observation: str, info: dict[str, Any]) -> str:
        docs = self.env.documents
        if self.escalate and self.before is not None and len(docs) == self.before and "search" in self.order:
            ms = self.order["search"]
            self.models["search"] = ms[min(ms.index(self.models["search"]) + 1, len(ms) - 1)]
        if "search" in self.tools and self.done_searches < self.searches:
            query = self._query()
            self.before = len(docs)
            self.done_searches += 1
            return render_tool_calls([ToolCall("search", {"query": query, "model": self.models.get("search", self.tools["search"][0])})])
        self.before = None
        if "enhance_reasoning" in self.tools and not self.reasoned:
            self.reasoned = True
            return render_tool_calls([ToolCall("enhance_reasoning", {"model": self.models.get(
                "enhance_reasoning", self.tools["enhance_reasoning"][0])})])
        return render_tool_calls([ToolCall("answer", {"model": self.models.get("answer", self.tools["answer"][0])})])
