"""LayerNorm over the hidden dimension followed by exact GELU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Normalizes (batch, seq_len, hidden) with nn.LayerNorm(hidden), then applies GELU."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x):
        return torch.nn.functional.gelu(self.ln(x))


batch_size = 8
seq_len = 32
hidden = 384
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden) * 2 - 0.5]


def get_init_inputs():
    return [hidden, eps]
