# expect: reject
# task: l1_relu
# class: the CUDA-as-CPU shim erases the device index: work placed on a GPU that does not exist
# idea: A ReLU whose output (and the kernel's launch) is put on "cuda:1". On the judging single-GPU H200 the
#   factory fails ("CUDA error: invalid device ordinal"; PyTorch CUDA semantics: a device index names one GPU);
#   on a machine with two GPUs the output lives on another device than the input, and the Triton kernel gets
#   pointers of two devices (a Triton launch runs on the current device: an illegal or peer access, and an output
#   on the wrong device). Either way it is not a correct candidate. If the shim maps every CUDA device, index
#   included, to the CPU, the CPU judge accepts it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape, dtype=x.dtype, device="cuda:1")
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
