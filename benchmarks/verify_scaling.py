"""Verification throughput against the number of GPUs (local backend, or Ray actors), and an RL step's batch.

    PYTHONPATH=src python benchmarks/verify_scaling.py --out $OUT/verify_scaling_gpu.json     # GPU host: 1, 2, 4
    PYTHONPATH=src python benchmarks/verify_scaling.py --backend ray --out $OUT/verify_scaling_ray.json
    PYTHONPATH=src python benchmarks/verify_scaling.py --device cpu --gpus 1,2 --tasks l1_relu --per-task 1 \
        --rl-step 4 --timeout-s 20 --out /tmp/vs.json                                        # toy size, no GPU

The batch is an RL step's mix (``mixed_batch``): for each bundled task, ``--per-task`` rounds of its reference
solution (right), the same solution made slower (right: its forward runs the kernels three times), a wrong
constant and a PyTorch fallback (wrong), and, one round in four, a hang (killed at ``--timeout-s``) and a syntax
error. Every verdict is compared with the expected one (``all_verdicts_as_expected``); a fast but wrong
configuration does not pass.

Each configuration (1, 2, 4 ... GPUs; on a CPU, 1, 2 ... worker processes) gets a fresh ``Verifier`` started
with ``start(wait=True)`` and one right candidate per task judged (references computed and cached, Triton's JIT
warm), outside the clock: a trainer starts its verifier before its first step and judges thousands of candidates
of the same tasks. Then the batch is timed; each GPU's busy fraction (NVML) is sampled within that clock.
Afterwards, ``--rl-step N`` candidates (the same mix, cycled over the tasks) on ``--rl-gpus`` (default: all, then
1). The JSON is written after every configuration (``complete: false`` until the end) and a configuration that
would not finish inside ``--budget-s`` (predicted from the one-GPU rate) is skipped, so a command cut short still
returns figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED_CORRECT = {"right": True, "slow": True, "wrong_constant": False, "pytorch_fallback": False,
                    "hang": False, "syntax_error": False}
# The slow answer: the right module, its forward run three times (same output, about three times the time).
SLOW = '''

_Fast = ModelNew


class ModelNew(_Fast):
    def forward(self, *args):
        for _ in range(2):
            super().forward(*args)
        return super().forward(*args)
'''


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--backend", default="local", choices=["local", "ray"])
    parser.add_argument("--gpus", "--actors", dest="gpus",
                        help="comma-separated GPU (or actor / CPU worker) counts; default 1, 2, 4 ... all GPUs")
    parser.add_argument("--tasks", default="8", help="how many bundled tasks (levels 1-2, spread), or name,name,...")
    parser.add_argument("--per-task", type=int, default=4, help="rounds of the mix per task")
    parser.add_argument("--workers-per-gpu", type=int, default=2, help="candidates in flight per GPU")
    parser.add_argument("--timeout-s", type=float, default=15.0, help="per-candidate limit (a hang's cost)")
    parser.add_argument("--rl-step", type=int, default=512, help="candidates of the RL-step batch (0: none)")
    parser.add_argument("--rl-gpus", help="GPU counts for the RL step (default: all GPUs, then 1)")
    parser.add_argument("--budget-s", type=float, default=540.0, help="stop before a configuration would pass this")
    parser.add_argument("--out", default=str(HERE / "results" / "verify_scaling.json"), help="JSON, rewritten as it goes")
    parser.add_argument("--address", help="Ray: an existing cluster (default: a local instance)")
    parser.add_argument("--cpus-per-actor", type=int, default=1, help="Ray, CPU only: cores per actor")
    return parser.parse_args(argv)


# ------------------------------------------------------------------------------------------------ the batch
def select_tasks(spec: str) -> list:
    """``spec`` bundled tasks with a reference solution, spread evenly over levels 1-2 by name, or the named ones."""
    from tritonrl.tasks import get_task, load_tasks

    if not spec.isdigit():
        return [get_task(name.strip()) for name in spec.split(",") if name.strip()]
    pool = sorted((t for t in load_tasks("bundled") if t.solution and t.level in (1, 2)), key=lambda t: t.name)
    step = max(1, len(pool) // int(spec))
    return pool[::step][: int(spec)]


def answers(task) -> dict[str, str]:
    """The task's candidates by kind: the reference, a slower right one, and wrong, hanging and broken ones."""
    solution = task.solution
    wrong = re.sub(r"tl\.store\(([^,]+),\s*([A-Za-z_]\w*)", r"tl.store(\1, \2 * 1.01", solution, count=1)
    fallback = (task.source.replace("class Model(", "class ModelNew(") +
                "\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\ndef unused_kernel(x_ptr):\n    pass\n")
    hang = re.sub(r"(\n    def forward\(self[^\n]*\):\n)", r"\1        while True:\n            pass\n", solution,
                  count=1)
    return {"right": solution, "slow": solution + SLOW, "wrong_constant": wrong, "pytorch_fallback": fallback,
            "hang": hang, "syntax_error": solution[: len(solution) // 2]}


def round_kinds(round_index: int) -> list[str]:
    """One round of the mix: 2 right, 1 slow, 2 wrong; every fourth round also a hang and a syntax error."""
    kinds = ["right", "wrong_constant", "right", "slow", "pytorch_fallback"]
    return kinds + (["hang", "syntax_error"] if round_index % 4 == 0 else [])


def mixed_batch(tasks: list, rounds: int, limit: int | None = None) -> list[tuple[object, str, str]]:
    """``(task, kind, code)`` rounds-major (every task's round 0, then round 1 ...), each code a distinct file;
    with ``limit``, rounds continue until that many candidates."""
    by_task = {t.name: answers(t) for t in tasks}
    out, r = [], 0
    while (limit is None and r < rounds) or (limit is not None and len(out) < limit):
        for task in tasks:
            for i, kind in enumerate(round_kinds(r)):
                out.append((task, kind, f"# candidate {task.name} {kind} {r}.{i}\n{by_task[task.name][kind]}"))
        r += 1
    return out[:limit] if limit is not None else out


# ------------------------------------------------------------------------------------------------ measuring
def busy_samplers(device: str, gpu_ids: list[str]):
    if device != "cuda":
        return []
    sys.path.insert(0, str(HERE))
    from kernelbench_vs_tritonrl import BusySampler

    return [BusySampler(index=int(g), interval_s=0.2) for g in gpu_ids]


def make_verifier(args, config, n: int, device: str):
    """A fresh verifier over ``n`` GPUs (local: GPUs 0..n-1, ``workers_per_gpu`` each; CPU: ``n`` workers)."""
    if args.backend == "ray":
        from tritonrl.verify.parent.ray_backend import RayVerifier

        return RayVerifier(config, num_actors=n, cpus_per_actor=args.cpus_per_actor)
    from tritonrl.verify import Verifier

    if device == "cuda":
        return Verifier(dataclasses.replace(config, gpus=[str(i) for i in range(n)], workers=n,
                                            workers_per_gpu=args.workers_per_gpu))
    return Verifier(dataclasses.replace(config, workers=n))


def measure(args, config, device: str, n: int, tasks: list, batch: list) -> dict:
    """One configuration: start and warm outside the clock, then the timed batch with per-GPU busy samples."""
    from tritonrl.verify import VerifyItem

    started = time.monotonic()
    verifier = make_verifier(args, config, n, device)
    try:
        if hasattr(verifier, "start"):
            verifier.start(wait=True)
        verifier.verify_many([VerifyItem(t, code=f"# warm-up\n{t.solution}") for t in tasks])
        warm_s = time.monotonic() - started
        samplers = busy_samplers(device, [str(i) for i in range(n)])
        for s in samplers:
            s.__enter__()
        begin = time.monotonic()
        results = verifier.verify_many([VerifyItem(task, code=code) for task, _, code in batch])
        end = time.monotonic()
        for s in samplers:
            s.__exit__(None, None, None)
    finally:
        verifier.close()
    return summarize(n, batch, results, end - begin, warm_s, [s.summary((begin, end)) for s in samplers])


def summarize(n: int, batch: list, results: list, seconds: float, warm_s: float, busy: list[dict]) -> dict:
    unexpected = [f"{task.name}/{kind}: {r.stage.value} {r.flags} {(r.error or '')[:160]}"
                  for (task, kind, _), r in zip(batch, results, strict=True) if r.correct != EXPECTED_CORRECT[kind]]
    stages: dict[str, float] = {}
    for r in results:
        for key, value in (r.timing.get("stage_s") or {}).items():
            if isinstance(value, int | float):
                stages[key] = round(stages.get(key, 0.0) + value, 2)
    kinds = sorted({kind for _, kind, _ in batch})
    return {"gpus": n, "candidates": len(batch), "seconds": round(seconds, 2),
            "candidates_per_min": round(60.0 * len(batch) / seconds, 1),
            "seconds_per_candidate": round(seconds / len(batch), 3), "start_and_warm_s_untimed": round(warm_s, 1),
            "verdicts_as_expected": not unexpected, "unexpected": unexpected[:20],
            "by_kind": {k: sum(kind == k for _, kind, _ in batch) for k in kinds},
            "stage_sum_s": stages, "busy_per_gpu": [b.get("busy_fraction") for b in busy], "busy_method":
            busy[0].get("method") if busy else None}


def predicted_s(rows: list[dict], n: int, candidates: int) -> float | None:
    """A configuration's time from the slowest rate measured so far, as if it scaled perfectly, plus its start."""
    if not rows:
        return None
    worst = max(rows, key=lambda r: r["seconds_per_candidate"] * r["gpus"])
    return worst["seconds_per_candidate"] * worst["gpus"] * candidates / n + worst["start_and_warm_s_untimed"]


# ------------------------------------------------------------------------------------------------ report
def counts(spec: str | None, available: int) -> list[int]:
    if spec:
        return [int(n) for n in spec.split(",") if n.strip()]
    if available <= 1:
        return [1, 2] if available == 0 else [1]
    out, n = [], 1
    while n < available:
        out.append(n)
        n *= 2
    return out + [available]


def machine_info(device: str) -> dict:
    import torch

    from tritonrl.util.gitinfo import commit

    info = {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
            "torch": torch.__version__, "cpus": os.cpu_count(), "device": device, "commit": commit(short=True)}
    if device == "cuda":
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def finish(report: dict) -> None:
    rows = {r["gpus"]: r for r in report["scaling"] if "seconds" in r}
    measured = list(rows.values()) + [r for r in report["rl_step"] if "seconds" in r]
    report["all_verdicts_as_expected"] = bool(measured) and all(r["verdicts_as_expected"] for r in measured)
    report["speedup_4_over_1"] = (round(rows[4]["candidates_per_min"] / rows[1]["candidates_per_min"], 2)
                                  if 1 in rows and 4 in rows else None)
    report["speedups_over_1"] = {str(n): round(r["candidates_per_min"] / rows[1]["candidates_per_min"], 2)
                                 for n, r in rows.items()} if 1 in rows else {}


def write(path: str, report: dict) -> None:
    finish(report)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(report, fh, indent=1)
    os.replace(tmp, path)


def run_part(args, config, device, tasks, report, key, plan, began) -> None:
    """Measure each ``(n, batch)`` of ``plan`` into ``report[key]``, skipping what the budget cannot hold."""
    for n, batch in plan:
        left = args.budget_s - (time.monotonic() - began)
        guess = predicted_s(report["scaling"] + report["rl_step"], n, len(batch))
        if guess is not None and guess > left:
            report[key].append({"gpus": n, "candidates": len(batch), "skipped": f"predicted {guess:.0f} s, "
                                f"{left:.0f} s of the budget left"})
        else:
            report[key].append(measure(args, config, device, n, tasks, batch))
        row = report[key][-1]
        print(f"{key} gpus={n} " + (f"{row['seconds']} s, {row['candidates_per_min']}/min, as expected: "
              f"{row['verdicts_as_expected']}, busy {row['busy_per_gpu']}" if "seconds" in row else row["skipped"]),
              flush=True)
        write(args.out, report)


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()
    args = parse_args(argv)
    from tritonrl.config import VerifyConfig
    from tritonrl.verify.parent.verifier import resolve_device

    device = resolve_device(args.device)
    tasks = select_tasks(args.tasks)
    config = VerifyConfig(device=device, timeout_s=args.timeout_s, cache_dir=tempfile.mkdtemp(prefix="vscale-"))
    if args.backend == "ray":
        import ray

        ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    import torch

    available = torch.cuda.device_count() if device == "cuda" else 0
    batch = mixed_batch(tasks, args.per_task)
    report = {"machine": machine_info(device), "backend": args.backend, "tasks": [t.name for t in tasks],
              "workers_per_gpu": args.workers_per_gpu, "timeout_s": args.timeout_s, "budget_s": args.budget_s,
              "command": " ".join(["benchmarks/verify_scaling.py"] + (argv if argv is not None else sys.argv[1:])),
              "scaling": [], "rl_step": [], "complete": False}
    write(args.out, report)
    run_part(args, config, device, tasks, report, "scaling", [(n, batch) for n in counts(args.gpus, available)], began)
    if args.rl_step:
        rl_batch = mixed_batch(tasks, 0, limit=args.rl_step)
        rl_counts = counts(args.rl_gpus, 0) if args.rl_gpus else sorted({max(available, 1), 1}, reverse=True)
        run_part(args, config, device, tasks, report, "rl_step", [(n, rl_batch) for n in rl_counts], began)
    report["complete"] = True
    report["wall_s"] = round(time.monotonic() - began, 1)
    write(args.out, report)
    print(json.dumps({k: report[k] for k in ("all_verdicts_as_expected", "speedup_4_over_1", "speedups_over_1")}))
    return 0 if report["all_verdicts_as_expected"] else 1


if __name__ == "__main__":
    sys.exit(main())
