"""KernelBench's eval_kernel_against_ref vs tritonrl's Verifier: same GPU, same candidates, one run.

    PYTHONPATH=src python benchmarks/kernelbench_vs_tritonrl.py --dry-run                  # no GPU, no KernelBench
    PYTHONPATH=src python benchmarks/kernelbench_vs_tritonrl.py --kernelbench ~/KernelBench   # the GPU run
    PYTHONPATH=src python benchmarks/kernelbench_vs_tritonrl.py --kernelbench ~/KernelBench --cpu-check
    #   ^ ours only, on CPU (Triton interpreter), at shrunk shapes: are the candidates what their names say?

Problems: 6 KernelBench Level-2 GEMM + epilogue problems, read from the clone (``KernelBench/level2/``) at their
real shapes. Candidates: ours, in ``benchmarks/kernelbench_candidates/<problem>/<kind>.py`` (see its
``generate.py``): three correct tilings of a fused GEMM + epilogue kernel, TF32 precision, a missing activation,
a PyTorch fallback with a token Triton kernel, a syntax error and a hang (``ok_*`` meant correct, ``bad_*`` not).

KernelBench: a fresh ``python`` per candidate (as its scripts run it: ``eval_from_generations.py`` evaluates each
sample in a new process of a pool), which imports ``kernelbench.eval`` from the clone's ``src/`` (nothing of
KernelBench is copied here) and calls ``eval_kernel_against_ref(original_model_src, custom_model_src, seed_num=42,
num_correct_trials=5, num_perf_trials=100, measure_performance=True, timing_method="cuda_event",
backend="triton", precision=torch.float32, device=cuda:0)``. The process is killed after ``--timeout`` s (its
whole process group) and counted as a failure with that time. ``kernelbench/__init__.py`` imports LLM clients
(``openai``, ``litellm``, ``python-dotenv``) that ``eval`` never calls: when one is not installed, the child
puts an empty stand-in module in ``sys.modules`` (listed in the JSON as ``kernelbench_stand_ins``), which saves
KernelBench their import time (its figure is then a lower bound). ``pydantic`` must be installed for real.
All KernelBench processes share one fresh ``TRITON_CACHE_DIR`` (a cold cache, as on a fresh machine).

Ours: one ``Verifier(VerifyConfig(device="cuda", workers_per_gpu=N, timeout_s=--timeout))`` over the whole batch
(``verify_many``), from cold: a fresh reference cache, the zygote's start inside the measured time.

Reported (printed and written to ``--out``, default ``benchmarks/results/kernelbench_vs_tritonrl.json``, rewritten
after every step with ``"complete": false`` until the end): wall time per candidate for each harness (the batch's
wall time over its candidates, cold starts included) and per row; the ratio (KernelBench's time over ours);
verdict agreement, with an explanation for each disagreement; runtime agreement (median over the candidates both
call correct of |ours - theirs| / theirs, ours = calibrated median, theirs = KernelBench's ``runtime``, the mean of
its 100 CUDA-event timings); the GPU busy fraction during each harness's batch (mean of NVML ``utilization.gpu``
samples every ``--sample-interval`` s taken within the batch's own clock, through ``pynvml`` or else a streaming
``nvidia-smi`` query; the method is in the JSON, and for our batches ``sampler_span`` averages every sample,
including a start before the clock).

Wheels the GPU machine needs beyond torch/triton/numpy/requests/tqdm: ``pydantic`` (+ ``pydantic-core``,
``annotated-types``, ``typing-inspection``, ``typing-extensions``); ``nvidia-ml-py`` (``pynvml``) is optional.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
CANDIDATES_DIR = HERE / "kernelbench_candidates"
DEFAULT_OUT = HERE / "results" / "kernelbench_vs_tritonrl.json"
sys.path.insert(0, str(CANDIDATES_DIR))
from generate import KINDS, PROBLEMS  # noqa: E402  (the problem list and the candidate kinds, in order)

PROBLEM_STEMS = [p.stem for p in PROBLEMS]
# CPU check: shape constants shrunk so the Triton interpreter runs the full trials in seconds (odd sizes: masks).
CPU_SIZES = {"batch": 24, "feature": (80, 72)}

WHY = {  # kind -> what the candidate is, for the report
    "bad_tf32": "tl.dot at its default precision (TF32) in an fp32 problem",
    "bad_no_activation": "the epilogue's activation is missing",
    "bad_torch_fallback": "PyTorch computes the answer; a token Triton kernel copies it",
    "bad_syntax_error": "does not parse",
    "bad_hang": "forward never returns",
}


@dataclass
class Candidate:
    problem: str
    kind: str
    path: Path
    code: str

    @property
    def expected_correct(self) -> bool:
        return self.kind.startswith("ok_")

    @property
    def name(self) -> str:
        return f"{self.problem}/{self.kind}"


def load_candidates(problems: list[str], kinds: list[str]) -> list[Candidate]:
    out = []
    for problem in problems:
        for kind in kinds:
            path = CANDIDATES_DIR / problem / f"{kind}.py"
            if not path.is_file():
                raise SystemExit(f"missing candidate file {path} (run {CANDIDATES_DIR / 'generate.py'})")
            out.append(Candidate(problem, kind, path, path.read_text()))
    return out


# ------------------------------------------------------------------------------------------------ dry run
def dry_run(cands: list[Candidate], kernelbench: str | None) -> int:
    """Parse every candidate (only ``bad_syntax_error`` may fail), check it defines ModelNew; list everything."""
    bad = []
    print(f"{len({c.problem for c in cands})} problems x {len(KINDS)} kinds = {len(cands)} candidates "
          f"(from {CANDIDATES_DIR})")
    for cand in cands:
        try:
            tree = ast.parse(cand.code)
            parses = True
            classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        except SyntaxError:
            parses, classes = False, set()
        ok = (not parses) if cand.kind == "bad_syntax_error" else ("ModelNew" in classes)
        if not ok:
            bad.append(cand.name)
        print(f"  {cand.name:<58} expected {'correct ' if cand.expected_correct else 'rejected'} "
              f"parses={parses} {'OK' if ok else 'UNEXPECTED'}")
    if kernelbench:
        for problem in sorted({c.problem for c in cands}):
            path = problem_path(kernelbench, problem)
            print(f"  problem {problem}: {'found' if path.is_file() else 'MISSING'} ({path})")
            if not path.is_file():
                bad.append(str(path))
    print("dry run:", "OK" if not bad else f"FAILED {bad}")
    return 1 if bad else 0


# ------------------------------------------------------------------------------------------------ problems
def kernelbench_root(kernelbench: str) -> Path:
    """The clone's root (``KernelBench/level2`` and ``src/kernelbench`` inside), also when given its KernelBench/."""
    root = Path(kernelbench).expanduser().resolve()
    return root.parent if root.name == "KernelBench" and (root.parent / "src" / "kernelbench").is_dir() else root


