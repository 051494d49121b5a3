"""Mean of a 2-D tensor over its last dimension."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Reduces (batch, dim) to (batch,) with the mean over dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.mean(x, dim=1)


batch_size = 64
dim = 1500


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
