"""Replay a child's correctness and timed calls of an honest kernel in one process, to find where a device fails.

    CUDA_LAUNCH_BLOCKING=1 PYTHONPATH=src python benchmarks/probes/gpu_watch_probe.py            # on a GPU machine
    TRITON_INTERPRET=1 PYTHONPATH=src python benchmarks/probes/gpu_watch_probe.py --device cpu  # the same steps here

The monitor (``verify/child/monitor.py``) watches the bundled ReLU fixture as the candidate child does: three
poisoned, watched forwards (the correctness phase), then, unpoisoned and inside the timer, warm-up calls (coarse),
watched and plain timed calls in the order that failed on an H100 at ``c11ec4e`` (a watched call after a plain one:
``CUDA error: device-side assert triggered``; docs/benchmarks-history.md, "GPU tests at c11ec4e"). Each call prints the
rule it broke (None: none); the first exception prints its whole traceback, which with ``CUDA_LAUNCH_BLOCKING=1``
is the operation that failed.

    PYTHONPATH=src python benchmarks/probes/gpu_watch_probe.py --candidate C.py --problem P.py --profile 5 --out F.json

replays the same calls of a KernelBench candidate (``ModelNew`` of ``C.py`` built from ``P.py``'s
``get_init_inputs``, called on its ``get_inputs``) and says where each kind of call's host time goes: the seconds
of each call, and cProfile's functions of the watched and the plain calls by their own time (what a timing run
holds the GPU for while its GPU waits: docs/benchmarks-history.md).

Each call also says how many kernels Triton compiled during it (``compiles``: calls of ``JITFunction._do_compile``,
their seconds, and the size of the kernel's in-memory cache after them): a verdict that spends its time compiling
the same kernel again shows it at once. ``--calls N`` replays only the plan's first N calls.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import json
import pstats
import time
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
    parser.add_argument("--candidate", help="a candidate file (ModelNew) instead of the bundled ReLU fixture")
    parser.add_argument("--problem", help="its problem file (get_inputs, get_init_inputs), with --candidate")
    parser.add_argument("--profile", type=int, default=0, help="this many more rounds of the plan, profiled")
    parser.add_argument("--calls", type=int, help="only the plan's first N calls")
    parser.add_argument("--out", help="write the figures here (JSON)")
    args = parser.parse_args()
    if args.calls is not None:
        del PLAN[args.calls:]
    count_compiles()
    path = Path(args.candidate) if args.candidate else GOOD
    module = load(path, "candidate")  # a real file: Triton's @jit reads the kernel's source back
    monitor = Monitor(str(path))
    monitor.install()
    poison_memory(args.device)
    if args.candidate:
        problem = load(Path(args.problem), "problem")
        shapes = [t for t in problem.get_inputs() if isinstance(t, torch.Tensor)]
        init = problem.get_init_inputs()
    else:
        shapes, init = [torch.empty(args.elements)], []
    sizes = [t.numel() * t.element_size() for t in shapes]
    arena = torch.zeros(sum(sizes) * 2, dtype=torch.uint8, device=args.device)  # the judge's, pinned
    monitor.origins.trust(arena, INPUT, pin=True)
    offsets = [sum(sizes[:k]) for k in range(len(sizes))]
    xs = [arena[o:o + n].view(t.dtype).view(t.shape) for o, n, t in zip(offsets, sizes, shapes)]
    with monitor.phase("build"):
        model = module.ModelNew(*init).to(args.device)
    timer = timing_protocol.make_timer(args.device)
    figures: dict = {"candidate": str(path), "device": args.device, "calls": []}
    if replay(monitor, model, xs, timer, figures, profiles=None):
        return 1
    profiles: dict = {}
    for _ in range(args.profile):
        if replay(monitor, model, xs, timer, figures, profiles, timed_only=True):
            return 1
    for kind, profile in profiles.items():
        stats = profile if isinstance(profile, pstats.Stats) else pstats.Stats(profile)
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:25]  # by own time
        figures[kind] = [{"function": f"{Path(f).name}:{line} {name}", "calls": cc, "own_s": round(tt, 4),
                          "cumulative_s": round(ct, 4)} for (f, line, name), (cc, _, tt, ct, _) in rows]
        ours = sorted(((k, v) for k, v in stats.stats.items() if "tritonrl" in k[0]), key=lambda kv: -kv[1][3])[:30]
        figures[f"{kind}_ours"] = [{"function": f"{Path(f).name}:{line} {name}", "calls": cc, "own_s": round(tt, 4),
                                    "cumulative_s": round(ct, 4)} for (f, line, name), (cc, _, tt, ct, _) in ours]
        for title, key in (("functions by own time", kind), ("the verifier's functions by cumulative time",
                                                              f"{kind}_ours")):
            print(f"-- {kind}: {title}")
            for row in figures[key]:
                print(f"  {row['own_s']:8.4f} {row['cumulative_s']:8.4f} {row['calls']:6d}  {row['function']}")
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1))
    return 0


COMPILES: list[dict] = []  # one entry a compile: kernel, seconds, its cache's size after, the key's digest


def count_compiles() -> None:
    """Every compile Triton makes (on a GPU) recorded in ``COMPILES``: a cache hit makes none."""
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return
    original = JITFunction._do_compile

    def counted(self, key, signature, device, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original(self, key, signature, device, *args, **kwargs)
        finally:
            cache = self.device_caches[device][0]
            COMPILES.append({"kernel": self.__name__, "s": round(time.perf_counter() - start, 4),
                             "cache_size": len(cache), "kernel_id": id(self), "key": str(hash(str(key)))})

    JITFunction._do_compile = counted


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay(monitor, model, xs: list, timer, figures: dict, profiles: dict | None, timed_only: bool = False) -> int:
    """The plan's calls once (the correctness phase's watched forwards poisoned, unless ``timed_only``); with
    ``profiles``, each call profiled into the entry of its kind."""
    poisoned = not timed_only
    for i, (phase, watched) in enumerate(PLAN):
        if timed_only and phase != "timed":
            continue
        if phase == "timed" and poisoned:
            unpoison_memory()
            poisoned = False
        for x in xs:  # fresh inputs, written by the judge
            x.copy_(torch.randn(x.shape, device=x.device, dtype=x.dtype) if x.is_floating_point() else x)
        kind = f"{phase}_{'watched' if watched else 'plain'}"
        profile = cProfile.Profile() if profiles is not None else None
        compiled = len(COMPILES)
        try:
            start = time.perf_counter()
            if profile is not None:
                profile.enable()
            if phase == "timed":
                _, (out, record) = timer(lambda w=watched: monitor.run_forward(model, xs, coarse=not w))
                if i < 6 and profiles is None:
                    timer.learn()  # the warm-up sizes the hold
            else:
                out, record = monitor.run_forward(model, xs)
            timer.sync()
            if profile is not None:
                profile.disable()
                profiles[kind] = profile if kind not in profiles else _merged(profiles[kind], profile)
            seconds = time.perf_counter() - start
            problem = judge_record(record, out, monitor.intact(), weak=phase == "timed")
            new = COMPILES[compiled:]
            compiles = {"n": len(new), "s": round(sum(c["s"] for c in new), 3),
                        "distinct_keys": len({c["key"] for c in new}), "kernels": len({c["kernel_id"] for c in new}),
                        "cache_sizes": sorted({c["cache_size"] for c in new})[:8]}
            figures["calls"].append({"call": i, "kind": kind, "s": round(seconds, 5), "profiled": profile is not None,
                                     "problem": None if problem is None else list(problem), "compiles": compiles})
            print(f"{i:2d} {phase:11s} {'watched' if watched else 'plain':7s} {seconds * 1000:9.2f} ms {problem} "
                  f"compiles {compiles}", flush=True)
        except BaseException:  # noqa: BLE001 - the point is the traceback
            print(f"{i:2d} {phase:11s} {'watched' if watched else 'plain':7s} RAISED", flush=True)
            traceback.print_exc()
            return 1
    return 0


def _merged(first: cProfile.Profile, second: cProfile.Profile) -> pstats.Stats:
    stats = first if isinstance(first, pstats.Stats) else pstats.Stats(first)
    stats.add(second)
    return stats


if __name__ == "__main__":
    raise SystemExit(main())
