"""Where an RL step's reward goes on a GPU: the 64 candidates of ``benchmarks/rl_step.py`` judged as its reward
judges them (correctness only, ``--workers`` in flight, one warm verifier), with and without the CPU cross-check.

    python benchmarks/probes/reward_stages.py --out reward_stages.json        # on a GPU machine
    python benchmarks/probes/reward_stages.py --cross-check on --batches 1   # one setting (for a profiler)
    python benchmarks/probes/reward_stages.py --warm-children --gap 8        # children started between batches
    python benchmarks/probes/reward_stages.py --no-judge-launchers           # every child compiles its launchers
    python benchmarks/probes/reward_stages.py --warm-children --warm-spares  # a started child for every candidate

Per setting: a first batch (the verifier's start inside it), then ``--batches`` warm ones, each of distinct files.
Per warm batch: its wall time, the candidates' seconds by kind, and the sums of ``timing["stage_s"]`` (what the
judge recorded: the child's start, import, the reference, the first trial's JIT, correctness, waits) and of the
CPU cross-check's seconds, so the figures say which part an RL step waits for. Nothing here decides a verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from rl_step import GPU_TASKS, KINDS  # noqa: E402
from verify_scaling import answers  # noqa: E402

from tritonrl.config import VerifyConfig  # noqa: E402
from tritonrl.tasks import get_task  # noqa: E402
from tritonrl.verify import Verifier, VerifyItem  # noqa: E402


def batch(tasks: list, size: int, tag: str) -> list[tuple[str, VerifyItem]]:
    """``size`` candidates, tasks in turn, each task's kinds in turn (the reward's order), each a distinct file."""
    pools = {t.name: [(k, c) for k, c in answers(t).items() if k in KINDS] for t in tasks}
    out = []
    for i in range(size):
        task = tasks[i % len(tasks)]
        kind, code = pools[task.name][(i // len(tasks)) % len(pools[task.name])]
        out.append((kind, VerifyItem(task, code=f"# candidate {tag} {i}\n{code}")))
    return out


def summary(kinds: list[str], results: list, wall_s: float) -> dict:
    stages: dict[str, float] = {}
    for r in results:
        for key, value in (r.timing.get("stage_s") or {}).items():
            if isinstance(value, (int, float)):
                stages[key] = stages.get(key, 0.0) + value
            elif isinstance(value, dict):  # charged: {part: s}
                for part, s in value.items():
                    if isinstance(s, (int, float)):
                        stages[f"{key}.{part}"] = stages.get(f"{key}.{part}", 0.0) + s
    by_kind: dict[str, list[float]] = {}
    for kind, r in zip(kinds, results):
        by_kind.setdefault(kind, []).append(r.elapsed_s or 0.0)
    cross = [r.timing["cpu_cross_check"].get("s", 0.0) for r in results if "cpu_cross_check" in r.timing]
    return {"wall_s": round(wall_s, 2), "n": len(results), "correct": sum(bool(r.correct) for r in results),
            "elapsed_sum_s": round(sum(r.elapsed_s or 0.0 for r in results), 2),
            "started_ahead": sum(bool(r.timing.get("warm_child")) for r in results),
            "launchers_built_by_children": sum(int(r.timing.get("launchers_built") or 0) for r in results),
            "elapsed_median_s_by_kind": {k: round(statistics.median(v), 2) for k, v in by_kind.items()},
            "stage_sum_s": {k: round(v, 2) for k, v in sorted(stages.items())},
            "cross_check": {"n": len(cross), "sum_s": round(sum(cross), 2),
                            "median_s": round(statistics.median(cross), 2) if cross else None},
            "verdicts": dict(Counter(f"{k}: {r.stage.value} {','.join(r.flags)}" for k, r in zip(kinds, results)))}


def run_setting(tasks: list, args, cross_check: bool) -> dict:
    config = VerifyConfig(device=args.device, timing=False, workers_per_gpu=args.workers, cpu_cross_check=cross_check,
                          warm_children=args.warm_children, warm_spares=args.warm_spares,
                          judge_launchers=args.judge_launchers,
                          cache_dir=tempfile.mkdtemp(prefix="reward-stages-"))
    out = {"cross_check": cross_check, "batches": []}
    with Verifier(config) as verifier:
        for b in range(args.batches + 1):
            items = batch(tasks, args.size, f"{cross_check}-{b}")
            time.sleep(args.gap)  # the rest of an RL step (generation, the backward pass): children start ahead then
            start = time.monotonic()  # the batch's wall, the gap not in it (the run at 41d7313 counted it)
            results = verifier.verify_many([item for _, item in items])
            row = summary([k for k, _ in items], results, time.monotonic() - start)
            row["first"] = b == 0
            out["batches"].append(row)
            print(json.dumps({"cross_check": cross_check, "batch": b, "wall_s": row["wall_s"],
                              "correct": row["correct"], "cross_check_s": row["cross_check"]}), flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=16, help="verify.workers_per_gpu (rl_step's --verify-workers)")
    p.add_argument("--size", type=int, default=64, help="candidates a batch (an RL step's completions)")
    p.add_argument("--batches", type=int, default=2, help="warm batches per setting, after the first")
    p.add_argument("--cross-check", choices=["on", "off", "both"], default="both")
    p.add_argument("--warm-children", action="store_true", help="verify.warm_children: a child a place started "
                   "ahead (CUDA up) whenever a batch ends, as between an RL step's rewards")
    p.add_argument("--gap", type=float, default=0.0, help="seconds between batches (an RL step's other work: "
                   "about 8 on an H200), not counted in a batch's wall")
    p.add_argument("--warm-spares", action="store_true", help="verify.warm_spares (with --warm-children): each "
                   "child a candidate takes replaced at once, while the batch runs")
    p.add_argument("--no-judge-launchers", dest="judge_launchers", action="store_false",
                   help="verify.judge_launchers off: every child compiles its kernels' launchers itself")
    p.add_argument("--device", default="cuda", help="cuda; cpu checks the probe itself (no cross-check there)")
    p.add_argument("--tasks", default=GPU_TASKS, help="bundled task names, comma-separated")
    p.add_argument("--out", help="write the figures here (JSON)")
    args = p.parse_args()
    tasks = [get_task(name) for name in args.tasks.split(",")]
    settings = {"on": [True], "off": [False], "both": [False, True]}[args.cross_check]
    import torch

    out = {"probe": "reward_stages", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "commit": os.environ.get("TRITONRL_COMMIT"), "device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
           "cpus": os.cpu_count(), "workers_per_gpu": args.workers, "warm_children": args.warm_children,
           "warm_spares": args.warm_spares, "judge_launchers": args.judge_launchers, "gap_s": args.gap, "size": args.size,
           "settings": [run_setting(tasks, args, c) for c in settings]}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
