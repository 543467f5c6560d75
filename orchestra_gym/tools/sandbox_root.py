"""The isolation of one sandbox call: the launcher that builds the namespaces and the private root.

One job: what `orchestra_gym.tools.sandbox.run_python` starts before the code runs. `_LAUNCHER` is the
standard-library script run as ``python -I -S -c`` that unshares the network, PID and mount namespaces
(and a user namespace for a non-root caller), makes the host mounts read-only, pivots into a root of its
own (read-only binds, device nodes, its own ``/proc``, one tmpfs for ``/tmp``, ``/var/tmp``, ``/dev/shm``),
sets the rlimits, enforces the deadline and reports exit status and CPU time on the status pipe;
`_visible_dirs` names the host folders that root binds (the system's and the interpreter's installation).
Linux ``unshare(2)``, ``mount_setattr(2)``, ``pivot_root(2)``, ``setrlimit(2)``, ``prctl(2)``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__: list[str] = []

# The launcher runs as the caller (root or not) with `python -I -S -c`, sets up isolation, forks
# the child that becomes PID 1 of the new namespace, enforces the deadline, and reports the child's
# exit status and CPU time as one JSON line on the status pipe. Standard library only.
_LAUNCHER = r"""
import ctypes, json, math, os, resource, signal, sys, time
cfg = json.loads(sys.argv[1])
sfd = cfg["status_fd"]
def report(obj, code):
    os.write(sfd, (json.dumps(obj) + "\n").encode())
    os._exit(code)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def check(ret, what):
    if ret != 0:
        e = ctypes.get_errno()
        report({"error": f"{what} failed: {os.strerror(e)} (errno {e})"}, 125)
def read_only_everywhere():
    # mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, {attr_set=MOUNT_ATTR_RDONLY}) (Linux >= 5.12); else
    # remount every mount point read-only one by one (MS_REMOUNT | MS_BIND | MS_RDONLY, flags kept).
    attr = (ctypes.c_uint64 * 4)(1, 0, 0, 0)
    if libc.syscall(442, -100, b"/", 0x8000, ctypes.byref(attr), ctypes.sizeof(attr)) == 0:
        return
    if ctypes.get_errno() not in (38, 1):  # ENOSYS (old kernel), EPERM (seccomp): try the old way
        check(-1, "making every mount read-only (mount_setattr)")
    keep = {"nosuid": 2, "nodev": 4, "noexec": 8, "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}
    with open("/proc/self/mountinfo") as f:
        rows = [line.split() for line in f]
    for row in rows:
        target = row[4].encode().decode("unicode_escape")
        flags = 32 | 4096 | 1  # MS_REMOUNT | MS_BIND | MS_RDONLY
        for opt in row[5].split(","):
            flags |= keep.get(opt, 0)
        if libc.mount(None, target.encode(), None, flags, None) != 0 and ctypes.get_errno() not in (2, 13):
            check(-1, f"remounting {target} read-only")
full = cfg["isolation"] == "full"
root = os.geteuid() == 0
R = "/tmp"  # where the launcher builds the code's root (over the host's /tmp, in its own mount namespace)
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}.get(os.uname().machine)
def enter_root():
    # the child's own mount namespace (the launcher keeps its root), a /proc of the new PID namespace,
    # then pivot_root(2) into R and detach the host's tree: /proc/self/mountinfo lists only R's mounts
    check(libc.unshare(0x00020000), "unshare(CLONE_NEWNS) in the child")
    libc.mount(b"proc", (R + "/proc").encode(), b"proc", 2 | 4 | 8, None)  # best effort: hide host processes
    if PIVOT_ROOT is None:
        report({"error": f"pivot_root: unknown syscall number on {os.uname().machine}"}, 125)
    check(libc.syscall(PIVOT_ROOT, R.encode(), (R + "/.old").encode()), "pivot_root into the sandbox root")
    os.chdir("/")
    check(libc.umount2(b"/.old", 2), "detaching the host's mounts (umount2 MNT_DETACH)")
    os.rmdir("/.old")
    check(libc.mount(None, b"/", None, 32 | 4096 | 1, None), "making the sandbox root read-only")
