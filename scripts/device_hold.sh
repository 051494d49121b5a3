#!/usr/bin/env bash
# One hold of the lent GPU machine, several runs: a plan of commands run one after another in the background
# (setsid: it outlives the call that starts it while the machine is held), each call waiting on it and sending back
# what has finished as one archive ($OUT takes 8 files at most; a plan writes more).
#
#   bash scripts/device_hold.sh start PLAN [SECONDS]   # the first call: starts PLAN, then waits like `wait`
#   bash scripts/device_hold.sh wait [SECONDS]          # each next call, back to back (default 540 s)
#
# PLAN: a file of the repository (tracked, or untracked and not ignored: an ignored one does not travel unless the
# call's carry names it), one shell command a line, run from the repository's root with RESULTS set (a folder
# for the command's files; $OUT is the same folder) and the device wheels installed (/tmp/site on PYTHONPATH,
# TRITON_INTERPRET unset).
# Lines starting with # are skipped. A command that fails is logged and the plan goes on. The device's copy has no
# git history: `TRITONRL_COMMIT=<the commit> bash scripts/device_hold.sh start ...` lets the benchmarks record it.
# Each call ends when the plan is done or SECONDS have passed, and leaves $OUT/results.tgz (every file so far, with
# plan.log: each command's start, end and exit status) and $OUT/plan.log. The archive is refreshed every 20 s while
# it waits, so a call cut short still sends back what had finished.
set -uo pipefail
cd "$(dirname "$0")/.."
RESULTS=${RESULTS:-/tmp/device-hold}
OUT=${OUT:-$RESULTS/out}
mode=${1:-}
pack() {
  tar czf "$OUT/results.tgz.part" --exclude "$(basename "$RESULTS")/out" -C "$(dirname "$RESULTS")" \
    "$(basename "$RESULTS")" && mv "$OUT/results.tgz.part" "$OUT/results.tgz"
  cp "$RESULTS/plan.log" "$OUT/plan.log" 2>/dev/null
}
run_plan() {
  local plan=$1
  bash scripts/device_wheels.sh install || echo "$(date -u +%T) device wheels did not install" >> "$RESULTS/plan.log"
  # OUT is RESULTS for the plan's commands: the device empties the call's $OUT before each call, and the docs'
  # commands write to $OUT
  export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false RESULTS \
    OUT=$RESULTS
  unset TRITON_INTERPRET
  local n=0
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in ''|'#'*) continue ;; esac
    n=$((n + 1))
    echo "$(date -u +%T) [$n] start: $line" >> "$RESULTS/plan.log"
    bash -c "$line" > "$RESULTS/step$n.log" 2>&1
    local rc=$?
    echo "$(date -u +%T) [$n] exit $rc" >> "$RESULTS/plan.log"
  done < "$plan"
  echo "$(date -u +%T) done" >> "$RESULTS/plan.log"
  touch "$RESULTS/DONE"
}
wait_plan() {
  local end=$((SECONDS + ${1:-540}))
  mkdir -p "$OUT"
  while [ $SECONDS -lt "$end" ] && [ ! -e "$RESULTS/DONE" ]; do
    sleep "${POLL:-20}"
    pack
  done
  pack
  tail -n 20 "$RESULTS/plan.log"
}
case "$mode" in
  start)
    plan=${2:?"device_hold.sh start PLAN [SECONDS]"}
    [ -f "$plan" ] || { echo "device_hold.sh: no plan file '$plan' here (an ignored file travels only when carry names it)" >&2; exit 2; }
    [ -e "$RESULTS/plan.log" ] && { echo "device_hold.sh: a plan already ran on this machine ($RESULTS/plan.log)" >&2; exit 2; }
    mkdir -p "$RESULTS"
    : > "$RESULTS/plan.log"
    setsid bash "$0" _run "$plan" < /dev/null > "$RESULTS/runner.log" 2>&1 &
    runner=$!
    sleep "${POLL:-5}"
    kill -0 "$runner" 2>/dev/null || [ -e "$RESULTS/DONE" ] \
      || { echo "device_hold.sh: the plan did not run" >&2; cat "$RESULTS/runner.log" >&2; exit 1; }
    wait_plan "${3:-540}" ;;
  wait) wait_plan "${2:-540}" ;;
  _run) run_plan "$2" ;;
  *) sed -n '2,17p' "$0"; exit 2 ;;
esac
