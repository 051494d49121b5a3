"""The verifier's layout states its roles, and the import rules between them hold (``.importlinter``).

``tritonrl.verify`` is laid out by role (``docs/architecture.md``): ``parent/`` (the caller's process), ``zygote``
(forks judges and children), ``judge/`` (trusted, decides verdicts), ``child/`` (runs the candidate),
``static/`` (the parent's checks of the source) and ``shared/`` (what they all use). import-linter checks the
contracts on the whole import graph, imports inside functions and indirect ones included.
"""

import configparser
import os
import subprocess
import sys
from pathlib import Path

import importlinter  # noqa: F401 - the dev extra has it; without it this test fails rather than skips

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".importlinter"
VERIFY = ROOT / "src" / "tritonrl" / "verify"
ROLES = {"parent", "zygote", "judge", "child", "static", "shared"}


def test_the_import_contracts_hold():
    # In a process of its own: import-linter's entry point reconfigures logging (dictConfig disables every logger
    # that exists, so later tests' caplog would see nothing) and puts the working directory on sys.path.
    run = ("import sys; from importlinter.cli import lint_imports; "
           f"sys.exit(lint_imports(config_filename={str(CONFIG)!r}, no_cache=True, no_logo=True))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", run], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"an import contract is broken (see .importlinter):\n{done.stdout}{done.stderr}"


def test_every_role_has_a_contract():
    config = configparser.ConfigParser()
    config.read(CONFIG)
    sources = {m.strip() for name in config.sections() if name.startswith("importlinter:contract:")
               for m in config[name].get("source_modules", "").split()}
    assert {f"tritonrl.verify.{role}" for role in ROLES} <= sources, sources


def test_every_verify_module_has_a_role():
    """Nothing lies flat in ``verify/`` but the public API and the zygote: a new module goes into its role's folder."""
    loose = {p.stem for p in VERIFY.glob("*.py")} - {"__init__"} - ROLES
    folders = {p.name for p in VERIFY.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert not loose, f"modules of no role in verify/: {sorted(loose)}"
    assert folders <= ROLES, f"folders of no known role in verify/: {sorted(folders - ROLES)}"
    assert os.path.isfile(VERIFY / "zygote.py")
