"""LeakyReLU followed by a row-wise logsumexp."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies LeakyReLU, then reduces each row of (batch, dim) with logsumexp to (batch, 1)."""

    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        x = torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)
        return torch.logsumexp(x, dim=-1, keepdim=True)


batch_size = 64
dim = 800
negative_slope = 0.2


def get_inputs():
    return [torch.randn(batch_size, dim) * 3]


def get_init_inputs():
    return [negative_slope]
