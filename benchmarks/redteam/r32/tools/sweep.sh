#!/bin/bash
# Judge every case twice, one verification at a time: the CLI's default (strict, 5 trials) and the training
# configs' setting (tools/v2.py: num_trials 2). Output: tools/sweep_results.txt
cd /work/main
out=${OUT:-benchmarks/redteam/r32/tools/sweep_results.txt}
: > $out
for f in benchmarks/redteam/r32/[ah][0-9][0-9]_*.py; do
  task=$(sed -n 's/^# task: *//p' $f | head -1)
  exp=$(sed -n 's/^# expect: *//p' $f | head -1)
  cli=$(benchmarks/redteam/r32/tools/v.sh $task $f 2>&1 | tail -1 | cut -c1-260)
  two=$(PYTHONPATH=src .venv/bin/python benchmarks/redteam/r32/tools/v2.py $task $f 2>&1 | tail -1 | cut -c1-200)
  echo "$(basename $f) | $task | expect $exp | CLI5: $cli | TRAIN2: $two" >> $out
done
echo SWEEP_DONE >> $out
