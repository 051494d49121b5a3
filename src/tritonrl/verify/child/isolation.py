"""What a candidate's process can reach: its own directory, the interpreter and its libraries, nothing else.

Called in each forked child (``tritonrl.verify.zygote``) before any job code runs; the harness adds the system-call
filter (``child/seccomp.py``) at the end of its trusted setup. Where the kernel allows it, the child enters new
namespaces and gives up its privileges, so that nothing it does can change a verdict, its own or another's, or
reach what is not its business:

- **network** (``CLONE_NEWNET``): an empty network namespace.
- **processes** (``CLONE_NEWPID``, and a fresh ``/proc``): the job runs as pid 1 of its own PID namespace, so
  ``/proc/<pid>/...`` of the parent, the zygote, the judge and sibling candidates do not exist for it.
- **IPC** (``CLONE_NEWIPC``): System V shared memory and message queues of its own (no channel between jobs).
- **files** (``CLONE_NEWNS`` and ``pivot_root``): a new root holding only the system's libraries, the Python
  trees modules were imported from, the modules of this package it imported, a few devices and its own
  directory (``child/view.py``); every mount read-only but its directory and a private ``/dev/shm``, both
  ``noexec``. The project's sources, the reference solutions, ``$HOME``, other jobs and caches do not exist there.
- **identity**: a child started as root becomes ``nobody`` (uid 65534; its directory is handed to that user
  first), so its own ``/proc/self/mem`` (owned by root while it is not dumpable) and every file of root's that
  the view still shows are closed to it by plain permissions.
- **privileges**: non-dumpable, no new privileges, every capability dropped (effective, permitted, inheritable
  and bounding set) with root's special treatment locked off, so the child cannot unmount or remount its view.

Unprivileged users get the namespaces and the view through a user namespace where the kernel permits one (there
the child keeps its user's identity, seen as the overflow uid: no other uid is mapped). What could not be applied
is False in the ``IsolationReport``, which each verdict carries; ``VerifyConfig.sandbox`` says whether a child
missing a protection may still be judged. Not a security boundary against a kernel exploit: see
docs/verifier.md, "Trust boundary and sandbox".
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import sys
from dataclasses import asdict, dataclass

from tritonrl.verify.child.view import ViewPlan, enter_view, view_plan
from tritonrl.verify.shared.protections import PROTECTIONS

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 0x1, 0x2, 0x4, 0x8, 0x20, 0x1000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
PR_CAPBSET_DROP, PR_SET_DUMPABLE, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS = 24, 4, 28, 38, 39
SECURE_NOROOT_LOCKED = 0x23  # NOROOT, locked, and KEEP_CAPS locked off: a later setuid clears every capability
CAPSET_SYSCALL = {"x86_64": 126, "aarch64": 91}
CAP_VERSION_3 = 0x20080522
NOBODY = 65534  # the unprivileged user a child started as root becomes
PROC_READONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")

@dataclass
class IsolationReport:
    network_isolated: bool = False
    pid_isolated: bool = False
    fs_isolated: bool = False     # the child's root is its own view (child/view.py)
    readonly: bool = False        # every mount of that view but its directory and /dev/shm is read-only
    noexec: bool = False          # and every writable one is noexec
    unprivileged: bool = False    # not root: root gave up its identity, or there never was any
    caps_dropped: bool = False
    no_new_privs: bool = False
    seccomp: bool = False         # the system-call filter (set by the harness once it is on)
    env_scrubbed: bool = False    # the environment is the allow-list (set by the zygote)
    uid: int = -1
    view_error: str = ""          # why the view could not be entered, if it could not

    def to_dict(self) -> dict:
        return asdict(self)

    def protections(self) -> dict[str, bool]:
        return {name: all(getattr(self, f) for f in fields) for name, fields in PROTECTIONS.items()}


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _unshare(libc: ctypes.CDLL, flags: int) -> tuple[int, bool]:
    """(the flags entered, whether a user namespace was needed): all of them, else in a new user namespace."""
    if libc.unshare(flags) == 0:
        return flags, False
    if libc.unshare(flags | CLONE_NEWUSER) == 0:
        return flags, True
    return 0, False


def isolate(job_dir: str, device: str, network: bool, filesystem: bool, drop_user: bool = True,
            seed: str | None = None) -> IsolationReport:
    """Enter the namespaces, fork once (the caller continues as pid 1 of the new PID namespace), enter the view,
    give up root, drop every privilege. The forked intermediate process waits for the job and exits as it did
    (code or signal), so the zygote's view of the child is unchanged. Never raises: what could not be applied is
    False in the report (``view_error`` says why the view could not be entered)."""
    report = IsolationReport()
    try:
        libc = _libc()
    except OSError:
        return report
    wanted = (CLONE_NEWNET if network else 0) | ((CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) if filesystem else 0)
    entered, in_userns = _unshare(libc, wanted) if wanted else (0, False)
    if network and not entered & CLONE_NEWNET:
        entered |= _unshare(libc, CLONE_NEWNET)[0]  # a network namespace alone may still be permitted
    report.network_isolated = bool(entered & CLONE_NEWNET)
    if entered & CLONE_NEWPID:
        _fork_into_pid_namespace()
        report.pid_isolated = _enter_view(libc, view_plan(job_dir, device, seed), report)
    _lock_root(libc)
    if drop_user and not in_userns:
        _become_nobody(libc)
    report.caps_dropped = drop_privileges(libc)
    report.no_new_privs = libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1
    report.uid = os.geteuid()
    report.unprivileged = report.uid != 0
    return report


def _enter_view(libc: ctypes.CDLL, plan: ViewPlan, report: IsolationReport) -> bool:
    """The view as the root, a fresh /proc in it; True when /proc is the PID namespace's own."""
    try:
        _mount(libc, None, "/", None, MS_REC | MS_PRIVATE, check=True)
        enter_view(libc, plan)
        report.fs_isolated = report.readonly = report.noexec = True
    except OSError as exc:
        report.view_error = str(exc)[:200]
    # The child's own /proc stays writable: the CUDA driver fails to initialise (error 304) when it is not (seen
    # on an H100); its kernel-wide knobs are bound read-only, as container runtimes do.
    proc = _mount(libc, b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in PROC_READONLY:
        if proc and os.path.exists(path) and not (
                _mount(libc, path, path, None, MS_BIND | MS_REC)
                and _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
                           | MS_NOEXEC)):
            report.readonly = report.readonly and path != "/proc/sys"
    return proc


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


