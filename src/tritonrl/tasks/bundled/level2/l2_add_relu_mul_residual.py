"""Residual chain: relu(x + y) * z + x."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds two tensors, applies ReLU, gates by a third tensor, and adds x back."""

    def __init__(self):
        super().__init__()

    def forward(self, x, y, z):
        return torch.relu(x + y) * z + x


batch_size = 32
dim = 700


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
