#!/usr/bin/env bash
# A side environment with the GPU machines' Triton (3.6) on this CPU: the verifier hooks Triton's internals, and a
# hook that works on 3.9 (here, CI) may fail on 3.6 (docs/verifier.md, "Another stack"). Python 3.11, the local
# CPU torch, triton 3.6.0 from the registry; the project from src/ (PYTHONPATH). Usage:
#   bash scripts/triton36_env.sh [DIR]        # default /tmp/v36
#   PYTHONPATH=src DIR/bin/python -m pytest -q tests/verify/test_known_good.py tests/verify/test_hooks.py
set -euo pipefail
dir="${1:-/tmp/v36}"
python="$(command -v python3.11 || true)"
[ -n "$python" ] || python="$(ls -d "$HOME"/.pyenv/versions/3.11*/bin/python3.11 2>/dev/null | head -1)"
[ -n "$python" ] || { echo "triton36_env: no python3.11 found" >&2; exit 2; }
torch_wheel="$(ls /opt/wheels/torch-*+cpu-cp311-*.whl 2>/dev/null | head -1 || true)"
torch_spec="${torch_wheel:-torch==2.13.0}"
"$python" -m venv "$dir"
"$dir/bin/pip" install -q "$torch_spec" triton==3.6.0 numpy tqdm "pydantic>=2.6" pyyaml packaging pytest \
  hypothesis pytest-timeout accelerate
"$dir/bin/python" -c "import torch, triton; print('triton36_env:', '$dir', 'torch', torch.__version__, 'triton', triton.__version__)"
echo "run: PYTHONPATH=src $dir/bin/python -m pytest -q tests/verify/test_known_good.py tests/verify/test_hooks.py"