def _enc(value: str | bytes | None) -> bytes | None:
    return os.fsencode(value) if isinstance(value, str) else value


def _mount(libc: ctypes.CDLL, source, target, fstype, flags: int, data=None, check: bool = False) -> bool:
    ok = libc.mount(_enc(source), _enc(target), _enc(fstype), flags, _enc(data)) == 0
    if check and not ok:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")
    return ok


def _lock_root(libc: ctypes.CDLL) -> None:
    """While still privileged: root's special treatment locked off, the bounding set emptied (both need
    CAP_SETPCAP, which the identity change below takes away). Without privileges nothing changes."""
    libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_LOCKED, 0, 0, 0)
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)


def _become_nobody(libc: ctypes.CDLL) -> None:
    """Root gives up its identity: the working directory (its files too) is handed to ``nobody``, then the
    process becomes it, with no supplementary groups. Not root, no permission, or a Python that ``nobody``
    could not read (the view failed and the interpreter lives under ``/root``): nothing changes, and the report
    says so."""
    if os.geteuid() != 0 or not others_can_run_python():
        return
    try:
        for root, dirs, files in os.walk("."):
            for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                os.lchown(name, NOBODY, NOBODY)
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
    except OSError:
        pass  # reported: uid stays 0


def others_can_run_python() -> bool:
    """Whether a user with no relation to these files (``nobody``) could import what this process imports:
    every directory on the way to the interpreter's library and to each ``sys.path`` entry is searchable, and
    each such directory readable, by others."""
    import stat

    roots = {os.path.join(sys.base_prefix, "lib"), sys.prefix, *[p for p in sys.path if p and os.path.isdir(p)]}
    for root in roots:
        path = os.path.realpath(root)
        parts = path.strip("/").split("/")
        for k in range(len(parts) + 1):
            here = "/" + "/".join(parts[:k])
            try:
                mode = os.stat(here).st_mode
            except OSError:
                return False
            need = stat.S_IXOTH | (stat.S_IROTH if here == path else 0)
            if mode & need != need:
                return False
    return True


def drop_privileges(libc: ctypes.CDLL | None = None) -> bool:
    """Non-dumpable, no new privileges, no capabilities (and none regained by exec). True when CapEff is 0."""
    try:
        libc = libc or _libc()
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        _lock_root(libc)  # a no-op where _become_nobody's caller did it already
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
