#!/usr/bin/env bash
# Set up tritonrl in a virtual environment (.venv) on a fresh machine.
#
#   bash scripts/setup.sh            # core + training + Ray + the HTTP service + dev tools
#   EXTRAS=dev bash scripts/setup.sh # core + dev tools only
#
# On a machine without an NVIDIA GPU, PyTorch's CPU build is installed first, so pip never pulls
# gigabytes of CUDA wheels: a local CPU wheel if pip's configured find-links has one, else PyTorch's CPU
# index (TORCH_CPU_INDEX). Kernels then run under Triton's interpreter (TRITON_INTERPRET=1).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
EXTRAS="${EXTRAS:-train,scale,serve,dev}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
TORCH_CPU_INDEX="${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)

if "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "setup: torch already installed: $("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "setup: NVIDIA GPU found: installing the CUDA build of torch"
  "${PIP[@]}" "torch==${TORCH_VERSION}"
else
  echo "setup: no GPU: installing PyTorch's CPU build"
  # "+cpu" matches only a CPU wheel (a local one from pip's find-links, or the CPU index); PyPI has
  # none, so where no local wheel exists this fails fast and the CPU index is used.
  "${PIP[@]}" "torch==${TORCH_VERSION}+cpu" 2>/dev/null \
    || "${PIP[@]}" "torch==${TORCH_VERSION}" --index-url "$TORCH_CPU_INDEX"
fi

"${PIP[@]}" -e ".[${EXTRAS}]"
echo "setup: done. Activate with: source $VENV/bin/activate"
