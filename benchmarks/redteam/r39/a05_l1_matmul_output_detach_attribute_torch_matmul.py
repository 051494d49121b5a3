# task: l1_matmul
# expect: reject
# why: the same unwatched moment as a04 on a GEMM, with torch doing the work: the kernel only fills the output with
# why: zeros; the output carries an instance attribute `detach` whose callable, run by the harness's fingerprint after
# why: the forward's watch has closed, does `dst.copy_(box["a"] @ box["b"])` (tensors through a dict on a plain
# why: object). Strict mode's static check still sees the `@`; permissive mode's static checks (and strict mode with
# why: static checks off) leave it to the runtime, which is not watching then. torch's GEMM is the answer. Reject.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


class _Late:
    def __call__(self):
        box = self.box
        dst = box["dst"]
        del dst.detach
        dst.copy_(box["a"] @ box["b"])
        return dst.detach()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        fill_kernel[(triton.cdiv(M * N, 1024),)](c, M * N, BLOCK=1024)
        late = _Late()
        late.box = {"a": a, "b": b, "dst": c}
        c.detach = late
        return c
