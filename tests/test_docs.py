"""The documentation is tested: the site builds strictly with every internal link and anchor checked, every Python
and shell block of README.md and docs/ runs (in order, per page, in one shared working folder), the documented
flags of each `orchestra` subcommand are its parser's, the config table covers every key, and the README keeps its
shape.

Marks before a fenced block (an HTML comment on the line just above it):

    <!-- docs: skip (WHY) -->     not run; WHY must name what it needs that a test cannot have offline
    <!-- docs: file NAME -->      not run: its text is written to NAME in the working folder (a models file, a config)

The working folder links ``benchmarks/`` and ``examples/`` of the repository; ``orchestra`` there runs this
checkout's code. The shrunk training run of docs/getting-started.md (``runs/smoke``) is made once per session and
also stands for the main job's ``runs/tiny`` that the README's policy example reads. Port 8000 and 8001 in the
blocks are replaced by free ports.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
MARK = re.compile(r"^<!-- docs: (?P<kind>skip|file) (?P<arg>.+?) -->$")
LANGS = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
#: what a skipped block may need (the mark must say which): the rare things a test cannot have offline
SKIP_NEEDS = ("API key", "GPU", "the main job", "vLLM server", "installs packages", "the whole test suite")
MAX_SKIPS = 12
SMOKE = "--output-dir runs/smoke"  # the block of docs/getting-started.md that the session fixture runs
BLOCK_TIMEOUT_S = 420
FLAGS = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: where each subcommand's flags are documented
COMMAND_PAGES = {"eval": "evaluating.md", "regrade": "evaluating.md", "report": "evaluating.md",
                 "envs": "evaluating.md", "serve": "serving.md", "train": "training.md", "sft": "training.md",
                 "export": "training.md"}


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: str
    kind: str = ""  # "", "skip" or "file"
    arg: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of `page` with the mark on the line above each, in order."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        mark = MARK.match(before)
        out.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group("lang").lower(), m.group("body"),
                         mark.group("kind") if mark else "", mark.group("arg") if mark else ""))
    return out


def prose(page: Path) -> str:
    """`page` without its fenced blocks."""
    return FENCE.sub("", page.read_text(encoding="utf-8"))


def _gen_pages():
    spec = importlib.util.spec_from_file_location("gen_pages", DOCS / "gen_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------------------------------------------
# running the blocks
# --------------------------------------------------------------------------------------------------------------
_PY_RUNNER = r"""
import json, sys, traceback
blocks = json.load(sys.stdin)
for i, (where, code) in enumerate(blocks):
    print(f"--- {where}", flush=True)
    try:
        exec(compile(code, where, "exec"), {"__name__": "__main__"})
    except BaseException:
        traceback.print_exc()
        print(f"FAILED {where}", flush=True)
        sys.exit(1)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Workdir:
    """The shared working folder of the blocks, the environment they run in, and the blocks already run."""

    def __init__(self, root: Path):
        self.root = root
        self.done: set[str] = set()
        self.groups: list[int] = []
        self.ports = {"8000": str(_free_port()), "8001": str(_free_port())}
        bin_dir = root / ".bin"
        bin_dir.mkdir()
        shim = bin_dir / "orchestra"  # this checkout's `orchestra`, whatever is installed
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "from orchestra_jax.cli import main; '
                        f'raise SystemExit(main())" "$@"\n')
        shim.chmod(0o755)
        for name in ("benchmarks", "examples"):
            (root / name).symlink_to(REPO / name)
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
                    "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "MPLBACKEND": "Agg",
                    "TQDM_DISABLE": "1", "PYTHONUNBUFFERED": "1"}
        self.env.pop("XLA_FLAGS", None)

    def text(self, block: Block) -> str:
        body = block.body
        for port, free in self.ports.items():
            body = body.replace(port, free)
        return body

    def run_python(self, group: list[Block]) -> None:
        payload = json.dumps([(b.where, self.text(b)) for b in group])
        out = subprocess.run([sys.executable, "-c", _PY_RUNNER], input=payload, cwd=self.root, env=self.env,
                             capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
        assert out.returncode == 0, f"{group[0].where}..: python blocks failed\n{out.stdout[-3000:]}\n{out.stderr[-6000:]}"
        self.done.update(b.where for b in group)

    def run_bash(self, block: Block) -> None:
        log = self.root / ".block.log"  # a file, not a pipe: a server left in the background keeps a pipe open
        with open(log, "w+", encoding="utf-8") as out:
            proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", self.text(block)], cwd=self.root,
                                    env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            self.groups.append(proc.pid)  # what it leaves in the background ends with the page (`stop`)
            try:
                rc = proc.wait(timeout=BLOCK_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.stop()
                raise
            out.seek(0)
            text = out.read()
        assert rc == 0, f"{block.where}: shell block failed ({rc})\n{text[-6000:]}"
        self.done.add(block.where)

    def stop(self) -> None:
        """End the process groups of the shell blocks run so far (servers started with ``&``)."""
        for pgid in self.groups:
            try:
                os.killpg(pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self.groups = []

    def run_page(self, page: Path) -> None:
        try:
            self._run_page(page)
        finally:
            self.stop()

    def _run_page(self, page: Path) -> None:
        group: list[Block] = []
        for b in blocks(page):
            lang = LANGS.get(b.lang)
            if b.where in self.done or b.kind == "skip":
                continue
            if b.kind == "file":
                (self.root / b.arg).write_text(self.text(b), encoding="utf-8")
                continue
            if lang == "python" and not (group and "os.environ[" in b.body):
                group.append(b)
                continue
            if group:
                self.run_python(group)
                group = []
            if lang == "python":  # sets the environment before its imports: a process of its own
                group = [b]
            elif lang == "bash":
                self.run_bash(b)
        if group:
            self.run_python(group)


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Workdir:
    """The shared folder, with the shrunk training run of docs/getting-started.md made once (``runs/tiny`` is
    linked to it, for the README)."""
    wd = Workdir(tmp_path_factory.mktemp("docs"))
    smoke = [b for b in blocks(DOCS / "getting-started.md") if SMOKE in b.body and b.kind == ""]
    assert len(smoke) == 1, "docs/getting-started.md: expected one block training runs/smoke"
    wd.run_bash(smoke[0])
    wd.stop()
    for b in blocks(DOCS / "training.md"):  # the same command on the training page: one run serves both
        if b.body == smoke[0].body.split("\nls ")[0] + "\n":
            wd.done.add(b.where)
    (wd.root / "runs" / "tiny").symlink_to(wd.root / "runs" / "smoke")
    return wd


# the order of the site's navigation, then the README: later pages read what earlier ones wrote
_ORDER = ["getting-started.md", "environments.md", "tools-and-models.md", "evaluating.md", "training.md",
          "serving.md", "reliability.md"]
RUN_PAGES = sorted(PAGES, key=lambda p: (_ORDER.index(p.name) if p.name in _ORDER else len(_ORDER), str(p)))


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("page", RUN_PAGES, ids=[str(p.relative_to(REPO)) for p in RUN_PAGES])
def test_every_block_runs(page: Path, workdir: Workdir):
    workdir.run_page(page)


def test_blocks_are_run_or_say_why():
    """Every Python and shell block runs unless marked with what it needs; the marks are few and each names a
    need from `SKIP_NEEDS`; a file mark names a file."""
    skips = []
    for page in PAGES:
        for b in blocks(page):
            if b.kind == "skip":
                assert b.lang in LANGS, f"{b.where}: only Python and shell blocks are run; no mark needed"
                assert b.arg.startswith("(") and any(n in b.arg for n in SKIP_NEEDS), \
                    f"{b.where}: a skip mark says why in parentheses, naming one of {SKIP_NEEDS}: {b.arg!r}"
                skips.append(b.where)
            elif b.kind == "file":
                assert re.fullmatch(r"[\w.-]+", b.arg), f"{b.where}: a file mark names one file: {b.arg!r}"
    ran = [b for p in PAGES for b in blocks(p) if b.lang in LANGS and b.kind == ""]
    assert len(skips) <= MAX_SKIPS and len(skips) * 4 < len(ran), (len(skips), len(ran), skips)


# --------------------------------------------------------------------------------------------------------------
# the site
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.timeout(600)
def test_site_builds_strictly_with_links_checked(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    pytest.importorskip("mkdocstrings", reason="the docs extra (mkdocstrings) is not installed")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"}
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    assert "WARNING" not in out.stderr, out.stderr[-6000:]
    training = (tmp_path / "site" / "training" / "index.html").read_text(encoding="utf-8")
    assert "grpo.loss.kl_coef" in training and "gen:config-sections" not in training


def test_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8")):
        if not re.match(r"[a-z]+:", target):
            assert (REPO / target).exists(), f"README links to {target}, which does not exist"


# --------------------------------------------------------------------------------------------------------------
# the README's shape and the words of every page
# --------------------------------------------------------------------------------------------------------------
def test_readme_shape():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250, len(lines)
    long = [(i + 1, len(ln)) for i, ln in enumerate(prose(README).splitlines()) if len(ln) > 120]
    assert long == [], f"README lines over 120 characters outside code: {long}"
    heads = [ln for ln in lines if ln.startswith("## ")]
    assert heads[0].startswith("## Set-up"), heads
    first_blocks = [b for b in blocks(README) if b.lang == "bash"][:2]
    assert "orchestra train --preset tiny-toolscale" in first_blocks[0].body
    assert "python -m pytest" in first_blocks[1].body
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert first_blocks[1].body.strip().replace("pip install -e", "pip install -q -e").replace(
        "pip install --no-deps", "pip install -q --no-deps") in ci, "README's test command and .ci/run differ"


PROCESS_WORDS = re.compile(r"\bissues? #?\d+|\b(?:round|stop) \d+\b|\bthis session\b|\bhelper agent\b", re.I)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_pages_do_not_speak_of_the_development_process(page: Path):
    found = PROCESS_WORDS.findall(page.read_text(encoding="utf-8"))
    assert found == [], f"{page.relative_to(REPO)}: {found}"


def test_every_env_id_is_documented():
    from orchestra_gym.registration import ENV_IDS

    readme, envs = README.read_text(encoding="utf-8"), (DOCS / "environments.md").read_text(encoding="utf-8")
    for env_id in ENV_IDS:
        assert f"`{env_id}`" in readme, f"README's environment table lacks {env_id}"
        assert env_id in envs, f"docs/environments.md lacks {env_id}"


# --------------------------------------------------------------------------------------------------------------
# the command line against the docs
# --------------------------------------------------------------------------------------------------------------
def _help(capsys, *argv: str) -> str:
    """The usage paragraph of ``orchestra ARGV --help`` (flags never wrapped)."""
    from orchestra_jax.cli import main

    os.environ["COLUMNS"] = "1000"  # argparse wraps at the terminal's width
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    del os.environ["COLUMNS"]
    assert e.value.code == 0
    return capsys.readouterr().out.split("\n\n")[0]


def _usage_flags(text: str) -> set[str]:
    return set(FLAGS.findall(text)) - {"--help"}


def _documented_commands() -> list[tuple[str, str, str]]:
    """(where, subcommand, the command's text) for every `orchestra SUB ...` of the code blocks and inline code."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        pieces = [b.body for b in blocks(page)] + re.findall(r"`(orchestra [^`]+)`", prose(page))
        for piece in pieces:
            joined = re.sub(r"\\\n\s*", " ", piece)
            for m in re.finditer(r"(?<![\w/.-])orchestra (?P<sub>[a-z]+)(?P<rest>[^\n|;&]*)", joined):
                found.append((str(page.relative_to(REPO)), m.group("sub"), m.group("rest")))
        del text
    return found


def test_help_matches_the_documented_flags(capsys):
    """Each subcommand's flags are all on its page, and every flag written after `orchestra SUB` in the README or
    the docs is one of that subcommand's."""
    top = _help(capsys)
    subs = set(re.search(r"\{([a-z,]+)\}", top).group(1).split(","))
    assert subs == set(COMMAND_PAGES), f"subcommands {sorted(subs)}: give each a page in COMMAND_PAGES"
    flags = {sub: _usage_flags(_help(capsys, sub)) for sub in subs}
    for sub, page in COMMAND_PAGES.items():
        text = (DOCS / page).read_text(encoding="utf-8")
        missing = sorted(f for f in flags[sub] if f"`{f}`" not in text and f"{f} " not in text)
        assert missing == [], f"docs/{page} does not document `orchestra {sub}` {missing}"
    used = [(where, sub, f) for where, sub, rest in _documented_commands() if sub in flags
            for f in _usage_flags(rest) if f not in flags[sub]]
    assert used == [], f"flags the parsers do not have: {used}"
    unknown = sorted({(where, sub) for where, sub, _ in _documented_commands() if sub not in flags})
    assert unknown == [], f"unknown subcommands in the docs: {unknown}"


# --------------------------------------------------------------------------------------------------------------
# the generated config table
# --------------------------------------------------------------------------------------------------------------
def test_config_table_has_every_key_with_a_meaning():
    from orchestra_jax.train_config import RUN_KEYS, SECTIONS

    def keys(cls: type, prefix: str) -> list[str]:
        out = []
        for f in dataclasses.fields(cls):
            default = f.default_factory() if f.default is dataclasses.MISSING else f.default
            out += keys(type(default), f"{prefix}{f.name}.") if dataclasses.is_dataclass(default) else [prefix + f.name]
        return out

    expected = list(RUN_KEYS) + [k for name, cls in SECTIONS.items() for k in keys(cls, f"{name}.")]
    gen = _gen_pages()
    rows = gen.config_rows()
    assert [r[0] for r in rows] == expected
    assert [r[0] for r in rows if not r[3].strip()] == [], "config keys without a meaning (comment the field)"
    page = gen.render((DOCS / "training.md").read_text(encoding="utf-8"))
    assert all(f"`{k}`" in page for k in expected) and "<!-- gen:" not in page
    assert all(f"`{name}`" in page for name, _ in gen.preset_rows())
