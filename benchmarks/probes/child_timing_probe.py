"""Where does a short kernel's extra time in the judge come from? One solution timed four ways in one run.

    PYTHONPATH=src python benchmarks/probes/child_timing_probe.py --tasks l1_relu,l1_gelu --json $OUT/probe.json   # GPU
    TRITON_INTERPRET=1 PYTHONPATH=src python benchmarks/probes/child_timing_probe.py --device cpu                # steps only

On an H200 (docs/benchmarks-history.md, "Four H200s, then one") the judge read the bundled ~0.13 ms Triton solutions
3-10% slower than ``triton.testing.do_bench`` and with a 2-5% CV across processes, while its reference, timed in the
judge's own process, agreed with do_bench within ~1% (``benchmarks/probes/own_variance.py``); no timed call's host time
outlasted the timer's hold. Per task, at its timing shape, each way ``--repeats`` times (the medians, and each
relative to do_bench's):

  A. ``do_bench``: ``triton.testing.do_bench(forward, return_mode="median")`` on ordinary tensors;
  B. ``protocol``: the judge's timer (``timing_protocol.time_forward``: hold, flush, events, the empty region's
     cost subtracted) on the same forward and tensors, its hold learned from this plain forward (~tens of us);
  C. ``held_flush_first`` / ``held_flush_last``: B with the hold a candidate's monitored forward gets in the
     child (``--hold-ms``, 1.5 ms), the flush before the hold (the order until `b0817a5`) or after it (now);
  D. ``verifier``: a ``Verifier`` judging the solution (sandboxed child, inputs in the judge's shared arena,
     the monitor's coarse watch of every timed call): its ``runtime_ms``;
  E. ``monitored``: B under this process's own ``Monitor`` (``run_forward(coarse=True)``), the inputs in a
     trusted buffer as the child's arena is: no sandbox, no second process.

If ``held_flush_first`` reads slow and ``held_flush_last`` does not, a nearly idle GPU before the start event
was the excess, and the verifier (now flushing last) should agree with do_bench. Otherwise: B > A points at the protocol; D > B = E at the child's process (sandbox, arena memory, its allocator); E > B at
the monitor's watch. On a CPU (``--device cpu``, Triton's interpreter, the task's tiny shape) every step runs
once and nothing is timed.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: gpu_bench
import torch  # noqa: E402
from gpu_bench import gpu_name, load_module  # noqa: E402

from tritonrl.tasks import load_tasks  # noqa: E402
from tritonrl.tasks.variants import timing_variant, tiny_variant  # noqa: E402
from tritonrl.verify.shared import timing_protocol  # noqa: E402

WAYS = ("do_bench", "protocol", "held_flush_first", "held_flush_last", "verifier", "monitored")


def build(task, device: str):
    """(reference, solution, inputs, the solution's module file) at the timing shape (CPU: the tiny one)."""
    variant = timing_variant(task) if device == "cuda" else tiny_variant(task)
    ref_mod = load_module(variant.source, f"ref_{task.name}")
    sol_mod = load_module(variant.solution, f"sol_{task.name}")
    init = ref_mod.get_init_inputs()
    torch.manual_seed(0)
    reference = ref_mod.Model(*init).to(device).eval()
    torch.manual_seed(0)
    solution = sol_mod.ModelNew(*init).to(device).eval()
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in ref_mod.get_inputs()]
    return reference, solution, inputs, sol_mod.__file__


def do_bench(solution, inputs) -> float:
    import triton.testing

    with torch.no_grad():
        return triton.testing.do_bench(lambda: solution(*inputs), return_mode="median")


def protocol(fn, hold_ms: float | None = None, flush_last: bool = True) -> float:
    with torch.no_grad():
        return timing_protocol.time_forward(fn, warmup=10, trials=100, hold_ms=hold_ms,
                                            flush_last=flush_last)["median_ms"]


def verifier_ms(task, device: str) -> tuple[float | None, dict]:
    from tritonrl.config import VerifyConfig
    from tritonrl.verify import Verifier

    with Verifier(VerifyConfig(device=device, timeout_s=300)) as verifier:
        result = verifier.verify(task, code=task.solution)
    if not result.correct:
        raise SystemExit(f"{task.name}: the verifier rejected the solution: {result.flags} {result.error}")
    candidate = (result.timing or {}).get("candidate") or {}
    return result.runtime_ms, {"hold": candidate.get("hold"), "overhead_ms": candidate.get("overhead_ms"),
                               "raw_median_ms": candidate.get("raw_median_ms")}


