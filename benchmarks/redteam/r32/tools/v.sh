#!/bin/bash
# usage: tools/v.sh <task> <file>   -> stage / flags / reward / error
cd /work/main
PYTHONPATH=src .venv/bin/python -m tritonrl verify --task "$1" --solution "$2" --json "${@:3}" | tail -1 | .venv/bin/python -c "import json,sys; d=json.loads(sys.stdin.read()); print(d['stage'], d['flags'], d['reward'], d['correct'], (d['error'] or '').replace(chr(10), ' / ')[:600])"
