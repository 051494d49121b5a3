"""Sigmoid activation: 1 / (1 + exp(-x))."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies the logistic sigmoid elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x)


batch_size = 16
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim) * 4]


def get_init_inputs():
    return []