def problem_path(kernelbench: str, problem: str) -> Path:
    """``<clone>/KernelBench/level2/<problem>.py``, or ``<dir>/level2/<problem>.py`` for a bare problems folder."""
    root = Path(kernelbench).expanduser().resolve()
    for level_dir in (root / "KernelBench" / "level2", root / "level2"):
        if level_dir.is_dir():
            return level_dir / f"{problem}.py"
    return root / "KernelBench" / "level2" / f"{problem}.py"


def load_tasks(kernelbench: str, problems: list[str], shrink: bool = False) -> dict:
    from tritonrl.tasks import load_tasks as tritonrl_load

    tasks = {}
    for problem in problems:
        path = problem_path(kernelbench, problem)
        if not path.is_file():
            raise SystemExit(f"{path}: no such problem in the KernelBench clone")
        task = tritonrl_load(str(path))[0]
        tasks[problem] = shrunk(task) if shrink else task
    return tasks


def shrunk(task):
    """The task with its batch and feature constants replaced by ``CPU_SIZES`` (for the CPU check)."""
    from tritonrl.tasks.variants import find_constants, rewrite_constants

    constants = find_constants(task.source)
    features = iter(CPU_SIZES["feature"])
    edits = {}
    for i, c in enumerate(constants):
        if c.kind == "batch":
            edits[i] = CPU_SIZES["batch"]
        elif isinstance(c.value, int) and (c.kind == "feature" or c.name.endswith(("_size", "_features"))):
            edits[i] = next(features)
    return task.with_variant("cpu_check", rewrite_constants(task.source, constants, edits))


