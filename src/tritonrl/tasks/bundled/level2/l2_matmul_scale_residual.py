"""Matrix product, then scaling, then addition of a residual input."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes (a @ b) * scale + residual."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b, residual):
        x = torch.matmul(a, b)
        x = x * self.scale
        return x + residual


m = 48
k = 72
n = 40
scale = 0.75


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n), torch.randn(m, n)]


def get_init_inputs():
    return [scale]
