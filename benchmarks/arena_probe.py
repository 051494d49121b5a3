"""Probe: can a judge share GPU memory with an isolated, unprivileged child, and how fast do they talk?

    PYTHONPATH=src python benchmarks/arena_probe.py [--device cuda|cpu]

A CUDA-free parent forks a "judge" (creates an arena, fills it) and a "child" (enters its namespaces, becomes
nobody, maps the arena from the file descriptor it receives, runs a Triton kernel on it, answers pings). Prints
one JSON object: what worked, the mapping's cost and the socket's round-trip latency.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def child(sock: socket.socket, device: str, workdir: str, variant: str) -> None:
    from tritonrl.verify.child.isolation import isolate

    os.chdir(workdir)
    report = isolate(workdir, device, "net" in variant, "fs" in variant, drop_user="nobody" in variant)
    os.environ.update({"TRITON_CACHE_DIR": "/proc/self/cwd/.triton", "HOME": "/proc/self/cwd",
                       "TMPDIR": "/proc/self/cwd"})
    tempfile.tempdir = None
    msg, fds, _, _ = socket.recv_fds(sock, 4096, 1)
    spec = json.loads(msg)
    import torch
    import triton
    import triton.language as tl

    from tritonrl.verify.shared.arena import Arena

    t0 = time.perf_counter()
    if device == "cuda":
        torch.empty(1, device="cuda")
    t1 = time.perf_counter()
    arena = Arena.attach(fds[0], spec["nbytes"], device)
    t2 = time.perf_counter()
    x = arena.tensor(0, torch.float32, (1024,))
    y = arena.tensor(4096, torch.float32, (1024,))

    @triton.jit
    def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    double[(4,)](x, y, 1024, BLOCK=256)
    if device == "cuda":
        torch.cuda.synchronize()
    t3 = time.perf_counter()
    sock.sendall(json.dumps({"variant": variant, "report": report.to_dict(), "cuda_init_s": t1 - t0, "attach_s": t2 - t1,
                             "first_kernel_s": t3 - t2, "x0": float(x[5])}).encode() + b"\n")
    while True:
        data = sock.recv(64)
        if not data or data == b"q":
            break
        sock.sendall(data)
    os._exit(0)


def judge(sock: socket.socket, device: str) -> None:
    import torch

    from tritonrl.verify.shared.arena import Arena

    t0 = time.perf_counter()
    if device == "cuda":
        torch.empty(1, device="cuda")
    arena = Arena.create(1 << 20, device)
    t1 = time.perf_counter()
    x = arena.tensor(0, torch.float32, (1024,))
    x.copy_(torch.arange(1024, dtype=torch.float32, device=x.device))
    if device == "cuda":
        torch.cuda.synchronize()
    socket.send_fds(sock, [json.dumps({"nbytes": arena.nbytes}).encode()], [arena.fd])
    line = sock.makefile().readline()
    result = json.loads(line)
    y = arena.tensor(4096, torch.float32, (1024,))
    result["judge_create_s"] = t1 - t0
    result["kernel_result_ok"] = bool(torch.equal(y, x * 2))
    times = []
    for _ in range(200):
        s = time.perf_counter()
        sock.sendall(b"p")
        sock.recv(64)
        times.append((time.perf_counter() - s) * 1e6)
    sock.sendall(b"q")
    result["ping_us_median"] = statistics.median(times)
    result["ping_us_p90"] = sorted(times)[int(0.9 * len(times))]
    result["device"] = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(json.dumps(result, indent=1))
    arena.close()
    os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--variant", default="net,fs,nobody", help="isolation parts to apply (fs: the child's view)")
    args = parser.parse_args()
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    root = tempfile.mkdtemp(prefix="probe-jobs-")
    workdir = tempfile.mkdtemp(dir=root)
    a, b = socket.socketpair()
    if os.fork() == 0:
        a.close()
        child(b, args.device, workdir, args.variant)
    if os.fork() == 0:
        b.close()
        judge(a, args.device)
    a.close()
    b.close()
    for _ in range(2):
        os.wait()


if __name__ == "__main__":
    main()
