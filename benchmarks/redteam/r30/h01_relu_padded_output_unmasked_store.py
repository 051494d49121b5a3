# task: l1_relu
# expect: done
# modes: correctness timing
# cpu: accepted
# gpu-guess: correctness: accepted (stores stay in the kernel's own padded storage, guard untouched); timing: accepted
# why: Honest use of memory past a tensor within its own allocation. The output's storage is padded up to a whole
# why: number of blocks, so the kernel stores whole blocks with no mask (only the input's load is masked, other=0),
# why: and the forward returns the first n elements as a view. Stray stores stay inside the kernel's own storage:
# why: the GPU's guards sit past the storage's end, not the view's, and the CPU's bounds check is against the handed
# why: tensor (the whole padded buffer). A strict judge could take the padding writes for the r29 a05 bug.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0))   # whole blocks: the buffer is padded


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n = x.numel()
        BLOCK_SIZE = 1024
        nblocks = triton.cdiv(n, BLOCK_SIZE)
        buf = torch.empty(nblocks * BLOCK_SIZE, device=x.device, dtype=x.dtype)
        relu_kernel[(nblocks,)](x, buf, n, BLOCK_SIZE=BLOCK_SIZE)
        return buf[:n].view(x.shape)
