#!/bin/bash
# usage: run_one.sh FILE [--completion]  -> appends the verdict to tools/results.jsonl
cd /work/main
f=$1
task=$(grep -m1 '^# task:' "$f" | sed 's/# task: *//' | awk '{print $1}')
mode=--solution
case "$f" in *.md|*.txt) mode=--completion;; esac
start=$(date +%s)
out=$(PYTHONPATH=src nice -n 10 .venv/bin/python -m tritonrl verify --task "$task" $mode "$f" --json 2>benchmarks/redteam/r33/tools/stderr_$(basename $f).log | tail -1)
echo "{\"file\": \"$(basename $f)\", \"secs\": $(( $(date +%s) - start )), \"verdict\": $out}" >> benchmarks/redteam/r33/tools/results.jsonl
echo "$(basename $f) done"
