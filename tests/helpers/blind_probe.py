"""Run one integrity fixture's forward under this process's own Monitor with the CPU interpreter's address check
off, as a GPU runs a compiled kernel (no address is checked there), watched (a correctness trial: ``Monitor._blind``
per launch) or coarse (a timed call: ``Monitor.tainted_blind`` around it, as the harness holds it): ``tests/verify/test_blinding.py`` runs it in a
subprocess (a Monitor, once installed, stays). Prints one JSON line per forward: whether the output is torch's
answer, whether it holds NaN (what a blinded storage reads as), and whether the model's buffers hold their bytes
again."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from contextlib import nullcontext

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from tritonrl.verify.child.monitor import Monitor  # noqa: E402
from tritonrl.verify.child.provenance import INPUT  # noqa: E402


def main(path: str, blind: bool, answer: str, coarse: bool = False) -> None:
    monitor = Monitor(path)
    monitor.install()
    import triton.runtime.interpreter as interpreter

    memory = monitor._memory  # as on a GPU: no address is checked (the native functions are Triton's own again)
    for name, native in memory._native.items():
        setattr(memory._real, name, native)
    interpreter._interpreter, monitor._memory = memory._real, None
    if not blind:
        monitor._blind = lambda given: nullcontext()
    spec = importlib.util.spec_from_file_location("fixture", path)
    module = importlib.util.module_from_spec(spec)
    with monitor.phase("import"):  # as the child: import, build, then forwards, each watched
        spec.loader.exec_module(module)
    with monitor.phase("build"):
        model = module.ModelNew()
    torch.manual_seed(0)
    arena = torch.randn(16 * 64)  # the judge's arena: pinned, its data the task's inputs
    monitor.origins.trust(arena, INPUT, pin=True)
    x = arena.view(16, 64)
    buffers = [b.clone() for b in model.buffers()]  # the init-time table: blinded during launches, then restored
    expected = torch.softmax(x, dim=1) if answer == "softmax" else torch.nn.functional.gelu(x)
    for _ in range(2):
        # a coarse forward (an unwatched timed call) held in tainted_blind as the harness holds it, or a watched one
        hold = monitor.tainted_blind(model) if coarse and blind else nullcontext()
        with torch.no_grad(), hold:
            out, _record = monitor.run_forward(model, [x], coarse=coarse)
        print(json.dumps({"torch_answer": bool(torch.allclose(out, expected, atol=1e-3)),
                          "nan": bool(torch.isnan(out).any()),
                          "buffers_intact": all(torch.equal(a, b) for a, b in zip(buffers, model.buffers()))}),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] == "on", sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "coarse")
