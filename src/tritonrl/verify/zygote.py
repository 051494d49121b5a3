"""The warm fork server: imports torch and Triton once, then forks judges and candidate children.

Run by the parent (``tritonrl.verify.parent.zygote_client``) as ``python -m tritonrl.verify.zygote --fd N`` with
``TRITON_INTERPRET=1`` already in the environment on a CPU; fd ``N`` is one end of a Unix socket pair whose other
end the parent holds. It never initializes CUDA, so its forks may (each sets ``CUDA_VISIBLE_DEVICES`` first).
Messages (``tritonrl.verify.shared.wire``), one job each way:

  parent -> zygote  {"id": 7, "kind": "judge"|"candidate", "workdir": "...", "spec": {...}, "env": {...},
                     "limits": {...}}  + the job's socket (judge: to the parent; candidate: to its judge)
  zygote -> parent  {"id": 7, "pid": 1234}, later {"id": 7, "exit": 0, "signal": 0}
                    {"warmed": true, "startup_s": {...}}  (once: the candidates' warm-ups are done)

A judge (``tritonrl.verify.judge.server``): a new session, nothing else; it is trusted and never imports candidate
code. A candidate child: a new session (the parent kills its whole process group), stdio to files in its private
workdir, an allow-listed environment (``tritonrl.verify.shared.environment``), its own namespaces and view of the files,
no privileges where the kernel allows them (``tritonrl.verify.child.isolation``), resource limits, then its calls
and, before the candidate is imported, the system-call filter (``tritonrl.verify.child.harness``), then
``os._exit``. The zygote itself is started with an allow-listed environment: the caller's other variables
(credentials) never reach its memory, nor its forks'. At end of input the zygote kills every fork's process group and exits.
"""

from __future__ import annotations

import argparse
import os
import resource
import select
import signal
import socket
import sys
import tempfile
import traceback

from tritonrl.verify.shared import wire
from tritonrl.verify.shared.stopwatch import Stopwatch


