"""Simulate a GPU verdict of correct for a case, then run the CPU cross-check on it."""
import sys, re, json
from pathlib import Path
from tritonrl.config import VerifyConfig
from tritonrl.tasks.sources import load_bundled
from tritonrl.verify.parent.cross_check import CrossCheck
from tritonrl.verify.shared.verdict import Stage, VerifyResult
path = Path(sys.argv[1]); code = path.read_text()
name = re.search(r"^# task: (\S+)", code, re.M).group(1)
task = next(t for t in load_bundled() if t.name == name)
check = CrossCheck(VerifyConfig(device="cuda"))
r = check.check(task, VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True, code=code))
print("XCHECK", path.name, "gpu_verdict_stands=", r.correct, r.flags, json.dumps(r.timing.get("cpu_cross_check"), default=str)[:600])
print("ERR", (r.error or "")[:400])
check.close()
