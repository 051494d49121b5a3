#!/bin/bash
# usage: run_case.sh <task> <file> [--permissive]   (run from anywhere)
cd /work/main
PYTHONPATH=src .venv/bin/python -m tritonrl verify --task "$1" --solution "$2" --json ${3:-} 2>/dev/null | .venv/bin/python -c "
import json,sys
d=json.loads(sys.stdin.read().strip().splitlines()[-1])
print(d['file'].split('/')[-1], d['task'], 'stage=%s correct=%s flags=%s reward=%s'%(d['stage'],d['correct'],d['flags'],d.get('reward')))
print('  error:', (d['error'] or '')[:600])
"