def apply_limits(limits: dict) -> None:
    """Core dumps off; address space (CPU only: CUDA reserves huge virtual ranges), CPU time, file size."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.get("as_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (limits["as_bytes"], limits["as_bytes"]))
    if limits.get("cpu_s"):
        resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 5))
    if limits.get("fsize_bytes"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize_bytes"], limits["fsize_bytes"]))


def run_fork(job: dict, sock: socket.socket, control: socket.socket) -> None:
    """Everything after fork, in the judge or the candidate child. Never returns."""
    code = 1
    try:
        os.setsid()
        control.close()
        if job["kind"] == "judge":
            os.environ.update(job.get("env", {}))
            from tritonrl.verify.judge.server import serve

            serve(sock, job["spec"])
        else:
            run_candidate_job(job, sock)
        code = 0
    except (BrokenPipeError, ConnectionResetError):
        pass  # the other end closed first (a verifier closed while its judge was starting): nobody to report to
    except BaseException:  # noqa: BLE001 - report everything, then exit without running atexit handlers
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# A candidate's child (and its toolchain helper) runs this much nicer than the judge: a batch's children compiling on
# every core held the judge's thread off the CPU for longer than the timer's hold covers while it timed a reference
# (KernelBench GEMM references read 2.7 ms as 3.4-7.5 ms; docs/benchmarks-history.md, "Warm children"). A candidate's own
# timed calls run in its child, which then competes only with the other children, as before.
CANDIDATE_NICE = 10


WITHDRAWN_EXIT = 3  # a candidate's job whose directory is gone before its fork ran (below)


def run_candidate_job(job: dict, sock: socket.socket) -> None:
    from tritonrl.verify.child.isolation import isolate
    from tritonrl.verify.shared.environment import child_environment, replace_environ

    try:
        os.chdir(job["workdir"])
    except FileNotFoundError:
        # Its verifier was interrupted and cleaned up first: nobody waits for it (a Ctrl-C printed the queued forks'
        # tracebacks). An exit, not an exception that candidate code, which runs later, could raise as well.
        os._exit(WITHDRAWN_EXIT)
    os.nice(CANDIDATE_NICE)  # the judge's threads (timing the reference, checking calls) come first on a busy host
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, fd)
    # An allow-listed environment; caches, temp files and $HOME in the child's own directory, through its cwd
    replace_environ(child_environment(os.environ, job.get("env", {}), "/proc/self/cwd"))
    tempfile.tempdir = None
    limits = job.get("limits", {})
    startup = Stopwatch()
    with startup("isolate"):
        report = isolate(job["workdir"], job["spec"].get("device", "cpu"), bool(limits.get("network_isolation")),
                         bool(limits.get("fs_isolation")), seed=job["spec"].get("triton_seed"))
        report.env_scrubbed = True
        apply_limits(limits)
    helper = None
    if job["spec"].get("device", "cpu").startswith("cuda"):
        from tritonrl.verify.child.toolchain import Toolchain

        with startup("toolchain"):
            # before any thread or CUDA context: ptxas and launchers, on request; the judge's launchers from its seed
            helper = Toolchain.start(job["spec"].get("launcher_seed"))
    import torch

    torch.set_num_threads(max(1, int(limits.get("threads", 1))))
    # oneDNN compiles its CPU kernels at run time into anonymous executable memory, which the child's system-call
    # filter refuses ("could not create a primitive" from a torch conv or GELU); torch's own kernels need none
    torch.backends.mkldnn.enabled = False
    from tritonrl.verify.child.harness import run_candidate

    run_candidate(sock, job["spec"], report, startup, helper)


def serve(control: socket.socket) -> None:
    # Warm imports: what every fork needs, loaded once. Nothing here touches CUDA.
    startup = Stopwatch()
    with startup("imports"):
        import numpy  # noqa: F401
        import torch  # noqa: F401 - not torch._inductor: 5 to 6 s on the GPU machine, and no fork needs it
        import triton
        import triton.language  # noqa: F401

        from tritonrl.verify.child import harness  # noqa: F401
        from tritonrl.verify.judge import server  # noqa: F401

        # environment too: it was the one module of ours a candidate's fork imported itself, and on a loaded 16-core
        # GPU host a fork failed that import (ModuleNotFoundError; 24 of 4,024 honest references were rejected there)
        from tritonrl.verify.shared import arena, environment, timing_protocol, trial  # noqa: F401
        try:
            import triton.runtime.interpreter  # noqa: F401
        except ImportError:
            pass
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        with startup("meta_device"):  # before any fork: the judges make the probe's shapes there too
            warm_meta_device()
    os.dup2(2, 1)  # stray prints (library warnings) must not reach anyone as a message
    children: dict[int, int] = {}  # pid -> job id
    # Ready before the candidates' warm-ups: a judge (forked first) starts CUDA while they run.
    wire.send(control, {"ready": True, "startup_s": startup.seconds(3)})
    try:
        _serve_jobs(control, children, startup)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent closed its end while a reply was on its way (a Ctrl-C): the same end as its closing
    for pid in children:
        _kill_group(pid)


def _serve_jobs(control: socket.socket, children: dict[int, int], startup: Stopwatch) -> None:
    """Fork a judge or a candidate's child for each job the parent sends, answering with its pid, and report each
    fork's exit, until the parent closes its end."""
    warmed = False
    while True:
        readable, _, _ = select.select([control], [], [], 0.01)
        if readable:
            try:
                job, fds = wire.recv(control)
            except wire.Closed:
                break
            sock = socket.socket(fileno=fds[0]) if fds else None
            if job["kind"] == "candidate" and not warmed:
                warm_candidates(startup, control)
                warmed = True
            pid = os.fork()
            if pid == 0:
                run_fork(job, sock, control)
            if sock is not None:
                sock.close()  # the fork has it; the zygote keeps no end of a judge's or child's socket
            children[pid] = job["id"]
            wire.send(control, {"id": job["id"], "pid": pid})
            if job["kind"] == "judge" and not warmed:  # the judge starts CUDA meanwhile
                warm_candidates(startup, control)
                warmed = True
        _reap(children, control)


