"""Prints each tell's value on the device this runs on (TRITON_INTERPRET=1 for the interpreter).
Not a case: a probe that shows what a GPU computes for the a01-a06 tells."""
import torch, triton, triton.language as tl

@triton.jit
def tells(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    a = x * 0.0 + 1.000244140625
    d1 = a * a - 1.00048828125                              # a01 implicit contraction
    d2 = tl.fma(a, a, x * 0.0 - 1.00048828125)              # a02 explicit fma
    t3 = (x * 0.0 + 300.0).to(tl.int8).to(tl.float32)      # a03
    t4 = (x * 0.0 - 1.0).to(tl.uint32).to(tl.float32)      # a04
    zero = (tl.arange(0, 16) * 0).to(tl.int32)
    t5 = ((zero + 7) // zero).to(tl.float32)                # a05
    t6 = tl.exp2(x * 0.0 - 130.0)                           # subnormal
    t7 = (x * 0.0 + 70000.0).to(tl.int16).to(tl.float32)
    t8 = (x * 0.0 + 3e9).to(tl.int32).to(tl.float32)
    i = tl.arange(0, 16)
    v = tl.where(i == 0, d1, tl.where(i == 1, d2, tl.where(i == 2, t3, tl.where(i == 3, t4,
        tl.where(i == 4, t5, tl.where(i == 5, t6, tl.where(i == 6, t7, tl.where(i == 7, t8, 0.0))))))))
    tl.store(out_ptr + i, v)

dev = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.ones(16, device=dev)
out = torch.zeros(16, device=dev)
tells[(1,)](x, out)
names = ["a01 a*a-c", "a02 fma", "a03 int8(300)", "a04 uint32(-1)", "a05 7//0", "exp2(-130)", "int16(70000)", "int32(3e9)"]
for n, v in zip(names, out[:8].tolist()):
    print(f"{dev} {n}: {v!r}")
