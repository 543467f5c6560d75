"""A Python sandbox for the code-interpreter tool: one process tree per call, isolated and limited.

`run_python(code)` runs `code` as a script in a fresh interpreter and returns its stdout, stderr,
exit code, whether it hit the wall-clock limit, and the CPU seconds it used. The limits are set by
the environment that owns the sandbox (constructor / call arguments), never by the model's code.

Isolation (``isolation="full"``, the default), set up by a small launcher process before the
code starts (Linux ``unshare(2)``, ``setrlimit(2)``, ``prctl(2)``):

* new network namespace (``CLONE_NEWNET``): no interface but a down loopback, so no network;
* new PID namespace (``CLONE_NEWPID``): the code runs as PID 1 of its namespace, so when it exits
  or is killed every process it started (grandchildren, ``setsid`` escapers) is killed too;
* new mount namespace (``CLONE_NEWNS``) and a root of its own (``pivot_root(2)``, the host's tree
  detached): the code sees only read-only binds of the system folders (``/usr``, ``/etc``, ``/bin``,
  ``/lib*``, ``/sbin``) and of the interpreter's installation (`_visible_dirs`), the device nodes
  ``null``, ``zero``, ``full``, ``random``, ``urandom``, its own ``/proc`` (only the sandbox's
  processes) and its tmpfs. So no host path outside those exists for it: no filesystem Unix
  socket (``/run/...``, ``/dev/log``, D-Bus, a listener in any other folder) can be connected to,
  and ``/proc/self/mountinfo`` lists the sandbox's dozen mounts, not the host's. (Chosen over a
  seccomp filter on ``connect``: seccomp cannot read the socket path behind the pointer, so it could
  only refuse every ``AF_UNIX`` socket; the private root also hides the host's files and mount
  table, and abstract Unix sockets are already per network namespace.) Host mounts are made
  read-only first (``mount_setattr(2)`` with ``AT_RECURSIVE``; per-mount remounts on kernels
  before 5.12), so the binds are read-only; ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are one fresh
  tmpfs of ``disk_mb`` MiB (the total the code can write, all files together), which disappears
  with the namespace at the end of the call;
* as an unprivileged user (``nobody``) when the caller is root (root ignores ``RLIMIT_NPROC``),
  with ``PR_SET_NO_NEW_PRIVS`` (setuid binaries grant nothing); a non-root caller gets a new user
  namespace instead;
* nice 10, so that a CPU-bound or forking payload cannot starve the launcher that enforces the deadline;
* limits: ``RLIMIT_CPU`` (timeout + 1 s), ``RLIMIT_AS`` (``memory_mb``), ``RLIMIT_NPROC``,
  ``RLIMIT_FSIZE``, ``RLIMIT_CORE`` = 0; an environment with only ``PATH``, ``HOME``, ``TMPDIR``,
  ``LANG`` (no secrets); stdin is ``/dev/null``; stdout and stderr are capped.

The wall-clock limit is enforced by the launcher (SIGKILL of the namespace's PID 1 at the
deadline) with a backstop in the caller (``killpg`` of the whole session shortly after). CPU is
billed for the whole process tree, children killed at the end included (see `SandboxResult`).
The caller's working directory (the script; in ``isolation="none"`` everything the code writes)
is removed by `remove_tree`, which handles trees of any depth and never loses the result.

Limits (what is not isolated): the code shares the host kernel (a kernel exploit escapes); it can
read every file the ``nobody`` user can read in the folders bound into its root; ``isolation="none"`` keeps only the session, process
group, rlimits, per-file size limit and scrubbed environment (network allowed, writes land on the
host filesystem, no total disk quota, no read-only root). If
isolation cannot be set up the call fails closed with `SandboxError`, whose message says how the
environment's operator can opt out: ``isolation="none"`` or ``ORCHESTRA_SANDBOX_ISOLATION=none``
(session, process group, rlimits and scrubbed environment only; network allowed).

Cost (ToolOrchestra App. D): CPU seconds x the pricing fee ``code_interpreter_per_s``
(8.3e-6 USD/s in the paper's schedule).
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestra_gym import pricing as _pricing
from orchestra_gym.errors import OrchestraError
from orchestra_gym.tools.sandbox_root import _LAUNCHER, _visible_dirs
from orchestra_gym.types import ToolResult, ToolSpec, Usage

__all__ = ["SandboxResult", "SandboxError", "run_python", "remove_tree", "PythonSandbox", "ISOLATION_ENV", "PYTHON_ENV"]

ISOLATION_ENV = "ORCHESTRA_SANDBOX_ISOLATION"  # "none" opts out of namespaces (operator's choice)
ALLOW_NETWORK_ENV = "ORCHESTRA_SANDBOX_ALLOW_NETWORK"  # "1": same as isolation "none"
PYTHON_ENV = "ORCHESTRA_SANDBOX_PYTHON"  # interpreter for the code (must be readable by the sandbox user)
_log = logging.getLogger(__name__)
_OPT_OUT = (f"to run without namespaces (network allowed) the environment's operator can pass "
            f"isolation='none' or set {ISOLATION_ENV}=none")


class SandboxError(OrchestraError, RuntimeError):
    """The sandbox could not be set up (fail closed); the message says why and how to opt out."""


@dataclass(frozen=True)
class SandboxResult:
    """Outcome of one sandboxed run.

    Attributes:
        stdout, stderr: decoded output (UTF-8, undecodable bytes replaced), each capped at
            ``max_output_bytes`` with a ``[... N bytes truncated]`` note.
        exit_code: the interpreter's exit status; negative = killed by that signal (e.g. -9).
        timed_out: True when the wall-clock limit killed the code.
        cpu_s: user + system CPU seconds of the whole process tree: the code, the children it
            waited for, and the processes killed at its end or at the deadline (those sampled
            from ``/proc`` every 50 ms, so each may be under-counted by up to 50 ms).
        wall_s: wall-clock seconds of the whole call, set-up included.
        disk_full: the call's tmpfs (``disk_mb``, ``isolation="full"`` only) was full when the
            code ended: a write failed with ``ENOSPC`` ("No space left on device").
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    cpu_s: float
    wall_s: float = 0.0
    disk_full: bool = False

    @property
    def ok(self) -> bool:
        """True when the code exited with status 0 within its limits."""
        return self.exit_code == 0 and not self.timed_out


