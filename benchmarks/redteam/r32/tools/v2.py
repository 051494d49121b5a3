"""Judge a case the way the training configs do (configs/demo_cpu.yaml and study2.yaml: device cpu,
verify.num_trials 2, timing off; strict mode). usage: v2.py TASK FILE [num_trials]"""
import sys
from tritonrl.config import VerifyConfig
from tritonrl.verify import Verifier
from tritonrl.tasks import get_task
from tritonrl.common.reward import compute_reward

task, path = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 2
code = open(path).read()
with Verifier(VerifyConfig(device="cpu", num_trials=n, timing=False, timeout_s=60)) as v:
    r = v.verify(get_task(task), code=code)
trials = [t["trial"] for t in (r.timing or {}).get("stage_s", {}).get("trials", [])]
try:
    rew = compute_reward(r)
except Exception as e:  # the signature may differ; the verdict is what matters
    rew = f"n/a ({type(e).__name__})"
print(f"num_trials={n}", str(r.stage), [str(f) for f in r.flags], "correct=", r.correct, "reward(correctness preset)=", rew,
      "trials=", trials, (r.error or "").replace(chr(10), " / ")[:300])
