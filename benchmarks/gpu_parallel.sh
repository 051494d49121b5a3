#!/usr/bin/env bash
# Jobs on the GPUs of one host at once: one queue of commands per GPU, started in a new process session (setsid)
# so that they outlive the device command that started them; a later command of the same hold waits for them.
#
#   bash benchmarks/gpu_parallel.sh start DIR 'cmd; cmd' 'cmd' ...   # queue k runs with CUDA_VISIBLE_DEVICES=k
#   bash benchmarks/gpu_parallel.sh wait DIR SECONDS [COPY_TO]       # until every queue ends or SECONDS pass
#
# Queue k runs in the repository root with $GPU=k and $DIR set, logs to DIR/gpuK.log, and writes its exit status
# to DIR/gpuK.rc when it ends. `wait` prints each queue's state and the tail of its log, and packs DIR into
# COPY_TO/gpu_parallel.tgz (one file: the device tool brings back at most eight). The carried wheels (.whl) are
# installed once, before the queues start, so that no two queues install them at the same time.
set -uo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,10p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
verb=$1 dir=$2
shift 2
case "$verb" in
  start)
    [ $# -ge 1 ] || usage
    mkdir -p "$dir" || exit 2
    if ls .whl/*.whl >/dev/null 2>&1; then bash scripts/device_wheels.sh install || exit 2; fi
    gpu=0
    for queue in "$@"; do
      printf '%s\n' "$queue" > "$dir/gpu$gpu.cmd"
      GPU=$gpu DIR=$dir CUDA_VISIBLE_DEVICES=$gpu setsid bash -c \
        "( $queue )"'; echo $? > "$DIR/gpu$GPU.rc"' > "$dir/gpu$gpu.log" 2>&1 < /dev/null &
      echo "queue $gpu started on GPU $gpu: $queue"
      gpu=$((gpu + 1))
    done
    ;;
  wait)
    [ $# -ge 1 ] || usage
    seconds=$1 copy_to=${2:-}
    end=$((SECONDS + seconds))
    while [ "$SECONDS" -lt "$end" ]; do
      pending=0
      for log in "$dir"/gpu*.log; do [ -e "${log%.log}.rc" ] || pending=$((pending + 1)); done
      [ "$pending" = 0 ] && break
      sleep 5
    done
    for log in "$dir"/gpu*.log; do
      queue=${log%.log}
      state=$([ -e "$queue.rc" ] && echo "exit $(cat "$queue.rc")" || echo "running")
      echo "== $(basename "$queue"): $state"
      tail -n 4 "$log"
    done
    [ -n "$copy_to" ] && mkdir -p "$copy_to" && tar czf "$copy_to/gpu_parallel.tgz" -C "$dir" .
    exit 0
    ;;
  *) usage ;;
esac
