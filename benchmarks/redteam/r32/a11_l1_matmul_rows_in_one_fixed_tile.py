# expect: reject
# task: l1_matmul
# class: attack: shape shortcut on the rows (M) dimension: a fixed 128-row tile and no program axis over M
# idea: the grid covers only N; each program computes all of M in one BLOCK_M = 128 tile (masked by rm < M) with a
#   proper K loop. Every M the CPU draws (task 120, edge 65, 2^j 64, deep 16, tiny 8) is <= 128, so all pass; the
#   GPU's timing shape (M = 2048) silently loses every row past 128. r31's fix widened features and K, not rows.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    rm = tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        grid = (triton.cdiv(N, 32),)
        matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=32, BLOCK_K=32)
        return c
