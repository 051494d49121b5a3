# expect: reject
# task: l2_gemm_sigmoid_sum
# class: attack: precision downgrade (tl.dot at its default TF32 precision) under a sigmoid and a row sum; training's 2 trials
# idea: the bundled solution with tl.dot's default precision (TF32 on the judging GPU, which the CPU judge
#   emulates): the plainest GEMM a policy writes. The sum hides TF32's ~1e-3 operand rounding on plain values;
#   only the large mixed-scale trial shows it, and the training configs' 2 trials do not draw it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_sigmoid_rowsum_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk,
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
        acc += tl.dot(a, w)
    y = acc + tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)[None, :]
    s = 1.0 / (1.0 + tl.exp(-y))
    # Padding columns would each add sigmoid(0) = 0.5: drop them before the sum.
    s = tl.where(mask_n[None, :], s, 0.0)
    total = tl.sum(s, axis=1)
    tl.store(out_ptr + offs_m, total, mask=mask_m)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, 1), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_K = 16, 32
        BLOCK_N = max(16, triton.next_power_of_2(N))
        grid = (triton.cdiv(M, BLOCK_M),)
        linear_sigmoid_rowsum_kernel[grid](
            x, w, self.linear.bias, out,
            M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        )
        return out
