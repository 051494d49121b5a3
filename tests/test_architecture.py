"""The verifier's layout states its roles, and the import rules between them hold (``[tool.importlinter]``).

``tritonrl.verify`` is laid out by role (``docs/architecture.md``): ``parent/`` (the caller's process), ``zygote``
(forks judges and children), ``judge/`` (trusted, decides verdicts), ``child/`` (runs the candidate),
``static/`` (the parent's checks of the source) and ``shared/`` (what they all use). import-linter checks the
``verify-*`` contracts of ``pyproject.toml`` on the whole import graph, imports inside functions and indirect
ones included.
"""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import importlinter  # noqa: F401 - the dev extra has it; without it this test fails rather than skips

ROOT = Path(__file__).resolve().parents[1]
VERIFY = ROOT / "src" / "tritonrl" / "verify"
ROLES = {"parent", "zygote", "judge", "child", "static", "shared"}


def _contracts() -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [c for c in config["tool"]["importlinter"]["contracts"] if c["id"].startswith("verify-")]


def test_the_import_contracts_hold():
    # In a process of its own: import-linter's entry point reconfigures logging (dictConfig disables every logger
    # that exists, so later tests' caplog would see nothing) and puts the working directory on sys.path.
    ids = tuple(c["id"] for c in _contracts())
    run = ("import sys; from importlinter.cli import lint_imports; "
           f"sys.exit(lint_imports(config_filename='pyproject.toml', limit_to_contracts={ids!r}, no_cache=True, "
           "no_logo=True))")
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", run], cwd=ROOT, env={**os.environ, "PYTHONPATH": path},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"an import contract is broken (pyproject.toml):\n{done.stdout}{done.stderr}"


def test_every_role_has_a_contract():
    sources = {m for c in _contracts() for m in c.get("source_modules", ())}
    assert {f"tritonrl.verify.{role}" for role in ROLES} <= sources, sources


def test_every_verify_module_has_a_role():
    """Nothing lies flat in ``verify/`` but the public API and the zygote: a new module goes into its role's
    folder."""
    loose = {p.stem for p in VERIFY.glob("*.py")} - {"__init__"} - ROLES
    folders = {p.name for p in VERIFY.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert not loose, f"modules of no role in verify/: {sorted(loose)}"
    assert folders <= ROLES, f"folders of no known role in verify/: {sorted(folders - ROLES)}"
