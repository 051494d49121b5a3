#!/usr/bin/env bash
# The GPU checks of the verifier and the GPU benchmarks in one job (the lent GPU machine, repo root; OUT=dir).
#   OUT=/tmp/out bash benchmarks/run_gpu_checks.sh tests stability fullsize throughput grpo
# Each part is limited in time so one stuck part cannot take the others' results with it.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} TRITON_INTERPRET=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests) TRITONRL_TEST_CUDA=1 timeout 220 python -m pytest -m gpu -q -p no:cacheprovider tests/verify/test_gpu.py \
             -W ignore::DeprecationWarning 2>&1 | tail -60 ;;
    stability) timeout 120 python benchmarks/timing_stability.py --out "$OUT/stability.json" ;;
    fullsize) timeout 120 python benchmarks/fullsize_memory.py --out "$OUT/fullsize.json" ;;
    throughput) timeout 240 python benchmarks/verify_gpu_throughput.py --out "$OUT/throughput.json" ;;
    grpo) timeout 150 python -m tritonrl rl --algo grpo --config configs/smoke.yaml --set rl.use_cpu=false \
            --set rl.steps=20 --set verify.device=cuda --set verify.timing=true --set run.run_dir=/tmp/grpo_gpu \
            --set run.save_steps=100 2>&1 | grep -v "it/s\]\|s/it\]" | tail -30
          cp /tmp/grpo_gpu/grpo/metrics.json "$OUT/grpo_metrics.json" ;;
  esac
done
echo "=== end $(date +%T)"
