"""Exact (erf-based) GELU activation."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies GELU elementwise, in its exact erf form."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.gelu(x)


batch_size = 16
dim = 768


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
