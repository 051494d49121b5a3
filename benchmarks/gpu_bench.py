"""Shared pieces of the GPU benchmarks: resized tasks, mutated candidates, the JSON report.

Used by ``timing_stability.py``, ``verify_gpu_throughput.py`` and ``fullsize_memory.py`` (run them from the repo
root with ``PYTHONPATH=src`` or after ``pip install -e .``); not a benchmark itself.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
from datetime import date

from tritonrl.tasks.model import KernelTask
from tritonrl.tasks.variants import find_constants, rewrite_constants

os.environ.setdefault("TRITON_INTERPRET", "0")  # real GPU kernels; the interpreter is for CPU machines


def parse_sizes(text: str) -> dict[str, int]:
    """``"batch_size=128,in_features=4096"`` -> {name: int}."""
    return {k.strip(): int(v) for k, v in (part.split("=") for part in text.split(",") if part.strip())}


def resized(task: KernelTask, sizes: dict[str, int]) -> KernelTask:
    """The task with module-level constants replaced by name; raises if a name is not a constant."""
    constants = find_constants(task.source)
    edits = {i: sizes[c.name] for i, c in enumerate(constants) if c.name in sizes}
    missing = set(sizes) - {constants[i].name for i in edits}
    if missing:
        raise SystemExit(f"{task.name} has no integer constant(s) {sorted(missing)}")
    tag = "_".join(f"{k}{v}" for k, v in sizes.items())
    return task.with_variant(f"sized_{tag}", rewrite_constants(task.source, constants, edits))


def mutants(task: KernelTask) -> dict[str, str]:
    """Bad candidates made from the task's solution by simple mutations, by kind."""
    solution = task.solution
    wrong = re.sub(r"tl\.store\(([^,]+),\s*([A-Za-z_]\w*)", r"tl.store(\1, \2 * 1.01", solution, count=1)
    fallback = (task.source.replace("class Model(", "class ModelNew(") +
                "\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\ndef unused_kernel(x_ptr):\n"
                "    pass\n")
    hang = re.sub(r"(\n    def forward\(self[^\n]*\):\n)", r"\1        while True:\n            pass\n", solution,
                  count=1)
    return {"wrong_constant": wrong, "pytorch_fallback": fallback, "hang": hang,
            "syntax_error": solution[: len(solution) // 2]}


def load_module(source: str, name: str):
    """Import ``source`` from a real file (Triton's @jit reads its source back through ``inspect``)."""
    import importlib.util
    import tempfile

    path = os.path.join(tempfile.mkdtemp(prefix="bench-mod-"), f"{name}.py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gpu_name() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10, check=True).stdout
        return out.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--out", help="also write the JSON report to this file")


def report(args: argparse.Namespace, data: dict, table: list[str]) -> None:
    data = {"date": date.today().isoformat(), "gpu": gpu_name(), **data}
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(data, fh, indent=2, default=str)
    print(json.dumps(data, indent=2, default=str) if args.json else "\n".join(table))
