"""The README's quick start: `make smoke` and `make test` set up .venv only when it is missing, then run the main
job or the tests; CI (.ci/run) runs exactly those two commands."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def dry_run(target: str, venv: Path) -> list[str]:
    """The commands ``make TARGET`` would run (``make -n``), with .venv at ``venv``."""
    done = subprocess.run(["make", "-n", "-C", str(ROOT), f"VENV={venv}", target], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if not line.startswith("make")]


def test_each_target_sets_up_first_only_when_the_venv_is_missing(tmp_path):
    venv = tmp_path / "venv"
    setup = f"VENV={venv} bash scripts/setup.sh"
    assert dry_run("smoke", venv) == [setup, f"{venv}/bin/tritonrl pipeline --config configs/smoke.yaml"]
    assert dry_run("test", venv) == [setup, f"{venv}/bin/python -m pytest -q"]
    assert dry_run("test-full", venv) == [setup, f"{venv}/bin/python -m pytest -q -m 'not gpu and not slow'"]
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "tritonrl").touch()  # the last thing set-up installs
    assert dry_run("smoke", venv) == [f"{venv}/bin/tritonrl pipeline --config configs/smoke.yaml"]
    assert dry_run("test", venv) == [f"{venv}/bin/python -m pytest -q"]


def test_ci_runs_the_readme_quick_start():
    quick = README.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in quick.splitlines() if line.strip()]
    assert commands == ["make smoke", "make test", "make test-full"]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci == ["make smoke", "make test-full"]  # the full suite holds the quick one: CI runs each test once
