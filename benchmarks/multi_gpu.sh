#!/usr/bin/env bash
# Multi-GPU proof (issue "Scale out"), run on a machine with >= 2 GPUs, e.g. through the device tool:
#   bash benchmarks/multi_gpu.sh OUT_DIR
# 1. SFT of the tiny model on one GPU (it memorises the smoke tasks' kernels, so RL rewards are not all 0);
# 2. 2-process data-parallel GRPO (accelerate DDP) from it, verification on the GPUs, timing on;
# 3. verification throughput vs GPU count with the local backend (and with Ray when it is importable).
# Needs trl and datasets (carried wheels: .whl/, see docs/benchmarks.md). Writes JSON and logs to OUT_DIR.
set -uo pipefail
OUT="${1:?usage: multi_gpu.sh OUT_DIR}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
unset TRITON_INTERPRET
RUN=/tmp/tritonrl-multigpu
GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())")
COMMON=(--config configs/smoke.yaml --run-dir "$RUN" --set sft.use_cpu=false --set rl.use_cpu=false
        --set verify.device=cuda --set verify.workers=0 --set run.report_to=none)

echo "== SFT (1 GPU)"
start=$(date +%s.%N)
CUDA_VISIBLE_DEVICES=0 python3 -m tritonrl sft "${COMMON[@]}" 2>&1 | tail -3   # one process: one GPU (TRL refuses DataParallel)
echo "sft_seconds $(python3 -c "print(round($(date +%s.%N) - $start, 1))")"

echo "== GRPO, 2-process DDP, verification on the GPUs, timing on"
start=$(date +%s.%N)
python3 -m accelerate.commands.launch --config_file configs/accelerate/ddp.yaml --num_processes 2 \
    --mixed_precision no -m tritonrl rl --algo grpo "${COMMON[@]}" --set rl.init_from=sft --set rl.steps=16 \
    --set rl.num_generations=4 --set rl.per_device_batch_size=4 --set verify.timing=true \
    --set verify.timed_trials=20 --set verify.warmup=3 2>&1 | grep -v Warning | tail -4
echo "grpo_seconds $(python3 -c "print(round($(date +%s.%N) - $start, 1))")"
python3 - "$RUN" "$OUT" <<'PY'
import json, sys
from pathlib import Path
run, out = Path(sys.argv[1]), Path(sys.argv[2])
history = json.loads((run / "grpo" / "metrics.json").read_text())["log_history"]
keep = ("step", "reward", "reward_std", "verify/correct_rate", "verify/compile_rate", "verify/format_rate",
        "verify/mean_speedup", "curriculum/level2_share", "step_time", "loss")
curve = [{k: row[k] for k in keep if k in row} for row in history if "reward" in row]
manifest = json.loads((run / "manifest.json").read_text())
summary = [row for row in history if "train_runtime" in row]
json.dump({"curve": curve, "summary": summary, "manifest_stages": {k: v["status"] for k, v in
           manifest["stages"].items()}}, open(out / "grpo_ddp.json", "w"), indent=1)
print("reward curve:", [round(float(r["reward"]), 3) for r in curve])
print("summary:", summary)
PY

[ -n "${SKIP_SCALING:-}" ] && exit 0
echo "== verification scaling, local backend"
python3 benchmarks/verify_scaling.py --backend local --device cuda --rl-step 0 --budget-s 300 \
    --out "$OUT/scaling_local.json" | tail -n 8
if python3 -c "import ray" 2>/dev/null; then
  echo "== verification scaling, Ray backend"
  python3 benchmarks/verify_scaling.py --backend ray --device cuda --rl-step 0 --budget-s 300 \
      --out "$OUT/scaling_ray.json" | tail -n 8
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpus.csv"
