"""Row-wise dot products: (x * y).sum(dim=-1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies two (batch, dim) tensors elementwise and sums each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return (x * y).sum(dim=-1)


batch_size = 64
dim = 700


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
