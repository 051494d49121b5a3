"""The house's import graph: no circles among the package's modules, and verdicts never import rewards.

Module-level imports only (function-local imports are deliberate lazy loads). A circle makes import order
matter and hides which part depends on which; ``verify/`` importing ``tritonrl.common.reward`` would mean the verifier
computes rewards, which belong to its callers (training, evaluation, the CLI).
"""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tritonrl"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """tritonrl modules imported at module level (``if TYPE_CHECKING`` blocks excluded)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if isinstance(node, (ast.Import, ast.ImportFrom, ast.Try)) else [node]:
            if isinstance(sub, ast.Import):
                found |= {a.name for a in sub.names if a.name.startswith("tritonrl")}
            elif isinstance(sub, ast.ImportFrom) and sub.module and sub.module.startswith("tritonrl"):
                found.add(sub.module)
                found |= {f"{sub.module}.{a.name}" for a in sub.names if f"{sub.module}.{a.name}" in modules}
    return {m for m in found if m in modules}


def _graph() -> dict[str, set[str]]:
    paths = [p for p in SRC.rglob("*.py") if "bundled" not in p.parts]
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): _imports(p, modules) - {_module_name(p)} for p in paths}


def test_no_import_circles():
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    # a package importing its own submodule (tritonrl.verify -> tritonrl.verify.shared.flags) is not a circle
    cycles = [c for c in cycles if not all(c[0].startswith(m) or m.startswith(c[0]) for m in c)]
    assert not cycles, f"import circles: {cycles}"


def test_registry_covers_every_configurable_algorithm():
    import typing

    from tritonrl.common import stages
    from tritonrl.config import RLRunConfig

    hint = typing.get_type_hints(RLRunConfig)["algo"]
    assert set(stages.ALGOS) == set(typing.get_args(hint))
    assert stages.RL_STAGES == ("grpo", "rloo", "best_of_n")
    for algorithm in stages.ALGORITHMS.values():  # every entry point resolves, without running it
        module, _, function = algorithm.entry.partition(":")
        assert (SRC / "train" / f"{module.rsplit('.', 1)[1]}.py").is_file()
        assert f"def {function}(" in (SRC / "train" / f"{module.rsplit('.', 1)[1]}.py").read_text()


def _every_import(path: Path, modules: set[str]) -> set[str]:
    """tritonrl modules imported anywhere in the file, function-local (lazy) imports included."""
    found: set[str] = set()
    for sub in ast.walk(ast.parse(path.read_text())):
        if isinstance(sub, ast.ImportFrom) and sub.module and sub.module.startswith("tritonrl"):
            found.add(sub.module)
        elif isinstance(sub, ast.Import):
            found |= {a.name for a in sub.names}
    return {m for m in found if m in modules}


def test_the_static_checks_import_no_sibling_in_a_circle_not_even_lazily():
    """The static checks once imported each other back and forth (compute <-> values, files <-> safety) through
    function-local imports; their shared names now live in ``vocab``, so their graph, lazy imports included, has
    no circle."""
    folder = SRC / "verify" / "static"
    paths = sorted(folder.glob("*.py"))
    modules = {_module_name(p) for p in paths}
    graph = {_module_name(p): _every_import(p, modules) - {_module_name(p)} for p in paths}
    graph.pop("tritonrl.verify.static", None)  # the package registers the checks: it imports them, none imports it

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = sorted(m for m in graph if reaches(m, m, {m}))
    assert not circles, circles
