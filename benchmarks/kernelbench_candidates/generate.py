"""Writes the candidate kernels in this folder (one sub-folder per KernelBench Level-2 problem).

    python benchmarks/kernelbench_candidates/generate.py            # (re)write the files
    python benchmarks/kernelbench_candidates/generate.py --check    # exit 1 if a file differs from what it writes

Our own code, in KernelBench's ``ModelNew`` format, for ``benchmarks/kernelbench_vs_tritonrl.py``. Every problem is
``Linear(in, out)`` + an elementwise epilogue at KernelBench's shapes (1024 x 8192 -> 8192, fp32); each gets the
same kinds of candidate (file name = kind; ``ok_*`` are meant to be correct, ``bad_*`` to be rejected):

- ``ok_t128x128x32_w8s3``, ``ok_t64x128x32_w4s3``, ``ok_t64x64x64_w4s3``: one fused GEMM + bias + epilogue Triton
  kernel (fp32 ``tl.dot(..., input_precision="ieee")``), three tilings (BLOCK_M x BLOCK_N x BLOCK_K, warps, stages).
- ``bad_tf32``: the first tiling with ``tl.dot``'s default precision on fp32 inputs, TF32 (10-bit mantissa
  products): faster on tensor cores, but not fp32 arithmetic.
- ``bad_no_activation``: the first tiling without the epilogue's activation.
- ``bad_torch_fallback``: PyTorch ops compute the answer; a token Triton kernel copies it to the output.
- ``bad_syntax_error``: the first tiling with a missing colon.
- ``bad_hang``: the first tiling whose forward starts with an infinite loop.

The problems' sources are not here: the benchmark reads them from the user's KernelBench clone.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Problem:
    stem: str
    title: str
    init_args: str                 # ModelNew.__init__ parameters (same as Model's)
    init_body: str                 # parameters built in the same order as Model (same RNG draws, same values)
    weight: str                    # the nn.Linear attribute
    bias: str                      # expression for the bias vector added after the GEMM
    scalars: tuple[str, ...]       # float attributes passed to the kernel
    epilogue: str                  # Triton lines turning y (= x @ w.T + b) into the output
    no_activation: str             # the epilogue with its activation left out
    torch_forward: str             # the PyTorch fallback's computation of y from x


PROBLEMS = [
    Problem("12_Gemm_Multiply_LeakyReLU", "Gemm -> * multiplier -> LeakyReLU",
            "in_features, out_features, multiplier, negative_slope",
            "self.gemm = nn.Linear(in_features, out_features)\n"
            "self.multiplier = multiplier\nself.negative_slope = negative_slope",
            "self.gemm", "self.gemm.bias", ("multiplier", "negative_slope"),
            "y = y * multiplier\ny = tl.where(y >= 0, y, y * negative_slope)",
            "y = y * multiplier",
            "y = self.gemm(x) * self.multiplier\n"
            "y = torch.nn.functional.leaky_relu(y, self.negative_slope)"),
    Problem("76_Gemm_Add_ReLU", "Gemm (no bias) -> + bias -> ReLU",
            "in_features, out_features, bias_shape",
            "self.gemm = nn.Linear(in_features, out_features, bias=False)\n"
            "self.bias = nn.Parameter(torch.randn(bias_shape))",
            "self.gemm", "self.bias", (),
            "y = tl.maximum(y, 0.0)",
            "y = y",
            "y = torch.relu(self.gemm(x) + self.bias)"),
    Problem("9_Matmul_Subtract_Multiply_ReLU", "Linear -> - subtract_value -> * multiply_value -> ReLU",
            "in_features, out_features, subtract_value, multiply_value",
            "self.linear = nn.Linear(in_features, out_features)\n"
            "self.subtract_value = subtract_value\nself.multiply_value = multiply_value",
            "self.linear", "self.linear.bias", ("subtract_value", "multiply_value"),
            "y = (y - subtract_value) * multiply_value\ny = tl.maximum(y, 0.0)",
            "y = (y - subtract_value) * multiply_value",
            "y = torch.relu((self.linear(x) - self.subtract_value) * self.multiply_value)"),
    Problem("63_Gemm_ReLU_Divide", "Linear -> ReLU -> / divisor",
            "in_features, out_features, divisor",
            "self.linear = nn.Linear(in_features, out_features)\nself.divisor = divisor",
            "self.linear", "self.linear.bias", ("divisor",),
            "y = tl.maximum(y, 0.0)\ny = y / divisor",
            "y = y / divisor",
            "y = torch.relu(self.linear(x)) / self.divisor"),
    Problem("86_Matmul_Divide_GELU", "Linear -> / divisor -> GELU (erf)",
            "input_size, output_size, divisor",
            "self.linear = nn.Linear(input_size, output_size)\nself.divisor = divisor",
            "self.linear", "self.linear.bias", ("divisor",),
            "y = y / divisor\ny = 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))",
            "y = y / divisor",
            "y = torch.nn.functional.gelu(self.linear(x) / self.divisor)"),
    Problem("70_Gemm_Sigmoid_Scaling_ResidualAdd", "Gemm -> sigmoid * scaling_factor + residual",
            "input_size, hidden_size, scaling_factor",
            "self.gemm = nn.Linear(input_size, hidden_size)\nself.scaling_factor = scaling_factor",
            "self.gemm", "self.gemm.bias", ("scaling_factor",),
            "y = (1.0 / (1.0 + tl.exp(-y))) * scaling_factor + y",
            "y = y * scaling_factor + y",
            "y = self.gemm(x)\ny = torch.sigmoid(y) * self.scaling_factor + y"),
]

TILINGS = {  # kind: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
    "ok_t128x128x32_w8s3": (128, 128, 32, 8, 8, 3),
    "ok_t64x128x32_w4s3": (64, 128, 32, 8, 4, 3),
    "ok_t64x64x64_w4s3": (64, 64, 64, 8, 4, 3),
}
FIRST = "ok_t128x128x32_w8s3"
KINDS = [*TILINGS, "bad_tf32", "bad_no_activation", "bad_torch_fallback", "bad_syntax_error", "bad_hang"]


def indent(text: str, spaces: int) -> str:
    return "\n".join((" " * spaces + line) if line else line for line in text.splitlines())


KERNEL = '''\
@triton.jit
def fused_linear_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,{scalar_params}
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # out = epilogue(x @ w.T + b); x: (M, K), w: (N, K) as nn.Linear stores it, b: (N,)
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # grouped launch order: GROUP_M row-blocks share their column-blocks of w while they are in L2
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows
    pid_n = (pid % group_size) // rows
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
        # w is (N, K): load it transposed, as a (BLOCK_K, BLOCK_N) tile
        w = tl.load(w_ptr + offs_n[None, :] * stride_wn + ks[:, None] * stride_wk,
                    mask=mask_n[None, :] & (ks[:, None] < K), other=0.0)
        acc += tl.dot(a, w{precision})
    bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)
    y = acc + bias[None, :]
{epilogue}
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, y,
             mask=mask_m[:, None] & mask_n[None, :])
'''

FORWARD = '''\
    def forward(self, x){colon}
{hang}        w = {weight}.weight
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, {bm}) * triton.cdiv(N, {bn}),)
        fused_linear_kernel[grid](
            x, w, {bias}, out,
            M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),{scalar_args}
            BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, GROUP_M={gm}, num_warps={warps}, num_stages={stages},
        )
        return out
'''

COPY_KERNEL = '''\
@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)
'''

DOCS = {
    "ok": "One fused Triton kernel: GEMM (fp32, ieee) + bias + epilogue; tiling {bm}x{bn}x{bk}, "
          "{warps} warps, {stages} stages. Meant to be correct.",
    "bad_tf32": "Like ok_t128x128x32_w8s3, but tl.dot runs at its default precision for fp32 inputs: TF32.\n"
                "Not fp32 arithmetic (10-bit mantissa products); meant to be rejected.",
    "bad_no_activation": "Like ok_t128x128x32_w8s3, but the epilogue leaves out the activation. Wrong.",
    "bad_torch_fallback": "PyTorch computes the answer; a token Triton kernel only copies it. Not a Triton "
                          "kernel of the problem; meant to be rejected.",
    "bad_syntax_error": "Like ok_t128x128x32_w8s3 with a missing colon. Does not parse.",
    "bad_hang": "Like ok_t128x128x32_w8s3, but forward starts with an infinite loop.",
}


def header(problem: Problem, kind: str) -> str:
    doc = DOCS.get(kind)
    if kind in TILINGS:
        bm, bn, bk, _, warps, stages = TILINGS[kind]
        doc = DOCS["ok"].format(bm=bm, bn=bn, bk=bk, warps=warps, stages=stages)
    return (f'"""KernelBench level 2, {problem.stem}: {problem.title}. Candidate {kind}.\n\n{doc}\n'
            f'Written for tritonrl\'s benchmarks/kernelbench_vs_tritonrl.py '
            f'(generated by kernelbench_candidates/generate.py).\n"""\n\n'
            "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n")


