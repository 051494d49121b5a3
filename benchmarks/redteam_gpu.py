"""A red team's cases judged on this machine's device, in the reward's modes: correctness only (timing off, what RL
training uses most) and with timing (the reward pays for speed), each with the static checks on.

    # on the lent GPU (carry .whl): one verifier a mode, every case in one batch, JSON as each mode ends
    bash scripts/device_wheels.sh install && PYTHONPATH=$PWD/src:/tmp/site python3 benchmarks/redteam_gpu.py \\
        benchmarks/redteam/r29 --out $OUT/redteam_r29_gpu.json
    # here, on the CPU (Triton's interpreter; timing is unavailable, so one mode)
    PYTHONPATH=src python benchmarks/redteam_gpu.py benchmarks/redteam/r29 --device cpu --modes correctness

A case is a candidate solution file headed like the verifier's fixtures: ``# task: NAME`` (a bundled task, or a
task file's path) and ``# expect: reject`` (an attack) or ``# expect: done`` (an honest kernel to accept;
``accept`` is read alike). A case is as expected when an attack is not correct and an honest kernel is correct;
with timing, an attack that is correct is reported with its speedup (a stolen speedup is the finding). Written to
``--out``: the machine, date, commit, and per mode the verdicts (``correct``, ``reason``, ``flags``, ``speedup``)
and the cases not as expected.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
import sys
from pathlib import Path

HONEST = ("done", "accept")  # the red teams' two words for a kernel to accept
MODES = {"correctness": {"timing": False}, "timing": {"timing": True}}


def header(text: str, key: str) -> str | None:
    found = re.search(rf"^# {key}:\s*(\S+)", text, re.MULTILINE)
    return found.group(1) if found else None


def cases(directory: Path) -> list[dict]:
    """Every ``*.py`` case of ``directory`` with its task and expectation; one without both is an error."""
    found = []
    for path in sorted(directory.glob("*.py")):
        text = path.read_text()
        task, expect = header(text, "task"), header(text, "expect")
        if task is None or expect not in HONEST + ("reject",):
            raise SystemExit(f"redteam_gpu: {path}: needs '# task: NAME' and '# expect: reject|done|accept'")
        found.append({"case": path.stem, "task": task, "expect": expect, "code": text})
    if not found:
        raise SystemExit(f"redteam_gpu: no *.py cases in {directory}")
    return found


def judge(found: list[dict], device: str, mode: str, timeout_s: float) -> list[dict]:
    from tritonrl.config import VerifyConfig
    from tritonrl.tasks import get_task
    from tritonrl.verify import Verifier, VerifyItem

    config = VerifyConfig(device=device, timeout_s=timeout_s, **MODES[mode])
    with Verifier(config) as verifier:
        results = verifier.verify_many([VerifyItem(get_task(c["task"]), code=c["code"]) for c in found])
    rows = []
    for c, r in zip(found, results, strict=True):
        as_expected = bool(r.correct) == (c["expect"] in HONEST)
        rows.append({"case": c["case"], "task": c["task"], "expect": c["expect"], "correct": r.correct,
                     "stage": str(r.stage), "flags": list(r.flags), "error": (r.error or "")[:400],
                     "declined": r.declined, "speedup": r.speedup, "as_expected": as_expected})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("cases", help="a directory of case files")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--modes", default="correctness,timing", help="comma-separated: correctness, timing")
    p.add_argument("--timeout", type=float, default=120.0, help="per-candidate limit, seconds")
    p.add_argument("--out", default=None, help="the JSON (written after each mode)")
    args = p.parse_args(argv)
    directory = Path(args.cases)
    if not directory.is_dir():
        raise SystemExit(f"redteam_gpu: {directory}: no such directory")
    modes = args.modes.split(",")
    if set(modes) - set(MODES):
        raise SystemExit(f"redteam_gpu: --modes: {sorted(set(modes) - set(MODES))} unknown; use {', '.join(MODES)}")
    found = cases(directory)
    from tritonrl.util.gitinfo import commit as checkout_commit

    commit = checkout_commit(short=True)  # "+dirty" on a tree that differs from it (a device's copy)
    report = {"command": " ".join(sys.argv), "date": datetime.datetime.now(datetime.UTC).isoformat(),
              "commit": commit or None, "machine": platform.node(), "device": args.device, "cases": len(found),
              "modes": {}}
    if args.device == "cuda":
        import torch
        report["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    for mode in modes:
        rows = judge(found, args.device, mode, args.timeout)
        report["modes"][mode] = {"rows": rows, "not_as_expected": [r["case"] for r in rows if not r["as_expected"]]}
        print(f"{mode}: {sum(r['as_expected'] for r in rows)} of {len(rows)} as expected; not: "
              f"{report['modes'][mode]['not_as_expected']}", flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1, default=str) + "\n")
    return 0 if all(not m["not_as_expected"] for m in report["modes"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
