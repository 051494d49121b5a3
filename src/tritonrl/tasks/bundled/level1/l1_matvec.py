"""Matrix-vector product of a (m, k) matrix with a (k, 1) column vector."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes y = A @ x for a column vector x."""

    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.matmul(a, x)


m = 256
k = 1000


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, 1)]


def get_init_inputs():
    return []
