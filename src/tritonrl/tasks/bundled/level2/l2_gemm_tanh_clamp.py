"""Linear layer, then subtraction of a constant, tanh, and clamping to a range."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes clamp(tanh(linear(x) - subtract_value), clamp_min, clamp_max)."""

    def __init__(self, in_features, out_features, subtract_value, clamp_min, clamp_max):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.linear(x)
        x = torch.tanh(x - self.subtract_value)
        return torch.clamp(x, min=self.clamp_min, max=self.clamp_max)


batch_size = 36
in_features = 64
out_features = 52
subtract_value = 0.2
clamp_min = -0.5
clamp_max = 0.75


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, subtract_value, clamp_min, clamp_max]
