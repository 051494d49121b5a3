"""Replays a02's data (chunk length L) through copies.copied_from outside the verifier."""
import math, torch
from tritonrl.verify.child import copies
from tritonrl.verify.child.provenance import _LAUNDERED, COPIED

def step(n):
    d = max(1, int(n * 0.6180339887))
    while math.gcd(d, n) != 1:
        d += 1
    return d

for L in (1, 2):
  for rows, cols in [(9, 8), (17, 9), (16, 8)]:
    x = torch.randn(rows, cols)
    cpr = (rows + L - 1) // L; nc = cols * cpr; d = step(nc)
    scratch = torch.zeros(nc * L)
    for j in range(cols):
        for t in range(cpr):
            s = (j * cpr + t) * d % nc; ln = min(L, rows - L * t)
            scratch[s * L:s * L + ln] = x[L * t:L * t + ln, j]
    out = x.t().contiguous()
    mask = torch.full((scratch.numel() * 4,), COPIED, dtype=torch.uint8)
    r = copies.copied_from(out, torch.ones(out.shape, dtype=torch.bool), [(scratch, mask)], _LAUNDERED)
    print(L, rows, cols, "d", d, "copy class", r)
