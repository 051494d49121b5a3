import os, sys, time, tempfile, subprocess
t0 = time.perf_counter()
import torch, triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def warm(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B); tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)

def child(label):
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
    @triton.jit
    def k(x, y, n, s, B: tl.constexpr):
        o = tl.program_id(0) * B + tl.arange(0, B); tl.store(y + o, tl.load(x + o, mask=o < n) + s, mask=o < n)
    t = time.perf_counter()
    x = torch.randn(4096, device="cuda"); y = torch.empty_like(x); torch.cuda.synchronize()
    t1 = time.perf_counter()
    k[(4,)](x, y, x.numel(), 3.0, B=1024); torch.cuda.synchronize()
    print(label, "cuda init", round(t1 - t, 3), "compile+launch", round(time.perf_counter() - t1, 3), flush=True)
    os._exit(0)

if os.fork() == 0:
    child("cold child")
os.wait()
cap = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True, text=True).stdout.split()[0]
arch = int(cap.replace(".", ""))
t = time.perf_counter()
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
src = ASTSource(warm, {"x": "*fp32", "y": "*fp32", "n": "i32", "B": "constexpr"}, constexprs={"B": 1024})
triton.compile(src, target=GPUTarget("cuda", arch, 32))
print("zygote warm compile (no CUDA)", round(time.perf_counter() - t, 3), "cuda initialized:", torch.cuda.is_initialized(), flush=True)
if os.fork() == 0:
    child("warm child")
os.wait()
