"""Verifier throughput on a GPU: candidates per minute, compile + correctness + timing, against a naive baseline.

    PYTHONPATH=src python benchmarks/verify_gpu_throughput.py --json --out throughput.json
    PYTHONPATH=src python benchmarks/verify_gpu_throughput.py --per-task 16 --naive-n 16 --timeout 8

Candidates: for each of several bundled Level-2 tasks, ``per-task`` candidates: 10/16 its bundled solution
(each with a distinct comment, so every one is a new file) and one each of four mutations (wrong constant,
PyTorch fallback, hang, syntax error) plus a second wrong constant and fallback. Ours: one ``Verifier`` (warm
zygote, reference cache, calibrated timing, 5 full trials), from cold: a fresh cache and the zygote start inside
the measured time. Naive: a fresh ``python`` per candidate that imports torch and Triton, runs the static checks,
recomputes the reference for each of 5 trials and re-times it (same timer), like KernelBench's harness; measured
in the same run on a stratified sample of ``naive-n`` candidates (its per-candidate rate is what is compared).
Where our time goes: per-stage sums from ``VerifyResult.timing["stage_s"]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import common_args, mutants, report  # noqa: E402

from tritonrl.config import VerifyConfig  # noqa: E402
from tritonrl.tasks import get_task  # noqa: E402
from tritonrl.verify import Verifier, VerifyItem  # noqa: E402

TASKS = ["l2_gemm_bias_relu", "l2_add_relu_mul_residual", "l2_swiglu", "l2_layernorm_gelu"]
MIX = ["good"] * 10 + ["wrong_constant", "wrong_constant", "pytorch_fallback", "pytorch_fallback", "hang",
                      "syntax_error"]

NAIVE_CHILD = r'''
import json, sys, time, types
t0 = time.monotonic()
import torch, triton  # noqa: F401
from tritonrl.verify.static import run_static_checks
from tritonrl.verify.timing import time_forward
task_src, cand_src, trials = open(sys.argv[1]).read(), open(sys.argv[2]).read(), int(sys.argv[3])
out = {"import_s": time.monotonic() - t0, "correct": False}
def load(src, name):
    mod = types.ModuleType(name); open(name + ".py", "w").write(src)
    exec(compile(src, name + ".py", "exec"), mod.__dict__); return mod
def done():
    print(json.dumps(out)); sys.exit(0)
if run_static_checks(cand_src):
    done()
try:
    task, cand = load(task_src, "task_mod"), load(cand_src, "cand_mod")
    for k in range(trials):
        torch.manual_seed(k); init = task.get_init_inputs()
        torch.manual_seed(k); ref = task.Model(*init).cuda()
        torch.manual_seed(k); new = cand.ModelNew(*init).cuda()
        torch.manual_seed(k + 1); inputs = [x.cuda() for x in task.get_inputs()]
        with torch.no_grad():
            e = ref(*[x.clone() for x in inputs]); a = new(*[x.clone() for x in inputs])
        if not (e.shape == a.shape and e.dtype == a.dtype and torch.allclose(e, a, atol=1e-4, rtol=1e-4)):
            done()
    with torch.no_grad():
        ref_ms = time_forward(lambda: ref(*inputs), 10, 100)["median_ms"]
        new_ms = time_forward(lambda: new(*inputs), 10, 100)["median_ms"]
    out.update(correct=True, speedup=ref_ms / new_ms)
except Exception:
    pass
done()
'''


def candidates(per_task: int) -> list[tuple[object, str, str]]:
    """(task, kind, code) in a fixed interleaved order."""
    out = []
    for name in TASKS:
        task = get_task(name)
        bad = mutants(task)
        for i in range(per_task):
            kind = MIX[i % len(MIX)]
            code = task.solution if kind == "good" else bad[kind]
            out.append((task, kind, f"# candidate {name} {i}\n{code}"))
    return out


def run_ours(items: list, timeout_s: float) -> dict:
    start = time.monotonic()
    config = VerifyConfig(device="cuda", cache_dir=tempfile.mkdtemp(prefix="gpu-tput-"), timeout_s=timeout_s)
    with Verifier(config) as verifier:
        results = verifier.verify_many([VerifyItem(task, code=code) for task, _, code in items])
    elapsed = time.monotonic() - start
    stages: dict[str, float] = {}
    for r in results:
        for key, value in (r.timing.get("stage_s") or {}).items():
            stages[key] = stages.get(key, 0.0) + value
    good = [r for (_, kind, _), r in zip(items, results) if kind == "good"]
    return {"elapsed_s": elapsed, "n": len(items), "per_minute": 60 * len(items) / elapsed,
            "stage_sum_s": {k: round(v, 2) for k, v in stages.items()},
            "good_accepted": sum(r.correct for r in good), "good_total": len(good),
            "bad_accepted": sum(r.correct for (_, kind, _), r in zip(items, results) if kind != "good"),
            "good_speedup_median": sorted(r.speedup or 0 for r in good)[len(good) // 2] if good else None,
            "by_stage": {s: sum(r.stage.value == s for r in results) for s in {r.stage.value for r in results}}}


def run_naive(items: list, timeout_s: float, trials: int) -> dict:
    work = tempfile.mkdtemp(prefix="naive-")
    child = os.path.join(work, "child.py")
    with open(child, "w") as fh:
        fh.write(NAIVE_CHILD)
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    start, correct, imports = time.monotonic(), 0, []
    for k, (task, _, code) in enumerate(items):
        task_path, cand_path = os.path.join(work, f"task{k}.py"), os.path.join(work, f"cand{k}.py")
        with open(task_path, "w") as fh:
            fh.write(task.source)
        with open(cand_path, "w") as fh:
            fh.write(code)
        try:
            proc = subprocess.run([sys.executable, child, task_path, cand_path, str(trials)], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=timeout_s + 10)
            import json

            line = (proc.stdout.strip().splitlines() or ["{}"])[-1]
            data = json.loads(line) if line.startswith("{") else {}
            correct += bool(data.get("correct"))
            if "import_s" in data:
                imports.append(data["import_s"])
        except subprocess.TimeoutExpired:
            pass
    elapsed = time.monotonic() - start
    return {"elapsed_s": elapsed, "n": len(items), "per_minute": 60 * len(items) / elapsed, "correct": correct,
            "mean_import_s": sum(imports) / len(imports) if imports else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-task", type=int, default=16)
    parser.add_argument("--naive-n", type=int, default=16, help="candidates the naive baseline judges (a sample)")
    parser.add_argument("--timeout", type=float, default=8.0, help="per-candidate limit (the hang's cost)")
    common_args(parser)
    args = parser.parse_args()
    items = candidates(args.per_task)
    ours = run_ours(items, args.timeout)
    step = max(1, len(items) // max(1, args.naive_n))
    naive = run_naive(items[::step][: args.naive_n], args.timeout, trials=5)
    ratio = ours["per_minute"] / naive["per_minute"]
    table = [f"ours : {ours['n']} candidates in {ours['elapsed_s']:.1f} s = {ours['per_minute']:.1f}/min; "
             f"stages {ours['stage_sum_s']}",
             f"naive: {naive['n']} candidates in {naive['elapsed_s']:.1f} s = {naive['per_minute']:.1f}/min",
             f"ratio {ratio:.2f}x (target >= 5x)"]
    report(args, {"tasks": TASKS, "mix": MIX, "ours": ours, "naive": naive, "ratio": ratio,
                  "target_met": ratio >= 5.0}, table)


if __name__ == "__main__":
    main()
