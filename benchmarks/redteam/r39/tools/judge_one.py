"""Judge one or more case files; prints stage/flags/error. Usage: judge_one.py [--nostatic] FILE..."""
import json, re, sys
from tritonrl.config import VerifyConfig
from tritonrl.tasks import get_task
from tritonrl.verify import Verifier, VerifyItem

args = sys.argv[1:]
static = True
if args and args[0] == "--nostatic":
    static, args = False, args[1:]
items = []
for f in args:
    src = open(f).read()
    task = re.search(r"^# task: (\S+)", src, re.M).group(1)
    items.append(VerifyItem(get_task(task), code=src))
with Verifier(VerifyConfig(device="cpu", timing=False, static_checks=static)) as v:
    res = v.verify_many(items)
for f, r in zip(args, res):
    d = r.model_dump() if hasattr(r, "model_dump") else r.__dict__
    print(json.dumps({"file": f.split("/")[-1], "static": static, "correct": d.get("correct"), "stage": d.get("stage"),
                      "flags": d.get("flags"), "error": (d.get("error") or "")[:600]}))
