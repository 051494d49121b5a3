"""Do two judgements of the same solutions agree within their speedup intervals? Calibrates ``RUN_TO_RUN_REL``.

    python benchmarks/probes/timing_repeatability.py benchmarks/results/bundled_accept_h100.jsonl \\
        benchmarks/results/bundled_accept_h100_repeat.jsonl --recorded-systematic 0.05

Reads two ``bundled_accept_gpu.py`` outputs (the last row per task counts) and pairs the tasks judged correct in
both. Each row's ``speedup_ci95`` holds the run's own (bootstrap) interval widened by the systematic term in force
when it was recorded (``--recorded-systematic``); that term is taken out, and for each candidate term ``s`` the
pairs whose speedups agree under ``timing_stats.estimates_agree`` (both intervals widened by ``s``) are counted.
The smallest ``s`` at which about 95% of the pairs agree is what the verifier's ``RUN_TO_RUN_REL`` should be.
CPU only: it reads files.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from tritonrl.verify.shared.timing_stats import estimates_agree, widen

TERMS = (0.0, 0.02, 0.03, 0.05, 0.08, 0.10, 0.12, 0.15, 0.20)


def last_rows(path: str) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    try:
        with open(path) as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    rows[row["task"]] = row
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"cannot read {path}: {exc}") from None
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", help="a bundled_accept_gpu.py JSONL")
    parser.add_argument("second", help="another judgement of (some of) the same tasks")
    parser.add_argument("--recorded-systematic", type=float, default=0.10,
                        help="the systematic term the rows' intervals were recorded with (default 0.10)")
    args = parser.parse_args(argv)
    first, second = last_rows(args.first), last_rows(args.second)
    pairs = []
    for task in sorted(set(first) & set(second)):
        a, b = first[task], second[task]
        if a.get("speedup") and b.get("speedup") and a.get("speedup_ci95") and b.get("speedup_ci95"):
            own = [widen(*r["speedup_ci95"], systematic_rel=-args.recorded_systematic / (1 + args.recorded_systematic))
                   for r in (a, b)]
            pairs.append((task, a["speedup"], own[0], b["speedup"], own[1]))
    if not pairs:
        raise SystemExit("no task was judged correct, with an interval, in both files")
    print(f"{len(pairs)} tasks judged correct in both runs")
    for task, sa, _, sb, _ in sorted(pairs, key=lambda p: -abs(math.log(p[3] / p[1]))):
        print(f"  {task:30s} {sa:8.3f} {sb:8.3f}  ratio {sb / sa:.3f}")
    print("systematic term  pairs agreeing")
    for s in TERMS:
        agree = sum(estimates_agree(sa, widen(*ia, systematic_rel=s), sb, widen(*ib, systematic_rel=s))
                    for _, sa, ia, sb, ib in pairs)
        print(f"  {s:5.2f}          {agree}/{len(pairs)} ({agree / len(pairs):.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
