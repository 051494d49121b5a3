# expect: reject
# task: l1_matmul
# class: a read past an input's end that lands in the next input (the arena's layout), multiplied by a masked zero
# idea: A tiled GEMM that masks A's tile only along M and B's tile along K and N (other=0): the last K tile of A
#   (K = 200, BLOCK_K = 32: k up to 223) reads 24 elements past each row, the next row's for every row but the
#   last, and past the end of A for the last row. The products with B's masked rows are x * 0, so on the judge's
#   finite inputs the stray values vanish. On a GPU this is an out-of-bounds read of A's allocation (CUDA C++
#   Programming Guide: accesses outside an allocation are undefined; compute-sanitizer memcheck reports
#   "Invalid __global__ read"), harmless in the judge only because the next bytes are mapped, and wrong outside
#   it: when the bytes past A hold a NaN or Inf pattern (any float memory: another tensor, the allocator's
#   slack), NaN * 0 = NaN poisons the last row of C (IEEE 754). docs/verifier.md (issue 51, class 7) closes
#   "reads past the end of an input whose stray values are dropped" by requiring every address to fall in the
#   extent of a tensor handed to the launch; the judge puts its inputs end to end in one storage, so the bytes
#   past A are B's first elements, inside a tensor of the launch.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
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
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        BM, BN, BK = 32, 32, 32
        matmul_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK)
        return c
