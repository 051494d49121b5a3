"""Linear layer, then division by a temperature, then softmax over the features."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes softmax(linear(x) / temperature, dim=1)."""

    def __init__(self, in_features, out_features, temperature):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.temperature = temperature

    def forward(self, x):
        x = self.linear(x)
        x = x / self.temperature
        return torch.softmax(x, dim=1)


batch_size = 32
in_features = 64
out_features = 40
temperature = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, temperature]
