"""Residual add followed by RMSNorm: rmsnorm(x + residual)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds a residual stream to x, then applies nn.RMSNorm(hidden) to the sum."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.RMSNorm(hidden, eps=eps)

    def forward(self, x, residual):
        return self.norm(x + residual)


batch_size = 8
seq_len = 32
hidden = 320
eps = 1e-6


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden), torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, eps]
