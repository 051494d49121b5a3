"""Timing stability on a GPU: the same correct kernel verified N times, and agreement with triton's do_bench.

    PYTHONPATH=src python benchmarks/timing_stability.py --json --out stability.json
    PYTHONPATH=src python benchmarks/timing_stability.py --case l1_relu:batch_size=8192,dim=8192 --repeats 10

For each case (a bundled task at the given sizes, judged with its bundled solution): ``repeats`` full
verifications with one warm verifier, the cached reference timing deleted before each so both sides are timed
again every time; reported: the coefficient of variation of the speedup and of each side's median (target:
speedup CV <= 2%). Then, in this process, ``tritonrl.verify.shared.timing_protocol.time_forward`` and
``triton.testing.do_bench`` (median) on the same ModelNew and inputs (target: within 5%). Then the adaptive,
adaptive protocol (``time_with_sets``, ``--rel-ci``) against the fixed one (``time_forward``, ``--trials``),
``repeats`` times each in this process, on the solution and on the reference ``Model``: timed runs used, wall
seconds, CV of the median across repeats, agreement of the medians, and how often the speedup interval of one
adaptive repeat contains the median speedup of the fixed protocol (``--adaptive-only`` skips the Verifier runs).

    PYTHONPATH=src python benchmarks/timing_stability.py --adaptive-only --case l1_relu:batch_size=8192,dim=8192
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

    from tritonrl.verify.shared.timing_protocol import time_forward

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


def adaptive_vs_fixed(task, repeats: int, warmup: int, trials: int, rel_ci: float) -> dict:
    import time

    import torch

    from tritonrl.verify.shared import timing_protocol

    task_mod, solution_mod = load_module(task.source, "bench_task"), load_module(task.solution, "bench_solution")
    torch.manual_seed(0)
    init = task_mod.get_init_inputs()
    models = {"candidate": solution_mod.ModelNew(*init).cuda().eval()}
    torch.manual_seed(0)
    models["reference"] = task_mod.Model(*init).cuda().eval()
    input_sets = []
    for seed in range(3):
        torch.manual_seed(seed)
        input_sets.append([x.cuda() if isinstance(x, torch.Tensor) else x for x in task_mod.get_inputs()])
    inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in input_sets[0]]
    policy = timing_protocol.TimingPolicy(rel_ci=rel_ci)
    out: dict = {"policy": policy.as_dict()}
    samples = {}
    for side, model in models.items():
        def forward(model=model):
            with torch.no_grad():
                return model(*inputs)

        fixed, adaptive = [], []
        for r in range(repeats):
            start = time.monotonic()
            stats = timing_protocol.time_forward(forward, warmup, trials)
            fixed.append({"median_ms": stats["median_ms"], "trials": trials, "wall_s": time.monotonic() - start})
            timer = timing_protocol.CudaTimer()
            stats = timing_protocol.time_with_sets(forward, inputs, input_sets, timer=timer, policy=policy, seed=r)
            timer.close()
            adaptive.append({"median_ms": stats["median_ms"], "trials": stats["trials"], "stopped": stats["stopped"],
                             "warmup": stats["warmup"], "ci_rel": stats["ci_rel"], "wall_s": stats["wall_s"]})
            samples.setdefault(side, []).append(stats["samples_ms"])
        fixed_medians, adaptive_medians = [f["median_ms"] for f in fixed], [a["median_ms"] for a in adaptive]
        out[side] = {
            "fixed_median_ms": statistics.median(fixed_medians), "fixed_cv": cv(fixed_medians),
            "fixed_wall_s": statistics.fmean(f["wall_s"] for f in fixed),
            "adaptive_median_ms": statistics.median(adaptive_medians), "adaptive_cv": cv(adaptive_medians),
            "adaptive_wall_s": statistics.fmean(a["wall_s"] for a in adaptive),
            "adaptive_trials_mean": statistics.fmean(a["trials"] for a in adaptive), "adaptive_runs": adaptive,
        }
        out[side]["median_rel_diff"] = (abs(out[side]["adaptive_median_ms"] - out[side]["fixed_median_ms"])
                                        / out[side]["fixed_median_ms"])
    fixed_speedup = out["reference"]["fixed_median_ms"] / out["candidate"]["fixed_median_ms"]
    intervals = [timing_protocol.speedup_interval(ref, cand, seed=r)
                 for r, (ref, cand) in enumerate(zip(samples["reference"], samples["candidate"]))]
    out["fixed_speedup"] = fixed_speedup
    out["speedup_intervals"] = intervals
    out["interval_contains_fixed_speedup"] = sum(lo <= fixed_speedup <= hi for _, lo, hi in intervals) / len(intervals)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="TASK:name=value,... (repeatable)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--rel-ci", type=float, default=0.01, help="adaptive protocol's stopping width")
    parser.add_argument("--adaptive-only", action="store_true", help="only the adaptive-vs-fixed comparison")
    common_args(parser)
    args = parser.parse_args()
    cases, table = {}, ["case | speedup (median) | speedup CV | cand CV | ref CV | ours ms | do_bench ms | diff"]
    adaptive_table = ["case | side | fixed ms (CV, wall s) | adaptive ms (CV, wall s) | adaptive n | diff",
                      "case | fixed speedup | share of adaptive speedup intervals containing it"]
    for case in args.case or DEFAULT_CASES:
        name, _, sizes = case.partition(":")
        task = resized(get_task(name), parse_sizes(sizes)) if sizes else get_task(name)
        comparison = adaptive_vs_fixed(task, args.repeats, args.warmup, args.trials, args.rel_ci)
        for side in ("candidate", "reference"):
            c = comparison[side]
            adaptive_table.append(
                f"{case} | {side} | {c['fixed_median_ms']:.4f} ({c['fixed_cv']:.2%}, {c['fixed_wall_s']:.2f}) | "
                f"{c['adaptive_median_ms']:.4f} ({c['adaptive_cv']:.2%}, {c['adaptive_wall_s']:.2f}) | "
                f"{c['adaptive_trials_mean']:.1f} | {c['median_rel_diff']:.2%}")
        adaptive_table.append(f"{case} | {comparison['fixed_speedup']:.3f} | "
                              f"{comparison['interval_contains_fixed_speedup']:.0%}")
        if args.adaptive_only:
            cases[case] = {"adaptive_vs_fixed": comparison}
            continue
        row = {**repeated_verify(task, args.repeats, args.warmup, args.trials),
               "do_bench": do_bench_agreement(task, args.warmup, args.trials)}
        row["targets_met"] = {"speedup_cv_le_2pct": row["speedup_cv"] <= 0.02,
                              "do_bench_within_5pct": row["do_bench"]["rel_diff"] <= 0.05}
        row["adaptive_vs_fixed"] = comparison
        cases[case] = row
        table.append(f"{case} | {row['speedup_median']:.3f} | {row['speedup_cv']:.2%} | {row['runtime_cv']:.2%} | "
                     f"{row['ref_runtime_cv']:.2%} | {row['do_bench']['ours_ms']:.4f} | "
                     f"{row['do_bench']['do_bench_ms']:.4f} | {row['do_bench']['rel_diff']:.2%}")
    report(args, {"repeats": args.repeats, "warmup": args.warmup, "trials": args.trials, "rel_ci": args.rel_ci,
                  "cases": cases}, ([] if args.adaptive_only else table) + adaptive_table)


if __name__ == "__main__":
    main()
