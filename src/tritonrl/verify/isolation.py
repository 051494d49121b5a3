"""What a candidate's process can see: its own working directory, and none of the verifier's data.

Called in each forked child (``tritonrl.verify.zygote``) before any job code runs. Where the kernel allows it,
the child enters new namespaces and gives up its privileges, so that nothing it does on disk can change a
verdict, its own or another's:

- **network** (``CLONE_NEWNET``): an empty network namespace.
- **processes** (``CLONE_NEWPID``, and a fresh ``/proc``): the job runs as pid 1 of its own PID namespace, so
  ``/proc/<pid>/root``, ``/cwd`` and ``/fd`` of the parent, the zygote and sibling candidates do not exist for it.
- **files** (``CLONE_NEWNS``): an empty, inaccessible tmpfs is mounted over every *hidden* path (the reference
  cache, the root of all job directories, the system temp dir when no Python code lives there). The child's
  own working directory stays usable through its cwd (it was entered before the mounts), and relative paths
  or ``/proc/self/cwd/...`` reach it.
- **privileges**: non-dumpable, no new privileges, every capability dropped (effective, permitted,
  inheritable and bounding set) with root's special treatment locked off, so the child cannot unmount what
  hides the data, nor regain capabilities by exec.

Unprivileged users get the same through a user namespace where the kernel permits one. Where nothing is
permitted, the child runs without these protections and says so (``IsolationReport``); the verifier then stops
trusting its on-disk reference cache (``tritonrl.verify.reference``). Not a security boundary against a
kernel exploit: see docs/verifier.md, "Trust boundary and sandbox".
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import sys
from dataclasses import asdict, dataclass

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
PR_CAPBSET_DROP, PR_SET_DUMPABLE, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 24, 4, 28, 38
SECURE_NOROOT_ALL = 0x2F  # NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each locked
CAPSET_SYSCALL = {"x86_64": 126, "aarch64": 91}
CAP_VERSION_3 = 0x20080522


@dataclass
class IsolationReport:
    network_isolated: bool = False
    pid_isolated: bool = False
    fs_isolated: bool = False     # every hidden path is covered by an inaccessible mount
    caps_dropped: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _unshare(libc: ctypes.CDLL, flags: int) -> int:
    """The flags actually entered: all of them, else all of them in a new user namespace, else none."""
    if libc.unshare(flags) == 0:
        return flags
    if libc.unshare(flags | CLONE_NEWUSER) == 0:
        return flags
    return 0


def isolate(hide: list[str], network: bool, filesystem: bool) -> IsolationReport:
    """Enter the namespaces, fork once (the caller continues as pid 1 of the new PID namespace), hide, drop.

    The forked intermediate process waits for the job and exits as it did (code or signal), so the zygote's
    view of the child is unchanged. Never raises: what could not be applied is False in the report.
    """
    report = IsolationReport()
    try:
        libc = _libc()
    except OSError:
        return report
    wanted = (CLONE_NEWNET if network else 0) | ((CLONE_NEWNS | CLONE_NEWPID) if filesystem else 0)
    entered = _unshare(libc, wanted) if wanted else 0
    if network and not entered & CLONE_NEWNET:
        entered |= _unshare(libc, CLONE_NEWNET)  # a network namespace alone may still be permitted
    report.network_isolated = bool(entered & CLONE_NEWNET)
    if entered & CLONE_NEWPID:
        _fork_into_pid_namespace()
        report.pid_isolated = _mount(libc, b"none", b"/", None, MS_REC | MS_PRIVATE) and _mount(
            libc, b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        report.fs_isolated = report.pid_isolated and all(_hide(libc, path) for path in hide)
    report.caps_dropped = drop_privileges(libc)
    return report


def _fork_into_pid_namespace() -> None:
    """After unshare(CLONE_NEWPID) only children enter the namespace: fork, and mirror the job's end."""
    pid = os.fork()
    if pid == 0:
        return
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _mount(libc: ctypes.CDLL, source: bytes, target: bytes, fstype: bytes | None, flags: int,
           data: bytes | None = None) -> bool:
    return libc.mount(source, target, fstype, flags, data) == 0


def _hide(libc: ctypes.CDLL, path: str) -> bool:
    """An empty tmpfs nobody may enter, over ``path``; True when the path is hidden (or does not exist)."""
    if not os.path.isdir(path):
        return not os.path.exists(path)
    return _mount(libc, b"tmpfs", os.fsencode(path), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  b"size=4k,mode=000")


def drop_privileges(libc: ctypes.CDLL | None = None) -> bool:
    """Non-dumpable, no new privileges, no capabilities (and none regained by exec). True when CapEff is 0."""
    try:
        libc = libc or _libc()
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_ALL, 0, 0, 0)  # needs CAP_SETPCAP: before the drop
        for cap in range(64):
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
        _capset_zero(libc)
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return effective_caps() == 0


def _capset_zero(libc: ctypes.CDLL) -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(CAP_VERSION_3, 0), (Data * 2)()
    number = CAPSET_SYSCALL.get(platform.machine())
    if number is not None:
        libc.syscall(number, ctypes.byref(header), ctypes.byref(data))
    else:
        libc.capset(ctypes.byref(header), ctypes.byref(data))


def effective_caps() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return -1


def python_paths() -> list[str]:
    """Directories Python code is imported from: a hidden path must not contain any of them."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *[p for p in sys.path if p]}
    return [os.path.realpath(p) for p in paths]


def safe_to_hide(path: str) -> bool:
    """Hiding ``path`` would not hide the interpreter, the packages or the candidate's own directory."""
    real = os.path.realpath(path)
    return not any(p == real or p.startswith(real.rstrip("/") + "/") for p in python_paths())
