import os, sys, time, tempfile
os.environ["TRITON_CACHE_DIR"] = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
t0 = time.perf_counter()
import torch, triton, triton.language as tl
t1 = time.perf_counter(); print("import", round(t1 - t0, 3))
torch.empty(1, device="cuda"); t2 = time.perf_counter(); print("cuda init", round(t2 - t1, 3))
from triton.runtime import driver
drv = driver.active; u = drv.utils; t3 = time.perf_counter(); print("driver utils", round(t3 - t2, 3))
tgt = drv.get_current_target(); print("target", tgt)
@triton.jit
def k1(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B); tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)
@triton.jit
def k2(x, y, n, s, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B); tl.store(y + o, tl.load(x + o, mask=o < n) + s, mask=o < n)
x = torch.randn(4096, device="cuda"); y = torch.empty_like(x)
t = time.perf_counter(); c = k1.warmup(x, y, x.numel(), B=1024, grid=(4,)); print("k1 compile (warmup)", round(time.perf_counter() - t, 3))
t = time.perf_counter(); k1[(4,)](x, y, x.numel(), B=1024); torch.cuda.synchronize(); print("k1 first launch", round(time.perf_counter() - t, 3))
t = time.perf_counter(); k2[(4,)](x, y, x.numel(), 3.0, B=1024); torch.cuda.synchronize(); print("k2 compile+launch (other signature)", round(time.perf_counter() - t, 3))
print(sorted(os.listdir(os.environ["TRITON_CACHE_DIR"]))[:20])
for d in os.listdir(os.environ["TRITON_CACHE_DIR"]):
    print(d, os.listdir(os.path.join(os.environ["TRITON_CACHE_DIR"], d)))
