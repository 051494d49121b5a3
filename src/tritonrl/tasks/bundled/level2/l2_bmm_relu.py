"""Batched matrix product, then a learned bias per output column, then ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes relu(bmm(a, b) + bias)."""

    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, a, b):
        x = torch.bmm(a, b)
        x = x + self.bias
        return torch.relu(x)


batch_size = 4
m = 24
k = 40
n = 36


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return [n]
