"""Linear layer, then Swish, scaled and added back to the linear output as a residual."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes y = linear(x); swish(y) * scaling_factor + y."""

    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        y = self.linear(x)
        z = y * torch.sigmoid(y)
        return z * self.scaling_factor + y


batch_size = 24
in_features = 80
out_features = 40
scaling_factor = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
