"""The candidate child's system-call filter: no processes, no new executable memory, no debugging of itself.

    install()   # once, after the child's trusted setup and before the candidate is imported; True when on

A seccomp filter (a classic-BPF program the kernel runs at every system call of every thread of the process, and of
every thread made later; it cannot be removed) returns ``EPERM`` for:

- **processes**: ``fork``, ``vfork``, ``execve``, ``execveat``, and ``clone`` without ``CLONE_THREAD`` (a thread is
  allowed: torch and Triton make threads); ``clone3``, whose flags the filter cannot read, gets ``ENOSYS`` so that
  glibc falls back to ``clone``, which is checked;
- **new native code**: ``mmap`` of executable memory that is anonymous or writable, ``mprotect`` /
  ``pkey_mprotect`` adding ``PROT_EXEC``, ``memfd_create``, ``remap_file_pages``, ``shmat`` with ``SHM_EXEC``, and
  ``personality`` changes (``READ_IMPLIES_EXEC`` would make readable memory executable without asking); what stays
  is mapping an existing file executable, read-only: the kernel refuses that on a ``noexec`` mount, and every
  mount the child can write is one (``child/view.py``);
- **its own memory and other processes**: ``ptrace``, ``process_vm_readv`` / ``writev``, ``pidfd_getfd``, and
  ``prctl(PR_SET_DUMPABLE)`` (a non-dumpable process's ``/proc/self/mem`` belongs to root, so an unprivileged
  child cannot open it; making itself dumpable again would undo that);
- **the sandbox itself**: ``unshare``, ``setns``, ``mount`` and the new mount API, ``pivot_root``, ``chroot``;
- **kernel interfaces a kernel needs none of**: ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``
  (its operations bypass this filter), the key rings (``add_key``, ``request_key``, ``keyctl``: credentials can
  live there), ``kexec_*``.

The filter first checks the architecture the call was made for (x86-64 or AArch64, the one this process runs) and
kills the process on any other (a 32-bit ``int 0x80`` call on x86-64 has other numbers); on x86-64 the x32 ABI's
numbers (bit 30) are refused too. Written here as a 60-line assembler rather than through libseccomp's bindings:
the only Python binding on PyPI (``pyseccomp``) is a 2021 ctypes wrapper that needs ``libseccomp.so.2`` on every
machine, and the rules above are a few dozen comparisons; ``tests/verify/test_sandbox.py`` runs each of them.
"""

from __future__ import annotations

import ctypes
import errno
import platform

# classic BPF
LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
DENY, NO_SYSCALL = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
OFF_NR, OFF_ARCH = 0, 4


def _arg(i: int) -> int:
    return 16 + 8 * i  # seccomp_data.args[i], its low 32 bits (both architectures are little-endian)


PROT_WRITE, PROT_EXEC, MAP_ANONYMOUS, SHM_EXEC = 0x2, 0x4, 0x20, 0o100000
CLONE_THREAD = 0x00010000
PR_SET_DUMPABLE, PR_SET_MM = 4, 35
PERSONALITY_QUERY = 0xFFFFFFFF
X32_BIT = 0x40000000
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, PR_SET_NO_NEW_PRIVS = 1, 1, 38

ARCHES = {  # machine -> (AUDIT_ARCH_*, syscall numbers)
    "x86_64": (0xC000003E, dict(
        fork=57, vfork=58, execve=59, execveat=322, clone=56, clone3=435, mmap=9, mprotect=10, pkey_mprotect=329,
        memfd_create=319, remap_file_pages=216, shmat=30, personality=135, prctl=157, ptrace=101,
        process_vm_readv=310, process_vm_writev=311, pidfd_getfd=438, unshare=272, setns=308, mount=165,
        umount2=166, pivot_root=155, chroot=161, open_tree=428, move_mount=429, fsopen=430, fsconfig=431,
        fsmount=432, fspick=433, mount_setattr=442, bpf=321, perf_event_open=298, userfaultfd=323,
        io_uring_setup=425, io_uring_enter=426, io_uring_register=427, add_key=248, request_key=249, keyctl=250,
        kexec_load=246, kexec_file_load=320, seccomp=317)),
    "aarch64": (0xC00000B7, dict(
        execve=221, execveat=281, clone=220, clone3=435, mmap=222, mprotect=226, pkey_mprotect=288,
        memfd_create=279, remap_file_pages=234, shmat=196, personality=92, prctl=167, ptrace=117,
        process_vm_readv=270, process_vm_writev=271, pidfd_getfd=438, unshare=97, setns=268, mount=40,
        umount2=39, pivot_root=41, chroot=51, open_tree=428, move_mount=429, fsopen=430, fsconfig=431,
        fsmount=432, fspick=433, mount_setattr=442, bpf=280, perf_event_open=241, userfaultfd=282,
        io_uring_setup=425, io_uring_enter=426, io_uring_register=427, add_key=217, request_key=218, keyctl=219,
        kexec_load=104, kexec_file_load=294, seccomp=277)),
}
DENIED = ("fork", "vfork", "execve", "execveat", "memfd_create", "remap_file_pages", "ptrace", "process_vm_readv",
          "process_vm_writev", "pidfd_getfd", "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
          "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "bpf",
          "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "add_key",
          "request_key", "keyctl", "kexec_load", "kexec_file_load")


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return code, jt, jf, k