def warm_candidates(startup: Stopwatch, control: socket.socket) -> None:
    """What every candidate child needs warm, done once (judges do not need it): just after the first judge's fork,
    or before the first candidate's. Each step is timed on ``startup``, and the parent told
    (``{"warmed": True, "startup_s": ...}``, for ``ZygoteClient.wait_warm``)."""
    with startup("dispatch_mode"):
        warm_dispatch_mode()
    with startup("view"):
        from tritonrl.verify.child.view import base_plan
        from tritonrl.verify.shared.directories import jobs_root

        base_plan(os.path.realpath(jobs_root()))  # what each child's view binds, worked out once for all forks
    if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        with startup("triton_compiler"):
            warm_triton_compiler()
    wire.send(control, {"warmed": True, "startup_s": startup.seconds(3)})


def warm_dispatch_mode() -> None:
    """Enter and use a ``TorchDispatchMode`` once, so every fork's monitor finds the mode machinery loaded. Made as
    the monitor's is (``without_dynamo_import``): the first dispatch no longer imports ``torch._dynamo``, which
    took 4.2-4.7 s of the zygote's start on the GPU machine before any candidate could be forked."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from tritonrl.verify.child.monitor import without_dynamo_import

    class _Pass(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with torch.no_grad(), without_dynamo_import(_Pass)():
        x = torch.empty_like(torch.zeros(4))
        x.copy_(torch.ones(4))
        (x + 1).sum().item()


def warm_meta_device() -> None:
    """Run a few ops on the meta device once, so every fork finds torch's Python meta kernels loaded (their first use
    imports ``torch._refs``, ``torch._decomp`` and sympy: 0.7-1.3 s on a loaded 2-core CPU, which each candidate's
    probe at the GPU's shape, ``child/probe.py``, paid on its own, and each judge once for the probe's shapes). The
    CPU interpreter only: a GPU runs no probe."""
    import torch

    with torch.no_grad(), torch.device("meta"):
        x = torch.empty(4, 4)
        layer = torch.nn.Linear(4, 4)
        torch.relu(layer(x.contiguous()) + 1).sum(dim=1)
        torch.nn.functional.conv2d(torch.empty(1, 4, 4, 4), torch.empty(4, 4, 3, 3))


def warm_triton_compiler() -> None:
    """Compile one small kernel for this machine's GPU (no CUDA context: the target is read from nvidia-smi), so
    every fork starts with Triton's compiler loaded and initialised: measured on an H100, a fresh process's first
    compilation takes about 0.5 s less after this. Best effort: any failure leaves the forks to do it themselves."""
    import shutil
    import subprocess

    try:
        import triton
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        smi = shutil.which("nvidia-smi")
        if smi is None:
            return
        cap = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30, check=True).stdout.split()[0]

        @triton.jit
        def _warm(x, y, n, B: tl.constexpr):
            offs = tl.program_id(0) * B + tl.arange(0, B)
            tile = tl.load(x + offs[:, None] * B + tl.arange(0, B)[None, :])
            tl.store(y + offs, tl.sum(tl.dot(tile, tile), axis=1), mask=offs < n)

        cache = tempfile.mkdtemp(prefix="tritonrl-warm-")
        saved = os.environ.get("TRITON_CACHE_DIR")
        os.environ["TRITON_CACHE_DIR"] = cache
        try:
            source = ASTSource(_warm, {"x": "*fp32", "y": "*fp32", "n": "i32", "B": "constexpr"}, constexprs={"B": 16})
            triton.compile(source, target=GPUTarget("cuda", int(cap.replace(".", "")), 32))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
            os.environ.pop("TRITON_CACHE_DIR") if saved is None else os.environ.update(TRITON_CACHE_DIR=saved)
    except Exception as exc:  # noqa: BLE001 - an optimisation; the forks compile as they would have
        print(f"tritonrl zygote: Triton warm-up skipped ({type(exc).__name__}: {exc})", file=sys.stderr)


def _reap(children: dict[int, int], control: socket.socket) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        job_id = children.pop(pid, None)
        if job_id is not None:
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -sig
            wire.send(control, {"id": job_id, "exit": code, "signal": sig})


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description="the verifier's fork server (started by the Verifier)")
    parser.add_argument("--fd", type=int, required=True, help="this end of the parent's socket pair")
    args = parser.parse_args()
    serve(socket.socket(fileno=args.fd))


if __name__ == "__main__":
    main()
