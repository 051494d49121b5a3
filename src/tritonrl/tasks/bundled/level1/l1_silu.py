"""SiLU (Swish) activation: x * sigmoid(x)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies SiLU elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


batch_size = 32
dim = 500


def get_inputs():
    return [torch.randn(batch_size, dim) * 3]


def get_init_inputs():
    return []
