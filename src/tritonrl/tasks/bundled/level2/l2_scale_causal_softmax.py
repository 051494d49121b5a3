"""Attention-score softmax: scale, causal mask (future positions to -inf), softmax over keys."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Takes scores (batch, heads, seq_len, seq_len), scales them, masks j > i, and applies softmax."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, scores):
        seq = scores.shape[-1]
        future = torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=scores.device), diagonal=1)
        scores = (scores * self.scale).masked_fill(future, float("-inf"))
        return torch.softmax(scores, dim=-1)


batch_size = 2
num_heads = 4
seq_len = 100
scale = 0.125


def get_inputs():
    return [torch.randn(batch_size, num_heads, seq_len, seq_len) * 8]


def get_init_inputs():
    return [scale]
