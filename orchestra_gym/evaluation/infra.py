"""Infrastructure failures of an episode (an endpoint down, a timeout), told apart from the policy's own errors:
`INFRA_EXCEPTIONS` (what an agent may raise) and `infra_error_of` (what a step's ``info`` reports)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import httpx

from orchestra_gym.errors import InfraError

__all__ = ["INFRA_EXCEPTIONS", "infra_error_of"]


#: What an agent may raise for a failure outside the policy (an endpoint down after its retries, a
#: timeout): the episode is retried, then recorded as an infra failure.
INFRA_EXCEPTIONS: tuple[type[BaseException], ...] = (InfraError, TimeoutError, ConnectionError, httpx.TransportError)


# The text `orchestra_gym.tools.llm` puts in a call's error once its retries ran out on a retryable
# failure (timeouts, connection errors, HTTP 429 and 5xx); tools pass it on in their tool message.
_RETRIES_EXHAUSTED = re.compile(r"failed after \d+ attempts?: (?:timeout|connection error|HTTP (?:429|5\d\d))")


def infra_error_of(info: Mapping[str, Any]) -> str | None:
    """The infrastructure failure a step's ``info`` reports, or None.

    Two reports count: the episode ended with ``end_reason == "orchestrator_error"`` (the agent's
    own model could not be reached, reported through the env; the text is its ``step_errors``),
    and a tool message of the step (``info["new_messages"]``) carrying
    `orchestra_gym.tools.llm`'s text for a call whose retries ran out on a retryable failure
    (``... failed after N attempts: timeout | connection error | HTTP 429 | HTTP 5xx``): an expert,
    search or answer model that is down. A tool's other errors (HTTP 400, a bad argument) are the
    agent's, not infrastructure.
    """
    if info.get("end_reason") == "orchestrator_error":
        errors = info.get("step_errors") or ["the orchestrator's model failed"]
        return f"orchestrator: {errors[0]}"
    for m in info.get("new_messages", ()):
        content = m.get("content") or ""
        if m.get("role") == "tool" and "failed after" in content and _RETRIES_EXHAUSTED.search(content):
            return f"tool {m.get('name') or ''}: {content[:500]}"
    return None