try:
    if full:
        flags = 0x40000000 | 0x20000000 | 0x00020000 | 0x08000000  # NEWNET | NEWPID | NEWNS | NEWIPC
        if not root:
            flags |= 0x10000000  # NEWUSER: gives the capabilities for the others
        check(libc.unshare(flags), "unshare(CLONE_NEWNET|CLONE_NEWPID|CLONE_NEWNS)")
        check(libc.mount(b"none", b"/", None, 16384 | (1 << 18), None), "making / private (mount MS_REC|MS_PRIVATE)")
        with open(os.path.join(cfg["workdir"], cfg["script"]), "rb") as f:
            source = f.read()
        read_only_everywhere()  # every host mount bound below stays read-only
        # the code's root: a small tmpfs R (on /tmp here) holding read-only binds of only what the
        # interpreter needs (cfg["binds"]), a few device nodes, /proc and the writable tmpfs; the child
        # pivots into it, so no other host path (and no Unix socket on one) exists for the code
        check(libc.mount(b"tmpfs", R.encode(), b"tmpfs", 2 | 4, b"size=1m,mode=0755"), "mounting the sandbox root")
        for d in cfg["binds"]:
            if os.path.islink(d):  # merged /usr: /bin -> usr/bin
                os.makedirs(os.path.dirname(R + d), exist_ok=True)
                os.symlink(os.readlink(d), R + d)
                continue
            os.makedirs(R + d, exist_ok=True)
            check(libc.mount(d.encode(), (R + d).encode(), None, 4096 | 16384, None), f"bind-mounting {d}")
        for d in ("/tmp", "/var/tmp", "/dev/shm", "/proc", "/.old"):
            os.makedirs(R + d, exist_ok=True)
        for n in ("null", "zero", "full", "random", "urandom"):
            open(R + "/dev/" + n, "wb").close()
            check(libc.mount(("/dev/" + n).encode(), (R + "/dev/" + n).encode(), None, 4096, None), f"binding /dev/{n}")
        for n, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                          ("stderr", "/proc/self/fd/2")):
            os.symlink(target, R + "/dev/" + n)
        opts = f"size={cfg['disk_mb']}m,nr_inodes={cfg['disk_inodes']},mode=1777".encode()
        check(libc.mount(b"tmpfs", (R + "/tmp").encode(), b"tmpfs", 2 | 4, opts), "mounting a size-limited tmpfs on /tmp")
        script_path = R + "/tmp/" + cfg["script"]
        with open(script_path, "wb") as f:
            f.write(source)
        os.chmod(script_path, 0o644)
        for d in ("/var/tmp", "/dev/shm"):
            check(libc.mount((R + "/tmp").encode(), (R + d).encode(), None, 4096, None), f"bind-mounting the sandbox tmpfs on {d}")
except SystemExit:
    raise
except BaseException as e:
    report({"error": f"isolation set-up failed: {type(e).__name__}: {e}"}, 125)
proc_fd = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)  # the host's /proc, before the child mounts its own
pid = os.fork()
if pid == 0:
    try:
        os.close(proc_fd)
        if full:
            enter_root()
            os.chdir("/tmp")
        else:
            os.setpgid(0, 0)
        os.close(sfd)
        cpu = int(math.ceil(cfg["cpu_s"]))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        mem = cfg["memory_mb"] * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_NPROC, (cfg["nproc"], cfg["nproc"]))
        fs = cfg["fsize_mb"] * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (fs, fs))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.nice(10)  # the launcher (nice 0) must win the CPU to enforce the deadline
        if cfg["uid"] is not None:
            os.setgroups([])
            os.setgid(cfg["gid"])
            os.setuid(cfg["uid"])
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG (after setuid, which clears it)
        script = "/tmp/" + cfg["script"] if full else cfg["script"]
        os.execve(cfg["python"], [cfg["python"], "-I", "-B", script], cfg["env"])
    except BaseException as e:
        os.write(2, f"sandbox: could not start the interpreter: {type(e).__name__}: {e}\n".encode())
    os._exit(126)
