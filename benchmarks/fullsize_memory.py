"""A bundled task at realistic KernelBench sizes on a GPU: peak GPU memory and time per candidate.

    PYTHONPATH=src python benchmarks/fullsize_memory.py --json --out fullsize.json
    PYTHONPATH=src python benchmarks/fullsize_memory.py --task l2_gemm_bias_relu \
        --sizes batch_size=1024,in_features=8192,out_features=8192 --n 3

The task's module-level constants are rewritten (``--sizes``); its bundled solution is verified ``n`` times (each
a distinct file) by one warm ``Verifier`` with the full protocol (tiny stage, 5 full trials incl. alternative
shapes, calibrated timing). Reported per candidate: wall time, the child's peak ``torch.cuda.max_memory_allocated``
over the correctness trials (reported back in ``VerifyResult.timing``), runtimes and speedup; the first candidate
also pays for the reference outputs and the reference's timing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import common_args, parse_sizes, report, resized  # noqa: E402

from tritonrl.config import VerifyConfig  # noqa: E402
from tritonrl.tasks import get_task  # noqa: E402
from tritonrl.verify import Verifier  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="l2_gemm_bias_relu")
    parser.add_argument("--sizes", default="batch_size=128,in_features=4096,out_features=4096")
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--compile-baseline", action="store_true")
    common_args(parser)
    args = parser.parse_args()
    task = resized(get_task(args.task), parse_sizes(args.sizes))
    config = VerifyConfig(device="cuda", cache_dir=tempfile.mkdtemp(prefix="fullsize-"), timeout_s=args.timeout,
                          compile_baseline=args.compile_baseline)
    rows = []
    with Verifier(config) as verifier:
        for i in range(args.n):
            start = time.monotonic()
            result = verifier.verify(task, code=f"# candidate {i}\n{task.solution}")
            info = result.timing
            rows.append({"wall_s": round(time.monotonic() - start, 3), "correct": result.correct,
                         "stage": result.stage.value, "error": result.error, "runtime_ms": result.runtime_ms,
                         "ref_runtime_ms": result.ref_runtime_ms, "speedup": result.speedup,
                         "ref_compile_ms": info.get("ref_compile_ms"),
                         "peak_memory_mib": (info.get("peak_memory_bytes") or 0) / 2**20,
                         "stage_s": info.get("stage_s"), "ref_cached": info.get("ref_cached")})
    table = [f"{args.task} [{args.sizes}]",
             *(f"cand {i}: {r['wall_s']:.1f} s, correct={r['correct']}, {r['runtime_ms']} ms vs ref "
               f"{r['ref_runtime_ms']} ms, speedup {r['speedup']}, peak {r['peak_memory_mib']:.0f} MiB"
               for i, r in enumerate(rows))]
    report(args, {"task": args.task, "sizes": parse_sizes(args.sizes), "candidates": rows}, table)


if __name__ == "__main__":
    main()