def monitored(path: str, device: str, inputs: list) -> tuple[object, list]:
    """This process's own Monitor, installed for good (so it runs after every other way), and copies of the
    inputs in one buffer trusted as the judge's arena is."""
    from tritonrl.verify.child.monitor import Monitor
    from tritonrl.verify.child.provenance import INPUT

    monitor = Monitor(path)
    monitor.install()
    return monitor, in_arena(monitor, inputs, device, INPUT)


def in_arena(monitor, inputs: list, device: str, kind) -> list:
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    arena = torch.empty(sum(x.numel() * x.element_size() + 256 for x in tensors), dtype=torch.uint8, device=device)
    monitor.origins.trust(arena, kind, pin=True)
    placed, offset = [], 0
    for x in inputs:
        if not isinstance(x, torch.Tensor):
            placed.append(x)
            continue
        nbytes = x.numel() * x.element_size()
        view = arena[offset:offset + nbytes].view(x.dtype).view(x.shape)
        view.copy_(x)
        placed.append(view)
        offset += -(-(nbytes + 1) // 256) * 256
    return placed


def unwatched(task, device: str, repeats: int, hold_ms: float) -> dict:
    """Ways A-D for one task (no monitor in this process yet)."""
    _, solution, inputs, _ = build(task, device)
    ms: dict[str, list] = {way: [] for way in WAYS}
    facts = []
    for _ in range(repeats):
        ms["do_bench"].append(do_bench(solution, inputs))
        ms["protocol"].append(protocol(lambda: solution(*inputs)))
        ms["held_flush_first"].append(protocol(lambda: solution(*inputs), hold_ms, flush_last=False))
        ms["held_flush_last"].append(protocol(lambda: solution(*inputs), hold_ms, flush_last=True))
        runtime, fact = verifier_ms(task, device)
        ms["verifier"].append(runtime)
        facts.append(fact)
    return {"task": task.name, "device": gpu_name(), "timed": True, "ms": ms, "verifier_facts": facts}


def watched(rows: list[dict], tasks: dict, device: str, repeats: int) -> None:
    """Way D for every task, then each row's medians and their distance from do_bench's."""
    monitor = None
    for row in rows:
        reference, solution, inputs, path = build(tasks[row["task"]], device)
        if monitor is None:
            monitor, placed = monitored(path, device, inputs)
        else:
            from tritonrl.verify.child.provenance import INPUT

            placed = in_arena(monitor, inputs, device, INPUT)
        if not row["timed"]:
            with torch.no_grad():
                out, record = monitor.run_forward(solution, placed, coarse=True)
                torch.testing.assert_close(out, reference(*inputs), rtol=1e-3, atol=1e-3)
            row["launches"] = record.launches
            continue
        for _ in range(repeats):
            row["ms"]["monitored"].append(protocol(functools.partial(monitor.run_forward, solution, placed,
                                                                     coarse=True)))
        base = statistics.median(row["ms"]["do_bench"])
        row["median_ms"] = {way: statistics.median(v) for way, v in row["ms"].items()}
        row["vs_do_bench"] = {way: m / base - 1 for way, m in row["median_ms"].items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="l1_relu", help="comma-separated bundled tasks (one process: the "
                                                           "monitor of the first stays installed for the rest)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hold-ms", type=float, default=1.5, help="the hold of ways C (a monitored forward's)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    tasks = {t.name: t for t in load_tasks("bundled")}
    unknown = [n for n in args.tasks.split(",") if n not in tasks]
    if unknown:
        raise SystemExit(f"child_timing_probe: no bundled task {unknown}")
    names = args.tasks.split(",")
    rows = [unwatched(tasks[n], args.device, args.repeats, args.hold_ms) if args.device == "cuda" else
            {"task": n, "device": args.device, "timed": False} for n in names]
    watched(rows, tasks, args.device, args.repeats)
    for name, row in zip(names, rows):
        if row["timed"]:
            print(f"{name}: " + ", ".join(f"{way} {row['median_ms'][way]:.4f} ms ({row['vs_do_bench'][way]:+.1%})"
                                          for way in WAYS), flush=True)
        else:
            print(f"{name}: every step ran on {args.device} ({row['launches']} launch(es) watched); nothing timed")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
