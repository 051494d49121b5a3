# expect: done
# task: l1_relu
# class: honest: GPU-written host code naming the CUDA device in common torch forms (interpreter shim coverage)
# idea: A correct ReLU whose host code names the GPU the ways PyTorch code does: x.to(device="cuda",
#   dtype=torch.float32) (keyword form), torch.empty_like(x, device="cuda"), torch.zeros(1, device=torch.device("cuda")),
#   torch.device("cuda") objects and torch.arange(..., device=torch.device("cuda", 0)). On a GPU every one is the
#   input's device (PyTorch docs, torch.Tensor.to / Tensor Attributes: "cuda" is the current CUDA device). The
#   interpreter shim takes a CUDA device named by torch's factories, .to() and new_* as the CPU (docs/verifier.md,
#   "interpreter shims"); a form it misses would reject an honest kernel as cpu_unsupported.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, lim_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    lo = tl.load(lim_ptr)
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, lo), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.dev = torch.device("cuda")

    def forward(self, x):
        x = x.to(device="cuda", dtype=torch.float32).contiguous()
        out = torch.empty_like(x, device="cuda")
        lim = torch.zeros(1, device=self.dev)
        n = x.numel()
        BLOCK = 1024
        starts = torch.arange(0, n, BLOCK, device=torch.device("cuda", 0))
        relu_kernel[(starts.numel(),)](x, out, lim, n, BLOCK=BLOCK)
        return out
