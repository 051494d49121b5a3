#!/usr/bin/env bash
# The wheels a run on the lent GPU machines needs and their image lacks (Python 3.12, no package registry there):
# pydantic and its parts (tritonrl's config), TRL and datasets (training). Saved in .whl (ignored by git); carry
# `.whl` with the device call, and the device scripts (benchmarks/gpu_tests.sh, benchmarks/demo4_device.sh)
# install them into /tmp/site before anything imports tritonrl.
#
#   bash scripts/device_wheels.sh          # here, once: ~4 MB
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
ls .whl
