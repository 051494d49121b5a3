# expect: reject
# task: l1_relu
# class: attack: lanes of one program take tickets from one counter with a vector atomic_add and use the ticket as their element index
# idea: every lane does atomic_add(counter[pid], 1) and loads x[base + ticket]. If the interpreter hands the
#   lanes tickets in lane order (0, 1, 2, ...), the kernel is an exact ReLU there; on a GPU the order in which
#   a warp's (and the block's) atomics to one address are served is unspecified, so elements land in the wrong
#   places. (If the interpreter gives every lane the same old value, this is rejected and says that.)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, cnt_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ticket = tl.atomic_add(cnt_ptr + pid + tl.arange(0, BLOCK) * 0, 1, mask=mask)
    src = pid * BLOCK + ticket
    x = tl.load(x_ptr + src, mask=mask & (src < n), other=0.0)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        grid = triton.cdiv(n, BLOCK)
        cnt = torch.zeros(grid, dtype=torch.int32, device=x.device)
        relu_kernel[(grid,)](x, cnt, out, n, BLOCK=BLOCK)
        return out
