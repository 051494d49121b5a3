"""The bundled suite on one GPU at its timing shapes: reference runtime, the reference solution's speedup, its spread.

    PYTHONPATH=src python benchmarks/bundled_gpu.py --dry-run              # no GPU: shapes, bytes, FLOPs, estimates
    PYTHONPATH=src python benchmarks/bundled_gpu.py --max-minutes 9        # every task not yet in the JSONL
    PYTHONPATH=src python benchmarks/bundled_gpu.py --tasks l1_relu,l2_swiglu --repeats 3
    PYTHONPATH=src python benchmarks/bundled_gpu.py --table-only           # rebuild the JSON from the JSONL

Per task (at ``timing_variant(task)``, which the verifier uses on a GPU): its bundled solution verified
``--repeats`` times, each by its own ``Verifier`` with a fresh reference cache, so each repeat computes and
times the reference again in other processes. The repeats' Verifiers stay open across tasks (one zygote each,
started once); a task's repeats run one after the other, one candidate on the GPU at a time. The first repeat
also times ``torch.compile(Model)`` (``compile_baseline``; off with ``--no-compile``).

Several GPUs of one host: one process per GPU (``CUDA_VISIBLE_DEVICES=k``), each with its own ``--jsonl``, sharing
``--claim-dir``: a process takes a task by creating ``<claim-dir>/<task>`` first, so each task runs once, on the
first GPU free for it (concatenate the JSONLs, then ``--table-only``).

Resumable: each task's row is appended to ``--jsonl`` as soon as it is done, and tasks already there are skipped
on a rerun; ``--max-minutes`` stops starting tasks whose estimate would pass the limit, so one device call ends
cleanly and the next one resumes. At the end ``--out`` (a JSON list, one object per task: ``task``, ``ref_ms``,
``speedup``, ``speedup_cv``, ``device``, ...) is rebuilt from the JSONL, and the tasks whose speedup CV is over
2% are printed with the likely reason (``cv_ok``, ``cv_why`` in each row).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import gpu_name  # noqa: E402  (also sets TRITON_INTERPRET=0)

from tritonrl.config import VerifyConfig  # noqa: E402
from tritonrl.tasks import load_tasks  # noqa: E402
from tritonrl.tasks.variants import task_traffic, timing_variant  # noqa: E402
from tritonrl.verify.parent.plan import build_trials  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CV_TARGET = 0.02
COMMIT: dict = {}  # --commit: the repository's commit, where the copy that runs has no .git
MIB = 1 << 20
FLUSH_BYTES = 256 * MIB  # the timer's L2 flush buffer (docs/timing.md)
# Wall-time model for --dry-run and --max-minutes, from the figures in docs/benchmarks-history.md ("Full-size task",
# H200): a task's first candidate in a Verifier pays the reference outputs (8.2 s) and the reference timing
# (0.5 s), each candidate 2.9 s; plus every trial's inputs and outputs saved, loaded and compared at ~1 GB/s,
# and torch.compile once (a guess). Rough: a run rescales it by the measured wall time of the tasks done.
REF_OUTPUTS_S = 8.2
REF_TIMING_S = 0.5
CANDIDATE_S = 2.9
DATA_BYTES_PER_S = 1.0e9
COMPILE_S = 15.0


def verify_config(args: argparse.Namespace, **overrides) -> VerifyConfig:
    """The verifier's defaults on the GPU; ``--single-trial`` keeps one full trial (the timed one)."""
    return VerifyConfig(device="cuda", timeout_s=args.timeout, multi_input=not args.single_trial, **overrides)


def estimate(task, config: VerifyConfig) -> dict:
    """What the timing shape costs, from the meta device: bytes, FLOPs, estimated H100 ms, all trials' memory."""
    timing = timing_variant(task)
    traffic = task_traffic(timing.source)
    trials = [t for t in build_trials(task, config, device="cuda") if t.stage == "full"]
    full = [task_traffic(t.source) for t in trials]
    sets = config.timing_sets + 1  # the timed inputs and the sets refreshed into them
    # an upper bound, as if nothing were freed: every full trial's tensors, the timing sets' inputs, five
    # captured outputs, the largest intermediate and the flush buffer
    trials_bytes = (sum(f.io_bytes for f in full) + sets * traffic.input_bytes + 5 * traffic.output_bytes
                    + traffic.largest_bytes + FLUSH_BYTES)
    moved = sum(f.input_bytes + f.output_bytes for f in full) + config.timing_sets * traffic.io_bytes
    return {
        "task": task.name, "level": task.level,
        "sizes": {name: new for name, (_, new) in timing.meta["changes"].items()},
        "est_ms": round(traffic.est_ms, 4), "io_mib": round(traffic.io_bytes / MIB, 1),
        "eager_mib": round(traffic.op_bytes / MIB, 1), "gflop": round((traffic.flops + traffic.conv_flops) / 1e9, 2),
        "memory_bound": traffic.memory_bound, "meets_target": traffic.meets_target,
        "trials_gib": round(trials_bytes / 2**30, 2),
        "moved_gib": round(moved / 2**30, 2),
    }


