#!/bin/bash
for f in "$@"; do bash /work/main/benchmarks/redteam/r33/tools/run_one.sh "$f"; done
