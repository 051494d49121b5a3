"""Linear layer, then logsumexp over the features, subtraction of a constant, and ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes relu(logsumexp(linear(x), dim=1, keepdim=True) - subtract_value)."""

    def __init__(self, in_features, out_features, subtract_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value

    def forward(self, x):
        x = self.linear(x)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return torch.relu(x - self.subtract_value)


batch_size = 40
in_features = 64
out_features = 48
subtract_value = 4.0


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, subtract_value]