def est_task_s(est: dict, args: argparse.Namespace) -> float:
    """Seconds for one task's repeats (see the wall-time model above)."""
    data_s = est["moved_gib"] * 2**30 / DATA_BYTES_PER_S
    reference_s = REF_OUTPUTS_S + data_s  # the reference's outputs, computed and saved; the parent loads them
    fresh = 1 if args.reuse_outputs else args.repeats
    total = fresh * reference_s + args.repeats * (REF_TIMING_S + CANDIDATE_S + data_s)
    return total + (0.0 if args.no_compile else COMPILE_S)


def dry_run(tasks: list, args: argparse.Namespace) -> None:
    rows = [estimate(t, verify_config(args)) for t in tasks]
    total = sum(est_task_s(r, args) for r in rows)
    if args.json:
        print(json.dumps({"tasks": rows, "est_total_s": round(total)}, indent=2))
        return
    print(f"{'task':28} {'timing shape':52} {'est ms':>7} {'io MiB':>7} {'eager MiB':>9} {'GFLOP':>6} "
          f"{'trials GiB':>10} {'target':>6} {'est s':>6}")
    for r in rows:
        shape = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
        print(f"{r['task']:28} {shape:52} {r['est_ms']:7.3f} {r['io_mib']:7.0f} {r['eager_mib']:9.0f} "
              f"{r['gflop']:6.1f} {r['trials_gib']:10.2f} {'ok' if r['meets_target'] else 'MISS':>6} "
              f"{est_task_s(r, args):6.0f}")
    calls = max(1, -(-total // (args.max_minutes * 60)))
    mode = ("reference outputs shared by the repeats" if args.reuse_outputs else "fresh cache per repeat") + \
        (", one full trial" if args.single_trial else "") + \
        (", no torch.compile" if args.no_compile else ", torch.compile in the first repeat")
    print(f"{len(rows)} tasks, {args.repeats} repeats each ({mode}): about {total / 60:.0f} min of GPU time "
          f"(rough model); at --max-minutes {args.max_minutes:g}: {calls:.0f} device call(s), each resuming "
          "from the JSONL")


def run_task(task, verifiers: list, device: str, shared_cache: str | None = None) -> dict:
    """The task's solution verified once per Verifier; one row (summary plus every repeat). With a shared cache
    (``--reuse-outputs``) the cached reference timings are deleted before each repeat: the reference's outputs
    are reused, its timing never is."""
    timing = timing_variant(task)
    repeats = []
    start = time.monotonic()
    for verifier in verifiers:
        for path in glob.glob(os.path.join(shared_cache, "timing-*.json")) if shared_cache else ():
            os.remove(path)
        result = verifier.verify(task, code=task.solution)
        t = result.timing or {}
        repeats.append({
            "correct": result.correct, "stage": result.stage.value, "flags": result.flags, "error": result.error,
            "speedup": result.speedup, "ref_ms": result.ref_runtime_ms, "runtime_ms": result.runtime_ms,
            "speedup_ci95": t.get("speedup_ci95"), "speedup_vs_compile": t.get("speedup_vs_compile"),
            "ref_compile_ms": t.get("ref_compile_ms"), "peak_memory_bytes": t.get("peak_memory_bytes"),
            "trials": [(t.get("reference") or {}).get("trials"), (t.get("candidate") or {}).get("trials")],
            "gpu": t.get("gpu"), "elapsed_s": result.elapsed_s, "clock_check": t.get("clock_check"),
            "hold": (t.get("candidate") or {}).get("hold"),
            "overhead_ms": [(t.get(side) or {}).get("overhead_ms") for side in ("reference", "candidate")]})
    row = summarize(task.name, repeats)
    row.update({"level": task.level, "sizes": {k: new for k, (_, new) in timing.meta["changes"].items()},
                "device": next((r["gpu"] for r in repeats if r["gpu"]), device),
                "date": time.strftime("%Y-%m-%d"), "commit": COMMIT.get("commit"),
                "wall_s": round(time.monotonic() - start, 1), "repeats": repeats})
    return row


def clear_cache(cache: str) -> None:
    """Delete a reference cache's entries, keeping its (dot-file) key: missing entries are recomputed."""
    for path in glob.glob(os.path.join(cache, "*")):
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def cv(values: list[float]) -> float | None:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else None


def summarize(name: str, repeats: list[dict]) -> dict:
    """Medians over the repeats, the CVs across them, and whether (and why not) the speedup CV is within 2%."""
    good = [r for r in repeats if r["correct"] and isinstance(r["speedup"], float)]
    pick = lambda key: [r[key] for r in good if isinstance(r[key], (int, float))]  # noqa: E731
    speedups, refs, runs = pick("speedup"), pick("ref_ms"), pick("runtime_ms")
    row = {"task": name, "ref_ms": _median(refs), "runtime_ms": _median(runs), "speedup": _median(speedups),
           "speedup_cv": _round(cv(speedups)), "ref_ms_cv": _round(cv(refs)), "runtime_ms_cv": _round(cv(runs)),
           "speedup_vs_compile": _median(pick("speedup_vs_compile")), "ref_compile_ms": _median(pick("ref_compile_ms")),
           "correct": f"{len(good)}/{len(repeats)}",
           "timing_untrusted": f"{sum('timing_untrusted' in (r['flags'] or []) for r in repeats)}/{len(repeats)}"}
    row["cv_ok"] = row["speedup_cv"] is not None and row["speedup_cv"] <= CV_TARGET and len(good) == len(repeats)
    row["cv_why"] = None if row["cv_ok"] else _why(row, repeats, good)
    return row


def _why(row: dict, repeats: list[dict], good: list[dict]) -> str:
    if len(good) < len(repeats):
        bad = next(r for r in repeats if r not in good)
        return f"not correct in {len(repeats) - len(good)}/{len(repeats)} repeats: {bad['stage']} {bad['flags']} " \
               f"{(bad['error'] or '')[:200]}"
    if row["speedup_cv"] is None:
        return "fewer than 2 repeats"
    if row["ref_ms"] is not None and row["ref_ms"] < 0.05:
        return f"reference only {row['ref_ms']:.3f} ms: launch and protocol overheads dominate"
    side = "reference" if (row["ref_ms_cv"] or 0) >= (row["runtime_ms_cv"] or 0) else "solution"
    return (f"the {side}'s runtime varies most across processes (reference CV {row['ref_ms_cv']:.1%}, "
            f"solution CV {row['runtime_ms_cv']:.1%})")


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 5) if values else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 5)


