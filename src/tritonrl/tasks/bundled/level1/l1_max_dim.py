"""Maximum of a 3-D tensor over its last dimension."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Reduces (batch, dim1, dim2) to (batch, dim1) with the max over dim 2 (values only)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.max(x, dim=2)[0]


batch_size = 8
dim1 = 64
dim2 = 300


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return []
