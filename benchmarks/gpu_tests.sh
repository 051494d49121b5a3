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
#   integrity  tests/verify/test_integrity.py under CUDA, as two parts: integrity_a (rounds 3-6), integrity_b (the rest)
#   busy       tests/verify/test_gpu_busy_batch.py: honest memory-bound kernels alone and in a batch of 32+
# A part that outlives PART_TIMEOUT_S (default 480) is killed; its log shows how far it got.
#
# On a host with several GPUs, GPUS=N runs the parts at once, N at a time, each pinned to one GPU
# (CUDA_VISIBLE_DEVICES; part i on GPU i mod N, a GPU's parts in order), each GPU's log in $OUT/gpuK.log:
#   GPUS=2 bash benchmarks/gpu_tests.sh integrity redteam   # integrity_a then redteam on GPU 0, integrity_b on 1
set -uo pipefail
cd "$(dirname "$0")/.."
# Carried wheels (scripts/device_wheels.sh: pydantic for the config, ...), where the machine's image lacks them
if ls .whl/*.whl >/dev/null 2>&1; then
  bash scripts/device_wheels.sh install || exit 2
  PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1 TRITONRL_TEST_CUDA=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-gpu-test-logs}"
mkdir -p "$OUT"
PYTEST=(python3 -m pytest -v -p no:cacheprovider --durations=10)
status=0
stamp() { while IFS= read -r line; do printf '%(%T)T %s\n' -1 "$line"; done; }

# integrity runs as two parts (572 s whole on one H200, past a part's 8 minutes): rounds 3-6, then the rest
INTEGRITY_A="r3_ or r4_ or r5_ or r6_"
parts=()
for part in "$@"; do
  if [ "$part" = integrity ]; then parts+=(integrity_a integrity_b); else parts+=("$part"); fi
done

run_part() {
  local part=$1 args rc
  case "$part" in
    timing) args=(-m gpu tests/verify/test_gpu_timing.py tests/verify/test_verifier.py) ;;
    funnel) args=(-m gpu tests/verify/test_gpu.py -k "not bundled and not three_children") ;;
    redteam) args=(-m "not slow" tests/verify/test_redteam.py) ;;
    integrity_a) args=(-m "not slow" tests/verify/test_integrity.py -k "$INTEGRITY_A") ;;
    integrity_b) args=(-m "not slow" tests/verify/test_integrity.py -k "not ($INTEGRITY_A)") ;;
    busy) args=(-m gpu tests/verify/test_gpu_busy_batch.py) ;;
    *) echo "gpu_tests.sh: unknown part '$part' (timing, funnel, redteam, integrity, integrity_a, integrity_b, busy)" >&2; return 2 ;;
  esac
  echo "== part $part: ${args[*]}${CUDA_VISIBLE_DEVICES:+ (GPU $CUDA_VISIBLE_DEVICES)}"
  timeout "${PART_TIMEOUT_S:-480}" "${PYTEST[@]}" "${args[@]}" --junitxml="$OUT/$part.xml" 2>&1 \
    | stamp | tee "$OUT/$part.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 124 ] && echo "== part $part: killed after ${PART_TIMEOUT_S:-480} s"
  echo "== part $part: exit $rc"
  [ "$rc" = 0 ]
}

for part in "${parts[@]}"; do
  case "$part" in
    timing|funnel|redteam|integrity_a|integrity_b|busy) ;;
    *) echo "gpu_tests.sh: unknown part '$part' (timing, funnel, redteam, integrity, integrity_a, integrity_b, busy)" >&2; exit 2 ;;
  esac
done
gpus=${GPUS:-1}
if [ "$gpus" -gt 1 ]; then
  pids=()
  for ((g = 0; g < gpus; g++)); do
    (
      export CUDA_VISIBLE_DEVICES=$g
      s=0
      for ((i = g; i < ${#parts[@]}; i += gpus)); do run_part "${parts[$i]}" || s=1; done
      exit $s
    ) >"$OUT/gpu$g.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  grep -h "^== part" "$OUT"/gpu*.log
else
  for part in "${parts[@]}"; do run_part "$part" || status=1; done
fi
exit "$status"
