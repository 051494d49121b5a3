"""How long forked children take to start CUDA, N at once, with and without a cap on how many start at a time.

    python benchmarks/probes/cuda_start_probe.py      # on a GPU machine; prints one line per (N, cap)

The verifier's children are forked from a zygote that never starts CUDA, so each makes its own context; the judge
lets ``cuda_starts`` of them do it at a time (``tritonrl.verify.judge.server``). This measures why: per line, when
the first, median and last child had CUDA (seconds from the forks), and the cuInit and context parts. Figures are in
docs/benchmarks-history.md ("Seventh GPU pass").
"""
import json
import multiprocessing as mp
import os
import time

import torch  # no CUDA init in the parent


def child(w, sem, t_go):
    t0 = time.monotonic()
    if sem is not None:
        sem.acquire()
    t1 = time.monotonic()
    torch.cuda.init()
    t2 = time.monotonic()
    torch.empty(1, device="cuda")
    t3 = time.monotonic()
    if sem is not None:
        sem.release()
    os.write(w, (json.dumps([t0 - t_go, t1 - t_go, t2 - t_go, t3 - t_go]) + "\n").encode())
    os._exit(0)

def trial(n, cap):
    r, w = os.pipe()
    ctx = mp.get_context("fork")
    sem = ctx.Semaphore(cap) if cap else None
    t_go = time.monotonic()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(w, sem, t_go)
        pids.append(pid)
    os.close(w)
    for p in pids:
        os.waitpid(p, 0)
    data = os.read(r, 1 << 20).decode().splitlines()
    rows = sorted(json.loads(x) for x in data)
    ends = sorted(x[3] for x in rows)
    init = sorted(x[2] - x[1] for x in rows)
    ctxs = sorted(x[3] - x[2] for x in rows)
    print(f"n={n:2d} cap={cap}: done first {ends[0]:.2f} median {ends[len(ends)//2]:.2f} last {ends[-1]:.2f} s; "
          f"cuInit median {init[len(init)//2]:.3f} max {init[-1]:.3f}; context median {ctxs[len(ctxs)//2]:.3f} "
          f"max {ctxs[-1]:.3f}", flush=True)

if __name__ == "__main__":
    for n, cap in [(1, 0), (1, 0), (8, 0), (36, 0), (36, 4), (36, 1), (36, 8)]:
        trial(n, cap)
