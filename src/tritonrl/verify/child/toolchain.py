"""What Triton runs or builds natively for a candidate on a GPU, done by trusted code: the child itself cannot.

    helper = Toolchain.start()            # in the child, after isolation, before its threads and CUDA
    load_triton_native(helper)            # before the system-call filter: the driver module, then the routes below

Under the filter (``child/seccomp.py``) the candidate's child starts no process and maps no library it could write
(its only writable mount is ``noexec``). On a GPU Triton needs both for every new kernel: ``ptxas`` turns its PTX
into a cubin, and a C launcher per kernel signature is compiled with ``cc`` and loaded. Both are routed to a
*toolchain helper*: a process forked by the child's trusted setup before the filter, in the same namespaces, as the
same unprivileged user, holding only a socket to the child. It is never handed code to compile:

- ``run``: a Triton tool (``ptxas`` or ``ptxas-blackwell``, at the path Triton's own knobs give) with arguments that
  are options or files in the job directory; it writes the tool's log where Triton asked, returns its status and
  output. PTX is GPU code: what the candidate could hand the CUDA driver itself;
- ``launcher``: Triton's own ``make_launcher`` run *in the helper* on a kernel signature (type names checked against
  a strict pattern), compiled with Triton's build, returned as a sealed ``memfd`` (no write, grow or shrink: the
  candidate cannot change a byte of it), which the child loads through ``/proc/self/fd`` and closes. A launcher the
  judge already built (``seeded_launcher``: in the seed's ``launchers/``, named by the hash of the source the helper
  generated itself) is handed over the same way instead of compiled again: ``cc`` took about a second of each GPU
  candidate's compile stage. The child tells its judge the signatures it had built here (``take_missed``); the judge
  builds those itself (``tritonrl.verify.judge.launchers``). Nothing a child or its helper builds is shared;
- ``utils``: Triton's driver module built from Triton's own source, the same way, where the judge's build (its
  template, read-only in the view) could not be used.

Not needed on a CPU: the interpreter compiles nothing native. Limits: a bug in ``ptxas`` or ``cc`` reached through a
crafted PTX file or signature runs as the helper (unprivileged, in the child's view, without the filter).
"""

from __future__ import annotations

import fcntl
import importlib.machinery
import importlib.util
import os
import re
import socket
import subprocess
import sys
import tempfile
import types
from typing import Any

from tritonrl.verify.shared import wire
from tritonrl.verify.shared.launcher_source import (
    ToolchainError,
    build_tag,
    compile_module,
    launcher_key,
    launcher_source,
    seeded_launcher,
)

SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
_seed: str | None = None  # in the helper: the seed, fixed when it was forked (never from a request)


# ------------------------------------------------------------------ the helper's side
def _tools() -> set[str]:
    from triton import knobs

    paths = set()
    for name in ("ptxas", "ptxas_blackwell"):
        try:
            paths.add(os.path.realpath(getattr(knobs.nvidia, name).path))
        except Exception:  # noqa: BLE001 - a tool this Triton does not have
            pass
    return paths


def _checked_argv(argv: list) -> list[str]:
    """The command, when it is a Triton tool with options and files of the job directory only."""
    if not argv or not all(isinstance(a, str) for a in argv) or os.path.realpath(argv[0]) not in _tools():
        raise ToolchainError("only Triton's ptxas may be run")
    here = os.path.realpath(".")
    for arg in argv[1:]:
        if arg.startswith("-") or re.fullmatch(r"[\w.,=:+]+", arg):
            continue
        if not os.path.realpath(arg).startswith(here + os.sep):
            raise ToolchainError(f"argument outside the job directory: {arg!r}")
    return argv


def _run(message: dict) -> tuple[dict, list[int]]:
    argv = _checked_argv(message.get("argv") or [])
    log = message.get("log")
    stderr = open(_checked_argv([argv[0], log])[1], "w") if log else subprocess.PIPE  # noqa: SIM115
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=stderr, timeout=600, check=False)
    finally:
        if log:
            stderr.close()
    return {"rc": done.returncode, "stdout": done.stdout.decode(errors="replace")[-(1 << 20):]}, []


