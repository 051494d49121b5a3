"""Judge case files in three modes: strict+static, strict no static, permissive+static. Usage: judge_modes.py FILE..."""
import json, re, sys
from tritonrl.config import VerifyConfig
from tritonrl.tasks import get_task
from tritonrl.verify import Verifier, VerifyItem

files = sys.argv[1:]
modes = [("strict", dict(strict=True, static_checks=True)), ("strict-nostatic", dict(strict=True, static_checks=False)),
         ("permissive", dict(strict=False, static_checks=True))]
only = [m for m in modes if m[0] in (sys.argv[0] and __import__("os").environ.get("MODES", "strict,strict-nostatic,permissive").split(","))]
for name, kw in only:
    items = []
    for f in files:
        src = open(f).read()
        task = re.search(r"^# task: (\S+)", src, re.M).group(1)
        items.append(VerifyItem(get_task(task), code=src))
    with Verifier(VerifyConfig(device="cpu", timing=False, **kw)) as v:
        res = v.verify_many(items)
    for f, r in zip(files, res):
        d = r.model_dump() if hasattr(r, "model_dump") else r.__dict__
        print(json.dumps({"file": f.split("/")[-1], "mode": name, "correct": d.get("correct"), "stage": d.get("stage"),
                          "flags": d.get("flags"), "error": (d.get("error") or "")[:400]}), flush=True)
