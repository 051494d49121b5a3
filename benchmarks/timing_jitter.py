"""Does a memory-bound kernel's median move with its allocation, the host's launch latency or CPU load?

    PYTHONPATH=src python benchmarks/timing_jitter.py --out timing_jitter.json      # on a GPU, ~1 min

A 256 MiB ReLU (the bundled ``l1_relu`` solution, and ``torch.relu``) timed in ``--rounds`` rounds, each
on a fresh input allocation (``empty_cache`` and a spacer of another size first), ``--trials`` timed calls per
round, for three timed regions: "overlap" (the region starts right after the asynchronous L2 flush, as
``CudaTimer``), "isolated" (a synchronize after the flush: the host's launch latency is inside the region) and
"sleep" (a ~150 us GPU sleep after the flush: the GPU is busy while the host launches, so no launch latency can
leak in). All of it once with the CPU idle and once with every core spinning. Per variant: the round medians,
the host's time to enqueue a call, and their spread. If the "overlap" medians moved while "sleep" ones did not,
the run-to-run spread would be host launch jitter; if all move together, the allocation or the GPU.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from datetime import date

sys.path.insert(0, os.path.dirname(__file__))
import gpu_bench  # noqa: E402,F401  (sets TRITON_INTERPRET=0)

SLEEP_CYCLES = 300_000  # ~150 us at 1.98 GHz


def spin(stop) -> None:
    while not stop.is_set():
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="write the JSON report here")
    parser.add_argument("--rounds", type=int, default=8, help="fresh allocations per variant")
    parser.add_argument("--trials", type=int, default=40, help="timed calls per round")
    args = parser.parse_args(argv)

    import torch

    from tritonrl.tasks import get_task
    from tritonrl.verify.shared import timing_protocol

    if not torch.cuda.is_available():
        raise SystemExit("timing_jitter.py needs a CUDA GPU")
    triton_relu = gpu_bench.load_module(get_task("l1_relu").solution, "timing_jitter_relu").ModelNew().cuda()

    flush = torch.empty(timing_protocol.L2_FLUSH_BYTES // 4, device="cuda")

    def region(fn, x, mode: str) -> tuple[float, float]:
        flush.zero_()
        if mode == "isolated":
            torch.cuda.synchronize()
        elif mode == "sleep":
            torch.cuda._sleep(SLEEP_CYCLES)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        began = time.perf_counter()
        fn(x)
        host_ms = (time.perf_counter() - began) * 1000
        torch.cuda.synchronize()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end), host_ms

    def rounds(label: str) -> dict:
        out = {}
        for name, fn in (("triton", triton_relu), ("torch", torch.relu)):
            for mode in ("overlap", "isolated", "sleep"):
                medians, hosts = [], []
                for r in range(args.rounds):
                    torch.cuda.empty_cache()
                    spacer = torch.empty(r * 3 * 1024 * 1024 + 1, device="cuda")  # shifts the next allocation
                    x = torch.randn(8192, 8192, device="cuda")
                    for _ in range(10):
                        fn(x)
                    times = [region(fn, x, mode) for _ in range(args.trials)]
                    medians.append(statistics.median(t for t, _ in times))
                    hosts.append(statistics.median(h for _, h in times))
                    del x, spacer
                spread = max(medians) / min(medians) - 1
                out[f"{name}/{mode}"] = {"medians_ms": medians, "host_ms": hosts, "spread": spread}
                print(f"{label:5s} {name:6s} {mode:8s} medians {min(medians):.4f}-{max(medians):.4f} ms "
                      f"(spread {spread:.1%}), host {statistics.median(hosts):.4f} ms", flush=True)
        return out

    report = {"quiet": rounds("quiet")}
    stop = mp.Event()
    procs = [mp.Process(target=spin, args=(stop,)) for _ in range(os.cpu_count() or 1)]
    for proc in procs:
        proc.start()
    try:
        report["cpu_load"] = rounds("load")
    finally:
        stop.set()
        for proc in procs:
            proc.join()
    data = {"date": date.today().isoformat(), "gpu": gpu_bench.gpu_name(), "command": " ".join(sys.argv),
            "rounds": args.rounds, "trials": args.trials, "clocks_mhz": timing_protocol.gpu_clocks_mhz(), "variants": report}
    with open(args.out, "w") as fh:
        json.dump(data, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
