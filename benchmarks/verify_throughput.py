"""Verifier throughput: ``Verifier.verify_many`` against a naive process-per-candidate baseline.

    .venv/bin/python benchmarks/verify_throughput.py                 # l1_relu, 32 candidates, table
    .venv/bin/python benchmarks/verify_throughput.py --task l1_softmax --n 48 --json

Candidates: half the bundled reference solution (each with a distinct comment), half broken in four ways
(wrong value, import-time error, runtime error, syntax error). Both sides run in this one invocation, from cold
(a fresh reference cache, the zygote started inside the measured time), with the same number of parallel
workers. The baseline starts a fresh ``python`` per candidate that imports torch and Triton, recomputes the
reference and compares the same number of full trials in-process (no tiny stage, no sandbox beyond the process).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date

from tritonrl.config import VerifyConfig
from tritonrl.tasks import get_task
from tritonrl.verify import Verifier, VerifyItem

NAIVE_CHILD = r'''
import json, sys, types
import torch
import triton  # noqa: F401
from tritonrl.verify.static import run_static_checks
task_src, cand_src, trials = open(sys.argv[1]).read(), open(sys.argv[2]).read(), int(sys.argv[3])
if run_static_checks(cand_src):
    print(json.dumps({"correct": False})); sys.exit(0)
def load(src, name):
    mod = types.ModuleType(name); open(name + ".py", "w").write(src)
    exec(compile(src, name + ".py", "exec"), mod.__dict__); return mod
try:
    task, cand = load(task_src, "task_mod"), load(cand_src, "cand_mod")
    ok = True
    for k in range(trials):
        torch.manual_seed(k); init = task.get_init_inputs()
        torch.manual_seed(k); ref = task.Model(*init)
        torch.manual_seed(k); new = cand.ModelNew(*init)
        torch.manual_seed(k + 1); inputs = task.get_inputs()
        with torch.no_grad():
            e = ref(*[x.clone() for x in inputs]); a = new(*[x.clone() for x in inputs])
        ok = ok and e.shape == a.shape and e.dtype == a.dtype and torch.allclose(e, a, atol=1e-4, rtol=1e-4)
except Exception:
    ok = False
print(json.dumps({"correct": bool(ok)}))
'''


def make_candidates(solution: str, n: int) -> list[tuple[str, bool]]:
    """(code, expected correct) pairs: half good, half broken in four ways."""
    broken = [
        solution.replace("0.0", "0.5", 1) if "0.0" in solution else solution.replace("+", "-", 1),
        solution + "\nraise RuntimeError('broken at import')\n",
        solution.replace("def forward(self, x):", "def forward(self, x):\n        x = x.view(-1, 7, 3)", 1),
        solution[: len(solution) // 2],
    ]
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append((f"# candidate {i}\n{solution}", True))
        else:
            out.append((f"# candidate {i}\n{broken[(i // 2) % len(broken)]}", False))
    return out


def run_ours(task, candidates, workers: int, timeout_s: float) -> tuple[float, list[bool]]:
    config = VerifyConfig(device="cpu", workers=workers, timeout_s=timeout_s,
                          cache_dir=tempfile.mkdtemp(prefix="tritonrl-bench-cache-"))
    start = time.monotonic()
    with Verifier(config) as verifier:
        results = verifier.verify_many([VerifyItem(task, code=code) for code, _ in candidates])
    return time.monotonic() - start, [r.correct for r in results]


def run_naive(task, candidates, workers: int, timeout_s: float, trials: int) -> tuple[float, list[bool]]:
    workdir = tempfile.mkdtemp(prefix="tritonrl-bench-naive-")
    task_path = os.path.join(workdir, "task.py")
    with open(task_path, "w") as fh:
        fh.write(task.source)
    env = {**os.environ, "TRITON_INTERPRET": "1"}

    def one(code: str) -> bool:
        cand_dir = tempfile.mkdtemp(dir=workdir)
        cand_path = os.path.join(cand_dir, "cand.py")
        with open(cand_path, "w") as fh:
            fh.write(code)
        try:
            proc = subprocess.run([sys.executable, "-c", NAIVE_CHILD, task_path, cand_path, str(trials)],
                                  check=False, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=cand_dir)
            return json.loads(proc.stdout.strip().splitlines()[-1])["correct"]
        except (subprocess.TimeoutExpired, ValueError, IndexError):
            return False

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        verdicts = list(pool.map(one, [code for code, _ in candidates]))
    return time.monotonic() - start, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="l1_relu")
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    task = get_task(args.task)
    candidates = make_candidates(task.solution, args.n)
    expected = [ok for _, ok in candidates]
    ours_s, ours = run_ours(task, candidates, args.workers, args.timeout)
    naive_s, naive = run_naive(task, candidates, args.workers, args.timeout, VerifyConfig().num_trials)
    report = {
        "task": task.name, "candidates": len(candidates), "workers": args.workers,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
        "date": date.today().isoformat(),
        "ours_s": round(ours_s, 2), "naive_s": round(naive_s, 2),
        "ours_per_min": round(60 * len(candidates) / ours_s, 1),
        "naive_per_min": round(60 * len(candidates) / naive_s, 1),
        "ratio": round(naive_s / ours_s, 2),
        "ours_agree_with_expected": ours == expected, "naive_agree_with_expected": naive == expected,
    }
    if args.json:
        print(json.dumps(report))
        return
    for key, value in report.items():
        print(f"{key:28s} {value}")


if __name__ == "__main__":
    main()