def _reachable_by(path: str, uid: int, gid: int) -> bool:
    """Whether `uid`/`gid` (not root) can traverse to and execute `path` (permission bits only)."""
    p = Path(path).resolve()
    try:
        for d in list(p.parents)[::-1]:
            st = d.stat()
            if not _allowed(st, uid, gid, 0o1):
                return False
        return _allowed(p.stat(), uid, gid, 0o5)
    except OSError:
        return False


def _allowed(st: os.stat_result, uid: int, gid: int, bits: int) -> bool:
    if st.st_uid == uid:
        return (st.st_mode >> 6) & bits == bits
    if st.st_gid == gid:
        return (st.st_mode >> 3) & bits == bits
    return st.st_mode & bits == bits


def _sandbox_user() -> tuple[int | None, int | None]:
    """(uid, gid) to run as: ``nobody`` when the caller is root, else None (keep the caller's)."""
    if os.geteuid() != 0:
        return None, None
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        raise SandboxError("running as root but there is no user 'nobody' to drop privileges to; create it "
                           "(useradd -r nobody) or run the environment as an unprivileged user") from None
    return pw.pw_uid, pw.pw_gid


def _interpreter(python: str | None, uid: int | None, gid: int | None) -> str:
    explicit = python or os.environ.get(PYTHON_ENV)
    candidates = [explicit] if explicit else [sys.executable, shutil.which("python3"), "/usr/bin/python3",
                                              "/usr/local/bin/python3"]
    for c in candidates:
        if c and os.path.isfile(c) and (uid is None or _reachable_by(c, uid, gid)):
            return c
    candidates = [c for c in candidates if c]
    who = f"user {uid}" if uid is not None else "this user"
    raise SandboxError(f"no Python interpreter for the sandbox that {who} can run (tried {candidates}); fix: set "
                       f"{PYTHON_ENV} to an interpreter outside root-only folders (e.g. /usr/bin/python3)")


