"""Every bundled solution verified once on a GPU at its timing shape: accepted or not, as each finishes.

    PYTHONPATH=src python benchmarks/probes/bundled_accept_gpu.py --jsonl accept.jsonl --max-minutes 8

The GPU form of ``tests/verify/test_gpu.py::test_all_bundled_solutions_accepted_and_timed``, resumable: one
``Verifier`` (``workers_per_gpu`` children share the GPU for import, compilation and correctness; timing stays
exclusive), each task's row (``task``, ``correct``, ``stage``, ``flags``, ``error``, ``speedup``,
``speedup_ci95``, ``elapsed_s``) appended to ``--jsonl`` as soon as it is judged; tasks already there are
skipped (unless named in ``--first``: judged again, first; the last row of a task counts), and no result is
taken after ``--max-minutes`` (those running are ended by closing the verifier).
Exit status 1 if any solution judged was rejected.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: gpu_bench
import gpu_bench  # noqa: E402,F401  (sets TRITON_INTERPRET=0)

from tritonrl.config import VerifyConfig  # noqa: E402
from tritonrl.tasks import load_tasks  # noqa: E402
from tritonrl.verify import Verifier, VerifyItem  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jsonl", required=True, help="append one row per task here (and skip tasks in it)")
    parser.add_argument("--max-minutes", type=float, default=9.0, help="stop taking results after this long")
    parser.add_argument("--workers-per-gpu", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=120.0, help="verifier timeout per candidate (s)")
    parser.add_argument("--reference-memory-gb", type=float, default=16.0,
                        help="references kept in memory (a task's are ~2 GB at these shapes; the default 4 would "
                             "send concurrent tasks' references through the disk cache)")
    parser.add_argument("--first", default="", help="comma-separated tasks to judge first (again, if judged)")
    args = parser.parse_args(argv)
    done = set()
    if os.path.exists(args.jsonl):
        with open(args.jsonl) as fh:
            done = {json.loads(line)["task"] for line in fh if line.strip()}
    first = [name for name in args.first.split(",") if name]
    every = [t for t in load_tasks("bundled") if t.solution]
    tasks = sorted((t for t in every if t.name in first or t.name not in done), key=lambda t: t.name not in first)
    print(f"{len(done)} tasks already judged; {len(tasks)} to run", flush=True)
    config = VerifyConfig(device="cuda", timeout_s=args.timeout, warmup=3, timed_trials=20,
                          workers_per_gpu=args.workers_per_gpu, reference_memory_gb=args.reference_memory_gb)
    deadline = time.monotonic() + 60 * args.max_minutes
    rejected = 0
    with Verifier(config) as verifier, open(args.jsonl, "a") as out:
        results = verifier.verify_iter([VerifyItem(t, code=t.solution) for t in tasks])
        for index, result in results:
            task = tasks[index]
            row = {"task": task.name, "correct": result.correct, "stage": result.stage.value, "flags": result.flags,
                   "error": result.error, "speedup": result.speedup,
                   "speedup_ci95": (result.timing or {}).get("speedup_ci95"), "elapsed_s": result.elapsed_s}
            out.write(json.dumps(row) + "\n")
            out.flush()
            rejected += not (result.correct and isinstance(result.speedup, float) and result.speedup > 0)
            print(f"{task.name}: correct {result.correct} speedup {result.speedup} {result.flags} "
                  f"{(result.error or '')[:200]} ({result.elapsed_s} s)", flush=True)
            if time.monotonic() > deadline:
                results.close()
                print("time is up: rerun to resume", flush=True)
                break
    return 1 if rejected else 0


if __name__ == "__main__":
    raise SystemExit(main())
