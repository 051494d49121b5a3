"""What the copy search (``copies.copied_from``) costs a launch of a many-launch honest forward.

    PYTHONPATH=src python benchmarks/probes/copy_search_cost.py --device cuda --elements 67108864 --out cost.json

The shape of ``integrity/r16_i8_relu_one_launch_per_chunk`` at the timing shape (4096 x 16384): a ReLU written
one chunk a launch into a fresh output, whose unwritten rest is laundered (``UNSET``) and handed to every launch,
so every launch searches it for a copy of what it wrote. The output's unwritten bytes hold the watch's poison
(``--fill poison``: half the dtype's largest, one of a GPU forward's three values) or the CPU child's noise
(``--fill noise``). Reports the seconds a launch (median of ``--launches``), with the classes narrowed to what the
storage may hold (``may_hold``, as ``provenance.credit_launch`` calls it) and without.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from tritonrl.verify.child import copies
from tritonrl.verify.child.provenance import _LAUNDERED, INPUT, KERNEL, UNSET


def _launch_seconds(device: str, elements: int, fill: str, launches: int, narrowed: bool) -> list[float]:
    torch.manual_seed(0)
    x = torch.randn(elements, device=device)
    out = torch.empty(elements, device=device)
    if fill == "poison":
        out.fill_(torch.finfo(torch.float32).max / 2)
    else:
        out.view(torch.int32).copy_(torch.randint(-2**31, 2**31 - 1, (elements,), dtype=torch.int32, device=device))
    out_mask = torch.full((elements * 4,), UNSET, dtype=torch.uint8, device=device)
    x_mask = torch.full((elements * 4,), INPUT, dtype=torch.uint8, device=device)
    held = {id(out): {UNSET, KERNEL}, id(x): {INPUT}}
    narrowing = {"may_hold": lambda t: held[id(t)]} if narrowed else {}  # none: also runs against a tree without it
    chunk = -(-elements // 100)
    seconds = []
    for i in range(launches):
        start = i * chunk
        out[start:start + chunk] = x[start:start + chunk].clamp_min(0)
        out_mask[4 * start:4 * (start + chunk)] = KERNEL
        elems = torch.zeros(elements, dtype=torch.bool, device=device)
        elems[start:start + chunk] = True
        if device == "cuda":
            torch.cuda.synchronize()
        began = time.perf_counter()
        found = copies.copied_from(out, elems, [(out, out_mask), (x, x_mask)], _LAUNDERED, **narrowing)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - began)
        if found is not None:
            raise SystemExit(f"copy_search_cost: an honest ReLU's launch {i} was taken for a copy (class {found})")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--elements", type=int, default=1 << 22, help="the output's elements (default 2^22)")
    parser.add_argument("--launches", type=int, default=5, help="launches timed (default 5)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args(argv)
    rows = []
    for fill in ("poison", "noise"):
        for narrowed in (True, False):
            seconds = _launch_seconds(args.device, args.elements, fill, args.launches, narrowed)
            rows.append({"fill": fill, "classes_narrowed": narrowed, "median_s": statistics.median(seconds),
                         "seconds": seconds})
            print(f"{fill:6} narrowed={narrowed!s:5} median {statistics.median(seconds):.4f} s a launch", flush=True)
    result = {"device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
              "elements": args.elements, "launches": args.launches, "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
