"""Bias add, exact GELU, then a constant scale: gelu(x + bias) * scale."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds a learnable per-feature bias, applies GELU, and multiplies by a constant."""

    def __init__(self, features, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x):
        return torch.nn.functional.gelu(x + self.bias) * self.scale


batch_size = 32
features = 600
scale = 1.7


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, scale]