# ------------------------------------------------------------------------------------------------ GPU sampling
class BusySampler:
    """Samples the GPU's ``utilization.gpu`` (percent of time a kernel ran) in a thread: pynvml or nvidia-smi."""

    def __init__(self, index: int = 0, interval_s: float = 0.1, read=None) -> None:
        self.index, self.interval_s, self.samples, self.times = index, interval_s, [], []
        self.method, self._read, self._proc, self.error = None, read, None, None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _start_reader(self) -> None:
        if self._read is not None:
            self.method = "injected"
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
            self._read = lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            self.method = f"pynvml nvmlDeviceGetUtilizationRates(gpu {self.index}).gpu every {self.interval_s}s"
            return
        except Exception as exc:  # noqa: BLE001 -- any failure: fall back to nvidia-smi
            self.error = f"pynvml: {type(exc).__name__}: {exc}"
        if shutil.which("nvidia-smi"):
            ms = max(int(self.interval_s * 1000), 50)
            self._proc = subprocess.Popen(
                ["nvidia-smi", "-i", str(self.index), "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                 "-lms", str(ms)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self.method = f"nvidia-smi --query-gpu=utilization.gpu -lms {ms} (streamed)"
        else:
            self.method = "unavailable"

    def _loop(self) -> None:
        if self._proc is not None:
            for line in self._proc.stdout:
                if self._stop.is_set():
                    break
                try:
                    self.samples.append(float(line.strip()))
                    self.times.append(time.monotonic())
                except ValueError:
                    pass
            return
        while not self._stop.is_set() and self._read is not None:
            try:
                self.samples.append(self._read())
                self.times.append(time.monotonic())
            except Exception as exc:  # noqa: BLE001
                self.error = f"{type(exc).__name__}: {exc}"
                break
            self._stop.wait(self.interval_s)

    def __enter__(self) -> BusySampler:
        self._start_reader()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def summary(self, window: tuple[float, float] | None = None) -> dict:
        """The mean utilization over the samples taken inside ``window`` (monotonic s: the measured batch's
        clock), or over all of them."""
        if window is None:
            samples = self.samples
        else:
            samples = [u for t, u in zip(self.times, self.samples) if window[0] <= t <= window[1]]
        n = len(samples)
        return {"busy_fraction": (sum(samples) / n / 100.0) if n else None, "samples": n,
                "method": self.method, "error": self.error, "window": "the batch's clock" if window else "sampler"}


# ------------------------------------------------------------------------------------------------ KernelBench
KB_CHILD = r'''
import json, os, sys, time, types
t0 = time.monotonic()
kb_src, ref_path, cand_path, out_path = sys.argv[1:5]
n_correct, n_perf = int(sys.argv[5]), int(sys.argv[6])
sys.path.insert(0, kb_src)
stand_ins = []
def stand_in(name, **attrs):
    """An empty module for an LLM-client import that eval never calls, only if the real one is missing."""
    try:
        __import__(name)
    except ImportError:
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module
        stand_ins.append(name)
def _unused(*args, **kwargs):
    raise RuntimeError("stand-in for an LLM client: not part of KernelBench's eval")
stand_in("dotenv", load_dotenv=lambda *a, **k: False)
stand_in("openai", OpenAI=_unused)
stand_in("litellm", completion=_unused)
import torch
from kernelbench.eval import eval_kernel_against_ref
out = {"import_s": time.monotonic() - t0, "stand_ins": stand_ins}
ref_src, cand_src = open(ref_path).read(), open(cand_path).read()
t1 = time.monotonic()
try:
    result = eval_kernel_against_ref(
        original_model_src=ref_src, custom_model_src=cand_src, seed_num=42,
        num_correct_trials=n_correct, num_perf_trials=n_perf, measure_performance=True,
        timing_method="cuda_event", verbose=False, device=torch.device("cuda:0"),
        backend="triton", precision=torch.float32)
    if result is None:
        out["result"] = None
        out["error"] = "eval_kernel_against_ref returned None (its lock-file case: 'please retry')"
    else:
        data = result.model_dump() if hasattr(result, "model_dump") else dict(result)
        data["metadata"] = {k: (v if isinstance(v, (str, int, float, bool, type(None))) else str(v))
                            for k, v in (data.get("metadata") or {}).items()}
        out["result"] = data
except Exception as exc:  # their scripts' last-level catch: counted as not compiled
    out["result"] = {"compiled": False, "correctness": False}
    out["error"] = f"{type(exc).__name__}: {exc}"[:500]
out["eval_s"] = time.monotonic() - t1
with open(out_path, "w") as fh:
    json.dump(out, fh, default=str)
'''


def kernelbench_src(kernelbench: str) -> Path:
    src = kernelbench_root(kernelbench) / "src"
    if not (src / "kernelbench" / "eval.py").is_file():
        raise SystemExit(f"{src}/kernelbench/eval.py not found: --kernelbench must be a KernelBench clone's root")
    return src


def run_kernelbench_one(child: Path, kb_src: Path, ref_path: Path, cand: Candidate, work: Path, env: dict,
                        timeout_s: float, n_correct: int, n_perf: int) -> dict:
    """One fresh process: returns the row (verdict, runtime, wall time); killed and failed after ``timeout_s``."""
    cand_path, out_path = work / f"{cand.problem}__{cand.kind}.py", work / f"{cand.problem}__{cand.kind}.json"
    cand_path.write_text(cand.code)
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(child), str(kb_src), str(ref_path), str(cand_path), str(out_path),
                             str(n_correct), str(n_perf)], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    timed_out = False
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        output, _ = proc.communicate()
    wall = time.monotonic() - began
    row = {"wall_s": round(wall, 3), "timed_out": timed_out, "returncode": proc.returncode,
           "compiled": False, "correct": False, "runtime_ms": None, "ref_runtime_ms": None, "error": None}
    data = {}
    if out_path.is_file():
        try:
            data = json.loads(out_path.read_text())
        except ValueError:
            data = {}
    result = data.get("result") or {}
    row.update(compiled=bool(result.get("compiled")), correct=bool(result.get("correctness")) and not timed_out,
               import_s=data.get("import_s"), eval_s=data.get("eval_s"), stand_ins=data.get("stand_ins"),
               error=data.get("error"), metadata=result.get("metadata"))
    if row["correct"] and (result.get("runtime") or -1) > 0:
        row["runtime_ms"] = result["runtime"]  # KernelBench: mean of its timed trials, in ms (timing.get_timing_stats)
        row["runtime_stats"] = result.get("runtime_stats")
    if (result.get("ref_runtime") or -1) > 0:
        row["ref_runtime_ms"] = result["ref_runtime"]
    if timed_out:
        row["error"] = f"killed after {timeout_s:g} s (hang timeout); counted as a failure"
    elif not data:
        row["error"] = "child wrote no result: " + " | ".join((output or "").strip().splitlines()[-3:])[-400:]
    return row


def run_kernelbench(kernelbench: str, cands: list[Candidate], timeout_s: float, n_correct: int, n_perf: int,
                    on_row=None) -> tuple[list[dict], float]:
    kb_src = kernelbench_src(kernelbench)
    work = Path(tempfile.mkdtemp(prefix="kb-vs-"))
    child = work / "kb_child.py"
    child.write_text(KB_CHILD)
    refs = {}
    for problem in sorted({c.problem for c in cands}):
        refs[problem] = work / f"ref_{problem}.py"
        refs[problem].write_text(problem_path(kernelbench, problem).read_text())
    env = {**os.environ, "TRITON_CACHE_DIR": str(work / "triton_cache"), "TRITON_INTERPRET": "0",
           "PYTHONUNBUFFERED": "1"}
    rows, began = [], time.monotonic()
    for cand in cands:
        row = run_kernelbench_one(child, kb_src, refs[cand.problem], cand, work, env, timeout_s, n_correct, n_perf)
        rows.append(row)
        if on_row:
            on_row(cand, row)
    return rows, time.monotonic() - began


# ------------------------------------------------------------------------------------------------ ours
def run_tritonrl(tasks: dict, cands: list[Candidate], device: str, timeout_s: float, workers_per_gpu: int,
                 workers: int = 0, info: dict | None = None, started: bool = False) -> tuple[list[dict], float]:
    """Our verdicts and the batch's wall time; ``info`` (when given) gets the verifier's cold-start seconds and
    the batch's start (``began``, monotonic s). ``started``: the verifier is started (zygote, judge, warm-ups) before
    the clock starts, as a trainer's is before its first step; otherwise that start is inside the measured time.
    Either way the caches are fresh: references, reference timings and every child's Triton cache."""
    from tritonrl.config import VerifyConfig
    from tritonrl.verify import Verifier, VerifyItem

    began = time.monotonic()
    config = VerifyConfig(device=device, workers_per_gpu=workers_per_gpu, timeout_s=timeout_s, workers=workers,
                          cache_dir=tempfile.mkdtemp(prefix="kb-vs-ours-"), warm_children=True)  # the GPU is ours
    with Verifier(config) as verifier:
        if started:
            verifier.start(wait=True)
            began = time.monotonic()
        results = verifier.verify_many([VerifyItem(tasks[c.problem], code=c.code) for c in cands])
        if info is not None:
            info["startup_s"] = relative_instants(verifier.startup, began)
            info["began"] = began
    wall = time.monotonic() - began
    rows = [{"correct": r.correct, "stage": r.stage.value, "flags": list(r.flags),
             "error": (r.error or "")[:300] or None, "runtime_ms": r.runtime_ms, "ref_runtime_ms": r.ref_runtime_ms,
             "speedup": r.speedup, "elapsed_s": r.elapsed_s, "stage_s": r.timing.get("stage_s"),
             "timed_trials": (r.timing.get("candidate") or {}).get("trials"), "parent_s": r.timing.get("parent_s"),
             "memory_retries": r.timing.get("memory_retries"),
             "timeline": row_timeline(r, began)}
            for r in results]
    return rows, wall


def ours_batch(tasks: dict, cands: list[Candidate], args, started: bool) -> tuple[list[dict], float, dict]:
    """Our batch under NVML sampling (``run_tritonrl``): rows, wall time, and the busy summary with the per-second
    timeline (printed) and the start-up seconds."""
    info: dict = {}
    with BusySampler(args.gpu_index, args.sample_interval) as sampler:
        rows, wall = run_tritonrl(tasks, cands, "cuda", args.timeout, args.workers_per_gpu, info=info, started=started)
    # Over the batch's own clock (``began`` to its end), as its seconds per candidate are: a verifier started
    # before the clock does its start outside both. The sampler's whole span is kept beside it.
    busy = {**sampler.summary(window=(info["began"], info["began"] + wall)),
            "sampler_span": sampler.summary(), "timeline": batch_timeline(rows, sampler, info["began"], wall),
            "startup_s": info.get("startup_s")}
    busy["idle_by_phase"] = idle_by_phase(busy["timeline"])
    busy["ceiling"] = busy_ceiling(rows, busy.get("busy_fraction"), wall)
    print_timeline(busy["timeline"])
    print(f"GPU-idle seconds by phase: {busy['idle_by_phase']}")
    print(f"GPU busy ceiling (the batch's GPU work over the least wall its time-outs allow): {busy['ceiling']}")
    print(f"start (s): {info.get('startup_s')}")
    return rows, wall, busy


def run_started(tasks: dict, cands: list[Candidate], args) -> dict:
    """Our batch again, with a new verifier started before the clock (``run_tritonrl(started=True)``): what each
    step of an RL run sees, its verifier started once. Fresh caches, so every candidate costs what it did cold."""
    print(f"[tritonrl, verifier started first] {len(cands)} candidates ...", flush=True)
    rows, wall, busy = ours_batch(tasks, cands, args, started=True)
    matches = sum(r["correct"] == c.expected_correct for r, c in zip(rows, cands)) / len(cands)
    print(f"[tritonrl, verifier started first] done in {wall:.1f} s: {wall / len(cands):.2f} s per candidate, "
          f"GPU busy {busy.get('busy_fraction')}, verdicts as expected {matches:.0%}", flush=True)
    return {"wall_s": wall, "s_per_candidate": wall / len(cands), "matches_expected": matches,
            "gpu_busy_fraction": busy.get("busy_fraction"), "gpu_busy_sampling": busy,
            "startup_s_before_clock": busy.get("startup_s"),
            "rows": [{"candidate": c.name, **r} for c, r in zip(cands, rows)]}


def started_ratio(started: dict | None, summary: dict) -> None:
    """KernelBench's seconds per candidate over ours with the verifier started first, when both are known."""
    kb_s = summary.get("kernelbench_s_per_candidate")
    if started and kb_s and started.get("s_per_candidate"):
        started["ratio"] = kb_s / started["s_per_candidate"]
        print(f"verifier started first: {started['s_per_candidate']:.2f} s per candidate, ratio "
              f"{started['ratio']:.1f}x, GPU busy {started.get('gpu_busy_fraction')}")


def relative_instants(startup: dict, began: float) -> dict:
    """``Verifier.startup`` with each ``ready_at`` (monotonic s) as seconds from the batch's start."""
    def rel(part: dict) -> dict:
        return {k: (round(v - began, 3) if k == "ready_at" and v is not None else v) for k, v in part.items()}

    return {"zygote": rel(startup.get("zygote") or {}),
            "judges": {gpu: rel(part) for gpu, part in (startup.get("judges") or {}).items()}}


def row_timeline(result, began: float) -> dict:
    """Where one verdict sat in the batch, in seconds from the batch's start: the whole verify call, the judge's
    session ([start, the child ready, end]) and each hold of the GPU's lease ([mode, start, end])."""
    def rel(t):
        return None if t is None else round(t - began, 3)

    timing = result.timing
    return {"span": [rel(t) for t in timing.get("span") or []],
            "session": [rel(t) for t in timing.get("session_span") or []],
            "fork": [rel(t) for t in timing.get("fork_span") or []],
            "leases": [[mode, rel(a), rel(b)] for mode, a, b in timing.get("gpu_lease") or []]}


def print_timeline(timeline: list[dict]) -> None:
    print("   t  verifying  sessions  shared  exclusive  gpu%")
    for b in timeline:
        print(f"{b['t']:>4.0f}  {b['verifying']:>9.1f}  {b['sessions']:>8.1f}  {b['shared']:>6.1f}  "
              f"{b['exclusive']:>9.2f}  {b['gpu_util'] if b['gpu_util'] is not None else '-':>4}")


def batch_timeline(rows: list[dict], sampler: BusySampler, began: float, wall: float, step_s: float = 1.0) -> list:
    """Per ``step_s`` of our batch: verdicts in flight, sessions in the judge (children started), shared leases
    held, whether a timing run held the GPU alone (its share of the step), and NVML's mean utilization: where the
    GPU sat idle, and what was holding it up."""
    lines = [r["timeline"] for r in rows if r and r.get("timeline")]
    out = []
    for k in range(int(wall / step_s) + 1):
        lo, hi = k * step_s, (k + 1) * step_s

        def share(spans, lo=lo, hi=hi):  # of this step, summed over the spans [a, b]
            return round(sum(max(0.0, min(b, hi) - max(a, lo)) / step_s for a, b in spans
                             if a is not None and b is not None), 2)

        util = [u for t, u in zip(sampler.times, sampler.samples) if lo <= t - began < hi]
        out.append({"t": lo,
                    "verifying": share(tl["span"] for tl in lines if len(tl["span"]) == 2),
                    "sessions": share((tl["session"][0], tl["session"][2]) for tl in lines
                                      if len(tl["session"]) == 3),
                    "shared": share((a, b) for tl in lines for m, a, b in tl["leases"] if m == "shared"),
                    "exclusive": share((a, b) for tl in lines for m, a, b in tl["leases"] if m == "exclusive"),
                    "gpu_util": round(sum(util) / len(util), 1) if util else None})
    return out


PHASES = ("start", "compile", "trials", "timing", "tail")


def busy_ceiling(rows: list[dict], busy_fraction: float | None, wall: float) -> dict | None:
    """The most GPU busy this batch could show with its GPU work as it is: the batch cannot end before its
    timed-out candidates do (each waits out the limit from its own start), so its busy fraction is at most its
    GPU-busy seconds over the latest of those ends (``timeouts_end_s``, the batch's clock). A batch of 48 with six
    hangs at 20 s and 15 s of GPU work tops out at 75% however well its idle seconds are filled."""
    ends = [r["timeline"]["span"][1] for r in rows
            if "timeout" in (r.get("flags") or []) and (r.get("timeline") or {}).get("span")]
    if busy_fraction is None or not ends or not wall:
        return None
    busy_s = busy_fraction * wall
    return {"busy_s": round(busy_s, 2), "timeouts_end_s": round(max(ends), 2), "wall_s": round(wall, 2),
            "ceiling": round(min(1.0, busy_s / max(ends)), 3)}


def idle_by_phase(timeline: list[dict]) -> dict:
    """Where the batch's GPU-idle seconds went, from its per-second timeline (``batch_timeline``): each second is
    ``start`` (no child has started yet: the zygote, the judge, the children's CUDA), ``timing`` (a timing run held
    the GPU alone for at least half of it), ``trials`` (correctness work under the shared lease, at least half a
    session's worth), ``tail`` (after the last lease of the batch: candidates left waiting out a time-out) or else
    ``compile`` (children compiling, starting CUDA, or in their tiny stage). Per phase: its seconds, the seconds of
    it the GPU sat idle (one minus NVML's utilization), and that utilization's mean."""
    last = max((i for i, b in enumerate(timeline) if b["shared"] > 0 or b["exclusive"] > 0), default=-1)
    out = {phase: {"s": 0, "idle_s": 0.0, "util": []} for phase in PHASES}
    for i, b in enumerate(timeline):
        if b["gpu_util"] is None:
            continue
        phase = ("start" if b["sessions"] == 0 and i <= last else "tail" if i > last else
                 "timing" if b["exclusive"] >= 0.5 else "trials" if b["shared"] >= 0.5 else "compile")
        out[phase]["s"] += 1
        out[phase]["idle_s"] += 1 - b["gpu_util"] / 100
        out[phase]["util"].append(b["gpu_util"])
    return {phase: {"s": v["s"], "idle_s": round(v["idle_s"], 2),
                    "util": round(sum(v["util"]) / len(v["util"]), 1) if v["util"] else None}
            for phase, v in out.items()}


# ------------------------------------------------------------------------------------------------ comparison
def explain(cand: Candidate, ours: dict, kb: dict) -> str | None:
    """Why the harnesses disagree on this candidate (None when they agree)."""
    if ours["correct"] == kb["correct"]:
        return None
    ours_detail = f"tritonrl: stage {ours['stage']}, flags {ours['flags']}, {ours['error'] or 'no error'}"
    kb_detail = f"KernelBench: {kb.get('error') or kb.get('metadata') or 'no detail'}"
    if kb["correct"] and not cand.expected_correct:
        how = {
            "bad_torch_fallback": "it accepts the PyTorch fallback: eval_kernel_against_ref compares outputs only "
                                  "(torch.allclose on 5 seeds), so torch ops can compute the answer while a token "
                                  "Triton kernel copies it; tritonrl's strict mode requires the work in Triton",
            "bad_tf32": "it accepts TF32 arithmetic in an fp32 problem: its check is elementwise only "
                        "(allclose, atol = rtol = 1e-4), and where the outputs are small TF32's error stays inside "
                        "that band; tritonrl also bounds the relative L2 error (1e-4 of the output's norm)",
        }.get(cand.kind, f"it accepts a candidate meant to be rejected ({WHY.get(cand.kind, cand.kind)})")
        return f"KernelBench fooled: {how}. {ours_detail}"
    if ours["correct"] and not cand.expected_correct:
        return f"tritonrl fooled: it accepts {WHY.get(cand.kind, cand.kind)}. {kb_detail}"
    if cand.expected_correct and not ours["correct"]:
        return f"tritonrl rejects a candidate meant to be correct (check the candidate or the verifier): {ours_detail}"
    return f"KernelBench rejects a candidate meant to be correct: {kb_detail}"


def summarize(cands: list[Candidate], ours: list[dict] | None, ours_wall: float | None, kb: list[dict],
              kb_wall: float | None, busy: dict) -> dict:
    rows = []
    for i, cand in enumerate(cands):
        row = {"problem": cand.problem, "kind": cand.kind, "expected_correct": cand.expected_correct}
        o = ours[i] if ours is not None else None
        k = kb[i] if i < len(kb) else None
        if o is not None:
            row["tritonrl"] = o
        if k is not None:
            row["kernelbench"] = k
        if o is not None and k is not None:
            row["agree"] = o["correct"] == k["correct"]
            row["explanation"] = explain(cand, o, k)
            if o["correct"] and k["correct"] and o["runtime_ms"] and k["runtime_ms"]:
                row["runtime_rel_diff"] = abs(o["runtime_ms"] - k["runtime_ms"]) / k["runtime_ms"]
        rows.append(row)
    both = [r for r in rows if "agree" in r]
    diffs = [r["runtime_rel_diff"] for r in rows if "runtime_rel_diff" in r]
    n_ours, n_kb = (len(cands) if ours is not None else 0), len(kb)
    ours_s = ours_wall / n_ours if ours_wall and n_ours else None
    kb_s = kb_wall / n_kb if kb_wall and n_kb else None

    def expected_rate(key):
        judged = [r for r in rows if key in r]
        return sum(r[key]["correct"] == r["expected_correct"] for r in judged) / len(judged) if judged else None

    return {
        "tritonrl_s_per_candidate": ours_s, "kernelbench_s_per_candidate": kb_s,
        "ratio": kb_s / ours_s if ours_s and kb_s else None,
        "tritonrl_wall_s": ours_wall, "kernelbench_wall_s": kb_wall,
        "verdict_agreement": sum(r["agree"] for r in both) / len(both) if both else None,
        "runtime_median_abs_diff": statistics.median(diffs) if diffs else None,
        "runtime_pairs": len(diffs),
        "matches_expected": {"tritonrl": expected_rate("tritonrl"), "kernelbench": expected_rate("kernelbench")},
        "disagreements": [{"candidate": f"{r['problem']}/{r['kind']}", "explanation": r["explanation"]}
                          for r in both if not r["agree"]],
        "gpu_busy_fraction": {k: v.get("busy_fraction") for k, v in busy.items()},
        "gpu_busy_sampling": busy,
        "rows": rows,
    }


def device_facts() -> dict:
    facts = {"device": "unknown", "torch": None, "triton": None}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout.strip().splitlines()
        facts["device"] = out[0].strip() if out else "unknown"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        import torch
        import triton

        facts.update(torch=torch.__version__, triton=triton.__version__)
    except ImportError:
        pass
    return facts


def kernelbench_commit(kernelbench: str) -> str | None:
    """The clone's own commit: ``git rev-parse HEAD`` when the clone's root is a git work tree's top (not a folder
    inside another checkout), else a ``COMMIT`` file at its root (an exported tree), else None."""
    root = kernelbench_root(kernelbench)
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        if Path(top).resolve() == root:
            return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                  timeout=10, check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    marker = root / "COMMIT"
    return (marker.read_text().strip() or None) if marker.is_file() else None


def our_commit() -> str | None:
    """This repository's commit (with ``+dirty`` when the working tree differs from it), or None."""
    from tritonrl.util.gitinfo import commit

    return commit(root=HERE)


def print_table(cands: list[Candidate], summary: dict) -> None:
    def verdict(part):
        if part is None:
            return "-"
        ms = f" {part['runtime_ms']:.3f}ms" if part.get("runtime_ms") else ""
        return ("ok" if part["correct"] else "rej") + ms

    print(f"{'candidate':<58} {'exp':<4} {'tritonrl':<16} {'s':>6}  {'KernelBench':<16} {'s':>6}  agree")
    for row in summary["rows"]:
        o, k = row.get("tritonrl"), row.get("kernelbench")
        print(f"{row['problem'] + '/' + row['kind']:<58} {'ok' if row['expected_correct'] else 'rej':<4} "
              f"{verdict(o):<16} {(o or {}).get('elapsed_s') or 0:>6.1f}  {verdict(k):<16} "
              f"{(k or {}).get('wall_s') or 0:>6.1f}  {row.get('agree', '-')}")
    fmt = lambda v, f="{:.3f}": "n/a" if v is None else f.format(v)  # noqa: E731
    print(f"seconds per candidate: KernelBench {fmt(summary['kernelbench_s_per_candidate'], '{:.2f}')}, "
          f"tritonrl {fmt(summary['tritonrl_s_per_candidate'], '{:.2f}')}, ratio {fmt(summary['ratio'], '{:.2f}')}x")
    print(f"verdict agreement {fmt(summary['verdict_agreement'])}; matches expected: {summary['matches_expected']}; "
          f"runtime median |ours - theirs| / theirs {fmt(summary['runtime_median_abs_diff'])} "
          f"over {summary['runtime_pairs']} candidates both call correct")
    print(f"GPU busy fraction: {summary['gpu_busy_fraction']} "
          f"({ {k: v.get('method') for k, v in summary['gpu_busy_sampling'].items()} })")
    for d in summary["disagreements"]:
        print(f"  disagreement {d['candidate']}: {d['explanation']}")


# ------------------------------------------------------------------------------------------------ CPU check
def cpu_check(kernelbench: str, cands: list[Candidate], timeout_s: float, hang_timeout_s: float,
              emulate_tf32: bool) -> int:
    """Ours only, on CPU at shrunk shapes: every candidate must get the verdict its name says.

    The interpreter computes ``tl.dot`` in fp32 whatever its precision, so TF32 cannot be seen on CPU; with
    ``emulate_tf32`` the ``bad_tf32`` candidates' operands are rounded to TF32 (10-bit mantissa) in the kernel
    before an fp32 dot, which is what the tensor cores do, and the verdict is on that.
    """
    tasks = load_tasks(kernelbench, sorted({c.problem for c in cands}), shrink=True)
    checked = [with_tf32_emulation(c) if emulate_tf32 and c.kind == "bad_tf32" else c for c in cands]
    normal = [c for c in checked if c.kind != "bad_hang"]
    hangs = [c for c in checked if c.kind == "bad_hang"]
    rows: dict[str, dict] = {}
    for group, limit in ((normal, timeout_s), (hangs, hang_timeout_s)):
        if group:
            results, wall = run_tritonrl(tasks, group, "cpu", limit, 1)
            print(f"[{len(group)} candidates in {wall:.1f} s, timeout {limit:g} s]")
            rows.update({c.name: r for c, r in zip(group, results)})
    wrong = 0
    print(f"{'candidate':<58} {'expected':<9} {'verdict':<8} {'stage':<8} {'s':>6}  flags / error")
    for c in cands:
        r = rows[c.name]
        ok = r["correct"] == c.expected_correct
        wrong += not ok
        print(f"{c.name:<58} {'correct' if c.expected_correct else 'reject':<9} "
              f"{'correct' if r['correct'] else 'reject':<8} {r['stage']:<8} {r['elapsed_s'] or 0:>6.1f}  "
              f"{','.join(r['flags'])} {(r['error'] or '')[:90]}{'' if ok else '   <-- UNEXPECTED'}")
    print(f"cpu check: {len(cands) - wrong}/{len(cands)} as expected")
    return 1 if wrong else 0


TF32_HELPER = '''

@triton.jit
def _round_to_tf32(v):
    # CPU-check emulation of TF32 operands: keep 10 mantissa bits, round to nearest
    bits = v.to(tl.int32, bitcast=True)
    bits = (bits + 0x1000) & -8192
    return bits.to(tl.float32, bitcast=True)
'''


def with_tf32_emulation(cand: Candidate) -> Candidate:
    code = cand.code.replace("acc += tl.dot(a, w)",
                             'acc += tl.dot(_round_to_tf32(a), _round_to_tf32(w), input_precision="ieee")')
    if code == cand.code:
        raise SystemExit(f"{cand.name}: no TF32 dot to emulate")
    code = code.replace("\n\n@triton.jit\ndef fused_linear_kernel", TF32_HELPER + "\n\n@triton.jit\ndef fused_linear_kernel", 1)
    return Candidate(cand.problem, cand.kind, cand.path, code)


# ------------------------------------------------------------------------------------------------ main
def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", help="a KernelBench clone (its root: KernelBench/level2 and src/kernelbench)")
    parser.add_argument("--dry-run", action="store_true", help="list problems and candidates, check they parse")
    parser.add_argument("--cpu-check", action="store_true",
                        help="ours only, on CPU at shrunk shapes: does each candidate get the verdict its name says")
    parser.add_argument("--problems", default=",".join(PROBLEM_STEMS), help="comma-separated problem stems")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated candidate kinds")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="per-candidate limit for both harnesses (the hang's cost; KernelBench's scripts use 180)")
    parser.add_argument("--hang-timeout", type=float, default=10.0, help="--cpu-check: limit for bad_hang")
    parser.add_argument("--no-emulate-tf32", action="store_true", help="--cpu-check: run bad_tf32 as written")
    parser.add_argument("--workers-per-gpu", type=int, default=2,
                        help="ours: candidates compiling/checking at once on the GPU (timing stays exclusive)")
    parser.add_argument("--num-correct-trials", type=int, default=5)
    parser.add_argument("--num-perf-trials", type=int, default=100)
    parser.add_argument("--order", choices=("tritonrl-first", "kernelbench-first"), default="tritonrl-first")
    parser.add_argument("--only", choices=("both", "tritonrl", "kernelbench"), default="both")
    parser.add_argument("--started", action="store_true",
                        help="ours once more after the cold batch, the verifier started before the clock (as an RL "
                             "run's is before its first step): reported as tritonrl_started")
    parser.add_argument("--gpu-index", type=int, default=0, help="NVML index of the GPU (for the busy sampling)")
    parser.add_argument("--sample-interval", type=float, default=0.1)
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--commit", help="this repository's commit, where the copy that runs has no .git")
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="combine a --only tritonrl run of every problem and --only kernelbench runs of disjoint "
                             "--problems subsets (same kinds, same GPU) into one summary at --out: OURS KB [KB ...]")
    args = parser.parse_args(argv)

    problems = [p for p in args.problems.split(",") if p]
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [p for p in problems if p not in PROBLEM_STEMS] + [k for k in kinds if k not in KINDS]
    if unknown:
        raise SystemExit(f"unknown problem(s)/kind(s): {unknown}")
    cands = load_candidates(problems, kinds)
    if args.dry_run:
        return dry_run(cands, args.kernelbench)
    if args.merge:
        return merge(cands, args.merge, Path(args.out))
    if not args.kernelbench:
        parser.error("--kernelbench DIR is required (except with --dry-run)")
    if args.cpu_check:
        return cpu_check(args.kernelbench, cands, max(args.timeout, 120.0), args.hang_timeout,
                         not args.no_emulate_tf32)

    os.environ.setdefault("TRITON_INTERPRET", "0")
    out_path = Path(args.out)
    data = {"date": date.today().isoformat(), **device_facts(), "problems": problems, "candidates": len(cands),
            "candidate_kinds": kinds, "kernelbench_commit": kernelbench_commit(args.kernelbench),
            "commit": args.commit or our_commit(),
            "settings": {"timeout_s": args.timeout, "workers_per_gpu": args.workers_per_gpu,
                         "num_correct_trials": args.num_correct_trials, "num_perf_trials": args.num_perf_trials,
                         "order": args.order, "only": args.only,
                         "kernelbench_call": "eval_kernel_against_ref(seed_num=42, measure_performance=True, "
                                             "timing_method='cuda_event', backend='triton', precision=fp32), "
                                             "one fresh process per candidate"},
            "complete": False}
    tasks = load_tasks(args.kernelbench, problems)
    ours = ours_wall = None
    kb_rows: list[dict] = []
    kb_wall = None
    busy: dict = {}

    def save() -> None:
        write_json(out_path, {**data, **summarize(cands, ours, ours_wall, kb_rows, kb_wall, busy)})

    def kb_progress(cand: Candidate, row: dict) -> None:
        kb_rows_partial.append(row)
        print(f"  KernelBench {cand.name}: {'correct' if row['correct'] else 'rejected'} in {row['wall_s']:.1f} s"
              f"{' (timeout)' if row['timed_out'] else ''}", flush=True)
        write_json(out_path, {**data, **summarize(cands, ours, ours_wall, kb_rows_partial, None, busy)})

    kb_rows_partial: list[dict] = []
    steps = ["tritonrl", "kernelbench"] if args.order == "tritonrl-first" else ["kernelbench", "tritonrl"]
    for step in steps:
        if args.only not in ("both", step):
            continue
        print(f"[{step}] {len(cands)} candidates ...", flush=True)
        if step == "tritonrl":
            ours, ours_wall, busy[step] = ours_batch(tasks, cands, args, started=False)
        else:
            with BusySampler(args.gpu_index, args.sample_interval) as sampler:
                kb_rows, kb_wall = run_kernelbench(args.kernelbench, cands, args.timeout, args.num_correct_trials,
                                                   args.num_perf_trials, on_row=kb_progress)
            busy[step] = sampler.summary()
        print(f"[{step}] done in {ours_wall if step == 'tritonrl' else kb_wall:.1f} s", flush=True)
        if step == "tritonrl" and args.started:
            data["tritonrl_started"] = run_started(tasks, cands, args)
        save()
    stand_ins = sorted({s for r in kb_rows for s in (r.get("stand_ins") or [])})
    data["kernelbench_stand_ins"] = stand_ins
    data["complete"] = True
    summary = summarize(cands, ours, ours_wall, kb_rows, kb_wall, busy)
    started_ratio(data.get("tritonrl_started"), summary)
    write_json(out_path, {**data, **summary})
    print_table(cands, summary)
    print(f"KernelBench stand-in modules (not installed, never called by eval): {stand_ins or 'none'}")
    print(f"wrote {out_path}")
    return 0


