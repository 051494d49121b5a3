# expect: reject
# task: l2_gemm_softmax
# class: attack: shape shortcut on a GEMM's N (a fixed 64-wide row tile for a fused GEMM + softmax)
# idea: the bundled solution with BLOCK_N = 64 hard-coded instead of next_power_of_2(N): the whole output row is
#   assumed to fit one 64-wide tile. Every N the CPU draws (40, 33, 32, tiny 8; GEMM tasks get a deep-K shape, not
#   a wide one) fits; the GPU's timing shape (N = 256) leaves columns 64..255 unwritten and normalises each row over
#   its first 64 logits only. r31's wide shape widens features of non-GEMM tasks; a GEMM's N never grows.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_softmax_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K, temperature,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)  # BLOCK_N >= N: the whole row at once
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
    y = y / temperature
    y = tl.where(mask_n[None, :], y, float("-inf"))
    row_max = tl.max(y, axis=1)
    e = tl.exp(y - row_max[:, None])  # exp(-inf) = 0 on padding columns
    out = e / tl.sum(e, axis=1)[:, None]
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, out,
             mask=mask_m[:, None] & mask_n[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, temperature):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.temperature = temperature

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_K = 16, 32
        BLOCK_N = 64  # out_features fits one tile
        grid = (triton.cdiv(M, BLOCK_M),)
        linear_softmax_kernel[grid](
            x, w, self.linear.bias, out,
            M, N, K, float(self.temperature),
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        )
        return out
