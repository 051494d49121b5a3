"""Verification throughput (candidates per minute) against the number of workers (Ray actors or local GPUs).

    python benchmarks/verify_scaling.py                        # GPU machine: 1, 2, 4, ... actors up to all GPUs
    python benchmarks/verify_scaling.py --backend local        # no Ray: the local Verifier, one child per GPU
    python benchmarks/verify_scaling.py --device cpu --actors 1,2 --tasks 2 --per-task 2 --json

The batch mixes bundled Level-2 tasks: per task, ``--per-task`` copies of its reference solution (correct: the
whole funnel runs, the expensive case) and one tampered copy (rejected early), as in an RL step. Each actor
count gets a fresh ``RayVerifier``; a warm-up pass (zygotes started, reference outputs cached) is not timed,
then the same batch is timed. Every candidate's verdict is checked, so a fast but wrong backend cannot pass.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time

# The tampered candidate: the correct module with its output scaled afterwards (caught by the static checks,
# or by the comparison if they were off).
TAMPER = '''

_Correct = ModelNew


class ModelNew(_Correct):
    def forward(self, *args):
        return super().forward(*args) * 1.5
'''


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--backend", default="ray", choices=["ray", "local"],
                        help="ray: RayVerifier actors (one per GPU); local: Verifier with N worker slots")
    parser.add_argument("--actors", help="comma-separated actor counts (default: 1, 2, 4, ... up to all GPUs; "
                                         "on CPU 1,2)")
    parser.add_argument("--tasks", default="4", help="how many bundled Level-2 tasks, or name,name,...")
    parser.add_argument("--per-task", type=int, default=4, help="correct candidates per task")
    parser.add_argument("--cpus-per-actor", type=int, default=1, help="CPU-only: cores per actor")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per-candidate limit")
    parser.add_argument("--address", help="an existing Ray cluster (default: start a local instance)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    return parser.parse_args(argv)


def select_tasks(spec: str) -> list:
    from tritonrl.tasks import get_task, load_tasks

    if spec.isdigit():
        tasks = [t for t in load_tasks("bundled", level=2) if t.solution]
        return sorted(tasks, key=lambda t: t.name)[: int(spec)]
    return [get_task(name.strip()) for name in spec.split(",") if name.strip()]


def build_batch(tasks: list, per_task: int) -> tuple[list, list[bool]]:
    """Items and whether each should be judged correct."""
    from tritonrl.verify import VerifyItem

    items, expected = [], []
    for task in tasks:
        for _ in range(per_task):
            items.append(VerifyItem(task, code=task.solution))
            expected.append(True)
        items.append(VerifyItem(task, code=task.solution + TAMPER))
        expected.append(False)
    return items, expected


def actor_counts(spec: str | None, gpus: int) -> list[int]:
    if spec:
        return [int(n) for n in spec.split(",") if n.strip()]
    if not gpus:
        return [1, 2]
    counts, n = [], 1
    while n < gpus:
        counts.append(n)
        n *= 2
    return counts + [gpus]


def measure(config, n_actors: int, cpus_per_actor: int, items: list, expected: list[bool]) -> dict:
    from tritonrl.verify.ray_backend import RayVerifier

    with RayVerifier(config, num_actors=n_actors, cpus_per_actor=cpus_per_actor) as verifier:
        verifier.verify_many(items)  # warm-up: zygotes started, references cached
        start = time.monotonic()
        results = verifier.verify_many(items)
        seconds = time.monotonic() - start
        gpus_per_actor = verifier.gpus_per_actor
    wrong = [i for i, (r, want) in enumerate(zip(results, expected, strict=True)) if r.correct != want]
    if wrong:
        first = results[wrong[0]]
        raise SystemExit(f"verdicts differ from the expected ones at items {wrong}: {first.stage.value} "
                         f"{first.flags} {first.error}")
    return {"actors": n_actors, "gpus_per_actor": gpus_per_actor, "candidates": len(items),
            "seconds": round(seconds, 2), "candidates_per_min": round(60.0 * len(items) / seconds, 1),
            "correct": sum(r.correct for r in results)}


def measure_local(config, n_workers: int, items: list, expected: list[bool]) -> dict:
    """The same measurement with the local Verifier: ``n_workers`` children at a time, one GPU each on CUDA."""
    import dataclasses

    from tritonrl.verify import Verifier

    with Verifier(dataclasses.replace(config, workers=n_workers)) as verifier:
        verifier.verify_many(items)  # warm-up: zygote started, references cached
        start = time.monotonic()
        results = verifier.verify_many(items)
        seconds = time.monotonic() - start
    wrong = [i for i, (r, want) in enumerate(zip(results, expected, strict=True)) if r.correct != want]
    if wrong:
        first = results[wrong[0]]
        raise SystemExit(f"verdicts differ from the expected ones at items {wrong}: {first.stage.value} "
                         f"{first.flags} {first.error}")
    return {"workers": n_workers, "backend": "local", "candidates": len(items), "seconds": round(seconds, 2),
            "candidates_per_min": round(60.0 * len(items) / seconds, 1), "correct": sum(r.correct for r in results)}


def machine_info(device: str) -> dict:
    import torch

    info = {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
            "torch": torch.__version__, "cpus": os.cpu_count(), "device": device}
    if device == "cuda":
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tritonrl.config import VerifyConfig
    from tritonrl.verify.verifier import resolve_device

    device = resolve_device(args.device)
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    tasks = select_tasks(args.tasks)
    items, expected = build_batch(tasks, args.per_task)
    config = VerifyConfig(device=device, timeout_s=args.timeout_s, cache_dir=tempfile.mkdtemp(prefix="vscale-"))
    rows = []
    if args.backend == "local":
        import torch

        gpus = torch.cuda.device_count() if device == "cuda" else 0
        for n in actor_counts(args.actors, gpus):
            rows.append(measure_local(config, n, items, expected))
            if not args.json:
                print(_row(rows[-1]), flush=True)
    else:
        import ray

        ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
        gpus = int(ray.cluster_resources().get("GPU", 0)) if device == "cuda" else 0
        try:
            for n in actor_counts(args.actors, gpus):
                rows.append(measure(config, n, args.cpus_per_actor, items, expected))
                if not args.json:
                    print(_row(rows[-1]), flush=True)
        finally:
            ray.shutdown()
    report = {"machine": machine_info(device), "tasks": [t.name for t in tasks], "rows": rows,
              "command": " ".join([os.path.basename(sys.argv[0])] + (argv if argv is not None else sys.argv[1:]))}
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


def _row(row: dict) -> str:
    workers = row.get("actors", row.get("workers"))
    return (f"{row.get('backend', 'ray')} workers={workers:<3} candidates={row['candidates']:<4} {row['seconds']:>8.2f} s "
            f"{row['candidates_per_min']:>8.1f} candidates/min  correct={row['correct']}")


if __name__ == "__main__":
    sys.exit(main())
