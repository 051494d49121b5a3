# expect: reject
# task: l2_conv_relu_bias
# class: GPU launch limit not modelled: grid axis 1 grows with N*C_out*OH past CUDA's 65,535 at the real scale
# idea: A direct convolution with one output row segment per program, grid = (cdiv(OW, BLOCK_W), N*C_out*OH).
#   CUDA limits gridDim.y and gridDim.z to 65,535 (CUDA C++ Programming Guide, "Technical Specifications per
#   Compute Capability": maximum y- or z-dimension of a grid of thread blocks, 65535; documented). At the task's
#   GPU timing shape (timing_shapes.json: N 32, C_out 96, 128x128, k 3 -> OH 126) axis 1 is 32*96*126 = 387,072,
#   so the launch is refused on an H100/H200 (expected "invalid argument" from the driver; not measured). The CPU
#   trials' shapes give axis 1 at most a few hundred and the interpreter has no grid limit, so the CPU verdict
#   cannot see it: the verifier models the 1,024-thread and shared-memory limits (docs/verifier.md) but not the
#   grid's. Plausible: "one program per (n, c, output row)" flattened into the second grid axis.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_row_kernel(x_ptr, w_ptr, cb_ptr, b_ptr, out_ptr,
                    C_in, H, W, C_out, OH, OW,
                    KS: tl.constexpr, BLOCK_W: tl.constexpr):
    pid_w = tl.program_id(0)
    row = tl.program_id(1)          # flattened (n, c, oh)
    oh = row % OH
    c = (row // OH) % C_out
    n = row // (OH * C_out)
    ow = pid_w * BLOCK_W + tl.arange(0, BLOCK_W)
    mask = ow < OW
    acc = tl.zeros((BLOCK_W,), dtype=tl.float32)
    for ci in range(0, C_in):
        for kh in tl.static_range(KS):
            for kw in tl.static_range(KS):
                xv = tl.load(x_ptr + ((n * C_in + ci) * H + oh + kh) * W + ow + kw, mask=mask, other=0.0)
                wv = tl.load(w_ptr + ((c * C_in + ci) * KS + kh) * KS + kw)
                acc += xv * wv
    y = acc + tl.load(cb_ptr + c)
    y = tl.maximum(y, 0.0)
    y = y + tl.load(b_ptr + c)
    tl.store(out_ptr + ((n * C_out + c) * OH + oh) * OW + ow, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        N, C_in, H, W = x.shape
        C_out, _, KS, _ = w.shape
        OH = H - KS + 1
        OW = W - KS + 1
        out = torch.empty((N, C_out, OH, OW), device=x.device, dtype=x.dtype)
        BLOCK_W = 32
        grid = (triton.cdiv(OW, BLOCK_W), N * C_out * OH)
        conv_row_kernel[grid](x, w, self.conv.bias, self.bias, out, C_in, H, W, C_out, OH, OW,
                              KS=KS, BLOCK_W=BLOCK_W)
        return out
