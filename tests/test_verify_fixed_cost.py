"""What ``tritonrl verify`` costs before its verdict when the static checks reject the kernel: no verifier start
(zygote, judge, child) and no torch import, once the static checks have asked torch their questions on this
machine (``tritonrl.verify.static.facts``); checked with ``python -X importtime``, which lists every import."""

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REJECTED = ROOT / "examples" / "solutions" / "l1_gelu.py"  # torch.nn.functional.gelu in forward: torch_compute
BOUND_S = 30.0  # generous: 1.6-1.9 s measured at a load of 6-12 on 2 cores; a verifier start took 8-20 s there


def imported(stderr: str) -> set[str]:
    """The modules ``-X importtime`` reports (``import time: self | cumulative | name``)."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_a_static_rejection_imports_no_torch_and_starts_no_verifier(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("TRITONRL_STATIC_FACTS", None)
    command = [sys.executable, "-m", "tritonrl", "verify", "--task", "l1_relu", "--solution", str(REJECTED)]
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 1 and "REJECTED" in first.stdout  # asked torch: its answers are kept
    assert list((tmp_path / "cache" / "tritonrl" / "static-facts").glob("*.json"))

    start = time.monotonic()
    again = subprocess.run([sys.executable, "-X", "importtime", *command[1:]], capture_output=True, text=True, env=env,
                           timeout=300)
    elapsed_s = time.monotonic() - start
    assert again.returncode == 1, again.stderr[-2000:]
    assert again.stdout.splitlines()[0] == f"REJECTED {REJECTED}: stage static [torch_compute] reward 0.00"
    modules = imported(again.stderr)
    assert "tritonrl.verify.static" in modules  # the listing works: the checks themselves are in it
    assert not {m for m in modules if m.split(".")[0] in ("torch", "triton", "numpy")}, "imported torch/triton/numpy"
    assert "tritonrl.verify.parent.verifier" not in modules and "tritonrl.verify.parent.zygote_client" not in modules
    assert elapsed_s < BOUND_S, elapsed_s
    assert first.stdout == again.stdout  # the same verdict from the kept answers as from torch itself