def finished(jsonl: Path) -> dict[str, dict]:
    rows = {}
    if jsonl.is_file():
        for line in jsonl.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["task"]] = row
    return rows


def write_table(jsonl: Path, out: Path) -> list[dict]:
    rows = sorted(finished(jsonl).values(), key=lambda r: r["task"])
    for row in rows:  # the per-call clock gaps stay in the JSONL (diagnosis); the table keeps their summary
        for repeat in row.get("repeats", []):
            if repeat.get("clock_check"):
                repeat["clock_check"] = {k: v for k, v in repeat["clock_check"].items() if not k.endswith("gaps_ms")}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"{'task':28} {'ref ms':>8} {'speedup':>8} {'CV':>6} {'vs compile':>10}  device")
    for r in rows:
        print(f"{r['task']:28} {_fmt(r['ref_ms'], '8.3f')} {_fmt(r['speedup'], '8.3f')} "
              f"{_fmt(r['speedup_cv'], '6.1%')} {_fmt(r['speedup_vs_compile'], '10.3f')}  {r['device']}")
    over = [r for r in rows if not r["cv_ok"]]
    print(f"{len(rows)} tasks in {out}; speedup CV over {CV_TARGET:.0%} (or not measured): {len(over)}")
    for r in over:
        print(f"  {r['task']}: {r['cv_why']}")
    return rows


def _fmt(value, spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) else format("-", f">{spec.split('.')[0]}")


def select(args: argparse.Namespace) -> list:
    tasks = [t for t in load_tasks("bundled", level=args.level) if t.solution and timing_variant(t) is not None]
    if args.tasks:
        wanted = args.tasks.split(",")
        unknown = sorted(set(wanted) - {t.name for t in tasks})
        if unknown:
            raise SystemExit(f"no bundled task with a timing shape and a solution: {', '.join(unknown)}")
        by_name = {t.name: t for t in tasks}
        tasks = [by_name[name] for name in dict.fromkeys(wanted)]  # in the order given (shortest first, say)
    return tasks