def model_class(problem: Problem, forward: str) -> str:
    return (f"class ModelNew(nn.Module):\n    def __init__(self, {problem.init_args}):\n"
            f"        super().__init__()\n{indent(problem.init_body, 8)}\n\n{forward}")


def fused(problem: Problem, kind: str) -> str:
    tiling = TILINGS.get(kind, TILINGS[FIRST])
    bm, bn, bk, gm, warps, stages = tiling
    epilogue = problem.no_activation if kind == "bad_no_activation" else problem.epilogue
    scalar_params = "".join(f"\n    {s}," for s in problem.scalars)
    kernel = KERNEL.format(scalar_params=scalar_params, epilogue=indent(epilogue, 4),
                           precision="" if kind == "bad_tf32" else ', input_precision="ieee"')
    scalar_args = "".join(f"\n            self.{s}," for s in problem.scalars)
    hang = "        while True:  # never returns\n            pass\n" if kind == "bad_hang" else ""
    forward = FORWARD.format(colon="" if kind == "bad_syntax_error" else ":", hang=hang, weight=problem.weight,
                             bias=problem.bias, scalar_args=scalar_args, bm=bm, bn=bn, bk=bk, gm=gm, warps=warps,
                             stages=stages)
    return header(problem, kind) + kernel + "\n\n" + model_class(problem, forward)


def fallback(problem: Problem) -> str:
    forward = ("    def forward(self, x):\n" + indent(problem.torch_forward, 8) + "\n"
               "        out = torch.empty_like(y)\n"
               "        n = y.numel()\n"
               "        copy_kernel[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)\n"
               "        return out\n")
    return header(problem, "bad_torch_fallback") + COPY_KERNEL + "\n\n" + model_class(problem, forward)


def render(problem: Problem, kind: str) -> str:
    return fallback(problem) if kind == "bad_torch_fallback" else fused(problem, kind)


def files() -> dict[Path, str]:
    return {HERE / p.stem / f"{kind}.py": render(p, kind) for p in PROBLEMS for kind in KINDS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    stale = []
    for path, text in files().items():
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print("out of date (run generate.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