def _sealed(path: str) -> int:
    with open(path, "rb") as fh:
        data = fh.read()
    fd = os.memfd_create("triton-module", os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
    os.write(fd, data)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    return fd


def _build(name: str, src: str) -> tuple[dict, list[int]]:
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        fd = _sealed(compile_module(name, src, tmp))
    return {"sha256": launcher_key(src)}, [fd]


def _launcher(message: dict) -> tuple[dict, list[int]]:
    src = launcher_source(message.get("signature") or [], message.get("tensordesc"))
    seeded = seeded_launcher(_seed, launcher_key(src)) if message.get("seed", True) else None
    if seeded is not None:  # the judge built it for an earlier child: no compiler runs here
        try:
            return {"sha256": launcher_key(src), "seeded": True}, [_sealed(seeded)]
        except OSError:  # not readable here: built as if it were not there
            pass
    reply, fds = _build("__triton_launcher", src)
    return {**reply, "seeded": False}, fds


def _utils(message: dict) -> tuple[dict, list[int]]:
    from triton.backends.nvidia import driver

    with open(os.path.join(driver.dirname, "driver.c")) as fh:
        return _build("cuda_utils", fh.read())


def serve(sock: socket.socket) -> None:
    """The helper's loop: one request, one reply, until the child closes its end."""
    ops = {"run": _run, "launcher": _launcher, "utils": _utils}
    while True:
        try:
            message, fds = wire.recv(sock)
        except (wire.Closed, wire.BadMessage):
            return
        for fd in fds:
            os.close(fd)
        try:
            op = ops.get(message.get("op"))
            if op is None:
                raise ToolchainError(f"unknown request {message.get('op')!r}")
            reply, out = op(message)
        except Exception as exc:  # noqa: BLE001 - the child raises it where Triton called
            reply, out = {"error": f"{type(exc).__name__}: {exc}"[:2000]}, []
        wire.send(sock, reply, fds=out)
        for fd in out:
            os.close(fd)


# ------------------------------------------------------------------ the child's side
class Toolchain:
    """The child's end of its helper."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock, self.pid = sock, pid

    @classmethod
    def start(cls, seed: str | None = None) -> Toolchain:
        """The helper forked; ``seed``: the judge's Triton build (read-only in the view), where it looks for the
        launchers the judge built before it builds one."""
        mine, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            global _seed
            _seed = seed if seed and os.path.isdir(seed) else None
            keep = theirs.fileno()  # and stdio: not the child's socket to its judge, nor anything else it holds
            os.closerange(3, keep)
            os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 1024)
            code = 0
            try:
                serve(theirs)
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        return cls(mine, pid)

    def ask(self, message: dict) -> tuple[dict, list[int]]:
        wire.send(self.sock, message)
        reply, fds = wire.recv(self.sock, timeout_s=900)
        if "error" in reply:
            for fd in fds:
                os.close(fd)
            raise ToolchainError(f"the sandbox's toolchain refused: {reply['error']}")
        return reply, fds


# The fds of every module loaded, held open for the process's life. Python keeps a single-phase extension module by
# (path, name) and the dynamic loader a library by path: were an fd closed, the next launcher (every one is named
# ``__triton_launcher``) could come in under the same ``/proc/self/fd/N`` and be answered with the first one's
# module, whose argument count is another kernel's ("function takes exactly 25 arguments (17 given)").
_LOADED: list[int] = []


def load_sealed(name: str, fd: int) -> types.ModuleType:
    """An extension module from a sealed memfd, through ``/proc/self/fd``; the fd stays open (``_LOADED``), so no
    two loads in one process share a path."""
    _LOADED.append(fd)
    path = f"/proc/self/fd/{fd}"
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _encode(value: Any) -> Any:
    return [_encode(v) for v in value] if isinstance(value, tuple) else value


def route_triton(helper: Toolchain) -> None:
    """Triton's NVIDIA backend, from now on, runs ptxas and builds launchers through ``helper`` (a Triton whose
    launcher is generic, built into its driver module, as 3.9's, builds none)."""
    from triton.backends.nvidia import compiler, driver

    compiler.subprocess = _subprocess_via(helper)
    make_launcher = getattr(driver, "make_launcher", None)
    if make_launcher is None:
        return
    signatures: dict[str, tuple] = {}

    def recording_make_launcher(constants, signature, tensordesc_meta):
        src = make_launcher(constants, signature, tensordesc_meta)
        signatures[src] = (signature, tensordesc_meta)
        return src

    def compile_module_from_src(src, name, *args, **kwargs):
        if name != "__triton_launcher" or src not in signatures:
            raise ToolchainError(f"the sandbox builds only Triton's launchers, not {name!r}")
        signature, meta = signatures[src]
        message = {"op": "launcher", "signature": [_encode(t) for t in signature.values()],  # in argument order
                   "tensordesc": None if meta is None else [m is not None for m in meta]}
        reply, fds = helper.ask(message)
        if reply.get("sha256") != launcher_key(src) or len(fds) != 1:
            raise ToolchainError("the helper built another launcher than Triton asked for")
        if not reply.get("seeded"):
            _MISSED.append({"signature": message["signature"], "tensordesc": message["tensordesc"]})
            return load_sealed(name, fds[0])
        try:
            return load_sealed(name, fds[0])
        except Exception as exc:  # noqa: BLE001 - the judge's build does not load here: the helper builds it
            print(f"tritonrl: the judge's launcher did not load ({type(exc).__name__}: {exc}); built here",
                  file=sys.stderr)
            reply, fds = helper.ask({**message, "seed": False})
            if reply.get("sha256") != launcher_key(src) or len(fds) != 1:
                raise ToolchainError("the helper built another launcher than Triton asked for") from None
            return load_sealed(name, fds[0])

    build_tag()  # now, while the child may still read what it needs
    driver.make_launcher = recording_make_launcher
    driver.compile_module_from_src = compile_module_from_src


# Launchers this child's helper had to build (not in the seed): the child tells its judge (``take_missed``), which
# builds them into the seed for the children after it
_MISSED: list[dict] = []


def take_missed() -> list[dict]:
    """The signatures of the launchers built here since the last call (their JSON form), for the judge."""
    missed = _MISSED[:]
    del _MISSED[:]
    return missed


def _subprocess_via(helper: Toolchain) -> types.SimpleNamespace:
    """``subprocess`` as Triton's compiler module sees it: ``run`` and ``check_output`` go to the helper."""

    def run(argv, check=False, stderr=None, **_):
        log = getattr(stderr, "name", None)
        if stderr is not None and hasattr(stderr, "flush"):
            stderr.flush()
        reply, _fds = helper.ask({"op": "run", "argv": list(argv), "log": log})
        if check and reply["rc"] != 0:
            raise subprocess.CalledProcessError(reply["rc"], argv)
        return subprocess.CompletedProcess(argv, reply["rc"], reply["stdout"].encode(), None)

    def check_output(argv, **_):
        reply, _fds = helper.ask({"op": "run", "argv": list(argv)})
        if reply["rc"] != 0:
            raise subprocess.CalledProcessError(reply["rc"], argv)
        return reply["stdout"].encode()

    names = {k: getattr(subprocess, k) for k in dir(subprocess) if not k.startswith("_")}
    return types.SimpleNamespace(**{**names, "run": run, "check_output": check_output})


def load_triton_native(helper: Toolchain | None, seed: str | None) -> None:
    """Triton's driver module loaded before the filter: the judge's build (``seed``, a Triton cache shown read-only
    and executable in the child's view) when it has it, else built by the helper; then Triton routed to the
    helper. Without a helper Triton is left as it is."""
    from triton.backends.nvidia import driver as nvidia
    from triton.runtime import driver

    saved = os.environ.get("TRITON_CACHE_DIR")
    try:
        if seed and os.path.isdir(seed):
            os.environ["TRITON_CACHE_DIR"] = seed
        if helper is not None:
            # each runs a process once and caches its answer: now, while processes may still start
            nvidia.libcuda_dirs()  # ldconfig
            _tools()  # ptxas --version, per tool
            build = nvidia.compile_module_from_src
            nvidia.compile_module_from_src = _utils_or_seed(helper, build)
            try:
                driver.active.utils  # noqa: B018 - loading it is the point
            finally:
                nvidia.compile_module_from_src = build
        else:
            driver.active.utils  # noqa: B018
    finally:
        os.environ.pop("TRITON_CACHE_DIR") if saved is None else os.environ.update(TRITON_CACHE_DIR=saved)
    if helper is not None:
        route_triton(helper)


def _utils_or_seed(helper: Toolchain, build):
    def compile_module_from_src(src, name, *args, **kwargs):
        try:
            return build(src, name, *args, **kwargs)  # a cache hit in the seed loads it; a miss fails to write
        except Exception:  # noqa: BLE001 - no usable seed: the helper builds it
            reply, fds = helper.ask({"op": "utils"})
            return load_sealed(name, fds[0])
    return compile_module_from_src
