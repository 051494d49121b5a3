"""Timing stability on a GPU: the same correct kernel verified N times, and agreement with triton's do_bench.

    PYTHONPATH=src python benchmarks/timing_stability.py --json --out stability.json
    PYTHONPATH=src python benchmarks/timing_stability.py --case l1_relu:batch_size=8192,dim=8192 --repeats 10

For each case (a bundled task at the given sizes, judged with its bundled solution): ``repeats`` full
verifications with one warm verifier, the cached reference timing deleted before each so both sides are timed
again every time; reported: the coefficient of variation of the speedup and of each side's median (target:
speedup CV <= 2%). Then, in this process, ``tritonrl.verify.timing.time_forward`` and
``triton.testing.do_bench`` (median) on the same ModelNew and inputs (target: within 5%).
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import common_args, load_module, parse_sizes, report, resized  # noqa: E402

from tritonrl.config import VerifyConfig  # noqa: E402
from tritonrl.tasks import get_task  # noqa: E402
from tritonrl.verify import Verifier  # noqa: E402

DEFAULT_CASES = ["l1_relu:batch_size=8192,dim=8192",
                 "l2_gemm_bias_relu:batch_size=1024,in_features=4096,out_features=4096"]


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def repeated_verify(task, repeats: int, warmup: int, trials: int) -> dict:
    cache = tempfile.mkdtemp(prefix="stability-")
    config = VerifyConfig(device="cuda", cache_dir=cache, multi_input=False, staged=False, warmup=warmup,
                          timed_trials=trials, timeout_s=300.0)
    runs = []
    with Verifier(config) as verifier:
        for _ in range(repeats):
            for path in glob.glob(os.path.join(cache, "timing-*.json")):
                os.remove(path)  # re-time the reference too: the spread of the speedup, not of one side
            result = verifier.verify(task, code=task.solution)
            if not result.correct or result.speedup is None:
                raise SystemExit(f"{task.name}: not accepted ({result.stage.value}, {result.flags}, {result.error})")
            runs.append({"runtime_ms": result.runtime_ms, "ref_runtime_ms": result.ref_runtime_ms,
                         "speedup": result.speedup, "candidate_cv": result.timing["candidate"]["cv"],
                         "sm_clock_mhz": result.timing.get("sm_clock_mhz")})
    speedups = [r["speedup"] for r in runs]
    return {"runs": runs, "speedup_median": statistics.median(speedups), "speedup_cv": cv(speedups),
            "runtime_cv": cv([r["runtime_ms"] for r in runs]),
            "ref_runtime_cv": cv([r["ref_runtime_ms"] for r in runs])}


def do_bench_agreement(task, warmup: int, trials: int) -> dict:
    import torch
    import triton.testing

    from tritonrl.verify.timing import time_forward

    task_mod, solution_mod = load_module(task.source, "bench_task"), load_module(task.solution, "bench_solution")
    torch.manual_seed(0)
    model = solution_mod.ModelNew(*task_mod.get_init_inputs()).cuda().eval()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task_mod.get_inputs()]

    def forward():
        with torch.no_grad():
            return model(*inputs)

    ours = time_forward(forward, warmup, trials)["median_ms"]
    theirs = triton.testing.do_bench(forward, warmup=25, rep=100, return_mode="median")
    return {"ours_ms": ours, "do_bench_ms": theirs, "rel_diff": abs(ours - theirs) / theirs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="TASK:name=value,... (repeatable)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--trials", type=int, default=100)
    common_args(parser)
    args = parser.parse_args()
    cases, table = {}, ["case | speedup (median) | speedup CV | cand CV | ref CV | ours ms | do_bench ms | diff"]
    for case in args.case or DEFAULT_CASES:
        name, _, sizes = case.partition(":")
        task = resized(get_task(name), parse_sizes(sizes)) if sizes else get_task(name)
        row = {**repeated_verify(task, args.repeats, args.warmup, args.trials),
               "do_bench": do_bench_agreement(task, args.warmup, args.trials)}
        row["targets_met"] = {"speedup_cv_le_2pct": row["speedup_cv"] <= 0.02,
                              "do_bench_within_5pct": row["do_bench"]["rel_diff"] <= 0.05}
        cases[case] = row
        table.append(f"{case} | {row['speedup_median']:.3f} | {row['speedup_cv']:.2%} | {row['runtime_cv']:.2%} | "
                     f"{row['ref_runtime_cv']:.2%} | {row['do_bench']['ours_ms']:.4f} | "
                     f"{row['do_bench']['do_bench_ms']:.4f} | {row['do_bench']['rel_diff']:.2%}")
    report(args, {"repeats": args.repeats, "warmup": args.warmup, "trials": args.trials, "cases": cases}, table)


if __name__ == "__main__":
    main()
