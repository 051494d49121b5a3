"""Load test of ``tritonrl serve`` on loopback, and the service's cost against the verifier in-process.

    PYTHONPATH=src python benchmarks/serve_load.py --device cpu --out benchmarks/results/serve_load.json
    PYTHONPATH=src python benchmarks/serve_load.py --device cuda --part compare --out $OUT/serve_overhead_gpu.json

``load`` (the default part): a real ``tritonrl serve`` process (``python -m tritonrl serve --port 0``, loopback
only), then ``--clients`` threads, each with its own HTTP client, each sending ``--requests`` requests of
``--items`` items one after another. The items cycle through a cheap mix: one honest kernel in ``--honest-every``
(the bundled ``l1_relu`` reference, judged through every stage) and rejections (no code, a PyTorch fallback, a
kernel-less ModelNew, a syntax error: static or extract stage). Checked: every request answered exactly once
(``answered_once``), every status 200, every verdict the expected one; recorded: latency p50/p90/p99/max,
throughput (requests/s, items/s), the service's own metrics (batches, their mean size, busy seconds). Then SIGTERM,
and the drain's exit status.

``compare``: the bundled suite (every task's reference solution) judged by a ``Verifier`` in this process, and
by the same settings through a ``tritonrl serve`` process and ``verify.backend: http``, in the same run, both
started once and kept warm (one untimed pass each first: references computed, Triton's caches filled), then
``--repeats`` timed passes of each in alternating orders; the JSON is written after every pass. The
figure is ``overhead = median(http) / median(in_process) - 1``; the issue's bar is at most 5% on one GPU
(``overhead_within_5pct``). ``--control`` adds a second in-process side (an A/A run, ``control_spread``): the
difference two sides read with nothing but their processes between them. On a CPU use ``--tasks`` to keep it short.

The JSON (``--out``) carries the machine, the date, the commit and the command.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NO_KERNEL = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n" \
            "        return x.clamp(min=0)\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("load", "compare", "both"), default="load")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--workers", type=int, default=0, help="verify.workers (0: the verifier's default)")
    parser.add_argument("--workers-per-gpu", type=int, default=0,
                        help="verify.workers_per_gpu, both sides (0: the verifier's default, one candidate a GPU)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=50, help="requests per client")
    parser.add_argument("--items", type=int, default=1, help="items per request")
    parser.add_argument("--honest-every", type=int, default=5, help="one honest kernel in this many items")
    parser.add_argument("--tasks", default="", help="compare: comma-separated bundled tasks (default: all)")
    parser.add_argument("--repeats", type=int, default=3, help="compare: timed passes of each side")
    parser.add_argument("--control", action="store_true",
                        help="compare: a third side, a second in-process Verifier (an A/A run: what two sides that "
                             "differ in nothing but their processes read apart)")
    parser.add_argument("--timeout-s", type=float, default=120.0, help="verify.timeout_s")
    parser.add_argument("--no-timing", action="store_true",
                        help="verify.timing=false (compare: on both sides; a GPU's timed pass of the suite is ~3 minutes; "
                             "untimed, the pass is shortest, so the service's fixed cost weighs most)")
    parser.add_argument("--out", required=True)
    return parser.parse_args(argv)


# ---------------------------------------------------------------- the service as a process
def service_settings(args: argparse.Namespace) -> list[str]:
    """The service's ``--set`` options for what the in-process side takes as VerifyConfig fields."""
    settings = ["verify.timing=false"] if args.no_timing else []
    if args.workers_per_gpu:
        settings.append(f"verify.workers_per_gpu={args.workers_per_gpu}")
    return [part for setting in settings for part in ("--set", setting)]


