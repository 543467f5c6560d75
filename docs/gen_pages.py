"""MkDocs hook: the parts of the documentation that are generated from the code at build time, so that
they cannot drift from it.

A page asks for a generated part with an HTML comment on a line of its own:

    <!-- gen:config-sections -->        every TrainConfig key: section, key, type, default, meaning
    <!-- gen:presets -->                the TrainConfig presets and what each sets
    <!-- gen:env-keywords ENV_ID -->    the gym.make keywords the env id accepts

`config_rows`, `preset_rows` and `env_keywords` are also imported by tests/test_docs.py. The meaning of a
config key is its field's comment in `orchestra_jax.train_sections` (the trailing ``# ...`` or the comment
lines just above the field), or its ``name: meaning`` line in the class docstring (`GuardConfig`).
The page `architecture.md` joins the navigation after "Reliability" when it exists.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: meanings of the keys whose field has no comment of its own in the source (a shared comment or the class docstring
#: covers them there); a key missing from both is an error of tests/test_docs.py
SUPPLEMENT = {
    "sft.state_kind": "the demonstrator's first turn names the request's kind in a <think> block",
    "evaluation.top_k": "keep the k most likely token ids when decoding (0 = off)",
    "evaluation.top_p": "keep the nucleus of probability mass p when decoding (1 = off)",
}
MARKER = re.compile(r"^<!-- gen:(?P<what>[a-z-]+)(?: (?P<arg>\S+))? -->$", re.M)


def _field_comments(cls: type) -> dict[str, str]:
    """Field name -> its comment in the class source (trailing, else the comment lines above it)."""
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return {}
    out: dict[str, str] = {}
    above: list[str] = []
    for line in lines:
        s = line.strip()
        if s.startswith("#"):
            above.append(s.lstrip("#").strip())
            continue
        m = re.match(r"^(\w+)\s*:\s*[^=]+?(?:=.*?)?(?:\s+#\s*(?P<c>.*))?$", s)
        if m and not s.startswith(("def ", "class ", "return ")) and line.startswith(" " * 4) \
                and not line.startswith(" " * 8):
            text = m.group("c") or " ".join(above)
            if text:
                out[m.group(1)] = text
        above = []
    doc = inspect.getdoc(cls) or ""
    for m in re.finditer(r"^(?P<names>\w+(?:, \w+)*): (?P<text>.+(?:\n(?!\w+(?:, \w+)*: ).+)*)", doc, re.M):
        for name in m.group("names").split(", "):
            out.setdefault(name, " ".join(m.group("text").split()))
    return out


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return field.default_factory()  # type: ignore[misc]
    return None


def _type_name(field: dataclasses.Field) -> str:
    t = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
    return str(t).replace("|", "or")


def config_rows() -> list[tuple[str, str, str, str]]:
    """(key, type, default, meaning) of every TrainConfig key: the run's keys, then each section's
    (``grpo.loss.*`` under ``grpo``). Defaults are the dataclasses' (the paper's run), not a preset's."""
    from orchestra_jax.train_config import RUN_KEYS, SECTIONS, TrainConfig

    rows = []
    top = {f.name: f for f in dataclasses.fields(TrainConfig)}
    notes = _field_comments(TrainConfig)
    for key in RUN_KEYS:
        f = top[key]
        rows.append((key, _type_name(f), json.dumps(_default(f)), notes.get(key, "")))

    def walk(cls: type, prefix: str) -> None:
        notes = _field_comments(cls)
        for f in dataclasses.fields(cls):
            if dataclasses.is_dataclass(_default(f)):
                walk(type(_default(f)), f"{prefix}{f.name}.")
                continue
            key = prefix + f.name
            rows.append((key, _type_name(f), json.dumps(_default(f)), notes.get(f.name) or SUPPLEMENT.get(key, "")))

    for name, cls in SECTIONS.items():
        walk(cls, f"{name}.")
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def config_table() -> str:
    rows = config_rows()
    out = []
    section = None
    for key, typ, default, meaning in rows:
        sec = key.split(".")[0] if "." in key else "run"
        if sec != section:
            section = sec
            title = "run (top-level keys)" if sec == "run" else f"`[{sec}]`"
            out += ["", f"### {title}", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        out.append(f"| `{key}` | {_cell(typ)} | `{_cell(default)}` | {_cell(meaning)} |")
    return "\n".join(out).lstrip("\n")


def preset_rows() -> list[tuple[str, str]]:
    """(preset name, the keys it sets as ``section.key = value`` text) for every TrainConfig preset."""
    from orchestra_jax.train_config import PRESETS, TrainConfig

    def flat(d: dict, base: dict, prefix: str = "") -> list[str]:
        items = []
        for k, v in d.items():
            if isinstance(v, dict) and v and k not in ("overrides", "kwargs", "preference", "eval_preferences"):
                items += flat(v, base.get(k) or {}, f"{prefix}{k}.")
            elif v != base.get(k):  # what the preset sets over the defaults (`TrainConfig()`)
                items.append(f"{prefix}{k}={json.dumps(v)}")
        return items

    defaults = TrainConfig().to_dict()
    return [(name, "; ".join(flat(TrainConfig.preset(name).to_dict(), defaults))) for name in PRESETS]


def presets_table() -> str:
    rows = ["| preset | keys it sets over the defaults |", "|---|---|"]
    rows += [f"| `{name}` | <small>{_cell(keys)}</small> |" for name, keys in preset_rows()]
    return "\n".join(rows)


def env_keywords(env_id: str) -> list[str]:
    """The gym.make keywords `env_id` accepts (the id's own fixed keywords left out)."""
    from orchestra_gym.registration import ENV_SPECS, EnvFactory, accepted_kwargs

    entry, fixed = ENV_SPECS[env_id]
    cls = EnvFactory(env_id, entry).env_class()
    names = accepted_kwargs(cls) or []
    own = {"benchmark"} if cls.__name__ in ("HLEEnv", "FRAMESEnv") else set()  # set by the class itself
    return [n for n in names if n not in fixed and n not in own]


def _generate(what: str, arg: str | None) -> str:
    if what == "config-sections":
        return config_table()
    if what == "presets":
        return presets_table()
    if what == "env-keywords" and arg:
        return "Keywords of `gym.make`: " + ", ".join(f"`{k}`" for k in env_keywords(arg)) + "."
    raise ValueError(f"docs: unknown generated part {what!r} (gen_pages.py)")


def render(markdown: str) -> str:
    """`markdown` with every ``<!-- gen:... -->`` marker replaced by its generated text."""
    return MARKER.sub(lambda m: _generate(m.group("what"), m.group("arg")), markdown)


# --- MkDocs hook events -------------------------------------------------------------------------------
def on_config(config: Any) -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    docs = Path(config["docs_dir"])
    nav = config.get("nav")
    if nav and (docs / "architecture.md").exists() and not any("Architecture" in item for item in nav):
        at = next((i + 1 for i, item in enumerate(nav) if "Reliability" in item), len(nav))
        nav.insert(at, {"Architecture": "architecture.md"})
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return render(markdown)