def _when(nr: int, body: list) -> list:
    """``body`` (which ends in returns) when the call is ``nr``; otherwise skip it, the number still loaded."""
    return [_op(JEQ, nr, 0, len(body)), *body]


def _allow_unless_bits(arg: int, bits: int) -> list:
    return [_op(LD_ABS, _arg(arg)), _op(JSET, bits, 1, 0), _op(RET, RET_ALLOW), _op(RET, DENY)]


def _allow_only_value(arg: int, value: int) -> list:
    return [_op(LD_ABS, _arg(arg)), _op(JEQ, value, 0, 1), _op(RET, RET_ALLOW), _op(RET, DENY)]


def _deny_values(arg: int, values: tuple[int, ...]) -> list:
    n = len(values)
    tests = [_op(JEQ, v, n - i, 0) for i, v in enumerate(values)]  # a match jumps to the final DENY
    return [_op(LD_ABS, _arg(arg)), *tests, _op(RET, RET_ALLOW), _op(RET, DENY)]


def _mmap_rule() -> list:
    """Executable mappings only of files, read-only: exec + (write or anonymous) is refused."""
    return [_op(LD_ABS, _arg(2)), _op(JSET, PROT_EXEC, 0, 3), _op(JSET, PROT_WRITE, 3, 0),
            _op(LD_ABS, _arg(3)), _op(JSET, MAP_ANONYMOUS, 1, 0), _op(RET, RET_ALLOW), _op(RET, DENY)]


def program(machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter for ``machine`` (default: this one), as (code, jt, jf, k) instructions. KeyError: unsupported."""
    machine = machine or platform.machine()
    audit_arch, nr = ARCHES[machine]
    prog = [_op(LD_ABS, OFF_ARCH), _op(JEQ, audit_arch, 1, 0), _op(RET, RET_KILL_PROCESS), _op(LD_ABS, OFF_NR)]
    if machine == "x86_64":
        prog += [_op(JGE, X32_BIT, 0, 1), _op(RET, DENY)]
    for name in DENIED:
        if name in nr:
            prog += _when(nr[name], [_op(RET, DENY)])
    prog += _when(nr["clone3"], [_op(RET, NO_SYSCALL)])
    prog += _when(nr["clone"], [_op(LD_ABS, _arg(0)), _op(JSET, CLONE_THREAD, 0, 1), _op(RET, RET_ALLOW),
                                _op(RET, DENY)])
    prog += _when(nr["mmap"], _mmap_rule())
    prog += _when(nr["mprotect"], _allow_unless_bits(2, PROT_EXEC))
    prog += _when(nr["pkey_mprotect"], _allow_unless_bits(2, PROT_EXEC))
    prog += _when(nr["shmat"], _allow_unless_bits(2, SHM_EXEC))
    prog += _when(nr["personality"], _allow_only_value(0, PERSONALITY_QUERY))
    prog += _when(nr["prctl"], _deny_values(0, (PR_SET_DUMPABLE, PR_SET_MM)))
    return prog + [_op(RET, RET_ALLOW)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def install() -> bool:
    """Load the filter on every thread of this process (``SECCOMP_FILTER_FLAG_TSYNC``), setting no-new-privileges
    first (the kernel requires it of an unprivileged process). False, and nothing changed, where the architecture
    is not one of ours or the kernel refuses."""
    machine = platform.machine()
    if machine not in ARCHES:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        instructions = program(machine)
        array = (_SockFilter * len(instructions))(*[_SockFilter(*i) for i in instructions])
        prog = _SockFprog(len(instructions), array)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        number = ARCHES[machine][1]["seccomp"]
        return libc.syscall(ctypes.c_long(number), ctypes.c_long(SECCOMP_SET_MODE_FILTER),
                            ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(prog)) == 0
    except (OSError, AttributeError):
        return False


def active() -> bool:
    """Whether this process runs under a seccomp filter (``Seccomp: 2`` in ``/proc/self/status``)."""
    try:
        with open("/proc/self/status") as fh:
            return any(line.split() == ["Seccomp:", "2"] for line in fh)
    except OSError:
        return False
