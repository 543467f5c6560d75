"""tau2-bench environments: ``ToolOrchestra-Tau2-Mock-v0`` and ``ToolOrchestra-Tau2-Retail-v0``."""

from __future__ import annotations

import re
from typing import Any

from orchestra_gym.domains.backend import DomainBackend
from orchestra_gym.envs.function_calling import FunctionCallingEnv
from orchestra_gym.types import Task
from orchestra_gym.users import LLMUser, ScriptedUser

__all__ = ["Tau2Env", "PROMPT_VARIANTS"]

PROMPT_VARIANTS = ("tau2", "paper")
# The paper's prompt (ToolOrchestra Sec. 4, function calling) asks the orchestrator to call an
# expert where tau2's policy says to transfer to a human agent.
_TRANSFER = re.compile(r"transfer(ring)? the user to a human agent", re.I)


class Tau2Env(FunctionCallingEnv):
    """A tau2-bench domain (v0.2.0 data) served by the orchestrator, graded by tau2's rules.

    ## Description
    The agent serves a user in a tau2-bench domain (``mock`` or ``retail``; airline and telecom
    later) with the domain's tools, which behave exactly like tau2-bench v0.2.0
    (`orchestra_gym.domains.tau2`, checked against tau2's recorded outputs), plus ``call_expert``
    (the paper's function-calling setting). The user is the offline scripted user (default) or an
    LLM user following tau2's simulation guidelines.

    ## Action Space / Observation Space
    As `ToolScaleEnv`: text in, transcript text out (``TextSpace``).

    ## Rewards
    tau2's reward at termination: the product over the task's ``reward_basis`` (DB, COMMUNICATE,
    ENV_ASSERTION, ACTION, NL_ASSERTION); NL assertions need a ``judge`` and are otherwise listed
    as not evaluated in ``info["reward_breakdown"]["not_evaluated"]`` (the reward then covers the
    other components). A premature end (turn limit, too many errors) scores 0.
    COMMUNICATE follows tau2 exactly (parity): each ``communicate_info`` string must occur,
    lower-cased, in an agent message lower-cased *with its commas removed*; the expected string
    keeps its commas, so an info such as ``"$1,000"`` can never be met (tau2 v0.2.0 behaves the
    same). ToolScale's process-fidelity check (`ToolScaleEnv`) normalises both sides instead.

    ## Starting State
    The task's initial state applied as tau2 does; the task is ``options["task_id"]`` or drawn
    with the env's seeded RNG.

    ## Episode End
    Terminated on the user's stop token (``###STOP###``, ``###TRANSFER###``,
    ``###OUT-OF-SCOPE###``) or a successful ``transfer_to_human_agents``; truncated at
    ``max_turns`` or ``max_errors``.

    ## Arguments
    ``domain`` (``"mock"``/``"retail"``); ``data_dir`` (tau2 ``data/tau2`` folder; default
    ``$TAU2_DATA_DIR``); ``prompt_variant``: ``"tau2"`` (default: tau2's policy verbatim, with
    ``transfer_to_human_agents`` and ``call_expert`` both offered) or ``"paper"`` (the policy's
    "transfer the user to a human agent" reads "call an expert with call_expert", as in the
    paper's prompt; the transfer tool stays available); ``judge`` (NL-assertion judge callable,
    see `orchestra_gym.domains.tau2.evaluation`); ``user_models`` (models file used to resolve a
    user model id given as ``options["user"]``; default: the ``models`` file); plus the
    `FunctionCallingEnv` arguments (``experts``/``models``/``cache``, ``max_turns`` (30),
    ``preference``, ``pricing``).

    ## Info
    As `OrchestraEnv`, plus ``user`` (which user simulator ran: ``scripted`` or
    ``llm:<model>``) and, at reset, ``tools`` and ``task_id``.

    ## Tools
    The domain's tools (free) and ``call_expert`` (simulated experts by default; priced).

    ## Version History
    * v0: initial release (tau2-bench v0.2.0 behaviour).
    """

    def __init__(
        self,
        domain: str,
        data_dir: Any = None,
        prompt_variant: str = "tau2",
        judge: Any = None,
        user_models: Any = None,
        max_turns: int = 30,
        **kwargs: Any,
    ):
        if prompt_variant not in PROMPT_VARIANTS:
            raise ValueError(f"prompt_variant must be one of {PROMPT_VARIANTS}, got {prompt_variant!r}")
        self._models_arg = kwargs.get("models")
        super().__init__(max_turns=max_turns, **kwargs)
        from orchestra_gym.tasks.tau2 import load_tau2_tasks

        self.domain = domain
        self.data_dir = data_dir
        self.prompt_variant = prompt_variant
        self.judge = judge
        self.user_models = user_models if user_models is not None else self._models_arg
        self.tasks: dict[str, Task] = {t.id: t for t in load_tau2_tasks(domain, data_dir)}
        self.task_ids = list(self.tasks)

    def _sample_task(self, task_id: Any | None) -> Task:
        if task_id is None:
            return self.tasks[self.task_ids[int(self.np_random.integers(0, len(self.task_ids)))]]
        key = str(task_id)
        if key not in self.tasks:
            import difflib

            close = difflib.get_close_matches(key, self.task_ids, n=3)
            raise ValueError(
                f"options['task_id']={task_id!r} is not a task of tau2 domain {self.domain!r}"
                + (f" (did you mean {close}?)" if close else "")
                + f"; {len(self.task_ids)} tasks, e.g. {self.task_ids[:3]}"
            )
        return self.tasks[key]

    def _new_backend(self, task: Task) -> DomainBackend:
        from orchestra_gym.domains.tau2.backend import Tau2Backend

        backend = Tau2Backend(task, domain=self.domain, data_dir=self.data_dir, judge=self.judge)
        if self.prompt_variant == "paper":
            backend.policy = _TRANSFER.sub("call an expert with call_expert", backend.policy)
        return backend

    def _user_for(self, task: Task, options: dict[str, Any]) -> Any:
        user = options.get("user", "scripted")
        if user in (None, "scripted"):
            return ScriptedUser(task.user_scenario)
        if not isinstance(user, str):  # a chat-model object
            model = user
        else:
            if self.user_models is None:
                raise ValueError(
                    f"options['user']={user!r} names a model, but the env has no models file: "
                    "pass gym.make(..., user_models='models.toml') or models=..."
                )
            from orchestra_gym.tools.models import ModelsConfig, load_models

            cfg = self.user_models if isinstance(self.user_models, ModelsConfig) else load_models(self.user_models)
            model = cfg.chat_model(user)
        from orchestra_gym.domains.tau2.data import data_dir as tau2_data_dir

        path = tau2_data_dir(self.data_dir) / "user_simulator" / "simulation_guidelines.md"
        if not path.is_file():
            raise FileNotFoundError(f"tau2 user guidelines not found at {path}; pass data_dir= or set TAU2_DATA_DIR")
        return LLMUser(model, task.user_scenario, path.read_text(encoding="utf-8"), temperature=0.0)

    def _grade(self) -> tuple[float, dict[str, Any]]:
        domain_calls = [c for c in self.trajectory if c.name != "call_expert"]
        transcript = [m for m in self.messages if m.role != "system"]
        return self.backend.grade(list(self.agent_messages), domain_calls, transcript=transcript)

    def _info(self, step_usage, new, step_errors):
        info = super()._info(step_usage, new, step_errors)
        info["user"] = getattr(self.user, "name", "scripted")
        return info
