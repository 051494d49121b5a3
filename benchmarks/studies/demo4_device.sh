#!/usr/bin/env bash
# One device call of the four-GPU learning demonstration (issue 37; docs/results.md, "The four-GPU run").
#
#   bash benchmarks/studies/demo4_device.sh rehearsal   # one GPU: measure the real sizes, then the whole run at toy size
#   bash benchmarks/studies/demo4_device.sh tune        # four GPUs: SFT, validation and a few RL steps (no held-out split)
#   bash benchmarks/studies/demo4_device.sh run         # four GPUs: the run; the same command in every call until "done"
#
# Carried (device `carry`): .whl (scripts/device_wheels.sh: pydantic, trl, datasets ... for Python 3.12),
# runs/demo4/tasks/{sft,rl} (and for `run` also validation, heldout), runs/rehearsal/tasks (rehearsal). Results go
# to $OUT (the summary, the plot, and three archives); the run keeps going between calls while the machine is held.
set -uo pipefail
cd "$(dirname "$0")/.."
MODE="${1:?usage: demo4_device.sh rehearsal|tune|run}"
bash scripts/device_wheels.sh install || exit 2
export PYTHONPATH="$PWD/src:/tmp/site" PYTHONUNBUFFERED=1
export TRITONRL_COMMIT="${TRITONRL_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
OUT="${OUT:-out/demo4}"
nvidia-smi -L
case "$MODE" in
  rehearsal)
    TOY="--validation-k 2 --heldout-k 2 --turns-k 1 --pool-k 2 --pool-max 24 --timed-per-arm 4"
    python3 benchmarks/studies/learning_demo_gpu.py --config configs/demo4.yaml --measure "$OUT/measure.json" \
      --set verify.workers=14 2>&1 | tail -40
    python3 benchmarks/studies/learning_demo_gpu.py --config configs/demo4_rehearsal.yaml --gpus 0 \
      --wait-s "${WAIT_S:-420}" --out "$OUT/rehearsal" $TOY
    ;;
  tune)  # four GPUs, the real recipe up to a few RL steps of each arm; the held-out split is not carried
    python3 benchmarks/studies/learning_demo_gpu.py --config configs/demo4.yaml --gpus 0,1,2,3 --stop-after rl \
      --set run.run_dir=runs/demo4tune --set model.name_or_path=runs/demo4tune/base_model \
      --set eval.tasks=runs/demo4/tasks/validation --set rl.steps="${TUNE_STEPS:-8}" \
      --wait-s "${WAIT_S:-480}" --out "$OUT"
    ;;
  run)
    python3 benchmarks/studies/learning_demo_gpu.py --config configs/demo4.yaml --gpus 0,1,2,3 \
      --wait-s "${WAIT_S:-520}" --out "$OUT"
    ;;
  *) echo "demo4_device: unknown mode $MODE"; exit 2 ;;
esac
status=$?
tail -25 runs/*/orchestrator.log 2>/dev/null
exit $status
