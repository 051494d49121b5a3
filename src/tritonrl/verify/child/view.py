"""The candidate child's filesystem: a new root holding only what a candidate needs, nothing else.

    plan = view_plan(job_dir, device)     # what to mount, computed from this process's own imports
    enter_view(libc, plan)                # as root in a new mount (and PID) namespace; True when the root changed

Built on a fresh tmpfs and entered with ``pivot_root`` (the old root is detached, so no path leads back to it):

- **system software**, read-only: ``/usr``, ``/lib*``, ``/bin``, ``/sbin`` (libc, the dynamic loader, CUDA's
  driver libraries); of ``/etc`` only what the loader and libc read (``ld.so.cache``, ``passwd`` ...);
- **Python**, read-only: each ``sys.path`` entry some loaded module came from (the standard library,
  site-packages), at its written and its resolved path; never a directory nothing was imported from (the
  repository root on ``sys.path`` through ``python -m``), nor a script's (``__main__``), nor one holding the job;
- **this package**, read-only: only the modules the child has imported (``tritonrl/__init__.py``, ``verify/`` ...):
  not ``tasks/`` (the bundled reference solutions), not the rest of the source tree, wherever the package is
  installed (a source checkout, or site-packages, where the package's directory is masked and refilled);
- **devices**: ``null``, ``zero``, ``full``, ``random``, ``urandom``, and on a GPU the ``nvidia*`` nodes (plus a
  read-only ``/sys`` there, which the driver reads); a private ``/dev/shm`` (no channel to other processes);
- **its job directory**, the only writable place, mounted ``noexec`` (a library written there cannot be mapped
  executable); on a GPU the judge's build of Triton's driver module, read-only (trusted code, loaded before the
  candidate is imported);
- a fresh ``/proc`` of its PID namespace (the caller mounts it).

Everything else (``$HOME``, the project, other jobs, the reference caches, ``/tmp``, ``/root``, ``/work``) does
not exist in the child's view. Every mount but the job directory and ``/dev/shm`` is read-only, and every
writable one is ``noexec``: no path in the view is both writable and executable.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from dataclasses import dataclass, field

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 0x1, 0x2, 0x4, 0x8, 0x20, 0x1000
MS_REC, MS_PRIVATE, MNT_DETACH = 0x4000, 0x40000, 0x2
SYSTEM_TREES = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/nsswitch.conf", "/etc/passwd",
             "/etc/group", "/etc/localtime", "/etc/alternatives", "/etc/nvidia")
DEV_NODES = ("null", "zero", "full", "random", "urandom")
PACKAGE = "tritonrl"
STAGING = ".view"  # in the job directory: the new root is built on a tmpfs mounted here, then pivoted into
SHM_SIZE = "size=64m"


@dataclass
class Bind:
    source: str
    target: str
    writable: bool = False
    executable: bool = True
    device: bool = False  # a device node: not nodev
    recursive: bool = True  # with the mounts beneath it


@dataclass
class ViewPlan:
    job_dir: str
    binds: list[Bind] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)  # path in the view -> symlink target
    masks: list[str] = field(default_factory=list)  # empty read-only tmpfs over these (then refilled by binds)
    devices: list[str] = field(default_factory=list)


def view_plan(job_dir: str, device: str = "cpu", seed: str | None = None) -> ViewPlan:
    """What the child's root holds, for a job in ``job_dir`` on ``device`` (``cpu`` or ``cuda...``); ``seed``: the
    judge's build of Triton's driver module (a Triton cache), shown read-only and executable at its own path."""
    job_dir = os.path.realpath(job_dir)
    base = base_plan(os.path.dirname(job_dir))
    plan = ViewPlan(job_dir, list(base.binds), dict(base.links), list(base.masks))
    cuda = device.startswith("cuda")
    plan.devices = [f"/dev/{n}" for n in DEV_NODES] + (_nvidia_nodes() if cuda else [])
    if cuda and os.path.isdir("/sys"):
        plan.binds.append(Bind("/sys", "/sys"))
    # not recursive: the staging mount of the new root lies in the job directory
    plan.binds.append(Bind(job_dir, job_dir, writable=True, executable=False, recursive=False))
    if seed and os.path.isdir(seed):  # trusted, read-only, executable; filled by the judge, maybe after this
        plan.binds.append(Bind(os.path.realpath(seed), os.path.realpath(seed), recursive=False))
    return plan


@functools.lru_cache(maxsize=4)
def base_plan(jobs_root: str) -> ViewPlan:
    """What every child's view holds whatever its job (the system, Python, this package): worked out once per
    process (0.1-0.2 s: the path of every loaded module is resolved). The zygote calls it before its first fork
    (``zygote.warm_candidates``), so its children find it made; jobs lie in ``jobs_root``, which no tree may hold."""
    plan = ViewPlan(jobs_root)
    for tree in SYSTEM_TREES + ETC_FILES:
        _add_path(plan, tree)
    for root in python_roots(os.path.join(jobs_root, "job")):
        _add_tree(plan, root)
    _add_package(plan)
    return plan


def _add_path(plan: ViewPlan, path: str) -> None:
    """A system path as it is: a symlink stays a symlink (merged /usr), a file or directory is bound."""
    if os.path.islink(path):
        plan.links[path] = os.readlink(path)
    elif os.path.exists(path):
        plan.binds.append(Bind(path, path))


def _add_tree(plan: ViewPlan, path: str) -> None:
    """``path`` at its written and its resolved location, unless a bound tree holds it already."""
    real = os.path.realpath(path)
    for target in dict.fromkeys((os.path.abspath(path), real)):
        if not _covered(plan, target):
            plan.binds.append(Bind(real, target))


def _covered(plan: ViewPlan, path: str) -> bool:
    return any(_under(path, b.target) for b in plan.binds) or any(_under(path, link) for link in plan.links)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def python_roots(job_dir: str = "/") -> list[str]:
    """The ``sys.path`` entries some loaded module was imported from: not a script run as ``__main__`` (its
    directory may be a whole repository), not this package's modules (bound one by one), never a directory that
    holds ``job_dir`` (it would show every job)."""
    pkg_dir = os.path.realpath(os.path.dirname(sys.modules[PACKAGE].__file__))
    entries = sorted({os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)}, key=len, reverse=True)
    used: dict[str, None] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not os.path.isabs(file) or name in ("__main__", "__mp_main__") \
                or _under(os.path.realpath(file), pkg_dir):
            continue  # a frozen module's "<frozen ...>" made absolute would be the working directory
        root = next((e for e in entries if _under(file, e)), None)
        if root is not None and not _under(job_dir, root) and not _under(job_dir, os.path.realpath(root)):
            used[root] = None
    return list(used)


def package_pieces() -> tuple[str, list[str]]:
    """(this package's directory, the top-level files and subpackages of it the process has imported)."""
    top = sys.modules[PACKAGE]
    pkg_dir = os.path.dirname(os.path.abspath(top.__file__))
    pieces: dict[str, None] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (name == PACKAGE or name.startswith(PACKAGE + ".")) and isinstance(file, str):
            rel = os.path.relpath(os.path.abspath(file), pkg_dir).split(os.sep)
            pieces[rel[0]] = None
    return pkg_dir, sorted(pieces)


def _add_package(plan: ViewPlan) -> None:
    pkg_dir, pieces = package_pieces()
    for target in dict.fromkeys((pkg_dir, os.path.realpath(pkg_dir))):
        if _covered(plan, target):
            plan.masks.append(target)  # installed inside a bound tree (site-packages): hide it, then refill
        for piece in pieces:
            plan.binds.append(Bind(os.path.join(os.path.realpath(pkg_dir), piece), os.path.join(target, piece)))


def _nvidia_nodes() -> list[str]:
    try:
        return [f"/dev/{n}" for n in sorted(os.listdir("/dev")) if n.startswith("nvidia")]
    except OSError:
        return []


# ------------------------------------------------------------------ mounting
def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    if libc.mount(_enc(source), _enc(target), _enc(fstype), flags, _enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} -> {target}: {os.strerror(err)}")


def _enc(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def _make_target(path: str, like: str) -> None:
    """An empty directory or file at ``path`` (parents 0755) for ``like`` to be bound onto."""
    os.makedirs(os.path.dirname(path) or "/", mode=0o755, exist_ok=True)
    if os.path.isdir(like):
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.exists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


def _bind(libc: ctypes.CDLL, root: str, bind: Bind) -> None:
    target = root + bind.target
    _make_target(target, bind.source)
    _mount(libc, bind.source, target, None, MS_BIND | (MS_REC if bind.recursive else 0))
    flags = MS_NOSUID | (0 if bind.device else MS_NODEV) | (0 if bind.executable else MS_NOEXEC)
    flags |= 0 if bind.writable else MS_RDONLY
    _remount_tree(libc, target, flags)


def _remount_tree(libc: ctypes.CDLL, target: str, flags: int) -> None:
    """Apply ``flags`` to the mount at ``target`` and to every mount beneath it (a recursive bind brings them),
    keeping what a submount had already (a ``noexec`` cgroup file system stays so)."""
    kept = _mount_flags()
    for point in [target, *sorted(p for p in kept if p.startswith(target.rstrip("/") + "/"))]:
        try:
            _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | flags | (kept[point] if point != target else 0))
        except OSError:
            if point == target or not flags & MS_RDONLY or not kept.get(point, 0) & MS_RDONLY:
                raise  # a submount that refuses (a pseudo file system) must be read-only already


OPTION_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}


