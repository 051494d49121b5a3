# expect: reject
# task: l2_gemm_bias_relu
# class: attack: state kept between calls (a parameter folded in place on every forward)
# idea: "weight preparation" folds the extra bias into the linear layer's bias in place with a small kernel, then
#   the GEMM adds one bias. The fold runs on every forward, not once, so the bias grows by self.bias each call:
#   the first call is right, every later one wrong. A judge that calls each fresh model once never sees it, and
#   may not check that parameters are unchanged after a forward.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fold_bias_kernel(b_ptr, extra_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    b = tl.load(b_ptr + offs, mask=m, other=0.0)
    e = tl.load(extra_ptr + offs, mask=m, other=0.0)
    tl.store(b_ptr + offs, b + e, mask=m)


@triton.jit
def linear_bias_relu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K,
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
    bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)
    y = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, y,
             mask=mask_m[:, None] & mask_n[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight
        b = self.linear.bias
        M, K = x.shape
        N = w.shape[0]
        with torch.no_grad():
            fold_bias_kernel[(triton.cdiv(N, 256),)](b, self.bias, N, BLOCK=256)
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        linear_bias_relu_kernel[grid](
            x, w, b, out, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
        )
        return out
