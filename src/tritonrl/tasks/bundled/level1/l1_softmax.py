"""Softmax over the last dimension of a 2-D tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies softmax to each row of (batch, dim)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 32
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim) * 3]


def get_init_inputs():
    return []