class ServiceProcess:
    """``python -m tritonrl serve`` on 127.0.0.1, a free port; ``stop()`` sends SIGTERM and waits for the drain."""

    def __init__(self, device: str, workers: int, timeout_s: float, extra: list[str] | None = None):
        paths = [str(ROOT / "src"), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}  # no empty entry (the cwd)
        env.pop("TRITONRL_SERVE_TOKEN", None)
        command = [sys.executable, "-m", "tritonrl", "serve", "--host", "127.0.0.1", "--port", "0",
                   "--device", device, "--timeout", str(timeout_s), *(extra or [])]
        if workers:
            command += ["--workers", str(workers)]
        started = time.monotonic()
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self.url = self._wait_listening()
        self.start_s = round(time.monotonic() - started, 2)
        self._stderr: list[str] = []
        threading.Thread(target=lambda: self._stderr.extend(self.process.stderr), daemon=True).start()
        threading.Thread(target=lambda: [None for _ in self.process.stdout], daemon=True).start()  # never blocks

    def _wait_listening(self) -> str:
        for line in self.process.stdout:
            if "listening on" in line:
                return line.split("listening on ", 1)[1].split()[0]
        raise RuntimeError(f"tritonrl serve did not start (exit {self.process.wait()}): "
                           f"{self.process.stderr.read()[-2000:]}")

    def stop(self) -> dict:
        began = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(300)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        return {"exit_status": code, "drain_s": round(time.monotonic() - began, 2)}


# ---------------------------------------------------------------- load
def load_mix() -> list[tuple[str, dict, bool]]:
    """(kind, item JSON, expected correct): one honest kernel, then the cheap rejections."""
    from tritonrl.tasks import get_task

    relu = get_task("l1_relu")
    fallback = (ROOT / "examples" / "solutions" / "l1_gelu.py").read_text()
    return [("honest", {"task": "l1_relu", "code": relu.solution}, True),
            ("no_code", {"task": "l1_relu", "completion": "I would rather not write a kernel today."}, False),
            ("pytorch_fallback", {"task": "l1_gelu", "code": fallback}, False),
            ("no_kernel", {"task": "l1_relu", "code": NO_KERNEL}, False),
            ("syntax_error", {"task": "l1_relu", "code": "class ModelNew(:\n    pass\n"}, False)]


def item_at(k: int, honest_every: int, mix: list) -> tuple[str, dict, bool]:
    rejections = mix[1:]
    return mix[0] if k % honest_every == 0 else rejections[k % len(rejections)]


def run_client(url: str, client: int, args: argparse.Namespace, mix: list) -> list[dict]:
    import httpx

    records = []
    with httpx.Client(base_url=url, timeout=600) as http:
        for r in range(args.requests):
            k0 = (client * args.requests + r) * args.items
            chosen = [item_at(k0 + j, args.honest_every, mix) for j in range(args.items)]
            body = {"items": [item for _, item, _ in chosen]}
            began = time.monotonic()
            response = http.post("/v1/verify", json=body)
            seconds = time.monotonic() - began
            results = response.json().get("results", []) if response.status_code == 200 else []
            expected = [(kind, correct) for kind, _, correct in chosen]
            records.append({"id": f"{client}:{r}", "status": response.status_code, "seconds": seconds,
                            "as_expected": len(results) == len(expected) and all(
                                v["correct"] == want and not v["infrastructure_failure"]
                                for v, (_, want) in zip(results, expected)),
                            "kinds": [kind for kind, _ in expected]})
    return records


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_load(args: argparse.Namespace) -> dict:
    import httpx

    mix = load_mix()
    service = ServiceProcess(args.device, args.workers, args.timeout_s, extra=service_settings(args))
    try:
        health = httpx.get(service.url + "/health").json()
        began = time.monotonic()
        with ThreadPoolExecutor(args.clients) as pool:
            parts = list(pool.map(lambda c: run_client(service.url, c, args, mix), range(args.clients)))
        wall = time.monotonic() - began
        metrics = _metrics(httpx.get(service.url + "/metrics").text)
    finally:
        stopped = service.stop()
    records = [r for part in parts for r in part]
    ids = [r["id"] for r in records]
    latencies = [r["seconds"] for r in records]
    statuses: dict[str, int] = {}
    for r in records:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    expected = args.clients * args.requests
    return {
        "clients": args.clients, "requests_per_client": args.requests, "items_per_request": args.items,
        "honest_every": args.honest_every, "requests": len(records), "items": len(records) * args.items,
        "answered_once": len(ids) == len(set(ids)) == expected, "statuses": statuses,
        "all_verdicts_as_expected": all(r["as_expected"] for r in records),
        "wall_s": round(wall, 2), "requests_per_s": round(len(records) / wall, 2),
        "items_per_s": round(len(records) * args.items / wall, 2),
        "latency_s": {"p50": round(percentile(latencies, 0.5), 4), "p90": round(percentile(latencies, 0.9), 4),
                      "p99": round(percentile(latencies, 0.99), 4), "max": round(max(latencies), 4),
                      "mean": round(statistics.fmean(latencies), 4)},
        "latency_p50_s_by_kind": {kind: round(percentile([r["seconds"] for r in records if r["kinds"][0] == kind],
                                                         0.5), 4) for kind, _, _ in mix},
        "service": {"start_s": service.start_s, "concurrency": health.get("concurrency"), **metrics, **stopped},
    }


