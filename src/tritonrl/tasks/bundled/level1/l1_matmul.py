"""Matrix multiplication of a (m, k) matrix by a (k, n) matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes C = A @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


m = 120
k = 200
n = 136


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
