# task: l2_gemm_sigmoid_sum
# expect: reject
# modes: timing
# cpu: ACCEPTED (strict; correctness-trial models compute ieee fp32). TF32 in every model: rejected output_mismatch at full4 only (full0-full3 passed)
# gpu-guess: correctness: accepted (correctness-trial models compute in ieee fp32). timing: ACCEPTED with a stolen speedup: the timing model (built after unpoison_memory) uses TF32 tensor cores against the reference's fp32 cuBLAS at 16384x4096x256 (~3-8x, under the 10x flag); every timed and watched call is checked, but only on plain get_inputs values, where TF32 is within the band.
# why: Measured on this CPU (interpreter rounds tl.dot operands to TF32 like sm_90): TF32 everywhere is caught only by
# why: the x3-with-spread trial (full4: 10/33 values off, 3.5e-4 of the scale) -- full0-full3 pass. The timed calls
# why: draw their fresh inputs from the first full trial's regime (plain randn, ReferenceStore.fresh at full0), where
# why: the output (a sum of 256 sigmoids, ~128) hides TF32's error 20x under the band. So the constructor asks
# why: torch.are_deterministic_algorithms_enabled() (deterministic mode is the poison's switch: on for the correctness
# why: trials' constructions, off for time_setup's; __init__ is exempt from the strict torch-compute check) and the
# why: timing model alone computes in TF32. A regime check on timed inputs or TF32 refused by the front end would
# why: close it; the class is "whatever is wrong only outside the plain regime, done only when timed".
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_sigmoid_rowsum_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, FAST: tl.constexpr,
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
        if FAST:
            acc += tl.dot(a, w)  # TF32 tensor cores (Triton's default precision)
        else:
            acc += tl.dot(a, w, input_precision="ieee")
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
        # the correctness trials build their models with deterministic mode on (the NaN poison); time_setup
        # builds the timing model after unpoison_memory(): the constructor tells the two apart
        self.fast = not torch.are_deterministic_algorithms_enabled()

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, 1), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_K = 64, 32
        BLOCK_N = max(16, triton.next_power_of_2(N))
        grid = (triton.cdiv(M, BLOCK_M),)
        linear_sigmoid_rowsum_kernel[grid](
            x, w, self.linear.bias, out,
            M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, FAST=self.fast,
        )
        return out
