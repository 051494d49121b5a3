"""Linear layer, then multiplication by a constant, then LeakyReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes leaky_relu(linear(x) * multiplier, negative_slope)."""

    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.linear(x)
        x = x * self.multiplier
        return self.leaky_relu(x)


batch_size = 32
in_features = 96
out_features = 44
multiplier = 2.0
negative_slope = 0.1


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
