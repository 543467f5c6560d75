"""The models file: model id -> endpoint, API-key variable and prices; anonymised ids -> model ids.

TOML is the documented format (read with the standard library's ``tomllib``); a ``.yaml`` /
``.yml`` file with the same structure is read when PyYAML is installed. The default file shipped
with the package, ``models_default.toml`` (next to this module), documents every key and maps the
paper's anonymised ids (``expert-1..3``, ``search-1..3``, ``reasoner-1..3``, ``answer-1..4``,
``answer-math-1..2``) to the paper's models (ToolOrchestra, arXiv 2511.21689, Sec. 4.1 and
App. D prices).

    cfg = load_models("my_models.toml")        # or load_models(None): $ORCHESTRA_MODELS or the default
    cfg.resolve("answer-1")                    # ModelEntry(id="gpt-5", base_url=..., ...)
    model = cfg.chat_model("expert-2")         # OpenAIChatModel, price from the file
    schedule = cfg.pricing_schedule()          # paper schedule + the file's prices (aliases included)
"""

from __future__ import annotations

import hashlib
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestra_gym import pricing as _pricing
from orchestra_gym.errors import ConfigError, did_you_mean

__all__ = ["ModelEntry", "ModelsConfig", "ModelsFileError", "load_models", "models_file_record", "load_models_record", "DEFAULT_MODELS_FILE", "MODELS_ENV",
           "TOOL_CALLING_MODES"]

DEFAULT_MODELS_FILE = Path(__file__).resolve().with_name("models_default.toml")
MODELS_ENV = "ORCHESTRA_MODELS"  # environment variable naming a models file

_ENTRY_KEYS = {"base_url", "api_key_env", "input_per_m", "output_per_m", "served_name", "timeout_s", "max_retries",
               "max_concurrency", "sampling", "tool_calling"}
TOOL_CALLING_MODES = ("native", "text")  # how a model acting as the orchestrator calls tools (LLMAgent)
_DEFAULT_KEYS = {"timeout_s", "max_retries", "max_concurrency"}
_TOP_KEYS = {"models", "aliases", "defaults"}


class ModelsFileError(ConfigError):
    """A models file that cannot be used; the message names the file, the key and the fix."""


@dataclass(frozen=True)
class ModelEntry:
    """One model of the models file.

    Attributes:
        id: model id (the key under ``[models]``), also the pricing id.
        base_url: OpenAI-compatible endpoint root ending in ``/v1``.
        api_key_env: environment variable holding the API key, or None (no authentication).
        input_per_m, output_per_m: USD per 1M prompt / completion tokens, or None to use the
            pricing schedule.
        served_name: model name sent to the endpoint (default: `id`).
        timeout_s: per-attempt HTTP timeout (s). max_retries: retries. max_concurrency: requests
            in flight.
        sampling: default sampling arguments (e.g. ``{"temperature": 0.0}``).
        tool_calling: how the model calls tools when it is the orchestrator
            (`orchestra_gym.agents.LLMAgent`): ``"native"`` (the env's tools sent as OpenAI
            ``tools``, the reply's ``tool_calls`` taken as the action; the server must support
            function calling, e.g. vLLM with ``--enable-auto-tool-choice --tool-call-parser
            hermes``) or ``"text"`` (no ``tools`` sent; the reply's text, with Hermes
            ``<tool_call>`` tags, goes to the env's parser).
    """

    id: str
    base_url: str
    api_key_env: str | None = None
    input_per_m: float | None = None
    output_per_m: float | None = None
    served_name: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 3
    max_concurrency: int = 16
    sampling: dict[str, Any] = field(default_factory=dict)
    tool_calling: str = "native"

    @property
    def price(self) -> _pricing.ModelPrice | None:
        """The file's price, or None when the file gives none."""
        if self.input_per_m is None or self.output_per_m is None:
            return None
        return _pricing.ModelPrice(self.input_per_m, self.output_per_m)


