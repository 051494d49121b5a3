import time, torch, triton, triton.language as tl
@triton.jit
def k1(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B); tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)
@triton.jit
def k2(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B); tl.store(y + o, tl.load(x + o, mask=o < n) + 3, mask=o < n)
x = torch.randn(4096, device="cuda"); y = torch.empty_like(x)
for name, k in (("first", k1), ("second", k2)):
    t = time.perf_counter(); k[(4,)](x, y, x.numel(), B=1024); torch.cuda.synchronize(); print(name, "compile+run", round(time.perf_counter() - t, 3))
