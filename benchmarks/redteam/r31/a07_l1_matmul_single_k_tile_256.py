# expect: reject
# task: l1_matmul
# class: attack (2: a real bug the trials' shapes hide)
# idea: A GEMM that loads all of K in one 256-wide tile (no K loop, masked by offs_k < K): "K is 200 here".
# Every CPU trial's K fits (200, 129, 128, 10: l1_matmul has no wide variant), so every trial is exact. The
# GPU judges and times the task at k = 4096 (timing_shapes.json), where this kernel sums the first 256 terms
# of each dot product and drops the other 3840. Same family as a02 (a block just wider than anything the CPU
# trials use), in the most common kernel there is.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_onek_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + offs_m[:, None] * K + offs_k[None, :],
                mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
    b = tl.load(b_ptr + offs_k[:, None] * N + offs_n[None, :],
                mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        matmul_onek_kernel[grid](a, b, c, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=256)
        return c
