"""Replay a child's correctness and timed calls of an honest kernel in one process, to find where a device fails.

    CUDA_LAUNCH_BLOCKING=1 PYTHONPATH=src python benchmarks/gpu_watch_probe.py            # on a GPU machine
    TRITON_INTERPRET=1 PYTHONPATH=src python benchmarks/gpu_watch_probe.py --device cpu  # the same steps here

The monitor (``verify/child/monitor.py``) watches the bundled ReLU fixture as the candidate child does: three
poisoned, watched forwards (the correctness phase), then, unpoisoned and inside the timer, warm-up calls (coarse),
watched and plain timed calls in the order that failed on an H100 at ``c11ec4e`` (a watched call after a plain one:
``CUDA error: device-side assert triggered``; docs/benchmarks.md, "GPU tests at c11ec4e"). Each call prints the
rule it broke (None: none); the first exception prints its whole traceback, which with ``CUDA_LAUNCH_BLOCKING=1``
is the operation that failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import traceback
from pathlib import Path

import torch

from tritonrl.verify.child.harness import poison_memory, unpoison_memory
from tritonrl.verify.child.monitor import Monitor
from tritonrl.verify.child.provenance import INPUT
from tritonrl.verify.child.rules import judge_record
from tritonrl.verify.shared import timing_protocol

GOOD = Path(__file__).resolve().parents[1] / "tests" / "verify" / "fixtures" / "runtime" / "good_relu.py"
# (phase, watched): the correctness trials, then the timing run's calls
PLAN = [("correctness", True)] * 3 + [("timed", False)] * 3 + [("timed", True), ("timed", False)] * 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--elements", type=int, default=1 << 20)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("good_relu", GOOD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a real file: Triton's @jit reads the kernel's source back
    monitor = Monitor(str(GOOD))
    monitor.install()
    poison_memory(args.device)
    arena = torch.zeros(args.elements * 4 * 2, dtype=torch.uint8, device=args.device)  # the judge's, pinned
    monitor.origins.trust(arena, INPUT, pin=True)
    x = arena[: args.elements * 4].view(torch.float32)
    model = module.ModelNew()
    timer = timing_protocol.make_timer(args.device)
    poisoned = True
    for i, (phase, watched) in enumerate(PLAN):
        if phase == "timed" and poisoned:
            unpoison_memory()
            poisoned = False
        x.copy_(torch.randn(args.elements, device=args.device))  # fresh inputs, written by the judge
        try:
            if phase == "timed":
                _, (out, record) = timer(lambda w=watched: monitor.run_forward(model, [x], coarse=not w))
                if i < 6:
                    timer.learn()  # the warm-up sizes the hold
            else:
                out, record = monitor.run_forward(model, [x])
            timer.sync()
            problem = judge_record(record, out, monitor.intact(), weak=phase == "timed")
            print(f"{i:2d} {phase:11s} {'watched' if watched else 'plain':7s} {problem}", flush=True)
        except BaseException:  # noqa: BLE001 - the point is the traceback
            print(f"{i:2d} {phase:11s} {'watched' if watched else 'plain':7s} RAISED", flush=True)
            traceback.print_exc()
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
