"""Clamp, exp, and row-normalize: e = exp(clamp(x, lo, hi)); e / e.sum(dim=-1, keepdim=True)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Clamps x into [min_val, max_val], exponentiates, and divides each row by its sum."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x):
        e = torch.exp(torch.clamp(x, min=self.min_val, max=self.max_val))
        return e / e.sum(dim=-1, keepdim=True)


batch_size = 32
dim = 500
min_val = -3.0
max_val = 2.0


def get_inputs():
    return [torch.randn(batch_size, dim) * 2]


def get_init_inputs():
    return [min_val, max_val]