def resolve_isolation(isolation: str | None) -> str:
    """``"full"`` or ``"none"``: the argument if given, else from the environment variables, else full.

    Raises:
        ValueError: unknown value.
    """
    if isolation is None:
        isolation = os.environ.get(ISOLATION_ENV) or ("none" if os.environ.get(ALLOW_NETWORK_ENV) == "1" else "full")
    if isolation not in ("full", "none"):
        raise ValueError(f"isolation must be 'full' or 'none', got {isolation!r}")
    return isolation


def _decode(buf: bytearray, dropped: int) -> str:
    text = bytes(buf).decode("utf-8", errors="replace")
    return text + (f"\n[... {dropped} bytes truncated]" if dropped else "")


def run_python(
    code: str,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    *,
    isolation: str | None = None,
    python: str | None = None,
    max_output_bytes: int = 65536,
    nproc: int = 64,
    fsize_mb: int = 64,
    disk_mb: int = 128,
) -> SandboxResult:
    """Run `code` in the sandbox described in the module docstring.

    Args:
        code: Python source, run as ``main.py`` in a fresh temporary working directory.
        timeout_s: wall-clock limit in seconds (> 0); CPU limit is ``ceil(timeout_s) + 1``.
        memory_mb: address-space limit in MiB (>= 64).
        isolation: ``"full"`` (default; namespaces + unprivileged user) or ``"none"``; None reads
            ``ORCHESTRA_SANDBOX_ISOLATION`` / ``ORCHESTRA_SANDBOX_ALLOW_NETWORK``. Set by the
            environment's operator, never by the model.
        python: interpreter path (default: ``$ORCHESTRA_SANDBOX_PYTHON``, else this interpreter
            if the sandbox user can run it, else ``python3`` on PATH).
        max_output_bytes: cap for each of stdout and stderr.
        nproc: process-count limit of the sandbox user.
        fsize_mb: largest file the code may write, MiB.
        disk_mb: total bytes (MiB) the code may write, all files together: the size of the tmpfs
            that is its ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (``isolation="full"``; everything
            else is read-only). A write past it fails inside the code with ``ENOSPC`` and the
            result has ``disk_full=True``. Inodes are limited to ``disk_mb * 64``.

    Returns:
        `SandboxResult`.

    Raises:
        SandboxError: isolation could not be set up (fail closed; says how to opt out).
        ValueError: bad limits.
    """
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s}")
    if memory_mb < 64:
        raise ValueError(f"memory_mb must be >= 64 (the interpreter needs it), got {memory_mb}")
    if disk_mb < 1:
        raise ValueError(f"disk_mb must be >= 1 MiB, got {disk_mb}")
    iso = resolve_isolation(isolation)
    uid, gid = _sandbox_user() if iso == "full" else (None, None)
    interp = _interpreter(python, uid, gid)
    t0 = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="orchestra-sbx-")
    proc = None
    try:
        script = Path(workdir) / "main.py"
        script.write_text(code, encoding="utf-8")
        if uid is not None:
            for p in (workdir, script):
                os.chown(p, uid, gid)
        os.chmod(workdir, stat.S_IRWXU)
        home = "/tmp" if iso == "full" else workdir
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
               "PYTHONIOENCODING": "utf-8"}
        deadline = time.monotonic() + timeout_s
        rfd, wfd = os.pipe()
        cfg = {"isolation": iso, "workdir": workdir, "script": "main.py" if iso == "full" else str(script),
               "binds": _visible_dirs(interp) if iso == "full" else [],
               "python": interp, "deadline": deadline, "cpu_s": timeout_s + 1, "memory_mb": int(memory_mb),
               "nproc": int(nproc), "fsize_mb": int(fsize_mb), "disk_mb": int(disk_mb),
               "disk_inodes": int(disk_mb) * 64, "uid": uid, "gid": gid, "status_fd": wfd,
               "env": env}
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _LAUNCHER, json.dumps(cfg)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workdir,
                env={"PATH": env["PATH"], "LANG": "C.UTF-8"}, start_new_session=True, pass_fds=(wfd,),
            )
        finally:
            os.close(wfd)
        outs = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray(), rfd: bytearray()}
        dropped = {k: 0 for k in outs}
        sel = selectors.DefaultSelector()
        for fd in outs:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        backstop = deadline + 0.3
        exited_at = None
        killed_by_backstop = False
        while sel.get_map():
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > 0.2:
                break  # the launcher is gone; something it left behind holds a pipe
            if now > backstop and not killed_by_backstop:
                killed_by_backstop = True
                _killpg(proc.pid)
            for key, _ in sel.select(timeout=0.05):
                fd = key.fd
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(fd)
                    continue
                cap = 1 << 20 if fd == rfd else max_output_bytes
                room = cap - len(outs[fd])
                outs[fd] += chunk[:max(room, 0)]
                dropped[fd] += max(len(chunk) - max(room, 0), 0)
        sel.close()
        os.close(rfd)
        _killpg(proc.pid)
        proc.wait()
        status_text = bytes(outs[rfd]).decode("utf-8", errors="replace").strip()
        try:  # the launcher's last line; an error line (the launcher's or the child's set-up) wins
            lines = [json.loads(line) for line in status_text.splitlines()]
            status = next((x for x in lines if "error" in x), lines[-1] if lines else {})
        except json.JSONDecodeError:
            status = {}
        if "error" in status:
            raise SandboxError(f"sandbox isolation could not be set up: {status['error']}; {_OPT_OUT}")
        out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        stdout, stderr = _decode(outs[out_fd], dropped[out_fd]), _decode(outs[err_fd], dropped[err_fd])
        proc.stdout.close()
        proc.stderr.close()
        if not status:  # launcher killed by the backstop before it could report
            return SandboxResult(stdout, stderr, -int(signal.SIGKILL), True, 0.0, time.perf_counter() - t0)
        if status.get("exit_code") == 126 and "sandbox: could not start the interpreter" in stderr:
            raise SandboxError(f"sandbox could not start {interp}: {stderr.strip()}; fix: set {PYTHON_ENV} "
                               f"to an interpreter the sandbox user can run")
        return SandboxResult(stdout, stderr, int(status["exit_code"]), bool(status["timed_out"]) or killed_by_backstop,
                             float(status["cpu_s"]), time.perf_counter() - t0, bool(status.get("disk_full")))
    finally:
        if proc is not None and proc.poll() is None:
            _killpg(proc.pid)
            proc.wait()
        remove_tree(workdir)