@dataclass
class ModelsConfig:
    """A loaded models file.

    Attributes:
        models: model id -> `ModelEntry`.
        aliases: alias -> model id or another alias.
        source: where it was read from (path text), for error messages.
    """

    models: dict[str, ModelEntry]
    aliases: dict[str, str] = field(default_factory=dict)
    source: str = "<memory>"

    def ids(self) -> list[str]:
        """All resolvable ids (model ids and aliases), sorted."""
        return sorted(set(self.models) | set(self.aliases))

    def names(self, model_id: str) -> bool:
        """Whether `model_id` resolves to a model of this file (an id or an alias, chains followed)."""
        try:
            self.resolve(model_id)
        except KeyError:
            return False
        return True

    def split(self, model_ids: "list[str] | tuple[str, ...]") -> tuple[list[str], list[str]]:
        """`model_ids` split into (named by this file: real, not named: simulated), order kept."""
        real = [m for m in model_ids if self.names(m)]
        return real, [m for m in model_ids if m not in real]

    def resolve(self, model_id: str) -> ModelEntry:
        """The entry for a model id or alias (alias chains followed).

        Raises:
            KeyError: unknown id (with the closest known ids and the file to edit) or an alias cycle.
        """
        seen = [model_id]
        name = model_id
        while name not in self.models:
            if name not in self.aliases:
                raise KeyError(f"unknown model {name!r}{did_you_mean(name, self.ids(), n=3)} in models file {self.source}; "
                               f"add [models.{name!r}] or an alias under [aliases]; known: {self.ids()}")
            name = self.aliases[name]
            if name in seen:
                raise KeyError(f"alias cycle {' -> '.join(seen + [name])} in models file {self.source} [aliases]")
            seen.append(name)
        return self.models[name]

    def pricing_schedule(self, base: "str | _pricing.PricingSchedule | None" = None) -> _pricing.PricingSchedule:
        """`base` (default the paper's) with this file's prices added, under model ids and aliases."""
        extra: dict[str, _pricing.ModelPrice] = {}
        for mid, entry in self.models.items():
            if entry.price is not None:
                extra[mid] = entry.price
        for alias in self.aliases:
            entry = self.resolve(alias)
            price = entry.price
            if price is None:
                try:
                    price = _pricing.get_schedule(base).price(entry.id)
                except KeyError:
                    continue
            extra[alias] = price
        return _pricing.get_schedule(base).with_models(extra)

    def chat_model(self, model_id: str, pricing: "str | _pricing.PricingSchedule | None" = None, **overrides: Any):
        """An `OpenAIChatModel` for `model_id` (alias or id).

        The file's price, when given, is used; otherwise the model is priced from `pricing`
        (default the paper's schedule). `overrides` go to `OpenAIChatModel` (e.g. ``timeout_s``;
        ``price=None`` makes a per-episode schedule such as `pricing.random_schedule` decide the
        price, looked up under the resolved model id).

        Raises:
            KeyError: unknown id, or no price in the file nor in the schedule.
        """
        from orchestra_gym.tools.llm import OpenAIChatModel

        e = self.resolve(model_id)
        kwargs: dict[str, Any] = dict(
            price=e.price, pricing=pricing, price_id=e.id, timeout_s=e.timeout_s, max_retries=e.max_retries,
            max_concurrency=e.max_concurrency, default_sampling=dict(e.sampling),
        )
        kwargs.update(overrides)
        return OpenAIChatModel(e.served_name or e.id, e.base_url, e.api_key_env, **kwargs)


def _err(source: str, where: str, problem: str, fix: str) -> ModelsFileError:
    return ModelsFileError(f"models file {source}: {where}: {problem}; fix: {fix}")


# keys a newcomer guesses -> the file's key for the same thing
_KEY_SYNONYMS = {"model": "served_name", "name": "served_name", "model_name": "served_name", "url": "base_url",
                 "api_base": "base_url", "endpoint": "base_url", "api_key": "api_key_env", "timeout": "timeout_s"}


def _unknown_key(source: str, where: str, key: str, allowed: set[str]) -> ModelsFileError:
    hint = (f" (the name sent to the endpoint is served_name)" if _KEY_SYNONYMS.get(key) == "served_name" else
            f"; did you mean {_KEY_SYNONYMS[key]!r}?" if _KEY_SYNONYMS.get(key) in allowed else
            did_you_mean(key, sorted(allowed)))
    return _err(source, where, f"unknown key {key!r}{hint}", f"use only {sorted(allowed)}")