def _mount_flags() -> dict[str, int]:
    """Each mount point this process sees, with its per-mount flags among ro, nosuid, nodev, noexec."""
    points = {}
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            points[fields[4].encode().decode("unicode_escape")] = sum(OPTION_FLAGS.get(o, 0)
                                                                      for o in fields[5].split(","))
    return points


def _devices(libc: ctypes.CDLL, root: str, nodes: list[str]) -> None:
    dev = root + "/dev"
    os.makedirs(dev, mode=0o755, exist_ok=True)
    _mount(libc, "tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755")
    for node in nodes:
        if os.path.exists(node):
            _bind(libc, root, Bind(node, node, writable=True, executable=False, device=True))
    os.makedirs(dev + "/shm", mode=0o1777, exist_ok=True)
    _mount(libc, "tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, SHM_SIZE + ",mode=1777")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    _mount(libc, None, dev, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)


def _mask(libc: ctypes.CDLL, root: str, path: str) -> None:
    _mount(libc, "tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=755")


def build_root(libc: ctypes.CDLL, plan: ViewPlan, root: str) -> None:
    """Everything in ``plan`` under ``root`` (a directory on a fresh tmpfs), then that tmpfs made read-only."""
    for path, target in plan.links.items():
        os.makedirs(os.path.dirname(root + path), mode=0o755, exist_ok=True)
        os.symlink(target, root + path)
    masked = set()
    for bind in plan.binds:
        for mask in plan.masks:
            if mask not in masked and _under(bind.target, mask) and bind.target != mask:
                _mask(libc, root, mask)
                masked.add(mask)
        _bind(libc, root, bind)
    for mask in masked:
        _mount(libc, None, root + mask, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _devices(libc, root, plan.devices)
    os.makedirs(root + "/proc", mode=0o555, exist_ok=True)
    _mount(libc, None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def enter_view(libc: ctypes.CDLL, plan: ViewPlan) -> None:
    """Build the view on a tmpfs staged in the job directory and make it the root. Raises OSError on failure
    (the caller reports it); the process's mount namespace must be its own and private already."""
    old_umask = os.umask(0o022)
    try:
        stage = os.path.join(plan.job_dir, STAGING)
        os.makedirs(stage, mode=0o700, exist_ok=True)
        _mount(libc, "tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        build_root(libc, plan, stage)
        os.chdir(stage)
        if libc.syscall(ctypes.c_long(_PIVOT_ROOT[_machine()]), b".", b".") != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"pivot_root: {os.strerror(err)}")
        if libc.umount2(b".", MNT_DETACH) != 0:  # the old root, stacked on the new one by pivot_root(".", ".")
            err = ctypes.get_errno()
            raise OSError(err, f"detaching the old root: {os.strerror(err)}")
        os.chdir(plan.job_dir)
    finally:
        os.umask(old_umask)


_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}


def _machine() -> str:
    import platform

    return platform.machine()