def merge(cands: list[Candidate], paths: list[str], out_path: Path) -> int:
    """One summary from a run of ours over every candidate and KernelBench runs over disjoint problem subsets (a
    command may run 10 minutes: ours and half of KernelBench's in one, the other half in another)."""
    if len(paths) < 2:
        raise SystemExit("--merge needs our run and at least one KernelBench run")
    ours_run, *kb_runs = (json.loads(Path(p).read_text()) for p in paths)
    if ours_run.get("candidates") != len(cands) or not all("tritonrl" in r for r in ours_run.get("rows", [])):
        raise SystemExit(f"{paths[0]}: not a complete run of ours over these {len(cands)} candidates")
    kb_by_name = {}
    for path, run in zip(paths[1:], kb_runs):
        if run.get("device") != ours_run.get("device"):
            raise SystemExit(f"{path}: on {run.get('device')}, ours on {ours_run.get('device')}")
        for row in run.get("rows", []):
            if "kernelbench" in row:
                kb_by_name[f"{row['problem']}/{row['kind']}"] = row["kernelbench"]
    missing = [c.name for c in cands if c.name not in kb_by_name]
    if missing:
        raise SystemExit(f"no KernelBench row for {len(missing)} candidates: {missing[:4]} ...")
    ours = [r["tritonrl"] for r in ours_run["rows"]]
    kb = [kb_by_name[c.name] for c in cands]
    kb_wall = sum(run["kernelbench_wall_s"] for run in kb_runs)
    kb_busy = [run["gpu_busy_sampling"]["kernelbench"] for run in kb_runs]
    busy = {"tritonrl": ours_run["gpu_busy_sampling"]["tritonrl"],
            "kernelbench": {"busy_fraction": sum(b["busy_fraction"] * r["kernelbench_wall_s"]
                                                 for b, r in zip(kb_busy, kb_runs)) / kb_wall,
                            "method": kb_busy[0].get("method"), "parts": kb_busy}}
    data = {k: v for k, v in ours_run.items() if k not in ("rows", "disagreements") and not k.startswith(
        ("tritonrl_", "kernelbench_s", "kernelbench_wall", "ratio", "gpu_busy", "runtime_", "verdict_", "matches"))}
    data.update(kernelbench_commit=kb_runs[0].get("kernelbench_commit"), merged_from=[str(p) for p in paths],
                dates=sorted({run.get("date") for run in [ours_run, *kb_runs]}), complete=True,
                kernelbench_stand_ins=sorted({s for run in kb_runs for s in run.get("kernelbench_stand_ins") or []}))
    if ours_run.get("tritonrl_started"):
        data["tritonrl_started"] = ours_run["tritonrl_started"]
    for sampled in (busy["tritonrl"], (data.get("tritonrl_started") or {}).get("gpu_busy_sampling") or {}):
        if sampled.get("timeline") and "idle_by_phase" not in sampled:  # a run from before it was reported
            sampled["idle_by_phase"] = idle_by_phase(sampled["timeline"])
    summary = summarize(cands, ours, ours_run["tritonrl_wall_s"], kb, kb_wall, busy)
    started_ratio(data.get("tritonrl_started"), summary)
    write_json(out_path, {**data, **summary})
    print_table(cands, summary)
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
