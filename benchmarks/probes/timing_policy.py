"""Which timing protocol gives the same figure twice: the run-to-run spread of one kernel's median, per variant.

    PYTHONPATH=src python benchmarks/probes/timing_policy.py --out timing_policy.json          # on a GPU, ~2 min

Separate verifications of one kernel time it in separate runs: fresh input tensors (new allocations), after an
idle gap (the GPU's clocks drop while the CPU compares outputs). A protocol whose per-run interval is narrow but
whose medians move between runs credits noise as speed. For each variant below and each case (the bundled
``l1_relu`` solution and ``torch.relu``, at 256 MiB and at 4 MiB), ``--repeats`` runs of ``time_with_sets`` (3 input
sets, refreshed in place, as the judge times the reference), each on freshly allocated inputs after ``torch.cuda.empty_cache()``
and ``--gap-s`` idle seconds. Reported per variant and case: the medians, their spread (max/min - 1) and CV,
timed runs and wall seconds used, the SM clock after each run.

Variants: the timed region starts right after the (asynchronous) L2 flush, as ``triton.testing.do_bench`` and
``CudaTimer`` ("overlap"), or the host waits for the device before launching ("isolated", as KernelBench's
harness: here a synchronize as the first thing inside the region, which is equivalent); warm-up of at least
``warmup_ms`` of timed work; at least ``min_trials`` timed runs.

Then the side-stream probe: a slow kernel launched on a side stream that does not wait for the current stream,
timed with each region, against the same kernel on the current stream. Work that skips the wait may overlap the
untimed flush in the "overlap" region; the "isolated" region counts all of it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: gpu_bench
from gpu_bench import common_args, load_module, report  # noqa: E402

from tritonrl.tasks import get_task  # noqa: E402

VARIANTS = {  # name: (isolated region, warmup_ms, min_trials)
    "overlap_w0_t10": (False, 0.0, 10),      # the verifier's policy before this benchmark
    "overlap_w25_t10": (False, 25.0, 10),
    "overlap_w25_t30": (False, 25.0, 30),
    "isolated_w25_t10": (True, 25.0, 10),
    "isolated_w100_t30": (True, 100.0, 30),
}
SHAPES = {"256MiB": (8192, 8192), "4MiB": (1024, 1024)}
SIDE_REPEAT = 2000  # busy-work iterations per element of the side-stream probe's kernel


def spread(values: list[float]) -> float:
    return max(values) / min(values) - 1.0 if values and min(values) > 0 else float("nan")


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def one_run(model, shape, isolated: bool, warmup_ms: float, min_trials: int, seed: int) -> dict:
    import torch

    from tritonrl.verify.shared import timing_protocol

    torch.cuda.empty_cache()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    sets = [[torch.randn(*shape, device="cuda", generator=gen)] for _ in range(3)]
    inputs = [torch.empty(*shape, device="cuda")]
    timer = timing_protocol.CudaTimer()
    policy = timing_protocol.TimingPolicy(warmup_ms=warmup_ms, min_trials=min_trials, max_trials=100, rel_ci=0.01,
                                 budget_ms=1000.0)

    def call():
        if isolated:  # inside the region: the start event has fired once the host returns, then it launches
            torch.cuda.synchronize()
        with torch.no_grad():
            return model(*inputs)

    stats = timing_protocol.time_with_sets(call, inputs, sets, timer=timer, policy=policy, seed=seed)
    timer.close()
    sm, _mem = timing_protocol.gpu_clocks_mhz()
    return {"median_ms": stats["median_ms"], "trials": stats["trials"], "warmup": stats["warmup"],
            "ci_rel": stats["ci_rel"], "wall_s": stats["wall_s"], "sm_clock_mhz": sm}


def policy_spread(repeats: int, gap_s: float) -> dict:
    import torch

    solution = load_module(get_task("l1_relu").solution, "timing_policy_relu").ModelNew().cuda()
    models = {"solution": solution, "torch_relu": torch.relu}
    out: dict = {}
    for variant, (isolated, warmup_ms, min_trials) in VARIANTS.items():
        for shape_name, shape in SHAPES.items():
            for model_name, model in models.items():
                runs = []
                for k in range(repeats):
                    time.sleep(gap_s)
                    runs.append(one_run(model, shape, isolated, warmup_ms, min_trials, seed=k))
                medians = [r["median_ms"] for r in runs]
                row = {"medians_ms": medians, "spread": spread(medians), "cv": cv(medians),
                       "trials": [r["trials"] for r in runs], "warmup": [r["warmup"] for r in runs],
                       "wall_s": sum(r["wall_s"] for r in runs) / len(runs),
                       "sm_clock_mhz": [r["sm_clock_mhz"] for r in runs]}
                out[f"{variant}/{shape_name}/{model_name}"] = row
                print(f"{variant:18s} {shape_name:7s} {model_name:10s} median {statistics.median(medians):.4f} ms "
                      f"spread {row['spread']:.1%} cv {row['cv']:.1%} trials {row['trials']} "
                      f"wall {row['wall_s']:.2f}s", flush=True)
    return out


SIDE_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def slow_copy_kernel(x_ptr, out_ptr, n, REPEAT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.load(x_ptr + offs, mask=mask, other=0.0)
    for _ in range(REPEAT):
        acc = acc + 0.0 * tl.sin(acc)
    tl.store(out_ptr + offs, acc, mask=mask)
'''


def side_stream_probe(trials: int = 30) -> dict:
    import torch

    from tritonrl.verify.shared import timing_protocol

    kernel = load_module(SIDE_KERNEL, "timing_policy_side").slow_copy_kernel
    x = torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(x)
    grid = (x.numel() // 1024,)
    side = torch.cuda.Stream()

    def on_current():
        kernel[grid](x, out, x.numel(), REPEAT=SIDE_REPEAT, BLOCK=1024)

    def on_side_no_wait():
        with torch.cuda.stream(side):
            kernel[grid](x, out, x.numel(), REPEAT=SIDE_REPEAT, BLOCK=1024)

    on_current()
    torch.cuda.synchronize()
    result = {}
    timer = timing_protocol.CudaTimer()
    for isolated in (False, True):
        for name, fn in (("current", on_current), ("side_no_wait", on_side_no_wait)):
            region = (lambda fn=fn: (torch.cuda.synchronize(), fn())) if isolated else fn
            result[f"{'isolated' if isolated else 'overlap'}/{name}"] = statistics.median(
                timer(region)[0] for _ in range(trials))
    timer.close()
    for region in ("overlap", "isolated"):
        result[f"{region}/hidden_ms"] = result[f"{region}/current"] - result[f"{region}/side_no_wait"]
    print("side-stream probe (median ms):", json.dumps(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per variant and case")
    parser.add_argument("--gap-s", type=float, default=0.3, help="idle seconds before each run")
    common_args(parser)
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("timing_policy: needs a CUDA GPU (timing is unavailable on a CPU)", file=sys.stderr)
        return 2
    results = {"command": " ".join(sys.argv), "side_stream": side_stream_probe(),
               "variants": policy_spread(args.repeats, args.gap_s)}
    report(args, results, [f"{name}: {json.dumps(row)}" for name, row in results["variants"].items()])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
