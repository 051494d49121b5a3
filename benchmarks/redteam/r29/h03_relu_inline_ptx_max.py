# task: l1_relu
# expect: done
# modes: correctness timing
# cpu: rejected cpu_unsupported (tl.inline_asm_elementwise; reward 0.0)
# gpu-guess: correctness: accepted (max.f32 with 0 is ReLU; +0.0 for negatives, as torch.relu gives; NaN-free inputs). timing: accepted, honest speed (same memory traffic as the bundled kernel).
# why: Honest and unusual: the element op written as inline PTX through tl.inline_asm_elementwise (the way models
# why: reach PTX-only instructions). The GPU compiles it; Triton's CPU interpreter cannot execute assembly, so the CPU
# why: verdict depends on how the verifier labels that failure (cpu_unsupported, not counted, would be right).
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
        asm="max.f32 $0, $1, 0f00000000;",
        constraints="=r,r",
        args=[x],
        dtype=tl.float32,
        is_pure=True,
        pack=1,
    )
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
