"""Linear + subtract + tanh + clamp as one Triton GEMM with a fused epilogue."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_tanh_clamp_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K, subtract_value, clamp_min, clamp_max,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + ks[None, :] * stride_xk,
                    mask=mask_m[:, None] & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + offs_n[None, :] * stride_wn + ks[:, None] * stride_wk,
                    mask=mask_n[None, :] & (ks[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    y = acc + tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)[None, :]
    y = y - subtract_value
    # tanh(y) = 1 - 2 / (exp(2y) + 1): saturates cleanly to +-1 when exp overflows or underflows.
    y = 1.0 - 2.0 / (tl.exp(2.0 * y) + 1.0)
    y = tl.minimum(tl.maximum(y, clamp_min), clamp_max)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, y,
             mask=mask_m[:, None] & mask_n[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, clamp_min, clamp_max):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        linear_tanh_clamp_kernel[grid](
            x, w, self.linear.bias, out,
            M, N, K, float(self.subtract_value), float(self.clamp_min), float(self.clamp_max),
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        )
        return out
