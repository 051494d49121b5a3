"""What a CPU verdict costs per candidate at two commits, measured interleaved on one machine.

    git worktree add /tmp/tritonrl-base feebf5a                      # the tree to compare against
    .venv/bin/python benchmarks/verify_cost_ab.py --base /tmp/tritonrl-base --rounds 4 \\
        --out benchmarks/results/verify_cost_ab.json

Each round runs both trees, in alternating order (A B, then B A: a drift in the machine's load falls on both), each
in a fresh process with that tree's ``src`` first on ``PYTHONPATH``. A process starts a ``Verifier`` (CPU, its own
empty reference cache), judges every task's reference solution once untimed (the references are made, the child
process warm), then times one ``verify_many`` batch: per task, honest solutions and broken ones (a store one place off,
an import-time error, a runtime error, a syntax error). Every candidate differs in code (a module constant of its own),
so no cache keyed on the code serves one candidate from another's verdict. Reported per tree: the batch's wall
seconds per candidate (median over rounds), each round's figure, and whether the verdicts were the ones expected.

The interface used (``VerifyConfig``, ``Verifier``, ``VerifyItem``, ``get_task``) is the same at both commits. The
figure is issue 51's cost criterion: a CPU verdict costs no more than 10% more per candidate than before it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = "l1_relu,l1_softmax,l1_layernorm,l1_matmul,l2_gemm_bias_relu,l2_gemm_softmax,l2_conv_relu_bias"

# Runs in a fresh process, with the tree under test first on sys.path: prints one JSON line.
INNER = r'''
import json, sys, tempfile, time
from tritonrl.config import VerifyConfig
from tritonrl.tasks import get_task
from tritonrl.verify import Verifier, VerifyItem

names, per_task, workers = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])


def broken(solution, k):
    kinds = [
        solution.replace("tl.store(", "tl.store(1 + ", 1),  # every value one place off: a wrong kernel that runs
        solution + "\nraise RuntimeError('broken at import')\n",
        solution + "\ndef _fails(self, *args):\n    raise RuntimeError('broken at run time')\n\n\nModelNew.forward = _fails\n",
        solution[: len(solution) // 2],
    ]
    return kinds[k % len(kinds)]


tasks = [get_task(name) for name in names]
items, expected = [], []
for task in tasks:
    for i in range(per_task):
        honest = i % 2 == 0
        code = task.solution if honest else broken(task.solution, i // 2)
        items.append(VerifyItem(task, code=f"_CANDIDATE = {len(items)}\n{code}"))
        expected.append(honest)
config = VerifyConfig(device="cpu", workers=workers, timeout_s=120, cache_dir=tempfile.mkdtemp(prefix="ab-cache-"))
with Verifier(config) as verifier:
    start = time.monotonic()
    warm = verifier.verify_many([VerifyItem(task, code=task.solution) for task in tasks])
    warm_s = time.monotonic() - start
    start = time.monotonic()
    results = verifier.verify_many(items)
    batch_s = time.monotonic() - start
print(json.dumps({"warm_s": warm_s, "batch_s": batch_s, "candidates": len(items),
                  "warm_correct": [r.correct for r in warm],
                  "verdicts": [r.correct for r in results], "expected": expected,
                  "elapsed_s": [r.elapsed_s for r in results]}))
'''


def run_tree(tree: Path, tasks: str, per_task: int, workers: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-c", INNER, tasks, str(per_task), str(workers)], env=env, cwd=tree,
                          capture_output=True, text=True, check=False, timeout=3600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"verify_cost_ab: the run in {tree} failed (exit {proc.returncode}): "
                         f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    return json.loads(lines[-1])


def git_head(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip() or "?"


def summarise(runs: list[dict]) -> dict:
    per = [r["batch_s"] / r["candidates"] for r in runs]
    return {"per_candidate_s": round(statistics.median(per), 4), "rounds_per_candidate_s": [round(x, 4) for x in per],
            "verdicts_as_expected": all(r["verdicts"] == r["expected"] for r in runs),
            "references_accepted": all(all(r["warm_correct"]) for r in runs),
            "median_item_elapsed_s": round(statistics.median(e for r in runs for e in r["elapsed_s"]), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the tree to compare against (a git worktree)")
    parser.add_argument("--head", type=Path, default=ROOT, help="the tree under test (default: this checkout)")
    parser.add_argument("--tasks", default=TASKS, help="bundled task names, comma-separated")
    parser.add_argument("--per-task", type=int, default=6, help="candidates per task, half honest (default 6)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds, each running both trees (default 4)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, help="write the JSON report here too")
    args = parser.parse_args()
    for tree in (args.base, args.head):
        if not (tree / "src" / "tritonrl").is_dir():
            parser.error(f"{tree} has no src/tritonrl: pass a checkout of this project")
    runs: dict[str, list[dict]] = {"base": [], "head": []}
    for k in range(args.rounds):
        order = ("base", "head") if k % 2 == 0 else ("head", "base")
        for side in order:
            runs[side].append(run_tree(getattr(args, side), args.tasks, args.per_task, args.workers))
            print(f"round {k + 1}/{args.rounds} {side}: {runs[side][-1]['batch_s']:.1f} s for "
                  f"{runs[side][-1]['candidates']} candidates", file=sys.stderr, flush=True)
    base, head = summarise(runs["base"]), summarise(runs["head"])
    report = {
        "what": "CPU verdict cost per candidate, two commits, interleaved rounds (benchmarks/verify_cost_ab.py)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "tasks": args.tasks.split(","), "per_task": args.per_task, "workers": args.workers, "rounds": args.rounds,
        "base": {"commit": git_head(args.base), **base}, "head": {"commit": git_head(args.head), **head},
        "head_over_base": round(head["per_candidate_s"] / base["per_candidate_s"], 3),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