# CPU of the whole tree: the kernel kills the rest of the tree when PID 1 ends, and those processes'
# CPU never reaches wait4's rusage; so the tree is sampled from /proc every 50 ms (last value kept
# per process), and the bill is the larger of the sampled sum and wait4's (self + waited-for children).
tick = os.sysconf("SC_CLK_TCK")
seen = {}
def read_proc(rel):
    fd = os.open(rel, os.O_RDONLY, dir_fd=proc_fd)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)
def sample():
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            fields = read_proc(f"{p}/stat").rsplit(b")", 1)[1].split()
            seen[(p, fields[19])] = (int(fields[11]) + int(fields[12])) / tick  # key: pid, start time
            tfd = os.open(f"{p}/task", os.O_RDONLY | os.O_DIRECTORY, dir_fd=proc_fd)
            try:
                tids = os.listdir(tfd)
            finally:
                os.close(tfd)
            for t in tids:
                stack.extend(int(c) for c in read_proc(f"{p}/task/{t}/children").split())
        except (OSError, ValueError, IndexError):
            pass
def kill_tree():
    try:
        if full:
            os.kill(pid, signal.SIGKILL)  # PID 1 of the namespace: the kernel kills the rest
        else:
            os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
timed_out = False
while True:
    done, status, ru = os.wait4(pid, os.WNOHANG)
    if done:
        break
    sample()
    if time.monotonic() >= cfg["deadline"]:
        timed_out = True
        kill_tree()
        _, status, ru = os.wait4(pid, 0)
        break
    time.sleep(max(0.0, min(0.05, cfg["deadline"] - time.monotonic())))
if not full:
    try:
        os.killpg(pid, signal.SIGKILL)  # grandchildren left in the group
    except (ProcessLookupError, PermissionError):
        pass
disk_full = False
if full:
    st = os.statvfs(R + "/tmp")
    disk_full = st.f_bavail * st.f_frsize < 64 * 1024 or st.f_favail == 0
code = os.waitstatus_to_exitcode(status)
cpu_s = max(ru.ru_utime + ru.ru_stime, sum(seen.values()))
report({"exit_code": code, "timed_out": timed_out, "cpu_s": cpu_s, "disk_full": disk_full}, 0)
"""


_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


def _visible_dirs(interp: str) -> list[str]:
    """The host directories the sandboxed code sees (read-only): the system's (`_SYSTEM_DIRS`) and
    the interpreter's installation (its prefix, and a virtual environment's base interpreter's),
    each once (none inside another); symlinks (merged ``/usr``) are kept as symlinks."""
    wanted = [d for d in _SYSTEM_DIRS if os.path.lexists(d)]
    for exe in {interp, os.path.realpath(interp)}:
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(exe)))
        wanted.append(prefix)
        try:
            home = next(line.split("=", 1)[1].strip() for line in Path(prefix, "pyvenv.cfg").read_text().splitlines()
                        if line.split("=", 1)[0].strip() == "home")
            wanted.append(os.path.dirname(os.path.realpath(home)))
        except (OSError, StopIteration):
            pass
    real = sorted({os.path.realpath(d) if not os.path.islink(d) else d for d in wanted if d not in ("/", "")})
    links = [d for d in real if os.path.islink(d)]
    dirs = [d for d in real if not os.path.islink(d) and os.path.isdir(d)]
    kept = [d for d in dirs if not any(d != o and d.startswith(o.rstrip("/") + "/") for o in dirs)]
    return links + kept
