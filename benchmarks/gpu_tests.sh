#!/usr/bin/env bash
# The GPU tests in parts that each fit one device command (at most 8 minutes a part), on a machine with CUDA.
#
#   bash benchmarks/gpu_tests.sh timing funnel          # parts, in order; each prints a time-stamped -v log
#   OUT=/some/dir bash benchmarks/gpu_tests.sh redteam  # logs and JUnit XML go to $OUT (default: ./gpu-test-logs)
#
# On the lent machines carry `.whl` (made here by scripts/device_wheels.sh): their image has no pydantic.
#
# Parts (together, every test `pytest -m gpu` collects, except the two named below, plus the red-team and
# integrity fixtures judged on the device):
#   timing     tests/verify/test_gpu_timing.py and the GPU test of test_verifier.py
#   funnel     tests/verify/test_gpu.py without the bundled sweep (benchmarks/bundled_gpu.py does that, resumably)
#              and without the three-children xfail
#   redteam    tests/verify/test_redteam.py under CUDA (every fixture judged on the device)
#   integrity  tests/verify/test_integrity.py under CUDA, as four parts: integrity_a (rounds 3-6), integrity_b
#              (rounds 7-19), integrity_c (rounds 20-32), integrity_d (the rest: i*, f51_* and later rounds)
#   busy       tests/verify/test_gpu_busy_batch.py: honest memory-bound kernels alone and in a batch of 32+
# A part that outlives PART_TIMEOUT_S (default 480) is killed; its log shows how far it got. WORKERS_PER_GPU
# (default 1, the verifier's) candidates are judged at once in the redteam and integrity parts (their batches).
# SELECT narrows every part to the tests a pytest -k expression names (ANDed with the part's own selection):
#   SELECT='r16_i8 or r17_i8' bash benchmarks/gpu_tests.sh integrity_b     # two fixtures of a part again
set -uo pipefail
cd "$(dirname "$0")/.."
# Carried wheels (scripts/device_wheels.sh: pydantic for the config, ...), where the machine's image lacks them
if ls .whl/*.whl >/dev/null 2>&1; then
  bash scripts/device_wheels.sh install || exit 2
  PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export TRITONRL_TEST_WORKERS_PER_GPU="${WORKERS_PER_GPU:-1}"
export PYTHONUNBUFFERED=1 TRITONRL_TEST_CUDA=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-gpu-test-logs}"
mkdir -p "$OUT"
PYTEST=(python3 -m pytest -v -p no:cacheprovider --durations=10)
status=0
stamp() { while IFS= read -r line; do printf '%(%T)T %s\n' -1 "$line"; done; }

# integrity runs as four parts: whole, it is past a part's 8 minutes (on one H200 at 966eb6c, rounds 3-6 took 221 s
# for 138 cases, and the other 538 did not end in 540 s). Each part selects by round; the last takes what is left.
INTEGRITY_A="r3_ or r4_ or r5_ or r6_"
INTEGRITY_B="$(printf 'r%s_ or ' $(seq 7 18))r19_"
INTEGRITY_C="$(printf 'r%s_ or ' $(seq 20 31))r32_"
parts=()
for part in "$@"; do
  if [ "$part" = integrity ]; then parts+=(integrity_a integrity_b integrity_c integrity_d); else parts+=("$part"); fi
done

for part in "${parts[@]}"; do
  case "$part" in
    timing) args=(-m gpu tests/verify/test_gpu_timing.py tests/verify/test_verifier.py) ;;
    funnel) args=(-m gpu tests/verify/test_gpu.py -k "not bundled and not three_children") ;;
    redteam) args=(-m "not slow" tests/verify/test_redteam.py) ;;
    integrity_a) args=(-m "not slow" tests/verify/test_integrity.py -k "$INTEGRITY_A") ;;
    integrity_b) args=(-m "not slow" tests/verify/test_integrity.py -k "$INTEGRITY_B") ;;
    integrity_c) args=(-m "not slow" tests/verify/test_integrity.py -k "$INTEGRITY_C") ;;
    integrity_d) args=(-m "not slow" tests/verify/test_integrity.py
                       -k "not ($INTEGRITY_A or $INTEGRITY_B or $INTEGRITY_C)") ;;
    busy) args=(-m gpu tests/verify/test_gpu_busy_batch.py) ;;
    *) echo "gpu_tests.sh: unknown part '$part' (timing, funnel, redteam, integrity, integrity_a..integrity_d, busy)" >&2; exit 2 ;;
  esac
  if [ -n "${SELECT:-}" ]; then
    selected=0
    for i in "${!args[@]}"; do
      if [ "${args[$i]}" = -k ]; then args[$((i + 1))]="(${args[$((i + 1))]}) and ($SELECT)"; selected=1; fi
    done
    [ "$selected" = 1 ] || args+=(-k "$SELECT")
  fi
  echo "== part $part: ${args[*]}"
  timeout "${PART_TIMEOUT_S:-480}" "${PYTEST[@]}" "${args[@]}" --junitxml="$OUT/$part.xml" 2>&1 \
    | stamp | tee "$OUT/$part.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 124 ] && echo "== part $part: killed after ${PART_TIMEOUT_S:-480} s"
  echo "== part $part: exit $rc"
  [ "$rc" = 0 ] || status=1
done
exit "$status"
