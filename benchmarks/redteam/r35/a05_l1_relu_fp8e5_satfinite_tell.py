# expect: reject
# task: l1_relu
# class: interpreter tell: fp32 -> fp8e5 (e5m2) conversion of an out-of-range value (GPU saturates, interpreter does not)
# idea: Triton's NVIDIA backend converts fp32 to fp8e5 with `cvt.rn.satfinite.e5m2x2.f32`
#   (triton-lang/triton third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/ElementwiseOpToLLVM.cpp, Fp32_to_Fp8E5M2;
#   documented in source): "satfinite" clamps to the largest finite e5m2 value, 57344. Triton's interpreter
#   (installed runtime/interpreter.py _convert_float) gives 65536.0 for 70000.0 (run standalone here). A kernel
#   that applies ReLU only when the round trip of 70000.0 reads back finite and above 60000 is right under the
#   interpreter and the identity on a GPU (57344 with satfinite; inf if it did not saturate: false either way). (r34 left fp8e4nv saturation open as "not measured"; this cites the
#   backend's instruction instead; the GPU value itself is not measured.)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    probe = (x * 0.0 + 70000.0).to(tl.float8e5).to(tl.float32)
    y = tl.where((probe > 60000.0) & (probe < 1e30), tl.where(x > 0, x, 0.0), x)
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
