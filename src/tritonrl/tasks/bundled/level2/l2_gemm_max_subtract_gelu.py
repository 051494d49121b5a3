"""Linear layer, then subtraction of each row's maximum, then exact GELU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes y = linear(x); gelu(y - y.max(dim=1, keepdim=True))."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        row_max = torch.max(x, dim=1, keepdim=True).values
        x = x - row_max
        return torch.nn.functional.gelu(x)


batch_size = 32
in_features = 56
out_features = 48


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