def remove_tree(path: str) -> bool:
    """Delete the directory tree at `path`, however deep or long its paths; never raises.

    Iterative (no recursion, unlike ``shutil.rmtree`` before Python 3.13) and relative to open
    directory descriptors (no ``PATH_MAX`` limit); symlinks are removed, never followed; a
    directory the code made unreadable (``chmod 0``) is made readable first.

    Returns:
        True when `path` is gone; False when something could not be removed (logged as a warning).
    """
    try:
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return True
    except OSError as e:
        _log.warning("sandbox cleanup: cannot open %s: %s", path, e)
        return False
    names: list[str] = []  # the path from `path` down to the directory `fd` is open on
    fd = top
    ok = True
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        while True:
            child = None
            with os.scandir(fd) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        child = entry.name
                        break
                    try:
                        os.unlink(entry.name, dir_fd=fd)
                    except FileNotFoundError:
                        pass
            if child is not None:  # go down (one descriptor open at a time: any depth)
                os.chmod(child, stat.S_IRWXU, dir_fd=fd)
                sub = os.open(child, flags, dir_fd=fd)
                os.close(fd)
                fd = sub
                names.append(child)
            elif names:  # empty: go up and remove it
                parent = os.open("..", flags, dir_fd=fd)
                os.close(fd)
                fd = parent
                os.rmdir(names.pop(), dir_fd=fd)
            else:
                break
    except OSError as e:
        _log.warning("sandbox cleanup of %s failed at depth %d: %s", path, len(names), e)
        ok = False
    finally:
        os.close(fd)
    if ok:
        try:
            os.rmdir(path)
        except OSError as e:
            _log.warning("sandbox cleanup: cannot remove %s: %s", path, e)
            ok = False
    return ok


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class PythonSandbox:
    """The code-interpreter tool: `run_python` as a `ToolResult` with cost and latency.

    Args:
        timeout_s, memory_mb, isolation, python, max_output_bytes, disk_mb: see `run_python`; fixed by the
            environment when it builds the tool (the model only supplies ``code``).
        pricing: pricing schedule (name or object) for the fee ``code_interpreter_per_s``;
            settable later (``tool.pricing = schedule``).
        name: tool name shown to the policy.

    Calling ``tool(code)`` or ``tool.run({"code": ...})`` never raises: bad arguments and
    set-up failures are ``ToolResult(error=True)`` with the reason.
    Usage: ``cost_usd = cpu_s x fee``, ``latency_s`` = wall-clock seconds, tokens 0.
    """

    def __init__(self, timeout_s: float = 10.0, memory_mb: int = 512, *, pricing: Any = None,
                 isolation: str | None = None, python: str | None = None, max_output_bytes: int = 16384,
                 disk_mb: int = 128, name: str = "code_interpreter") -> None:
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.disk_mb = int(disk_mb)
        self.pricing = pricing
        self.isolation = isolation
        self.python = python
        self.max_output_bytes = int(max_output_bytes)
        self.name = name

    @property
    def spec(self) -> ToolSpec:
        """The tool's function-calling schema (one required string argument ``code``)."""
        fee = _pricing.get_schedule(self.pricing).fees.get("code_interpreter_per_s", 0.0)
        return ToolSpec(
            name=self.name,
            description=(f"Run Python 3 code and return its stdout and stderr (no network, {self.timeout_s:g} s "
                         f"limit, {self.memory_mb} MiB memory). Print what you need. Cost: {fee:g} USD per CPU "
                         f"second."),
            parameters={"type": "object", "properties": {"code": {"type": "string", "description": "Python source"}},
                        "required": ["code"]},
            kind="generic",
        )

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Run ``arguments["code"]``; a missing or non-string ``code`` is an error result."""
        code = arguments.get("code") if isinstance(arguments, dict) else None
        if not isinstance(code, str):
            return ToolResult(content=f"{self.name}: argument 'code' must be a string of Python source, got "
                                      f"{type(code).__name__}", error=True)
        return self(code)

    def __call__(self, code: str) -> ToolResult:
        """Run `code` (Python source) in the sandbox and return its `ToolResult` (cost = CPU s x the code-interpreter fee, USD)."""
        t0 = time.perf_counter()
        try:
            r = run_python(code, self.timeout_s, self.memory_mb, isolation=self.isolation, python=self.python,
                           max_output_bytes=self.max_output_bytes, disk_mb=self.disk_mb)
        except Exception as e:  # SandboxError, ValueError, OSError, ...: never raise into the env
            return ToolResult(content=f"{self.name}: {e}", error=True,
                              usage=Usage(latency_s=time.perf_counter() - t0), metadata={"sandbox_error": True})
        try:
            cost = _pricing.fee_usd("code_interpreter_per_s", r.cpu_s, self.pricing)
        except KeyError:
            cost = 0.0
        parts = [r.stdout] if r.stdout else []
        if r.stderr:
            parts.append(f"[stderr]\n{r.stderr}")
        if r.disk_full:
            parts.append(f"[disk quota of {self.disk_mb} MiB reached: writes failed with 'No space left on device']")
        if r.timed_out:
            parts.append(f"[timed out after {self.timeout_s:g} s]")
        elif r.exit_code != 0:
            parts.append(f"[exit code {r.exit_code}]")
        content = "\n".join(parts) if parts else "[no output]"
        return ToolResult(
            content=content, error=not r.ok, usage=Usage(cost_usd=cost, latency_s=r.wall_s),
            metadata={"exit_code": r.exit_code, "timed_out": r.timed_out, "cpu_s": r.cpu_s, "disk_full": r.disk_full},
        )
