"""What the candidate's sandbox applies on this machine, and what it costs a child's start.

    PYTHONPATH=src python benchmarks/probes/sandbox_probe.py [--device cuda] [--n 4]

Judges the bundled l1_relu solution ``n`` times and prints each verdict's protections (``timing["sandbox"]``), the
child's report when one is missing, and the child's start steps (seconds: isolate, toolchain, cuda, native,
seccomp ...). A quick check on a new machine before a long run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tritonrl.config import VerifyConfig
from tritonrl.tasks import get_task
from tritonrl.verify import Verifier, VerifyItem

SOLUTION = Path(__file__).resolve().parents[1] / "src" / "tritonrl" / "tasks" / "bundled" / "solutions" / "l1_relu.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--n", type=int, default=4)
    args = parser.parse_args()
    code = SOLUTION.read_text()
    with Verifier(VerifyConfig(device=args.device, workers=2)) as verifier:
        items = [VerifyItem(get_task("l1_relu"), code=code + f"\n# {i}\n") for i in range(args.n)]
        for result in verifier.verify_many(items):
            print(json.dumps({"correct": result.correct, "flags": result.flags, "error": result.error,
                              "sandbox": result.timing.get("sandbox"), "isolation": result.timing.get("isolation"),
                              "child_start": result.timing.get("stage_s", {}).get("child_start"),
                              "speedup": result.speedup}))


if __name__ == "__main__":
    main()
