"""Sum of a 3-D tensor over its middle dimension, keeping that dimension."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Reduces (batch, dim1, dim2) to (batch, 1, dim2) by summing over dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1, keepdim=True)


batch_size = 8
dim1 = 256
dim2 = 200


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return []
