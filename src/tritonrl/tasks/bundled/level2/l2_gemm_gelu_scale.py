"""Linear layer, then exact GELU, then multiplication by a constant factor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes gelu(linear(x)) * scaling_factor."""

    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = self.linear(x)
        x = torch.nn.functional.gelu(x)
        return x * self.scaling_factor


batch_size = 40
in_features = 72
out_features = 56
scaling_factor = 1.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
