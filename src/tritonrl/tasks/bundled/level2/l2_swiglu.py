"""SwiGLU gating: split the last dimension in two halves a, b and return silu(a) * b."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Takes (tokens, 2 * hidden), returns silu(first half) * second half, shape (tokens, hidden)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return torch.nn.functional.silu(a) * b


tokens = 64
hidden = 300


def get_inputs():
    return [torch.randn(tokens, 2 * hidden) * 2]


def get_init_inputs():
    return []