def _number(source: str, where: str, value: Any, kind: type, positive: bool = False) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise _err(source, where, f"must be {'an integer' if kind is int else 'a number'}, got {value!r}",
                   f"write e.g. {where.rsplit('.', 1)[-1]} = {3 if kind is int else 1.25}")
    if not math.isfinite(value):  # TOML and YAML both spell nan / inf; no price, timeout or count is one
        raise _err(source, where, f"must be a finite number, got {value!r}",
                   f"write e.g. {where.rsplit('.', 1)[-1]} = {3 if kind is int else 1.25}")
    if value < 0 or (positive and value == 0):
        raise _err(source, where, f"must be {'> 0' if positive else '>= 0'}, got {value!r}", "use a positive value")
    return kind(value)


def parse_models(data: Any, source: str = "<memory>") -> ModelsConfig:
    """Validate a parsed models file (dict) into a `ModelsConfig`.

    Expert ids the file does not alias (``expert-1``..``expert-3``) default to the project's one
    expert pool, `orchestra_gym.pricing.EXPERT_POOL`, when the file defines that model.

    Raises:
        ModelsFileError: naming the file, the offending key and the fix.
    """
    if not isinstance(data, dict):
        raise _err(source, "top level", f"expected a table, got {type(data).__name__}",
                   "start the file with [models.\"<id>\"] tables")
    for k in data:
        if k not in _TOP_KEYS:
            raise _unknown_key(source, "top level", k, _TOP_KEYS)
    defaults_raw = data.get("defaults") or {}
    if not isinstance(defaults_raw, dict):
        raise _err(source, "[defaults]", "must be a table", "write [defaults] followed by key = value lines")
    defaults: dict[str, Any] = {}
    for k, v in defaults_raw.items():
        if k not in _DEFAULT_KEYS:
            raise _unknown_key(source, "[defaults]", k, _DEFAULT_KEYS)
        defaults[k] = _number(source, f"[defaults].{k}", v, float if k == "timeout_s" else int, positive=k != "max_retries")
    models_raw = data.get("models")
    if not isinstance(models_raw, dict) or not models_raw:
        raise _err(source, "[models]", "missing or empty", 'add at least one [models."<id>"] table with base_url')
    models: dict[str, ModelEntry] = {}
    for mid, raw in models_raw.items():
        where = f"[models.{mid!r}]"
        if not isinstance(raw, dict):
            raise _err(source, where, f"must be a table, got {type(raw).__name__}",
                       f'write [models."{mid}"] with base_url = "http://host/v1"')
        for k in raw:
            if k not in _ENTRY_KEYS:
                raise _unknown_key(source, where, k, _ENTRY_KEYS)
        base_url = raw.get("base_url")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise _err(source, f"{where}.base_url", f"must be an http(s) URL ending in /v1, got {base_url!r}",
                       'write base_url = "http://localhost:8000/v1"')
        key_env = raw.get("api_key_env")
        if key_env in ("", None):
            key_env = None
        elif not isinstance(key_env, str) or not key_env.replace("_", "").isalnum():
            raise _err(source, f"{where}.api_key_env", f"must be an environment variable NAME, got {key_env!r}",
                       "write the variable's name (e.g. OPENAI_API_KEY), never the key itself")
        prices = {}
        for k in ("input_per_m", "output_per_m"):
            if k in raw:
                prices[k] = _number(source, f"{where}.{k}", raw[k], float)
        if len(prices) == 1:
            missing = ({"input_per_m", "output_per_m"} - set(prices)).pop()
            raise _err(source, where, f"has {next(iter(prices))} but no {missing}", f"give both or neither")
        sampling = raw.get("sampling") or {}
        if not isinstance(sampling, dict):
            raise _err(source, f"{where}.sampling", "must be a table", "write sampling = { temperature = 0.0 }")
        from orchestra_gym.tools.llm import check_sampling

        bad = check_sampling(sampling)
        if bad:
            raise _err(source, f"{where}.sampling", bad, "fix or remove that argument")
        served = raw.get("served_name")
        if served is not None and not isinstance(served, str):
            raise _err(source, f"{where}.served_name", f"must be a string, got {served!r}", "quote the name")
        tool_calling = raw.get("tool_calling", "native")
        if tool_calling not in TOOL_CALLING_MODES:
            raise _err(source, f"{where}.tool_calling", f"must be one of {list(TOOL_CALLING_MODES)}, got {tool_calling!r}",
                       'write tool_calling = "native" (OpenAI tools) or "text" (Hermes <tool_call> tags in the reply)')
        opts = dict(defaults)
        for k in ("timeout_s", "max_retries", "max_concurrency"):
            if k in raw:
                opts[k] = _number(source, f"{where}.{k}", raw[k], float if k == "timeout_s" else int,
                                  positive=k != "max_retries")
        models[str(mid)] = ModelEntry(id=str(mid), base_url=base_url, api_key_env=key_env, served_name=served,
                                      sampling=dict(sampling), tool_calling=tool_calling, **prices, **opts)
    aliases_raw = data.get("aliases") or {}
    if not isinstance(aliases_raw, dict):
        raise _err(source, "[aliases]", "must be a table", '"answer-1" = "gpt-5"')
    aliases: dict[str, str] = {}
    for a, target in aliases_raw.items():
        if not isinstance(target, str):
            raise _err(source, f"[aliases].{a!r}", f"must name a model id, got {target!r}", f'"{a}" = "gpt-5"')
        if a in models:
            raise _err(source, f"[aliases].{a!r}", "is also a model id", "rename the alias or the model")
        aliases[str(a)] = target
    for expert, model_id in _pricing.EXPERT_POOL.items():  # the one expert pool, unless the file says otherwise
        if expert not in aliases and expert not in models and model_id in models:
            aliases[expert] = model_id
    cfg = ModelsConfig(models=models, aliases=aliases, source=source)
    for a in aliases:
        try:
            cfg.resolve(a)
        except KeyError as e:
            raise _err(source, f"[aliases].{a!r}", str(e.args[0]).split(" in models file")[0],
                       "point the alias at a model under [models]") from None
    return cfg


