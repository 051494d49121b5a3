#!/usr/bin/env bash
# The wheels a run on the lent GPU machines needs and their image lacks (Python 3.12, no package registry there):
# pydantic and its parts (tritonrl's config; typing-extensions new enough for pydantic-core), TRL and datasets, and
# the serve extra's web stack (tritonrl serve and its HTTP client: benchmarks/serve_load.py --device cuda), and
# py-spy (a sampling profiler: /tmp/site/bin/py-spy, for a verdict's seconds on a GPU; docs/benchmarks.md).
#
#   bash scripts/device_wheels.sh            # here, once: saves them in .whl (~4.5 MB, ignored by git)
#   bash scripts/device_wheels.sh install    # there (carry .whl): installs them into /tmp/site, once a machine
#
# benchmarks/gpu_tests.sh and benchmarks/studies/demo4_device.sh run the install step and put /tmp/site on PYTHONPATH.
set -euo pipefail
cd "$(dirname "$0")/.."
SITE=/tmp/site
if [ "${1:-}" = install ]; then
  ls .whl/*.whl >/dev/null 2>&1 || { echo "device_wheels: no .whl/*.whl here (carry .whl)" >&2; exit 2; }
  # one marker a wheel set: a machine that already has them (a second call in one hold) skips the install
  marker="$SITE/.installed-$(ls .whl/*.whl | xargs -n1 basename | sort | sha256sum | cut -c1-16)"
  [ -e "$marker" ] && exit 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
    || { echo "device_wheels: the carried wheels did not install" >&2; exit 2; }
  touch "$marker"
  exit 0
fi
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 typing-extensions==4.16.0 \
  trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 \
  fastapi==0.165.0 starlette==1.10.0 annotated-doc==0.0.7 opentelemetry-api==1.45.2 uvicorn==0.54.0 click==8.5.1 \
  h11==0.16.0 httpx==0.28.1 httpcore==1.0.9 anyio==4.16.0 idna==3.20 certifi==2026.10.19.post1 \
  prometheus-client==0.26.0
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_5_x86_64 -d .whl py-spy==0.4.3
ls .whl
