# expect: reject
# task: l2_bmm_relu
# class: interpreter-vs-GPU precision: a batched (3-D) tl.dot at its default input precision (TF32 on sm_90)
# idea: a01 showed the verifier emulates TF32 for a 2-D tl.dot. This batched GEMM loads (1, BM, BK) and
#   (1, BK, BN) tiles and calls tl.dot on 3-D operands with no input_precision, which is TF32 on a GPU
#   (Triton's default, documented in the installed backends/nvidia/compiler.py: default_dot_input_precision
#   = "tf32"). Asks whether the emulation covers batched dots too.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bmm_relu_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    bid = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((1, BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + bid * M * K + offs_m[:, None] * K + offs_k[None, :],
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + bid * K * N + offs_k[:, None] * N + offs_n[None, :],
                    mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a[None, :, :], b[None, :, :])
    c = tl.reshape(acc, (BLOCK_M, BLOCK_N))
    c = c + tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)[None, :]
    c = tl.maximum(c, 0.0)
    tl.store(c_ptr + bid * M * N + offs_m[:, None] * N + offs_n[None, :], c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        B, M, K = a.shape
        N = b.shape[2]
        c = torch.empty((B, M, N), device=a.device, dtype=a.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32), B)
        bmm_relu_kernel[grid](a, b, self.bias, c, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
        return c
