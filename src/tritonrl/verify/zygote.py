"""The warm fork server: imports torch and Triton once, then forks a fresh, sandboxed child per job.

Run by the parent (``tritonrl.verify.sandbox``) as ``python -m tritonrl.verify.zygote`` with
``TRITON_INTERPRET=1`` already in the environment on a CPU. It never initializes CUDA, so children may (each
sets ``CUDA_VISIBLE_DEVICES`` first). Protocol, one JSON object per line:

  parent -> zygote  {"id": 7, "kind": "candidate"|"reference"|"probe", "workdir": "...", "spec": {...},
                     "env": {...}, "limits": {...}}

The spec travels in this message, never in a file: it holds the child's secret (``tritonrl.verify.protocol``).
  zygote -> parent  {"ready": true} once, then {"id": 7, "pid": 1234} and later {"id": 7, "exit": 0, "signal": 0}

A child: new session (so the parent can kill its whole process group), stdio to files in its private
workdir, its own namespaces and no privileges where the kernel allows them (``tritonrl.verify.isolation``),
resource limits, then the job, then ``os._exit``.
On end of input the zygote kills every child's process group and exits.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import tempfile
import traceback

from tritonrl.verify.isolation import isolate
from tritonrl.verify.protocol import Signer


def apply_limits(limits: dict) -> None:
    """Core dumps off; address space (CPU only: CUDA reserves huge virtual ranges), CPU time, file size."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.get("as_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (limits["as_bytes"], limits["as_bytes"]))
    if limits.get("cpu_s"):
        resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 5))
    if limits.get("fsize_bytes"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize_bytes"], limits["fsize_bytes"]))


def run_child(job: dict, proto_fds: list[int]) -> None:
    """Everything after fork, in the child. Never returns."""
    code = 1
    try:
        os.setsid()
        for fd in proto_fds:
            os.close(fd)
        os.chdir(job["workdir"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, fd)
        os.environ.update(job.get("env", {}))
        # Caches and temp files in the child's own directory, reached through its cwd (hidden paths stay hidden)
        os.environ.update({"TRITON_CACHE_DIR": "/proc/self/cwd/.triton", "TORCHINDUCTOR_CACHE_DIR":
                           "/proc/self/cwd/.inductor", "TMPDIR": "/proc/self/cwd"})
        tempfile.tempdir = None
        limits = job.get("limits", {})
        spec = job["spec"]
        report = isolate(limits.get("hide", []), bool(limits.get("network_isolation")),
                         bool(limits.get("fs_isolation")))
        apply_limits(limits)
        Signer(spec["secret"]).write(".", "sandbox.json", report.to_dict())
        if job["kind"] == "probe":
            code = 0
            return
        import torch

        torch.set_num_threads(max(1, int(limits.get("threads", 1))))
        if job["kind"] == "candidate":
            from tritonrl.verify.harness import run_candidate
            run_candidate(spec)
        else:
            from tritonrl.verify.reference import run_reference
            run_reference(spec)
        code = 0
    except BaseException:  # noqa: BLE001 - report everything, then exit without running atexit handlers
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    # Warm imports: what every child needs, loaded once. Nothing here touches CUDA.
    import numpy  # noqa: F401
    import torch
    import torch._inductor.config  # noqa: F401 - use_deterministic_algorithms imports it (seconds)
    import triton
    import triton.language

    from tritonrl.verify import harness, reference, timing, trial  # noqa: F401
    try:
        import triton.runtime.interpreter  # noqa: F401
    except ImportError:
        pass
    proto = os.dup(1)
    os.dup2(2, 1)  # stray prints (library warnings) must not corrupt the protocol
    children: dict[int, int] = {}  # pid -> job id
    send = _sender(proto)
    send({"ready": True})
    buffer = b""
    while True:
        readable, _, _ = select.select([0], [], [], 0.01)
        if readable:
            chunk = os.read(0, 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                job = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    run_child(job, [proto])
                children[pid] = job["id"]
                send({"id": job["id"], "pid": pid})
        _reap(children, send)
    for pid in children:
        _kill_group(pid)


def _reap(children: dict[int, int], send) -> None:
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
            send({"id": job_id, "exit": code, "signal": sig})


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _sender(fd: int):
    def send(message: dict) -> None:
        os.write(fd, (json.dumps(message) + "\n").encode())
    return send


if __name__ == "__main__":
    serve()
