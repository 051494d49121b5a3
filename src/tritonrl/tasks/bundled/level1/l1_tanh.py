"""Tanh activation."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies tanh elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x)


batch_size = 16
dim = 900


def get_inputs():
    return [torch.randn(batch_size, dim) * 3]


def get_init_inputs():
    return []