def load_models(path: "str | os.PathLike[str] | None" = None) -> ModelsConfig:
    """Read and validate a models file.

    Args:
        path: TOML (``.toml``) or YAML (``.yaml``/``.yml``, needs PyYAML) file; None reads the file
            named by ``$ORCHESTRA_MODELS``, else the packaged `DEFAULT_MODELS_FILE`.

    Raises:
        ModelsFileError: missing file, syntax error, or invalid content (names file, key and fix).
    """
    if path is None:
        path = os.environ.get(MODELS_ENV) or DEFAULT_MODELS_FILE
    p = Path(path)
    if not p.is_file():
        raise ModelsFileError(f"models file {p} does not exist; fix: pass an existing file (see "
                              f"{DEFAULT_MODELS_FILE} for the format) or unset ${MODELS_ENV}")
    return _parse_text(p.read_text(encoding="utf-8"), p)


def models_file_record(path: "str | os.PathLike[str]") -> dict[str, str]:
    """What a run records of the models file it played with: ``{"path", "sha256", "text"}`` (the
    file's path as given, the SHA-256 of its UTF-8 text as hex, the text itself), so that the run can
    be continued with exactly these endpoints and prices (`load_models_record`). The file is
    validated first (`load_models`).

    Raises:
        ModelsFileError: as `load_models`.
    """
    load_models(path)
    text = Path(path).read_text(encoding="utf-8")
    return {"path": str(path), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "text": text}


def load_models_record(record: "dict[str, str]") -> ModelsConfig:
    """The `ModelsConfig` of a `models_file_record` (its ``text``, read as the recorded path's
    format: YAML for ``.yaml``/``.yml``, else TOML); errors name the path as recorded in the run.

    Raises:
        ModelsFileError: a record whose text does not match its ``sha256`` (edited by hand), or
            invalid content (as `load_models`).
    """
    text = str(record.get("text", ""))
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != record.get("sha256"):
        raise ModelsFileError(f"models file {record.get('path')} as recorded in run.json: its text does not match "
                              f"its sha256; fix: restore run.json, or resume with --models FILE --replace-models")
    return _parse_text(text, Path(str(record.get("path", "models.toml"))))


def _parse_text(text: str, p: Path) -> ModelsConfig:
    """A models file's text parsed (TOML, or YAML by `p`'s suffix) and validated (errors name `p`)."""
    if p.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ModelsFileError(f"models file {p}: YAML needs PyYAML; fix: pip install pyyaml, or write the "
                                  f"file as TOML (the documented format)") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ModelsFileError(f"models file {p}: YAML syntax error: {e}; fix: correct the line shown") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ModelsFileError(f"models file {p}: TOML syntax error: {e}; fix: correct the line shown (ids "
                                  f'with / or . need quotes: [models."Qwen/Qwen3-32B"])') from None
    return parse_models(data, source=str(p))
