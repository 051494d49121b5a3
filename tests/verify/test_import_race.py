"""torch's and Triton's imports of each other are not thread-safe: a thread importing ``triton`` while another imports
``torch.utils.flop_counter`` fails one import in importlib as a deadlock and the other with ``KeyError: 'triton'``
(CI, 2026-11-29: an eval's verdict became a ``verifier_error`` that way). A verifier imports them before its threads
do (``objects.import_known_modules``), and the static checks never take a module that failed to import for a
missing one."""

import subprocess
import sys
import textwrap

import pytest

from tritonrl.verify.static import objects

RACE = textwrap.dedent("""
    import importlib, threading, sys
    import torch
    {setup}
    failed = []
    def run(name):
        try:
            importlib.import_module(name)
        except BaseException as exc:
            failed.append(f"{{name}}: {{exc!r}}")
    threads = [threading.Thread(target=run, args=(n,)) for n in ("triton", "torch.utils.flop_counter")]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print(failed)
""")


def race(setup: str) -> str:
    proc = subprocess.run([sys.executable, "-c", RACE.format(setup=setup)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_threads_import_torch_and_triton_safely_after_a_verifier_is_made(tmp_path):
    pytest.importorskip("triton")
    setup = f"from tritonrl.config import VerifyConfig; from tritonrl.verify import Verifier; Verifier(VerifyConfig(cache_dir={str(tmp_path)!r}))"
    for _ in range(3):  # without the verifier's imports, about two runs in three fail (this machine, 2 cores)
        assert race(setup) == "[]"


def test_a_failed_import_is_raised_and_not_remembered_as_a_missing_module(monkeypatch):
    real = objects.importlib.import_module
    objects._root.cache_clear()
    monkeypatch.setattr(objects.importlib, "import_module", lambda name: (_ for _ in ()).throw(RuntimeError("deadlock")))
    with pytest.raises(RuntimeError, match="deadlock"):
        objects._root("numpy")
    monkeypatch.setattr(objects.importlib, "import_module", real)
    assert objects._root("numpy") is sys.modules["numpy"]


def test_a_module_that_is_not_installed_is_missing(monkeypatch):
    objects._root.cache_clear()
    def absent(name):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    monkeypatch.setattr(objects.importlib, "import_module", absent)
    assert objects._root("numpy") is objects._MISSING
    objects._root.cache_clear()
