"""Mutation benchmark: does the verifier reject real bugs? Single-point mutants of the bundled solutions, judged
by an independent oracle, then by the project's ``Verifier``.

    PYTHONPATH=src .venv/bin/python benchmarks/mutation.py                        # 12 solutions, 10 mutants each
    PYTHONPATH=src .venv/bin/python benchmarks/mutation.py --solutions l1_softmax --per-solution 4 --json out.json

Mutants (``MUTATORS``, one change each, in a ``@triton.jit`` body unless said): a comparison's operator (``<`` and
``<=``, ``>`` and ``>=``), a mask's bound off by one (``n`` to ``n + 1`` / ``n - 1``), an integer constant off by one,
the max subtraction dropped (``x - tl.max(x)`` to ``x``), a block size halved or doubled (in ``forward``), an
arithmetic operator swapped (``+``/``-``, ``*``/``/``), a load's or store's mask dropped, a loop's bound one short
(``range(a, b - 1, c)``), a load's ``other`` set to 0. Each solution's mutation sites are drawn in turn by kind
(a fixed seed), up to ``--per-solution``.

The oracle shares nothing with the verifier but the task files: it runs the mutant in this process under Triton's
interpreter on many inputs (the task's own shape, every size at ``2^j + 1``, at ``2^j - 1``, a small edge shape and
a random odd one; each with ``randn``-style values as the task makes them, x100, of mixed scale, every element
times a factor log-uniform in [1e-3, 1e3], and x100 moved below zero by twice their largest magnitude), against the reference ``Model`` run in float64 with the same weights,
and checks every load, store and atomic of every launch against the extent of each tensor handed to it (a read past
the end of an input is a bug whatever it reads). An input set on which the original solution itself fails (the
reference is not finite there, or the original is off) is left out for that solution. A mutant is *wrong* when on
some input set it raises, touches memory outside its tensors, returns NaN/Inf where the reference is finite, or is
off by more than ``ORACLE_RTOL`` of ``max(|expected|, RMS)`` anywhere. Then every mutant and every original goes
through ``Verifier`` (CPU, default config): the figure is the share of wrong mutants it rejects, and every original
must be accepted. Writes ``benchmarks/results/mutation_cpu.json`` (``--json`` elsewhere).
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # the oracle runs kernels in this process, before Triton is imported

import argparse
import ast
import copy
import importlib.util
import json
import platform
import random
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path

import numpy as np
import torch

DEFAULT_SOLUTIONS = ("l1_softmax", "l1_log_softmax", "l1_sum_dim", "l1_mean_dim", "l1_max_dim", "l1_layernorm",
                     "l1_rmsnorm", "l1_matmul", "l1_matvec", "l2_add_relu_mul_residual", "l2_gemm_sigmoid_sum",
                     "l2_gemm_logsumexp_relu")
ORACLE_RTOL = 1e-3  # a mutant off by more than this of max(|expected|, RMS) somewhere is wrong (fp32 is ~1e-6)
VALUE_KINDS = ("randn", "large", "mixed", "negative")
RESULTS = Path(__file__).parent / "results" / "mutation_cpu.json"


# ---------------------------------------------------------------- mutants
@dataclass
class Mutant:
    solution: str
    kind: str
    line: int
    description: str
    source: str = field(repr=False)


def _kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    def jitted(fn: ast.FunctionDef) -> bool:
        return any("jit" in ast.unparse(d) for d in fn.decorator_list)
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and jitted(n)]


def _forward(tree: ast.Module) -> list[ast.AST]:
    return [n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body
            if isinstance(n, ast.FunctionDef) and n.name == "forward"]


def _call_name(node: ast.AST) -> str:
    return ast.unparse(node.func) if isinstance(node, ast.Call) else ""


_CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_ARITH_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}


def _sites(tree: ast.Module) -> list[tuple[str, ast.AST, str]]:
    """(kind, node, what) of every place a mutator applies."""
    found = []
    for fn in _kernels(tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP_SWAP:
                found.append(("compare_op", node, "comparison operator swapped"))
                if isinstance(node.ops[0], (ast.Lt, ast.LtE)) and isinstance(node.comparators[0], (ast.Name, ast.Attribute)):
                    found.append(("mask_bound_plus1", node, "mask bound + 1"))
                    found.append(("mask_bound_minus1", node, "mask bound - 1"))
            elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH_SWAP:
                if isinstance(node.op, ast.Sub) and "max" in ast.unparse(node.right):
                    found.append(("drop_max_subtraction", node, "max subtraction dropped"))
                found.append(("arith_swap", node, f"{type(node.op).__name__} swapped"))
            elif isinstance(node, ast.Call) and _call_name(node) in ("tl.load", "tl.store"):
                if any(k.arg == "mask" for k in node.keywords):
                    found.append(("drop_mask", node, f"{_call_name(node)} mask dropped"))
                if any(k.arg == "other" and ast.unparse(k.value) not in ("0", "0.0") for k in node.keywords):
                    found.append(("other_zero", node, "load's other set to 0"))
            elif isinstance(node, ast.Call) and _call_name(node) in ("range", "tl.range", "tl.static_range") \
                    and len(node.args) >= 2:
                found.append(("loop_bound", node, "loop bound one short"))
            elif isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
                found.append(("const_off_by_one", node, f"constant {node.value} + 1"))
    for fn in _forward(tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.keyword) and node.arg and "BLOCK" in node.arg.upper() \
                    and isinstance(node.value, ast.Constant) and type(node.value.value) is int:
                found.append(("block_size", node.value, f"{node.arg} halved"))
            if isinstance(node, ast.Assign) and any("BLOCK" in ast.unparse(t).upper() for t in node.targets):
                for const in (n for n in ast.walk(node.value) if isinstance(n, ast.Constant)
                              and type(n.value) is int and n.value >= 8):
                    found.append(("block_size", const, f"block size {const.value} halved"))
    return found


def _apply(kind: str, node: ast.AST) -> None:
    """Mutate ``node`` in place (a copy of the tree)."""
    if kind == "compare_op":
        node.ops = [_CMP_SWAP[type(node.ops[0])]()]
    elif kind in ("mask_bound_plus1", "mask_bound_minus1"):
        op = ast.Add() if kind.endswith("plus1") else ast.Sub()
        node.comparators = [ast.BinOp(node.comparators[0], op, ast.Constant(1))]
    elif kind == "drop_max_subtraction":
        node.op, node.right = ast.Sub(), ast.Constant(0.0)
    elif kind == "arith_swap":
        node.op = _ARITH_SWAP[type(node.op)]()
    elif kind == "drop_mask":
        node.keywords = [k for k in node.keywords if k.arg not in ("mask", "other")]
    elif kind == "other_zero":
        for k in node.keywords:
            if k.arg == "other":
                k.value = ast.Constant(0.0)
    elif kind == "loop_bound":
        node.args[1] = ast.BinOp(node.args[1], ast.Sub(), ast.Constant(1))
    elif kind == "const_off_by_one":
        node.value = node.value + 1
    elif kind == "block_size":
        node.value = max(1, node.value // 2)


def make_mutants(name: str, source: str, per_solution: int, seed: int = 0) -> list[Mutant]:
    """Up to ``per_solution`` mutants of one solution: sites drawn kind by kind in turn (fixed seed); a mutant
    whose text equals the original's or an earlier mutant's is skipped."""
    tree = ast.parse(source)
    by_kind: dict[str, list[int]] = {}
    for index, (kind, _, _) in enumerate(_sites(tree)):
        by_kind.setdefault(kind, []).append(index)
    rng = random.Random(f"{seed}:{name}")
    for indices in by_kind.values():
        rng.shuffle(indices)
    kinds = sorted(by_kind, key=lambda k: rng.random())
    seen, mutants = {ast.unparse(tree)}, []
    while len(mutants) < per_solution and any(by_kind.values()):
        for kind in kinds:
            if not by_kind[kind] or len(mutants) >= per_solution:
                continue
            index = by_kind[kind].pop()
            mutated = copy.deepcopy(tree)
            _, node, what = _sites(mutated)[index]
            _apply(kind, node)
            text = ast.unparse(ast.fix_missing_locations(mutated))
            if text not in seen:
                seen.add(text)
                mutants.append(Mutant(name, kind, getattr(node, "lineno", 0), what, text))
    return mutants


# ---------------------------------------------------------------- the oracle
class OutOfBounds(RuntimeError):
    pass


class _Bounds:
    """Every memory operation of the interpreter checked against the extents of the running launch's tensors."""

    def __init__(self) -> None:
        import triton.runtime.interpreter as interpreter

        self.module, self.real, self.ranges = interpreter, interpreter._interpreter, []
        self.grid_call = interpreter.GridExecutor.__call__

    def __enter__(self) -> _Bounds:
        bounds = self

        class Memory:
            def __getattr__(self, name):
                return getattr(bounds.real, name)

            def load(self, ptrs, mask, other, dtype):
                bounds.check(ptrs, mask, np.dtype(dtype).itemsize)
                return bounds.real.load(ptrs, mask, other, dtype)

            def store(self, ptrs, value, mask):
                bounds.check(ptrs, mask, np.asarray(value).dtype.itemsize)
                return bounds.real.store(ptrs, value, mask)

            def atomic_rmw(self, op, ptrs, val, mask, sem):
                bounds.check(ptrs, mask, np.asarray(val).dtype.itemsize)
                return bounds.real.atomic_rmw(op, ptrs, val, mask, sem)

            def atomic_cas(self, ptrs, cmp, val, sem):
                bounds.check(ptrs, None, np.asarray(cmp).dtype.itemsize)
                return bounds.real.atomic_cas(ptrs, cmp, val, sem)

        def grid_call(executor, *args, **kwargs):
            tensors = [a for a in [*args, *kwargs.values()] if isinstance(a, torch.Tensor) and a.numel()]
            spans = []
            for t in tensors:
                last = sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
                spans.append((t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()))
            bounds.ranges.append(spans)
            try:
                return bounds.grid_call(executor, *args, **kwargs)
            finally:
                bounds.ranges.pop()

        self.module._interpreter = Memory()
        self.module.GridExecutor.__call__ = grid_call
        return self

    def __exit__(self, *exc) -> None:
        self.module._interpreter = self.real
        self.module.GridExecutor.__call__ = self.grid_call

    def check(self, ptrs, mask, size: int) -> None:
        if not self.ranges:
            return
        p = np.asarray(ptrs, dtype=np.uint64).reshape(-1)
        if mask is not None:
            p = p[np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(ptrs)).reshape(-1)]
        inside = np.zeros(p.shape, dtype=bool)
        for lo, hi in self.ranges[-1]:
            inside |= (p >= np.uint64(lo)) & (p + np.uint64(size) <= np.uint64(hi))
        if not inside.all():
            raise OutOfBounds(f"address {int(p[~inside][0]):#x} outside every tensor of the launch")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shapes(source: str) -> list[tuple[str, str]]:
    """(label, task source) at the oracle's shapes: its own, every size at 2^j + 1, at 2^j - 1, a small edge, odd."""
    from tritonrl.tasks.variants import find_constants, rewrite_constants

    everything = find_constants(source)
    rng = random.Random(0)

    def sized(rule):
        new = {}
        for i, c in enumerate(everything):
            if c.kind not in ("batch", "spatial", "feature", "shape"):
                continue
            values = c.value if isinstance(c.value, tuple) else (c.value,)
            moved = tuple(rule(v) if v > 4 else v for v in values)
            new[i] = moved if isinstance(c.value, tuple) else moved[0]
        return rewrite_constants(source, everything, new)

    power = lambda v: 1 << (v.bit_length() - 1)  # noqa: E731
    return [("own", source), ("2^j+1", sized(lambda v: power(v) + 1)),
            ("2^j-1", sized(lambda v: max(5, power(v) - 1))), ("small_edge", sized(lambda v: max(5, power(v) // 4 + 1))),
            ("odd", sized(lambda v: max(5, int(v * rng.uniform(0.7, 1.3)) | 1)))]


def _inputs(module, kind: str, seed: int) -> list:
    torch.manual_seed(seed)
    made = []
    for x in module.get_inputs():
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            if kind == "large":
                x = x * 100
            elif kind == "mixed":
                x = x * 1000.0 ** (torch.rand(x.shape, dtype=torch.float64) * 2 - 1).float()
            elif kind == "negative":  # every value far below zero: a max padded with 0, exp underflowing to 0/0
                x = x * 100
                x = x - (2 * x.abs().max() + 1)
        made.append(x)
    return made


def _models(task, solution, seed: int):
    torch.manual_seed(seed)
    ref = task.Model(*task.get_init_inputs())
    torch.manual_seed(seed)
    new = solution.ModelNew(*task.get_init_inputs())
    with torch.no_grad():  # both get the same (perturbed) weights, in parameter order
        for (_, p), (_, q) in zip(ref.named_parameters(), new.named_parameters()):
            p.add_(torch.randn_like(p) * 0.1 * (float(p.abs().mean()) or 1.0))
            if p.shape == q.shape:
                q.copy_(p)
    return ref.double().eval(), new.eval()


def oracle_problem(task, solution, inputs: list, seed: int) -> str | None:
    """Why ``solution`` is wrong on these inputs (of the float64 reference), or None."""
    ref, new = _models(task, solution, seed)
    with torch.no_grad():
        expected = ref(*[x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs])
        try:
            with _Bounds():
                got = new(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
        except Exception as exc:  # noqa: BLE001 - a mutant that raises is wrong (the interpreter wraps ours)
            if isinstance(exc, OutOfBounds) or "OutOfBounds" in str(exc):
                return "reads or writes outside its tensors"
            return f"raises {type(exc).__name__}: {str(exc)[:120]}"
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    got = got if isinstance(got, (tuple, list)) else (got,)
    if len(got) != len(expected):
        return "output count"
    for e, a in zip(expected, got):
        if not isinstance(a, torch.Tensor) or a.shape != e.shape:
            return "output shape"
        e, a = e.double(), a.double()
        if not torch.isfinite(e).all():
            return "reference not finite"
        if not torch.isfinite(a).all():
            return "NaN/Inf where the reference is finite"
        scale = torch.maximum(e.abs(), e.square().mean().sqrt())
        if ((a - e).abs() > ORACLE_RTOL * scale + 1e-12).any():
            return f"off by {float(((a - e).abs() / (scale + 1e-30)).max()):.3g} of the scale"
    return None


@dataclass
class Case:
    label: str
    source: str
    kind: str


def oracle_cases(task_source: str, original_path: Path, workdir: Path) -> tuple[list[Case], list[str]]:
    """The input sets on which the original solution passes, and why the others were left out."""
    original = _load(original_path, "oracle_original")
    cases, left_out = [], []
    for label, source in _shapes(task_source):
        path = workdir / f"task_{label.replace('^', '').replace('+', 'p').replace('-', 'm')}.py"
        path.write_text(source)
        try:
            task = _load(path, f"oracle_task_{path.stem}")
            task.get_inputs()
        except Exception as exc:  # noqa: BLE001 - a shape the task does not take
            left_out.append(f"{label}: the task does not run ({type(exc).__name__})")
            continue
        for kind in VALUE_KINDS:
            problem = oracle_problem(task, original, _inputs(task, kind, 1), 0)
            if problem:
                left_out.append(f"{label}/{kind}: the original fails ({problem})")
            else:
                cases.append(Case(label, str(path), kind))
    return cases, left_out


def oracle_verdict(cases: list[Case], mutant_path: Path, tag: str) -> str | None:
    try:
        solution = _load(mutant_path, f"oracle_mutant_{tag}")
    except Exception as exc:  # noqa: BLE001
        return f"does not import ({type(exc).__name__})"
    for case in cases:
        task = _load(Path(case.source), f"oracle_task_{Path(case.source).stem}")
        problem = oracle_problem(task, solution, _inputs(task, case.kind, 1), 0)
        if problem:
            return f"{case.label}/{case.kind}: {problem}"
    return None


# ---------------------------------------------------------------- the run
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--solutions", nargs="*", default=list(DEFAULT_SOLUTIONS))
    parser.add_argument("--per-solution", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", default=str(RESULTS))
    args = parser.parse_args()

    from tritonrl.config import VerifyConfig
    from tritonrl.tasks import load_tasks
    from tritonrl.verify import Verifier, VerifyItem

    tasks = {t.name: t for t in load_tasks("bundled") if t.solution}
    solutions_dir = Path(__file__).resolve().parents[1] / "src" / "tritonrl" / "tasks" / "bundled" / "solutions"
    start = time.monotonic()
    rows, originals = [], []
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        for name in args.solutions:
            workdir = Path(tmp) / name
            workdir.mkdir()
            task = tasks[name]
            cases, left_out = oracle_cases(task.source, solutions_dir / f"{name}.py", workdir)
            originals.append({"solution": name, "input_sets": len(cases), "left_out": left_out})
            for k, mutant in enumerate(make_mutants(name, task.solution, args.per_solution)):
                path = workdir / f"mutant_{k}.py"
                path.write_text(mutant.source)
                wrong = oracle_verdict(cases, path, f"{name}_{k}")
                rows.append({**{f: v for f, v in asdict(mutant).items() if f != "source"},
                             "wrong": wrong, "source": mutant.source})
            print(f"{name}: {len(cases)} input sets, {sum(r['solution'] == name and bool(r['wrong']) for r in rows)}"
                  f" wrong of {sum(r['solution'] == name for r in rows)} mutants ({time.monotonic() - start:.0f} s)",
                  flush=True)
    oracle_s = time.monotonic() - start
    items = [VerifyItem(tasks[r["solution"]], code=r["source"]) for r in rows]
    items += [VerifyItem(tasks[name], code=tasks[name].solution) for name in args.solutions]
    with Verifier(VerifyConfig(device="cpu", workers=args.workers)) as verifier:
        results = verifier.verify_many(items)
    for row, result in zip(rows, results):
        row.update(accepted=bool(result.correct), flags=result.flags, stage=result.stage.value)
        del row["source"]
    for entry, result in zip(originals, results[len(rows):]):
        entry.update(accepted=bool(result.correct), flags=result.flags, error=(result.error or "")[:200])
    summary = summarize(rows, originals)
    summary.update(machine=f"{platform.node()} ({os.cpu_count()} cores, shared)", date=str(date.today()),
                   command="PYTHONPATH=src python benchmarks/mutation.py " + " ".join(sys.argv[1:]),
                   oracle_s=round(oracle_s, 1), verify_s=round(time.monotonic() - start - oracle_s, 1))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"summary": summary, "originals": originals, "mutants": rows}, indent=1))
    print(json.dumps(summary, indent=1))
    return 0 if summary["originals_accepted"] == summary["originals"] else 1


def summarize(rows: list[dict], originals: list[dict]) -> dict:
    wrong = [r for r in rows if r["wrong"]]
    rejected = [r for r in wrong if not r["accepted"]]
    kinds = {}
    for r in rows:
        k = kinds.setdefault(r["kind"], {"mutants": 0, "wrong": 0, "rejected": 0})
        k["mutants"] += 1
        k["wrong"] += bool(r["wrong"])
        k["rejected"] += bool(r["wrong"]) and not r["accepted"]
    return {"mutants": len(rows), "wrong": len(wrong), "wrong_rejected": len(rejected),
            "rejected_share": round(len(rejected) / len(wrong), 4) if wrong else None,
            "accepted_wrong": [f"{r['solution']}:{r['kind']}@{r['line']} ({r['wrong']})"
                               for r in wrong if r["accepted"]],
            "not_wrong_rejected": [f"{r['solution']}:{r['kind']}@{r['line']} {r['flags']}"
                                   for r in rows if not r["wrong"] and not r["accepted"]],
            "originals": len(originals), "originals_accepted": sum(o["accepted"] for o in originals),
            "kinds": kinds}


if __name__ == "__main__":
    sys.exit(main())
