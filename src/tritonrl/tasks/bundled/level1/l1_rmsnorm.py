"""RMSNorm over the last dimension of a (batch, seq_len, hidden) tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies nn.RMSNorm(hidden): x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.RMSNorm(hidden, eps=eps)

    def forward(self, x):
        return self.norm(x)


batch_size = 8
seq_len = 32
hidden = 320
eps = 1e-6


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, eps]
