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
- **read-only**: every mount the child can still reach is remounted read-only, except its own working
  directory (bind-mounted onto itself first): the package, the virtual environment, ``$HOME`` and every other
  path can be read (Python must import) but not written, so no candidate can change the verifier's code, drop a
  ``.pth`` or leave anything for a later verdict.
- **identity**: a child started as root gives up root for an unprivileged user (``nobody``, uid 65534; its
  directory is handed to that user first), so file permissions hold as a second line behind the read-only
  mounts.
- **privileges**: non-dumpable, no new privileges, every capability dropped (effective, permitted,
  inheritable and bounding set) with root's special treatment locked off, so the child cannot unmount what
  hides the data or remount what is read-only, nor regain capabilities by exec.

Unprivileged users get the namespaces and the read-only mounts through a user namespace where the kernel permits
one (there the child keeps its user's identity: no other uid is mapped). Where nothing is
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
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 0x1, 0x2, 0x4, 0x8, 0x20, 0x1000
MS_NOATIME, MS_NODIRATIME, MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = (0x400, 0x800, 0x4000, 0x40000,
                                                                           0x200000, 0x1000000)
MOUNT_OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
                      "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
PR_CAPBSET_DROP, PR_SET_DUMPABLE, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 24, 4, 28, 38
SECURE_NOROOT_LOCKED = 0x23  # NOROOT, locked, and KEEP_CAPS locked off: a later setuid clears every capability
CAPSET_SYSCALL = {"x86_64": 126, "aarch64": 91}
CAP_VERSION_3 = 0x20080522
NOBODY = 65534  # the unprivileged user a child started as root becomes


@dataclass
class IsolationReport:
    network_isolated: bool = False
    pid_isolated: bool = False
    fs_isolated: bool = False     # every hidden path is covered by an inaccessible mount
    readonly: bool = False        # every reachable mount but the child's own directory is read-only
    unprivileged: bool = False    # not root: root gave up its identity, or there never was any
    caps_dropped: bool = False
    uid: int = -1

    def to_dict(self) -> dict:
        return asdict(self)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _unshare(libc: ctypes.CDLL, flags: int) -> tuple[int, bool]:
    """(the flags entered, whether a user namespace was needed): all of them, else in a new user namespace."""
    if libc.unshare(flags) == 0:
        return flags, False
    if libc.unshare(flags | CLONE_NEWUSER) == 0:
        return flags, True
    return 0, False


def isolate(hide: list[str], network: bool, filesystem: bool, scratch: str | None = None, readonly: bool = True,
            drop_user: bool = True, writable: tuple[str, ...] = ()) -> IsolationReport:
    """Enter the namespaces, fork once (the caller continues as pid 1 of the new PID namespace), hide, make
    every path but ``scratch`` (the working directory) read-only, give up root, drop every privilege.

    The forked intermediate process waits for the job and exits as it did (code or signal), so the zygote's
    view of the child is unchanged. Never raises: what could not be applied is False in the report.
    """
    report = IsolationReport()
    try:
        libc = _libc()
    except OSError:
        return report
    scratch = os.path.realpath(scratch or os.getcwd())
    wanted = (CLONE_NEWNET if network else 0) | ((CLONE_NEWNS | CLONE_NEWPID) if filesystem else 0)
    entered, in_userns = _unshare(libc, wanted) if wanted else (0, False)
    if network and not entered & CLONE_NEWNET:
        entered |= _unshare(libc, CLONE_NEWNET)[0]  # a network namespace alone may still be permitted
    report.network_isolated = bool(entered & CLONE_NEWNET)
    if entered & CLONE_NEWPID:
        _fork_into_pid_namespace()
        report.pid_isolated = _mount(libc, b"none", b"/", None, MS_REC | MS_PRIVATE) and _mount(
            libc, b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        own = report.pid_isolated and _own_mount(libc, scratch)
        report.fs_isolated = report.pid_isolated and all(_hide(libc, path) for path in hide)
        report.readonly = readonly and own and report.fs_isolated and _readonly_except(libc, scratch, hide, writable)
    if drop_user and not in_userns:
        _become_nobody(libc)
    report.caps_dropped = drop_privileges(libc)
    report.uid = os.geteuid()
    report.unprivileged = report.uid != 0 or in_userns
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


def _mount(libc: ctypes.CDLL, source: bytes | None, target: bytes, fstype: bytes | None, flags: int,
           data: bytes | None = None) -> bool:
    return libc.mount(source, target, fstype, flags, data) == 0


def _hide(libc: ctypes.CDLL, path: str) -> bool:
    """An empty tmpfs nobody may enter, over ``path``; True when the path is hidden (or does not exist)."""
    if not os.path.isdir(path):
        return not os.path.exists(path)
    return _mount(libc, b"tmpfs", os.fsencode(path), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  b"size=4k,mode=000")


def _own_mount(libc: ctypes.CDLL, scratch: str) -> bool:
    """``scratch`` bind-mounted onto itself (a mount of its own, left writable) and entered, before the paths
    above it are hidden: the process keeps it through its working directory."""
    if not _mount(libc, os.fsencode(scratch), os.fsencode(scratch), None, MS_BIND | MS_REC):
        return False
    os.chdir(scratch)  # the new mount, not the directory beneath it (which becomes read-only)
    return True


def mount_points() -> list[tuple[str, int]]:
    """(mount point, per-mount flags to keep) of every mount this process sees, parents first."""
    points = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")  # \040 is a space
            flags = sum(MOUNT_OPTION_FLAGS.get(opt, 0) for opt in fields[5].split(","))
            points.append((point, flags))
    return points


PROC_READONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")


def _readonly_except(libc: ctypes.CDLL, scratch: str, hidden: list[str], writable: tuple[str, ...] = ()) -> bool:
    """Remount every reachable mount read-only but ``scratch``; True when each one that matters took it.

    The child's own ``/proc`` (its PID namespace's) stays writable: the CUDA driver fails to initialise
    (error 304) when it is not (seen on an H100); its kernel-wide knobs (``/proc/sys``, ``sysrq-trigger`` ...)
    are bound read-only, as container runtimes do. A mount under a hidden path is unreachable already; pseudo
    file systems that refuse (in a user namespace, say) do not make the answer False; files do."""
    hidden = [os.path.realpath(h) for h in hidden]
    keep = ["/proc", *writable]
    ok = True
    for point, flags in mount_points():
        if point == scratch or _under(point, hidden) or point.startswith(scratch + "/") or _under(point, keep):
            continue
        if not _mount(libc, None, os.fsencode(point), None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags):
            ok = ok and not _writable_fs(point)
    for path in PROC_READONLY:
        if os.path.exists(path) and not (_mount(libc, os.fsencode(path), os.fsencode(path), None, MS_BIND | MS_REC)
                                         and _mount(libc, None, os.fsencode(path), None,
                                                    MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
                                                    | MS_NOEXEC)):
            ok = ok and path != "/proc/sys"
    return ok


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _writable_fs(point: str) -> bool:
    """A mount that stayed writable and holds files (not /proc, /sys, /dev, cgroups)."""
    return not point.startswith(("/proc", "/sys", "/dev"))


def _become_nobody(libc: ctypes.CDLL) -> None:
    """Root gives up its identity: the working directory (its files too) is handed to ``nobody``, then the
    process becomes it, with no supplementary groups. Not root, no permission, or a Python that ``nobody``
    could not read (an interpreter under ``/root``): nothing changes, and the report says so."""
    if os.geteuid() != 0 or not others_can_run_python():
        return
    try:
        libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_LOCKED, 0, 0, 0)  # the setuid below clears capabilities
        for root, dirs, files in os.walk("."):  # the working directory: its path is hidden by now
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
        libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_LOCKED, 0, 0, 0)  # needs CAP_SETPCAP: before the drop
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
