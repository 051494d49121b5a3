"""The package's layers hold: no import climbs, function-local imports included (import-linter, through grimp).

    lint-imports                      # from the repository root: every contract in pyproject.toml
    pytest tests/test_layers.py

The contracts live in ``[tool.importlinter]`` of ``pyproject.toml`` (``layers-*``: the top-level packages; the
verifier's own beside them). From the top: ``__main__`` > ``cli`` > ``pipeline`` > ``train`` | ``evaluation`` |
``taskgen`` (siblings that never import each other) > ``common`` > ``verify`` > ``tasks`` |
``extract`` > ``config`` > ``util`` > ``errors``; each imports only what lies below it (docs/architecture.md).
"""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_import_contract_is_kept():
    # import-linter comes with pytest in the dev extra: a missing one fails here rather than skipping the rule
    # a child process: grimp must read this checkout's src/, whatever copy of tritonrl the venv has installed
    # the layers-* contracts (tests/test_architecture.py checks the verifier's verify-* ones)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ids = tuple(c["id"] for c in config["tool"]["importlinter"]["contracts"] if c["id"].startswith("layers-"))
    assert ids, "no layers-* contract in pyproject.toml"
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                           f"sys.exit(lint_imports(limit_to_contracts={ids!r}, no_cache=True, no_logo=True))"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    report = done.stdout[done.stdout.find("Contracts"):] + done.stderr
    assert done.returncode == 0, f"an import climbs a layer or crosses siblings:\n{report}"


def test_the_contract_reads_this_checkout():
    """grimp analyses the source tree under test, not an installed copy elsewhere."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    where = subprocess.run([sys.executable, "-c", "import tritonrl; print(tritonrl.__file__)"], cwd=ROOT, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(ROOT / "src"), where


def test_the_package_root_holds_entry_points_only():
    """At most 8 modules beside the packages of ``src/tritonrl``: entry points and the few truly top-level ones."""
    modules = sorted(p.name for p in (ROOT / "src" / "tritonrl").glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "config.py", "errors.py", "extract.py", "pipeline.py"], modules


def test_no_two_modules_share_a_name():
    """One name per idea: no two modules of ``src/tritonrl`` share a file stem, a plural counting as the same stem
    (``result``/``results``); ``__init__``, ``__main__`` and the CLI's command modules (``cli/train.py`` is the
    ``train`` command) aside, and the bundled task files, which are data."""
    package = ROOT / "src" / "tritonrl"
    seen: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if path.stem in ("__init__", "__main__") or relative.parts[0] == "cli" or "bundled" in relative.parts:
            continue
        seen.setdefault(path.stem.removesuffix("s"), []).append(str(relative))
    shared = {stem: paths for stem, paths in seen.items() if len(paths) > 1}
    assert not shared, f"modules that share a name: {shared}"
