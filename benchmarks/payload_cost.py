"""What one correctness trial's data costs the verifier on the CPU side, step by step, at a given size.

    .venv/bin/python benchmarks/payload_cost.py                     # a 256 MiB fp32 output and input, 3 repeats
    .venv/bin/python benchmarks/payload_cost.py --numel 16777216 --repeats 5 --json

The child packs a trial's output and its inputs after the forward (``harness._pack``: the output copied to the
CPU, the inputs as digests), serializes, digests and writes them (``protocol.write_payload``); the parent reads,
digests, loads (``protocol.tensors_from_bytes``) and compares them with the reference (``compare.compare_trial``).
Each step is timed on its own (median of ``--repeats``), on CPU tensors, so the figures are the host's share of a
trial whatever the GPU (on a GPU the device-to-host copy comes on top).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


def _read(path: str) -> bytearray:
    """As ``sandbox.Child.read_payload`` reads a payload: into a bytearray the tensors then share."""
    with open(path, "rb") as fh:
        data = bytearray(os.fstat(fh.fileno()).st_size)
        fh.readinto(data)
    return data


def measure(numel: int, repeats: int) -> dict[str, float]:
    import torch

    from tritonrl.verify import protocol
    from tritonrl.verify.judge.compare import compare_trial
    from tritonrl.verify.harness import _pack

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(numel, generator=gen)
    out = torch.relu(x)
    ref = {"outputs": [out.clone()], "devices": ["cpu"], "inputs_after": [protocol.tensor_digest(x)]}
    path = os.path.join(tempfile.mkdtemp(prefix="payload-cost-"), "trial.pt")
    times: dict[str, list[float]] = {}

    def timed(name, fn, *args):
        start = time.perf_counter()
        value = fn(*args)
        times.setdefault(name, []).append(time.perf_counter() - start)
        return value

    tolerance = {"float32": 1e-4}
    for _ in range(repeats):
        packed = timed("pack (copies)", _pack, out, [x])
        timed("serialize, digest, write", protocol.write_payload, path, packed)
        read = timed("read", _read, path)
        timed("digest (parent)", protocol.digest, read)
        got = timed("load", protocol.tensors_from_bytes, read)
        mismatch = timed("compare", compare_trial, ref, got, tolerance, tolerance, "full")
        assert mismatch is None, mismatch.message
    os.remove(path)
    result = {name: statistics.median(values) for name, values in times.items()}
    result["total"] = sum(result.values())
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--numel", type=int, default=64 << 20, help="fp32 elements of the output and the input")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    if args.numel < 1 or args.repeats < 1:
        parser.error("--numel and --repeats must be positive")
    result = measure(args.numel, args.repeats)
    if args.json:
        print(json.dumps({"numel": args.numel, "repeats": args.repeats, "seconds": result}, indent=2))
    else:
        print(f"{args.numel} fp32 elements ({args.numel * 4 / 2**20:.0f} MiB) per tensor, median of {args.repeats}:")
        for name, seconds in result.items():
            print(f"  {name:26s} {seconds:7.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
