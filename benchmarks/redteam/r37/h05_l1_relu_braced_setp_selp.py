# expect: done
# task: l1_relu
# class: honest valid PTX the CPU cannot run, so the cross-check now rejects the GPU's verdict (cross_check_unfinished)
# idea: ReLU written the way models write PTX with a scratch predicate: a braced block with a .reg .pred declaration,
#   setp.gt.f32 and selp.f32. Exact on a GPU (passes strict 1e-4). child/ptx.py refuses braces, .reg and
#   predicates (cpu_unsupported), and since 2026-12-01 a GPU verdict whose CPU cross-check is cpu_unsupported is
#   rejected with cross_check_unfinished: an honest, exact kernel loses its GPU reward (verify.cross_check_unfinished:
#   stand restores it, and with it r36 a02's class).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.gt.f32 p, $1, 0f00000000; selp.f32 $0, $1, 0f00000000, p; }",
        "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_asm_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
