"""Linear layer, then an extra learned bias, then ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes relu(linear(x) + bias)."""

    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.linear(x)
        x = x + self.bias
        return torch.relu(x)


batch_size = 32
in_features = 64
out_features = 48
bias_shape = (out_features,)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape]
