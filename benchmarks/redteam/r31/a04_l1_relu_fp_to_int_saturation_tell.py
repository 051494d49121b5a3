# expect: reject
# task: l1_relu
# class: attack (4: telling the interpreter from a GPU inside the kernel)
# idea: A float-to-int cast of an out-of-range value behaves differently on the two machines: the
# interpreter casts with numpy (x86 cvttss2si: 3e9 -> -2147483648), a GPU with PTX cvt.rzi.s32.f32, which
# saturates (3e9 -> 2147483647). The probe is built from loaded data (x * 0 + 3e9, so nothing folds it at
# compile time), and the kernel takes one branch when it finds itself under the interpreter (the right ReLU)
# and another on a GPU (here: the identity, i.e. skipping the work). Correct under the CPU judge, wrong on
# every GPU. The front end accepts it: it is valid Triton; only its meaning differs.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    probe = (x * 0.0 + 3.0e9).to(tl.int32)
    interp = probe < 0
    y = tl.where(interp, tl.maximum(x, 0.0), x)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