def _metrics(text: str) -> dict:
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    batches = values.get("tritonrl_serve_batch_items_count", 0.0)
    return {"batches": int(batches),
            "mean_batch_items": round(values.get("tritonrl_serve_batch_items_sum", 0.0) / batches, 2) if batches
            else None, "busy_s": round(values.get("tritonrl_serve_busy_seconds_total", 0.0), 2),
            "infrastructure_failures": int(values.get("tritonrl_serve_infrastructure_failures_total", 0.0))}


# ---------------------------------------------------------------- in-process against HTTP
def suite_items(names: str) -> list:
    from tritonrl.tasks import load_tasks
    from tritonrl.verify import VerifyItem

    wanted = {n.strip() for n in names.split(",") if n.strip()}
    tasks = [t for t in load_tasks("bundled") if t.solution and (not wanted or t.name in wanted)]
    return [VerifyItem(t, code=t.solution) for t in tasks]


def timed(verifier, items: list) -> tuple[float, list]:
    began = time.monotonic()
    results = verifier.verify_many(items)
    return time.monotonic() - began, results


def run_compare(args: argparse.Namespace, save=lambda part: None) -> dict:
    """Both sides started once and kept warm (one untimed pass each: references computed, Triton's caches filled),
    then ``--repeats`` timed passes of each, in orders that alternate (ABC, CBA, ...: drift in the machine falls on
    every side alike). ``--control`` adds a second in-process ``Verifier``: the spread between the two in-process
    sides is what sides differing only in their processes (their salts, so their inputs, their zygotes' layout, their
    history) read apart, the noise an overhead must stand out of. Each pass also records the seconds charged to the
    candidates' children (``stage_s["charged"]``, summed) and the machine's load. ``save(part)`` is called after
    every pass with what is known so far, so a run cut short still leaves its passes."""
    from tritonrl.config import VerifyConfig
    from tritonrl.verify import Verifier
    from tritonrl.verify.parent.http_backend import HttpVerifier

    items = suite_items(args.tasks)
    config = VerifyConfig(device=args.device, workers=args.workers, timeout_s=args.timeout_s,
                          timing=not args.no_timing,
                          **({"workers_per_gpu": args.workers_per_gpu} if args.workers_per_gpu else {}))
    names = ["in_process", "http", *(["control"] if args.control else [])]
    part: dict = {"tasks": len(items), "repeats": args.repeats, "timing": config.timing,
                  "workers_per_gpu": config.workers_per_gpu, "warm_s": {}, "order": [],
                  "passes_s": {name: [] for name in names}, "charged_s": {name: [] for name in names},
                  "load_average": []}
    verdicts: dict[str, list] = {}
    service = ServiceProcess(args.device, args.workers, args.timeout_s, extra=service_settings(args))
    try:
        with Verifier(config) as local, \
                HttpVerifier(VerifyConfig(backend="http", http_url=service.url, http_batch_items=len(items))) as http, \
                (Verifier(config) if args.control else contextlib.nullcontext()) as control:
            sides = {"in_process": local, "http": http, "control": control}
            for verifier in (local, control):
                if verifier is not None:
                    verifier.start(wait=True)
            for name in names:
                part["warm_s"][name] = round(timed(sides[name], items)[0], 3)
                _progress(f"warm {name}: {part['warm_s'][name]} s", part, save)
            for repeat in range(args.repeats):
                order = names if repeat % 2 == 0 else names[::-1]
                part["order"].append(order)
                part["load_average"].append(round(os.getloadavg()[0], 2))
                for name in order:
                    seconds, results = timed(sides[name], items)
                    part["passes_s"][name].append(round(seconds, 3))
                    part["charged_s"][name].append(round(charged(results), 3))
                    verdicts.setdefault(name, [r.correct for r in results])
                    _progress(f"pass {repeat + 1} {name}: {seconds:.1f} s", part, save)
    finally:
        service.stop()
    return {**part, **compare_figures(part["passes_s"]),
            "same_verdicts": all(v == verdicts["in_process"] for v in verdicts.values()),
            "correct": sum(verdicts["http"])}


