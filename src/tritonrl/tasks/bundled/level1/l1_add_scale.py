"""Scaled sum of two tensors: (a + b) * alpha."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds two tensors elementwise and multiplies the sum by a constant."""

    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, a, b):
        return (a + b) * self.alpha


batch_size = 16
dim = 1000
alpha = 0.75


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [alpha]
