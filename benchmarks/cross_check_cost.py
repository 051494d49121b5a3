"""What the CPU cross-check of GPU verdicts costs (``tritonrl.verify.parent.cross_check``), measured on a CPU.

On a GPU every candidate the GPU judges correct is judged again on the CPU interpreter, on the host's cores. This
runs that second judging alone, here, for each bundled task's solution as a made-up GPU verdict of *correct* (the
code is the bundled solution; nothing but the CPU side runs), all at once through the cross-check's own verifier
(its settings: one full trial, no timing, half the cores), and reports seconds a candidate: the batch's wall per
candidate (what a batch of correct candidates adds, spread over the cross-check's workers) and each check's own
seconds (median, 90th percentile). Every solution must stand (no memory evidence against an honest kernel).

    PYTHONPATH=src .venv/bin/python benchmarks/cross_check_cost.py --out benchmarks/results/cross_check_cost_cpu.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default="", help="bundled task names, comma-separated (default: every bundled task)")
    p.add_argument("--out", help="write the figures here (JSON)")
    args = p.parse_args(argv)

    from tritonrl.config import VerifyConfig
    from tritonrl.tasks.sources import load_bundled
    from tritonrl.util.gitinfo import commit
    from tritonrl.verify.parent.cross_check import CrossCheck
    from tritonrl.verify.shared.verdict import Stage, VerifyResult

    tasks = [t for t in load_bundled() if t.solution and (not args.tasks or t.name in args.tasks.split(","))]
    if not tasks:
        print(f"cross_check_cost: no bundled task with a solution among {args.tasks!r}", file=sys.stderr)
        return 2
    check = CrossCheck(VerifyConfig(device="cuda"))
    workers = check.config.workers

    def one(task):
        gpu = VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True, code=task.solution)
        return task.name, check.check(task, gpu)

    try:
        one(tasks[0])  # the CPU judge's start, not counted
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(one, tasks))
        wall = time.monotonic() - start
    finally:
        check.close()
    seconds = sorted(r.timing["cpu_cross_check"]["s"] for _, r in results)
    overturned = [name for name, r in results if r.correct is not True]
    figures = {
        "what": "the CPU cross-check's cost per GPU-correct candidate (benchmarks/cross_check_cost.py)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(short=True), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "candidates": len(results), "workers": workers, "batch_wall_s": round(wall, 2),
        "wall_per_candidate_s": round(wall / len(results), 3),
        "check_s_median": round(statistics.median(seconds), 3),
        "check_s_p90": round(seconds[int(0.9 * (len(seconds) - 1))], 3),
        "overturned": overturned,
        "cpu_flags": {name: r.timing["cpu_cross_check"]["flags"] for name, r in results
                      if r.timing["cpu_cross_check"]["flags"]},
    }
    print(json.dumps(figures, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")
    if overturned:
        print(f"cross_check_cost: honest solutions overturned: {', '.join(overturned)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