def charged(results: list) -> float:
    """The seconds charged to the candidates' children in one pass (their waits for the child's answers, by stage)."""
    return sum(sum((r.timing.get("stage_s") or {}).get("charged", {}).values()) for r in results)


def compare_figures(passes_s: dict[str, list[float]]) -> dict:
    """``overhead``: median(http) / median(in_process) - 1 (the issue's bar: at most 5%); with a control side, also
    ``control_spread`` (median(control) / median(in_process) - 1: an A/A run's difference) and ``http_over_control``
    (the overhead against the other in-process side)."""
    median = {name: statistics.median(values) for name, values in passes_s.items() if values}
    overhead = median["http"] / median["in_process"] - 1
    figures = {"median_in_process_s": round(median["in_process"], 3), "median_http_s": round(median["http"], 3),
               "overhead": round(overhead, 4), "overhead_within_5pct": overhead <= 0.05}
    if "control" in median:
        figures.update(median_control_s=round(median["control"], 3),
                       control_spread=round(median["control"] / median["in_process"] - 1, 4),
                       http_over_control=round(median["http"] / median["control"] - 1, 4))
    return figures


def _progress(line: str, part: dict, save) -> None:
    print(f"serve_load: {line}", flush=True)
    save({**part, "partial": True})


# ---------------------------------------------------------------- the report
def machine_info(device: str) -> dict:
    import torch

    from tritonrl.util.gitinfo import commit

    info = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "host": platform.node(),
            "python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
            "device": device, "commit": commit(short=True), "load_average_at_start": list(os.getloadavg())}
    if torch.cuda.is_available() and device != "cpu":
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def _write(out: str, report: dict) -> None:
    """The report, whole or as far as it got, replacing the file at once."""
    from tritonrl.util.atomic import write_atomic

    write_atomic(out, json.dumps(report, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = {"machine": machine_info(args.device),
              "command": "PYTHONPATH=src python " + " ".join(["benchmarks/serve_load.py", *(argv or sys.argv[1:])])}
    if args.part in ("load", "both"):
        report["load"] = run_load(args)
    if args.part in ("compare", "both"):
        report["compare"] = run_compare(args, save=lambda part: _write(args.out, {**report, "compare": part}))
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    _write(args.out, report)
    print(json.dumps(report, indent=2))
    load = report.get("load", {})
    ok = (not load or (load["answered_once"] and load["all_verdicts_as_expected"]
                       and load["statuses"] == {"200": load["requests"]}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
