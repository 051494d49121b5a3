"""The two CPU suites: `make test` (quick) and `make test-full` (CI). The full suite's own modules are named in
tests/conftest.py; a renamed or deleted module must leave that list, or its tests would silently join the quick one."""

import subprocess
import sys
from pathlib import Path

from tests.conftest import FULL_SUITE_ONLY

ROOT = Path(__file__).resolve().parents[1]


def test_every_full_suite_module_exists():
    missing = sorted(p for p in FULL_SUITE_ONLY if not (ROOT / p).is_file())
    assert not missing, f"tests/conftest.py names modules that are gone: {missing}"


def test_the_quick_suite_skips_the_full_modules_and_the_full_suite_runs_them():
    def collected(*marker):
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              *marker, "tests/test_readme.py", "tests/test_extract.py"],
                             cwd=ROOT, capture_output=True, text=True, timeout=120).stdout
        return {line.split("::")[0] for line in out.splitlines() if "::" in line}

    assert collected() == {"tests/test_extract.py"}
    assert collected("-m", "not gpu and not slow") == {"tests/test_extract.py", "tests/test_readme.py"}