def run(tasks: list, args: argparse.Namespace) -> None:
    from tritonrl.verify import Verifier

    jsonl = Path(args.jsonl)
    jsonl.parent.mkdir(parents=True, exist_ok=True)
    done = finished(jsonl)
    todo = [t for t in tasks if t.name not in done]
    print(f"{len(tasks) - len(todo)} of {len(tasks)} tasks already in {jsonl}; {len(todo)} to run", flush=True)
    deadline = time.monotonic() + args.max_minutes * 60
    estimates = {t.name: est_task_s(estimate(t, verify_config(args)), args) for t in todo}
    device, spent, estimated = gpu_name(), 0.0, 0.0
    shared = tempfile.mkdtemp(prefix="bundled-gpu-shared-") if args.reuse_outputs else None
    caches = [shared or tempfile.mkdtemp(prefix=f"bundled-gpu-r{k}-") for k in range(args.repeats)]
    with ExitStack() as stack:
        verifiers = [stack.enter_context(Verifier(verify_config(
            args, cache_dir=cache, compile_baseline=(k == 0 and not args.no_compile))))
            for k, cache in enumerate(caches)]
        for task in todo:
            if args.claim_dir and not claim(Path(args.claim_dir), task.name):
                continue
            need = estimates[task.name] * (spent / estimated if estimated else 1.0)  # the model, as measured so far
            if time.monotonic() + need > deadline:
                if args.claim_dir:
                    os.rmdir(Path(args.claim_dir) / task.name)  # left for another process, or a rerun
                print(f"stopping before {task.name} (estimated {need:.0f} s; --max-minutes {args.max_minutes:g}): "
                      "rerun to resume", flush=True)
                break
            row = run_task(task, verifiers, device, shared)
            for cache in set(caches):  # a task's references are GiBs on disk: 51 tasks x 5 caches would fill it
                clear_cache(cache)
            spent, estimated = spent + row["wall_s"], estimated + estimates[task.name]
            with jsonl.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"{task.name}: ref {row['ref_ms']} ms, speedup {row['speedup']} (CV {row['speedup_cv']}), "
                  f"vs compile {row['speedup_vs_compile']}, correct {row['correct']}, {row['wall_s']} s "
                  f"(estimated {estimates[task.name]:.0f} s)", flush=True)


def claim(claims: Path, name: str) -> bool:
    """Whether this process takes ``name`` (creating a directory is atomic: one of the racing processes wins)."""
    claims.mkdir(parents=True, exist_ok=True)
    try:
        (claims / name).mkdir()
    except FileExistsError:
        return False
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="no GPU: list tasks, shapes and estimates")
    parser.add_argument("--table-only", action="store_true", help="rebuild --out from --jsonl and print it")
    parser.add_argument("--tasks", default="", help="comma-separated task names, run in this order (default: every bundled task)")
    parser.add_argument("--level", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--reuse-outputs", action="store_true",
                        help="one reference cache for all repeats, its timings deleted before each repeat: the "
                             "reference is re-timed every repeat, its outputs computed once (about 2x faster)")
    parser.add_argument("--single-trial", action="store_true",
                        help="one full correctness trial instead of five (timing is unchanged: it runs on that trial)")
    parser.add_argument("--max-minutes", type=float, default=9.0, help="start no task estimated to end later")
    parser.add_argument("--timeout", type=float, default=600.0, help="verifier timeout per candidate (s)")
    parser.add_argument("--jsonl", default=str(RESULTS / "bundled_gpu.jsonl"))
    parser.add_argument("--out", default=str(RESULTS / "bundled_gpu.json"))
    parser.add_argument("--json", action="store_true", help="--dry-run: print JSON")
    parser.add_argument("--claim-dir", help="a directory shared by one process per GPU: each task runs once, "
                                              "on the first process to claim it")
    parser.add_argument("--commit", help="this repository's commit, recorded in every row")
    args = parser.parse_args(argv)
    COMMIT["commit"] = args.commit
    tasks = select(args)
    if args.dry_run:
        dry_run(tasks, args)
        return
    if not args.table_only:
        run(tasks, args)
    write_table(Path(args.jsonl), Path(args.out))


if __name__ == "__main__":
    main()
