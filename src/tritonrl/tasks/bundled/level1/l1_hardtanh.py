"""HardTanh activation: clamp x to [min_val, max_val]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Clamps every element into [min_val, max_val]."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x):
        return torch.nn.functional.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


batch_size = 16
dim = 800
min_val = -0.5
max_val = 1.5


def get_inputs():
    return [torch.randn(batch_size, dim) * 2]


def get_init_inputs():
    return [min_val, max_val]
