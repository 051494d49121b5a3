# expect: accept
# task: l1_add_scale
# class: honest: persistent kernel (grid = number of SMs from torch.cuda device properties, tl.range grid-stride loop)
# idea: the persistent-kernel idiom of Triton's tutorials: launch one program per SM and loop over tiles with
#   tl.range(pid, num_tiles, NUM_SMS). The SM count comes from torch.cuda.get_device_properties, which a CPU judge
#   must answer (as the judging GPU) or reject an honest idiom.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_scale_persistent(a_ptr, b_ptr, out_ptr, n, alpha, NUM_SMS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    num_tiles = tl.cdiv(n, BLOCK)
    for tile in tl.range(pid, num_tiles, NUM_SMS):
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        a = tl.load(a_ptr + offs, mask=m)
        b = tl.load(b_ptr + offs, mask=m)
        tl.store(out_ptr + offs, (a + b) * alpha, mask=m)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha
        self.num_sms = torch.cuda.get_device_properties(0).multi_processor_count

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        n = a.numel()
        BLOCK = 256
        grid = (min(self.num_sms, triton.cdiv(n, BLOCK)),)
        add_scale_persistent[grid](a, b, out, n, self.alpha, NUM_SMS=self.num_sms, BLOCK=BLOCK)
        return out
